"""The figure registry: the shipped paper folders load; user paper folders add to them; malformed
entries and paper folders are errors naming the file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from benchbook.paths import NOTEBOOKS_DIR, PUBLISHED_DIR
from benchbook.reproduce.capabilities import PROGRAM_PACKAGES, check_requirement, entry_blockers, missing_requirements
from benchbook.reproduce.registry import (
    MODES,
    RegistryError,
    load_entry,
    load_entry_file,
    load_registry,
    paper_dirs,
)
from registry_entries import GOOD


def write(tmp_path, text, name="demo"):
    p = tmp_path / f"{name}.toml"
    p.write_text(text)
    return p


def test_shipped_registry_loads():
    reg = load_registry()
    assert {"wiedner-itc23-table3", "scheerer-iitm23-return-level"} <= set(reg)
    t3 = reg["wiedner-itc23-table3"]
    assert t3.mode in MODES and t3.dataset == "containerized-low-latency" and len(t3.published) == 8
    assert all(p.unit == "us" and p.tolerance_abs == 0.005 for p in t3.published)
    assert t3.notebook_path.is_file()
    for entry in reg.values():
        assert entry.id == entry.source.stem
        assert entry.notebook_path.is_file() or entry_blockers(entry)


def test_good_entry_and_tolerances(tmp_path):
    e = load_entry_file(write(tmp_path, GOOD))
    pv = e.published_value("x")
    assert pv.matches(1.6) and pv.matches(1.4) and not pv.matches(1.61) and not pv.matches(float("nan"))
    assert pv.tolerance_text() == "±0.1 µs"
    with pytest.raises(KeyError, match="no \\[\\[published\\]\\] value named 'y'"):
        e.published_value("y")
    rel = load_entry_file(write(tmp_path, GOOD.replace("tolerance_abs = 0.1", "tolerance_rel = 0.01")))
    assert rel.published[0].matches(1.515) and not rel.published[0].matches(1.52)


@pytest.mark.parametrize("edit,message", [
    (lambda s: 'colour = "red"\n' + s, "^[^#]*unknown field 'colour'"),
    (lambda s: s.replace('title = "t"\n', ""), "missing required field 'title'"),
    (lambda s: s.replace('id = "demo"', 'id = "other"'), "must equal the file name"),
    (lambda s: s.replace('"published-data"', '"somewhere"'), "mode 'somewhere' is not one of"),
    (lambda s: s.replace("tolerance_abs = 0.1\n", ""), "needs tolerance_abs, tolerance_rel or decimals"),
    (lambda s: s.replace("tolerance_abs = 0.1", "decimals = 2\nrounding = 'ceiling'"),
     "rounding 'ceiling' is not one of"),
    (lambda s: s.replace("tolerance_abs = 0.1", "tolerance_abs = 0.1\nrounding = 'truncate'"),
     "rounding needs decimals"),
    (lambda s: s.replace('unit = "us"', 'unit = "us"\nrepeat = 1.5'), "field 'repeat' must be str or int"),
    (lambda s: s.replace("value = 1.5", 'value = "1.5"'), "field 'value' must be int or float"),
    (lambda s: s + "[[published]]\nname='x'\nvalue=1\nunit=''\ntolerance_abs=0\n", "duplicate published name"),
    (lambda s: s.replace('unit = "us"', 'unit = "us"\nsource = "p. 3"'),
     "\\[\\[published\\]\\] #1: unknown field 'source'"),
    (lambda s: "requires = [1]\n" + s, "'requires' must be a list"),
    (lambda s: "title = 'again'\n" + s, "not valid TOML"),
])
def test_malformed_entries_name_the_file(tmp_path, edit, message):
    path = write(tmp_path, edit(GOOD))
    with pytest.raises(RegistryError, match=message) as err:
        load_entry_file(path)
    assert str(path) in str(err.value)


PAPER = """id = "my-paper"
title = "My paper"
citation = "A. Author, My paper, 2024"
unstated = "which repeat"
[datasets]
local = "data"
shared = "containerized-low-latency"
"""


def make_paper(root, entries=None):
    if entries is None:
        entries = [("demo", GOOD.replace('citation = "c"\n', ""))]
    folder = root / "my-paper"
    (folder / "data").mkdir(parents=True)
    (folder / "paper.toml").write_text(PAPER)
    for name, text in entries:
        (folder / f"{name}.toml").write_text(text)
    return folder


def test_unknown_id_lists_known(tmp_path):
    write(tmp_path, GOOD)
    with pytest.raises(RegistryError, match="no registry entry 'nope' \\(known: demo\\)"):
        load_entry("nope", tmp_path)


def test_user_paper_folders_add_to_the_builtin_ones(tmp_path, monkeypatch):
    folder = make_paper(tmp_path)
    builtin = load_registry()
    monkeypatch.setenv("BENCHBOOK_PAPERS", str(tmp_path))  # a folder of paper folders
    reg = load_registry()
    assert set(reg) == set(builtin) | {"demo"}
    demo = reg["demo"]
    assert demo.citation == "A. Author, My paper, 2024" and demo.paper.unstated == "which repeat"
    assert demo.folder == folder.resolve() and demo.notebook_path == folder.resolve() / "x.ipynb"
    assert load_entry("demo").source == demo.source
    assert load_entry("demo", folder).id == "demo"  # as a notebook loads it: paper_dir = the paper folder
    monkeypatch.delenv("BENCHBOOK_PAPERS")
    assert set(load_registry(papers=[folder])) == set(reg)  # --papers DIR: the paper folder itself
    assert "demo" not in load_registry()
    assert folder.resolve() in paper_dirs([folder]) and (NOTEBOOKS_DIR / "wiedner-itc23").resolve() in paper_dirs()


def test_datasets_notebooks_and_citation_resolve(tmp_path):
    text = GOOD.replace('citation = "c"\n', "")
    text = text.replace('notebook = "x.ipynb"', 'notebook = "benchbook:evaluator-table.ipynb"')
    folder = make_paper(tmp_path, [("b", 'dataset = "local"\n' + text.replace('id = "demo"', 'id = "b"')),
                                   ("c", 'dataset = "shared"\n' + text.replace('id = "demo"', 'id = "c"')),
                                   ("d", 'dataset = "elsewhere"\n' + text.replace('id = "demo"', 'id = "d"'))])
    reg = load_registry(papers=[folder])
    assert reg["b"].notebook_path == NOTEBOOKS_DIR / "reusable" / "evaluator-table.ipynb"
    assert reg["b"].notebook_path.is_file()
    assert reg["b"].dataset_dir == (folder / "data").resolve()  # a path relative to the paper folder
    assert reg["c"].dataset_dir == PUBLISHED_DIR / "containerized-low-latency"  # a built-in dataset
    assert reg["d"].dataset_dir == PUBLISHED_DIR / "elsewhere"  # not in [datasets]: a built-in name


def test_duplicate_id_names_both_files(tmp_path):
    t3 = (NOTEBOOKS_DIR / "wiedner-itc23" / "wiedner-itc23-table3.toml").read_text()
    folder = make_paper(tmp_path, [("wiedner-itc23-table3", t3)])
    with pytest.raises(RegistryError, match="duplicate entry id 'wiedner-itc23-table3'") as err:
        load_registry(papers=[folder])
    assert str(NOTEBOOKS_DIR / "wiedner-itc23" / "wiedner-itc23-table3.toml") in str(err.value)
    assert str(folder.resolve() / "wiedner-itc23-table3.toml") in str(err.value)


@pytest.mark.parametrize("edit,message", [
    (lambda s: s.replace('id = "my-paper"', 'id = "other"'), "must equal the folder name 'my-paper'"),
    (lambda s: s.replace('citation = "A. Author, My paper, 2024"\n', ""), "missing required field 'citation'"),
    (lambda s: "year = 2024\n" + s, "unknown field 'year'"),
    (lambda s: s + "broken = 3\n", "\\[datasets\\] 'broken' must be a folder name"),
])
def test_malformed_paper_toml_names_the_file(tmp_path, edit, message):
    folder = make_paper(tmp_path)
    (folder / "paper.toml").write_text(edit(PAPER))
    with pytest.raises(RegistryError, match=message) as err:
        load_registry(papers=[folder])
    assert str(folder / "paper.toml") in str(err.value)


def test_papers_dir_that_is_no_paper_folder(tmp_path):
    with pytest.raises(RegistryError, match="neither a paper folder"):
        load_registry(papers=[tmp_path])
    with pytest.raises(RegistryError, match="paper folder not found"):
        load_registry(papers=[tmp_path / "missing"])


def test_capabilities():
    assert check_requirement("sh") is None
    reason = check_requirement("dpdk-testpmd-that-does-not-exist")
    assert reason and "not found on PATH" in reason
    lxc = check_requirement("lxc-start")
    dirs = os.environ.get("PATH", "").split(os.pathsep) + ["/usr/sbin", "/sbin"]
    installed = any(Path(d, "lxc-start").is_file() for d in dirs)
    assert (lxc is None) == installed, lxc
    with pytest.MonkeyPatch.context() as mp:  # a missing program's reason names its Debian package
        mp.setenv("PATH", "/nonexistent")
        mp.setitem(PROGRAM_PACKAGES, "no-such-program-xyz", "pkg-xyz")
        assert check_requirement("no-such-program-xyz") == (
            "program no-such-program-xyz not found on PATH (Debian package pkg-xyz; `make deps` installs it as root)")
    root = check_requirement("root")
    assert (root is None) == (os.geteuid() == 0)
    assert missing_requirements(["sh", "no-such-program-xyz"]) == [check_requirement("no-such-program-xyz")]


def test_entry_blockers(tmp_path):
    text = GOOD.replace('mode = "published-data"', 'mode = "published-data"\nrequires = ["no-such-program-xyz"]')
    text = text.replace("x.ipynb", "missing-notebook.ipynb")
    e = load_entry_file(write(tmp_path, text))
    reasons = entry_blockers(e)
    assert any("no-such-program-xyz" in r for r in reasons)
    assert any(r.startswith("notebook missing-notebook.ipynb not found") for r in reasons)
