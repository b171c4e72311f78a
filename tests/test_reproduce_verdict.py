"""Verdict rows, tolerance checks, verdict.json and the run-record side files."""

from __future__ import annotations

import json

import numpy as np
import pytest

from benchbook.reproduce.registry import load_entry_file
from benchbook.reproduce.verdict import Verdict

ENTRY = '''id = "v"
title = "t"
citation = "c"
notebook = "notebooks/x.ipynb"
mode = "published-data"
[[published]]
name = "a"
value = 100.19
unit = "us"
tolerance_abs = 0.005
[[published]]
name = "b"
value = 505
unit = "us"
tolerance_rel = 0.01
[[published]]
name = "c"
value = 1
unit = ""
tolerance_abs = 0
'''


@pytest.fixture()
def entry(tmp_path):
    p = tmp_path / "v.toml"
    p.write_text(ENTRY)
    return load_entry_file(p)


def test_statuses_and_roundtrip(entry, tmp_path):
    v = Verdict.for_entry(entry)
    assert v.check("a", np.float64(100.185), runs="r0").status == "match"  # rounds to 100.19
    assert v.check("b", 511.0).status == "mismatch"  # 1.2 % off
    v.figure_only("Figure 4")
    v.add_figure("fig", {"html": "fig.html", "png": "unavailable: no chromium"})
    assert not v.ok
    path = v.write(tmp_path)
    # 'c' was never checked: finalize reports it instead of dropping it silently
    data = json.loads(path.read_text())
    rows = {r["name"]: r for r in data["rows"]}
    assert rows["c"]["status"] == "not derivable" and "did not compute" in rows["c"]["note"]
    assert rows["a"]["computed"] == pytest.approx(100.185) and rows["a"]["runs"] == "r0"
    assert data["counts"] == {"match": 1, "mismatch": 1, "not derivable": 1, "figure only": 1, "info": 0}
    assert data["ok"] is False
    back = Verdict.load(tmp_path)
    assert [r.status for r in back.rows] == [r.status for r in v.rows]
    assert back.summary() == "1/2 published values matched, 1 mismatch, 1 not derivable, 1 figure only"
    # the run record picks these up (benchbook.experiment.runner folds them in)
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["verdict"]["mismatch"] == 1 and metrics["verdict"]["ok"] is False
    caps = json.loads((tmp_path / "capabilities.json").read_text())
    assert caps == [{"capability": "figure export png", "status": "missing",
                     "detail": "fig.png: unavailable: no chromium"}]


def test_not_derivable_and_bad_status(entry):
    v = Verdict.for_entry(entry)
    assert v.check("a", None).status == "not derivable"
    assert v.check("b", float("nan")).status == "not derivable"
    assert v.ok
    with pytest.raises(ValueError, match="not one of"):
        v.add("x", 1, 2, status="fine")


def test_load_rejects_other_files(tmp_path):
    (tmp_path / "verdict.json").write_text('{"schema": "other"}')
    with pytest.raises(ValueError, match="expected schema"):
        Verdict.load(tmp_path)
    (tmp_path / "verdict.json").write_text('{"schema": ')
    with pytest.raises(ValueError, match=r"verdict.json:1: not valid JSON"):
        Verdict.load(tmp_path)
