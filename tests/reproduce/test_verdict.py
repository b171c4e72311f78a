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
    v.figure_redrawn("Figure 4")
    v.add_figure("fig", {"html": "fig.html", "png": "unavailable: no chromium"})
    assert not v.ok
    path = v.write(tmp_path)
    # 'c' was never checked: finalize reports it instead of dropping it silently
    data = json.loads(path.read_text())
    rows = {r["name"]: r for r in data["rows"]}
    assert rows["c"]["status"] == "not derivable" and "did not compute" in rows["c"]["note"]
    assert rows["a"]["computed"] == pytest.approx(100.185) and rows["a"]["runs"] == "r0"
    assert data["counts"] == {"match": 1, "mismatch": 1, "not derivable": 1, "figure redrawn": 1, "info": 0}
    assert data["schema"] == "benchbook.verdict/2" and data["kind"] == "published-data"
    assert data["ok"] is False
    back = Verdict.load(tmp_path)
    assert [r.status for r in back.rows] == [r.status for r in v.rows]
    assert back.summary() == "1/2 published values matched, 1 mismatch, 1 not derivable, 1 figure redrawn"
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
    with pytest.raises(ValueError, match="expected schema 'benchbook.verdict/1' or 'benchbook.verdict/2'"):
        Verdict.load(tmp_path)
    (tmp_path / "verdict.json").write_text('{"schema": ')
    with pytest.raises(ValueError, match=r"verdict.json:1: not valid JSON"):
        Verdict.load(tmp_path)


def pv_of(tmp_path, body: str):
    p = tmp_path / "r.toml"
    p.write_text('id = "r"\ntitle = "t"\ncitation = "c"\nnotebook = "x.ipynb"\nmode = "published-data"\n'
                 '[[published]]\nname = "x"\nunit = "us"\n' + body)
    return load_entry_file(p).published[0]


def test_printed_rounding_in_decimal_arithmetic(tmp_path):
    # truncated print: 9969.078 printed as 9969.07 matches exactly, 9969.08 (rounded) does not
    trunc = pv_of(tmp_path, 'value = 9969.07\ndecimals = 2\nrounding = "truncate"\n')
    assert trunc.matches(9969.078) and trunc.matches(9969.07) and trunc.matches(9969.0799999)
    assert not trunc.matches(9969.08) and not trunc.matches(9969.069999)
    assert trunc.tolerance_text() == "printed with 2 decimals (truncate), exact"
    up = pv_of(tmp_path, 'value = 100.19\ndecimals = 2\n')  # half-up is the default
    assert up.matches(100.185) and not up.matches(100.1849999) and up.matches(100.194999)
    even = pv_of(tmp_path, 'value = 100.18\ndecimals = 2\nrounding = "half-even"\n')
    assert even.matches(100.185) and not even.matches(100.174999) and not even.matches(100.1851)
    assert pv_of(tmp_path, 'value = 100.18\ndecimals = 2\nrounding = "half-even"\n').matches(100.175)
    # 0.1 + 0.2 is 0.30000000000000004 in binary floating point: printed with 1 decimal it is 0.3
    assert pv_of(tmp_path, 'value = 0.3\ndecimals = 1\n').matches(0.1 + 0.2)
    # rounding then a tolerance: 505 printed whole, "approximately", within 2
    band = pv_of(tmp_path, 'value = 505\ndecimals = 0\ntolerance_abs = 2\n')
    assert band.matches(506.6) and band.matches(502.5) and not band.matches(507.5)
    assert not trunc.matches(None) and not trunc.matches(float("nan")) and not trunc.matches(float("inf"))


@pytest.mark.parametrize("published,computed,match", [
    (1000.0, 991.0, True),     # 9 away: inside the relative band (10), outside the absolute one (1)
    (1000.0, 1011.0, False),   # 11 away: outside both
    (1000.0, 990.0, True),     # exactly the larger band
    (1.0, 1.9, True),          # published far below: the absolute band (1) is the larger
    (1.0, 2.01, False),
    (1e6, 0.0, False),         # published far above computed
    (0.0, 0.5, True),          # relative band of 0 is 0, absolute 1 holds
])
def test_both_tolerances_take_the_larger(tmp_path, published, computed, match):
    pv = pv_of(tmp_path, f"value = {published}\ntolerance_abs = 1\ntolerance_rel = 0.01\n")
    assert pv.allowed_deviation() == max(1.0, 0.01 * published)
    assert pv.matches(computed) is match
    assert pv.tolerance_text() == "±1 µs or ±1 % (the larger)"


def test_outcome_and_claim(tmp_path):
    p = tmp_path / "o.toml"
    p.write_text(ENTRY.replace('id = "v"', 'id = "o"') .replace('mode = "published-data"',
                 'mode = "published-data"\nclaim = "a is about 100"\nclaim_rows = ["a"]'))
    e = load_entry_file(p)
    v = Verdict.for_entry(e)
    v.check("a", 100.19)
    v.check("b", 505.0)
    v.not_derivable("c", "source run absent from the dataset")
    assert v.outcome == "partial" and v.claim_status() == "reproduced"
    data = json.loads(v.write(tmp_path).read_text())
    assert data["outcome"] == "partial"
    assert data["claim"] == {"text": "a is about 100", "rows": ["a"], "status": "reproduced"}
    back = Verdict.load(tmp_path)
    assert back.outcome == "partial" and back.claim_text == "a is about 100" and back.claim_rows == ("a",)
    v2 = Verdict.for_entry(e)
    v2.check("a", 90.0)
    assert v2.outcome == "mismatch" and v2.claim_status() == "mismatch"
    v3 = Verdict.for_entry(e)
    v3.check("b", 505.0)
    v3.check("c", 1.0)
    assert v3.outcome == "reproduced" or v3.counts()["not derivable"] == 0
    v3.finalize()  # 'a' was not computed: not derivable, so the claim is not derivable either
    assert v3.outcome == "partial" and v3.claim_status() == "not derivable"
    v4 = Verdict.for_entry(e)
    for name, value in (("a", 100.19), ("b", 505.0), ("c", 1.0)):
        v4.check(name, value)
    assert v4.outcome == "reproduced" and v4.claim_status() == "reproduced"
