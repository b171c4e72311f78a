"""`make lint`'s check that every import kept inside a function says why: a `# noqa: PLC0415` must be followed
by its reason on the same line (ruff accepts a bare one; this does not).

    .venv/bin/python tests/lint/noqa_reasons.py     # exit 0: every one has its reason; 1: file:line of the rest
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
NOQA = re.compile(r"#\s*noqa:\s*((?:[A-Z]+[0-9]+)(?:\s*,\s*[A-Z]+[0-9]+)*)(.*)$")


def missing_reasons(text: str) -> list[int]:
    """Line numbers of ``text`` whose noqa names PLC0415 without a reason after the codes."""
    out = []
    for no, line in enumerate(text.splitlines(), 1):
        m = NOQA.search(line)
        if m and "PLC0415" in re.split(r"\s*,\s*", m.group(1)) and len(m.group(2).strip(" -:()")) < 3:
            out.append(no)
    return out


def main() -> int:
    ls = ["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.py"]  # new files too
    files = subprocess.run(ls, cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    bad = [f"{f}:{no}" for f in files if (REPO / f).is_file()
           for no in missing_reasons((REPO / f).read_text(encoding="utf-8"))]
    for where in bad:
        print(f"{where}: `# noqa: PLC0415` without its reason (say why this import waits: a cycle, start-up cost, "
              "an optional dependency)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
