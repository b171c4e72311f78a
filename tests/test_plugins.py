"""benchbook.plugins.Registry, the one shape of the plug-in points (backends, DuT kinds, engines, isolation modes)."""

from __future__ import annotations

import sys

import pytest

from benchbook.engine.options import ENGINES
from benchbook.plugins import Registry
from benchbook.testbed.backends import BACKENDS
from benchbook.testbed.dut import DUT_KINDS
from benchbook.testbed.isolation import ISOLATION_MODES


def test_a_reference_is_imported_only_when_asked_for(tmp_path, monkeypatch):
    code = "class Thing:\n    @staticmethod\n    def make():\n        return 7\n"
    (tmp_path / "bb_planted_plugin.py").write_text(code)
    monkeypatch.syspath_prepend(str(tmp_path))
    reg: Registry = Registry("thing", {"dec": "decimal:Decimal"})
    reg.register("planted", "bb_planted_plugin:Thing")
    reg.register("made", "bb_planted_plugin:Thing.make")   # a dotted attribute
    assert "bb_planted_plugin" not in sys.modules
    assert reg.get("planted").__name__ == "Thing" and "bb_planted_plugin" in sys.modules
    assert reg.get("made")() == 7
    assert reg.get("dec")("1.5") * 2 == 3
    monkeypatch.delitem(sys.modules, "bb_planted_plugin")


def test_an_object_registers_as_itself_and_names_are_sorted():
    reg: Registry = Registry("thing")
    reg.register("b", len)
    reg.register("a", max)
    assert reg.get("b") is len and reg.names() == ["a", "b"] == list(reg) and "a" in reg and "c" not in reg


def test_errors_name_the_plug_in_point_and_what_is_known():
    reg: Registry = Registry("widget", {"x": "benchbook.no_such_module:Thing", "y": "decimal:NoSuchThing"})
    with pytest.raises(KeyError, match=r"unknown widget 'z'; known: x, y"):
        reg.get("z")
    with pytest.raises(RuntimeError, match=r"widget 'x' \(benchbook.no_such_module:Thing\) is not available"):
        reg.get("x")
    with pytest.raises(RuntimeError, match=r"widget 'y' .* is not available"):
        reg.get("y")
    with pytest.raises(ValueError, match="not a 'module:attribute' reference"):
        reg.register("w", "decimal.Decimal")


def test_every_registered_plug_in_resolves():
    for reg in (BACKENDS, DUT_KINDS, ENGINES, ISOLATION_MODES):
        for name in reg.names():
            assert reg.get(name) is not None, (reg.what, name)
    assert {"local", "testbed", "ssh"} <= set(BACKENDS) and {"testpmd", "ip-forward", "testpmd-lxc"} <= set(DUT_KINDS)
    assert set(ENGINES) == {"local", "dask"} and set(ISOLATION_MODES) == {"none", "v1", "v2"}
