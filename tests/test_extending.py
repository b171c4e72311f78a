"""docs/extending.md's examples run as written: the `python` blocks of each section are cut out of the page and
run in a fresh interpreter (a block whose info string says ``file=PATH`` is written to PATH under a temporary
folder first; a block marked ``root`` runs only as root). Each example asserts what it shows (the wrapper's
counters on lo, the backend's executed commands and its dry run, the DuT kind's plan, the isolation recipe's
steps; as root the bridge DuT measures a point and the recipe is applied and undone), so a failure of an example
is a failure here. The script keeps every block on its line of the page: a traceback names the page's line."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import require_program, require_root

DOC = Path(__file__).resolve().parents[1] / "docs" / "extending.md"
SECTIONS = ("1. A program wrapper", "2. A testbed backend", "3. A DuT kind", "4. A CPU isolation recipe")
FENCE = re.compile(r"^```(\S*)(.*)$")


@dataclass
class Block:
    info: str          # the fence's info string after the language
    first_line: int    # the page's line of the block's first line of code
    code: str

    @property
    def file(self) -> str | None:
        m = re.search(r"\bfile=(\S+)", self.info)
        return m.group(1) if m else None

    @property
    def root(self) -> bool:
        return "root" in self.info.split()


def python_blocks(text: str) -> dict[str, list[Block]]:
    """Section heading (``## ``) -> its python blocks, in order."""
    out: dict[str, list[Block]] = {}
    section, block, lang = "", None, ""
    for n, line in enumerate(text.splitlines(), 1):
        fence = FENCE.match(line)
        if block is None and fence and fence.group(1):
            lang = fence.group(1)
            block = Block(fence.group(2).strip(), n + 1, "")
        elif block is not None and line.startswith("```"):
            if lang == "python":
                out.setdefault(section, []).append(block)
            block = None
        elif block is not None:
            block.code += line + "\n"
        elif line.startswith("## "):
            section = line[3:].strip()
    assert block is None, f"{DOC}: a code block is not closed"
    return out


def run_section(tmp_path: Path, section: str, root: bool) -> subprocess.CompletedProcess[str]:
    """Write the section's file blocks, then run its other blocks (the root ones, or the others) as one script."""
    blocks = python_blocks(DOC.read_text())[section]
    lib_dirs = []
    for b in blocks:
        if b.file:
            path = tmp_path / b.file
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(b.code)
            if b.file.startswith("lib/benchbook/"):   # a module of benchbook's own packages, e.g. tools/
                lib_dirs.append((".".join(Path(b.file).parent.parts[1:]), str(path.parent)))
    # line 1: let benchbook's packages find the written modules; then every block on its line of the page
    lines = ["import importlib; " + "; ".join(f"importlib.import_module({pkg!r}).__path__.append({d!r})"
                                              for pkg, d in lib_dirs)]
    ran = [b for b in blocks if not b.file and b.root == root]
    for b in ran:
        assert len(lines) < b.first_line, f"{section}: blocks overlap"
        lines += [""] * (b.first_line - 1 - len(lines)) + b.code.splitlines()
    script = tmp_path / "extending_example.py"
    script.write_text("\n".join(lines) + "\n")
    return subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=240)


def test_the_page_has_one_example_per_plug_in_point():
    blocks = python_blocks(DOC.read_text())
    assert [s for s in blocks if s] == list(SECTIONS)
    for section in SECTIONS:
        assert any(b.file for b in blocks[section]), f"{section}: no module"
        assert any(not b.file and not b.root for b in blocks[section]), f"{section}: no example that runs it"


@pytest.mark.parametrize("section", SECTIONS)
def test_example_runs(tmp_path, section):
    if section.startswith("1."):
        require_program("ip")
    got = run_section(tmp_path, section, root=False)
    assert got.returncode == 0, f"docs/extending.md, {section}:\n{got.stdout}\n{got.stderr}"


@pytest.mark.root
@pytest.mark.slow
@pytest.mark.parametrize("section", [s for s in SECTIONS
                                     if any(b.root for b in python_blocks(DOC.read_text()).get(s, []))])
def test_root_example_runs(tmp_path, section):
    require_root()
    if section.startswith("3."):
        for program in ("tcpdump", "ip"):
            require_program(program)
    got = run_section(tmp_path, section, root=True)
    assert got.returncode == 0, f"docs/extending.md, {section} (as root):\n{got.stdout}\n{got.stderr}"


def test_a_failing_example_fails_the_test(tmp_path, monkeypatch):
    """The harness itself: an example whose assertion fails is reported with its line of the page."""
    page = tmp_path / "page.md"
    page.write_text("## 1. A program wrapper\n\n```python file=mylab/m.py\nX = 1\n```\n\n```python\n"
                    "from mylab.m import X\nassert X == 2, 'wrong'\n```\n")
    monkeypatch.setattr(sys.modules[__name__], "DOC", page)
    got = run_section(tmp_path, "1. A program wrapper", root=False)
    assert got.returncode == 1
    assert 'line 9' in got.stderr and "AssertionError: wrong" in got.stderr
