"""`make lint`'s dead-code check: vulture over the library and the paper modules.

A definition counts as used when anything in lib/, the paper folders (their modules and the code cells of their
notebooks), tests/ or benchmarks/ refers to it, or when the reviewed allow-list beside this file
(vulture_allowlist.py: one entry per name a static scan cannot see used, each with its reason) names it. Typer
commands (registered by their decorator) count as used. Findings are reported for lib/ and the paper modules only.

    .venv/bin/python tests/lint/dead_code.py        # exit 0: nothing dead; 1: the findings, one a line

Also unreachable code (after return/raise) is a finding.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ALLOWLIST = Path(__file__).with_name("vulture_allowlist.py")
SCANNED = ("lib", "notebooks", "tests", "benchmarks")
REPORTED = ("lib/", "notebooks/")
IGNORE_DECORATORS = "@*.command,@*.callback"


def notebook_code(notebook: Path) -> str:
    """The code cells of ``notebook`` as one module (IPython magics and shell lines left out)."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    code = "\n\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    return "\n".join(line for line in code.splitlines() if not line.lstrip().startswith(("%", "!")))


def findings(extra: list[Path] = (), reported: tuple[str, ...] = REPORTED) -> list[str]:
    """vulture's findings in the files whose path starts with one of ``reported`` (``extra``: more files to
    scan, as a test plants)."""
    with tempfile.TemporaryDirectory(prefix="bb-dead-code-") as tmp:
        for i, nb in enumerate(sorted((REPO / "notebooks").rglob("*.ipynb"))):
            (Path(tmp) / f"notebook_{i}.py").write_text(notebook_code(nb), encoding="utf-8")
        argv = [sys.executable, "-m", "vulture", *SCANNED, tmp, *map(str, extra),  # SCANNED holds the allow-list
                "--ignore-decorators", IGNORE_DECORATORS, "--exclude", "tests/data"]
        r = subprocess.run(argv, cwd=REPO, capture_output=True, text=True)
    if r.returncode not in (0, 3):  # 3: dead code found
        raise SystemExit(f"vulture failed ({r.returncode}): {r.stderr.strip()}")
    return [line for line in r.stdout.splitlines() if line.startswith(reported)]


def main() -> int:
    found = findings()
    for line in found:
        print(line)
    if found:
        print(f"dead code: {len(found)} finding(s) above; delete the code, or where something the scan cannot see "
              "uses it (a framework calls it by name, a registry names it in a string) add it with the reason to "
              f"{ALLOWLIST.relative_to(REPO)}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
