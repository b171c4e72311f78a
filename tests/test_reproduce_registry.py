"""The figure registry: the shipped entries load; malformed entries are errors naming the file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from benchbook.reproduce.capabilities import PROGRAM_PACKAGES, check_requirement, entry_blockers, missing_requirements
from benchbook.reproduce.registry import MODES, RegistryError, load_entry, load_entry_file, load_registry

GOOD = '''id = "demo"
title = "t"
citation = "c"
notebook = "notebooks/scheerer-iitm23-evt.ipynb"
mode = "published-data"
[[published]]
name = "x"
value = 1.5
unit = "us"
tolerance_abs = 0.1
'''


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
    (lambda s: s.replace("tolerance_abs = 0.1\n", ""), "needs tolerance_abs or tolerance_rel"),
    (lambda s: s.replace("value = 1.5", 'value = "1.5"'), "field 'value' must be int or float"),
    (lambda s: s + "[[published]]\nname='x'\nvalue=1\nunit=''\ntolerance_abs=0\n", "duplicate published name"),
    (lambda s: s.replace('unit = "us"', 'unit = "us"\nsource = "p. 3"'), "\\[\\[published\\]\\] #1: unknown field 'source'"),
    (lambda s: "requires = [1]\n" + s, "'requires' must be a list"),
    (lambda s: "title = 'again'\n" + s, "not valid TOML"),
])
def test_malformed_entries_name_the_file(tmp_path, edit, message):
    path = write(tmp_path, edit(GOOD))
    with pytest.raises(RegistryError, match=message) as err:
        load_entry_file(path)
    assert str(path) in str(err.value)


def test_unknown_id_lists_known(tmp_path):
    write(tmp_path, GOOD)
    with pytest.raises(RegistryError, match="no registry entry 'nope' \\(known: demo\\)"):
        load_entry("nope", tmp_path)
    os.environ["BENCHBOOK_FIGURES"] = str(tmp_path)
    try:
        assert set(load_registry()) == {"demo"}
    finally:
        del os.environ["BENCHBOOK_FIGURES"]


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
    text = GOOD.replace('mode = "published-data"', 'mode = "local-measurement"\nrequires = ["no-such-program-xyz"]')
    text = text.replace("scheerer-iitm23-evt", "missing-notebook")
    e = load_entry_file(write(tmp_path, text))
    reasons = entry_blockers(e)
    assert any("no-such-program-xyz" in r for r in reasons)
    assert any("notebook notebooks/missing-notebook.ipynb not found" in r for r in reasons)
