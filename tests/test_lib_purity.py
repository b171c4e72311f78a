"""lib/benchbook holds only reusable capability: no module names a paper, no TOML holds published
values, and no published number of a shipped entry appears in its source."""

from __future__ import annotations

import re
import tomllib

from benchbook.paths import NOTEBOOKS_DIR, PACKAGE_DIR
from benchbook.reproduce.registry import builtin_paper_dirs, load_registry

TEXT_SUFFIXES = {".py", ".toml", ".json", ".md", ".txt", ".ipynb", ".cfg", ".yaml", ".yml"}


def lib_files():
    return sorted(p for p in PACKAGE_DIR.rglob("*") if p.is_file() and p.suffix in TEXT_SUFFIXES
                  and "__pycache__" not in p.parts)


def paper_words() -> set[str]:
    """Paper ids of the built-in paper folders, their first authors and venues ("wiedner", "itc23" ...)."""
    words = {"table iii", "itc 2023", "itc'23", "iitm"}
    for folder in builtin_paper_dirs():
        paper_id = folder.name
        if paper_id.startswith("benchbook"):
            continue
        words.add(paper_id)
        words.update(part for part in paper_id.split("-") if len(part) > 3)
    return words


def test_the_built_in_papers_are_paper_folders():
    names = {p.name for p in builtin_paper_dirs()}
    assert {"wiedner-itc23", "scheerer-iitm23", "benchbook-demo"} <= names
    assert not list((PACKAGE_DIR / "reproduce").glob("figures/*.toml"))
    assert (NOTEBOOKS_DIR / "reusable" / "evaluator-table.ipynb").is_file()


def test_no_file_under_lib_names_a_paper():
    words = paper_words()
    assert {"wiedner", "scheerer", "daichendt"} <= words
    pattern = re.compile("|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)), re.IGNORECASE)
    hits = []
    for path in lib_files():
        for lineno, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
            m = pattern.search(line)
            if m:
                hits.append(f"{path.relative_to(PACKAGE_DIR.parent)}:{lineno}: {m.group(0)!r}")
    assert not hits, "paper-specific text under lib/benchbook:\n" + "\n".join(hits)


def test_no_toml_under_lib_holds_published_values():
    for path in PACKAGE_DIR.rglob("*.toml"):
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        assert "published" not in data, f"{path}: [[published]] values belong in a paper folder"


def _distinctive(x) -> list[str]:
    """Literal spellings of a number with at least 4 significant digits (too specific to be a coincidence)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return []
    digits = re.sub(r"[^0-9]", "", repr(float(x)).split("e")[0]).strip("0")
    if len(digits) < 4:
        return []
    out = {repr(x)}
    if isinstance(x, float) and x.is_integer():
        out.add(str(int(x)))
    return sorted(out)


def test_no_published_number_in_lib_source():
    numbers: dict[str, str] = {}
    for entry in load_registry(use_env=False).values():
        for pv in entry.published:
            for lit in _distinctive(pv.value):
                numbers[lit] = f"{entry.id}: {pv.name}"
        for key, value in entry.parameters.items():
            for item in value if isinstance(value, list) else [value]:
                for lit in _distinctive(item):
                    numbers[lit] = f"{entry.id}: [parameters] {key}"
    assert "9969.08" in numbers and "27.813" in numbers
    hits = []
    for path in lib_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        for lit, where in numbers.items():
            if re.search(rf"(?<![\w.]){re.escape(lit)}(?![\w.])", text):
                hits.append(f"{path.relative_to(PACKAGE_DIR.parent)}: {lit} ({where})")
    assert not hits, "published numbers under lib/benchbook:\n" + "\n".join(hits)
