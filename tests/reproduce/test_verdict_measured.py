"""The verdict of a measured entry (SPEC-21 section 5): the outcome rules over judged rows and principal claims,
k of m beside m * alpha, verdict.json /2 with everything needed to redo a verdict, /1 files still read, and the
guards that keep exact rows out of measured entries."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from benchbook.experiment.repetitions import Statistic, run_repetitions
from benchbook.reproduce.registry import load_entry_file
from benchbook.reproduce.verdict import Verdict
from benchbook.reproduce.verdict_rows import ClaimResult, MeasuredRow

ENTRY = '''id = "m"
title = "t"
citation = "c"
notebook = "x.ipynb"
mode = "local-measurement"
claim = "a runs at 100 Mbit/s and b slower"
[[published]]
name = "a rate"
value = 100.0
unit = "Mbit/s"
decimals = 0
arm = "a"
run_statistic = "rate"
margin_rel = 0.05
margin_source = ["emulation allowance"]
margin_note = "a local emulation of the paper's link"
value_range = "rate"
[[published]]
name = "b rate"
value = 100.0
unit = "Mbit/s"
arm = "b"
run_statistic = "rate"
margin_rel = 0.05
margin_source = ["paper spread"]
value_range = "rate"
[[claims]]
id = "a-faster"
text = "a is faster than b"
principal = true
test = "a > b"
a = "a:rate"
b = "b:rate"
'''


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    """Runs with known truth (a at 100, b at 80 Mbit/s, 6 runs each), the entry, and its judged verdict."""
    root = tmp_path_factory.mktemp("measured")
    (root / "m.toml").write_text(ENTRY)

    def run(ctx):
        rng = np.random.default_rng([ord(ctx.arm), ctx.repetition])
        return [Statistic("rate", {"a": 100.0, "b": 80.0}[ctx.arm] * math.exp(rng.normal(0, 0.01)), 500, "Mbit/s",
                          "bytes received x 8 / seconds")]

    out = root / "run"
    run_repetitions(out, {"a": None, "b": None}, 6, run, seed=11, progress=None)
    entry = load_entry_file(root / "m.toml")
    return entry, out, Verdict.for_entry(entry).judge_runs(out)


def test_judge_runs_adds_every_value_and_claim(judged):
    entry, out, v = judged
    assert v.kind == "measured" and [r.status for r in v.rows] == ["reproduced", "mismatch"]
    assert [c.verdict for c in v.claims] == ["holds"] and v.claim_status() == "reproduced"
    assert v.outcome == "mismatch" and not v.ok
    assert v.summary() == "1 of 2 reproduced (m·α = 0.1), 1 mismatch, claims: 1 of 1 hold"
    mult = v.multiplicity()
    assert (mult["k"], mult["m"], mult["mismatches"], mult["expected_mismatches"]) == (1, 2, 1, pytest.approx(0.1))
    assert mult["text"].startswith("1 of 2 reproduced; m·α = 0.1 mismatches expected by chance at α = 0.05")
    assert mult["p_chance"] == pytest.approx(1 - 0.95**2)


def test_verdict_json_2_holds_what_redoes_the_verdict_and_reads_back(judged, tmp_path):
    entry, out, v = judged
    v.add("context", None, 3.0, "", "", "info", "a number for context")
    path = v.write(tmp_path)
    data = json.loads(path.read_text())
    assert data["schema"] == "benchbook.verdict/2" and data["kind"] == "measured" and data["alpha"] == 0.05
    row = data["rows"][0]
    for key in ("kind", "arm", "run_statistic", "definition", "unit", "published", "margin", "runs", "values",
                "n_per_run", "estimate", "ci90", "ci95", "ci90_value", "ci95_value", "method", "seed", "alpha",
                "runs_needed", "noise_floor", "reason"):
        assert key in row, key
    assert row["margin"]["sources"] == ["emulation allowance"] and row["margin"]["print_precision"] == 0.5
    assert row["margin"]["note"] == "a local emulation of the paper's link" and row["margin"]["text"] == "±5 %"
    assert len(row["values"]) == row["runs"] == 6 and row["n_per_run"] == [500] * 6
    assert data["rows"][2] == {"name": "context", "published": None, "computed": 3.0, "unit": "", "runs": "",
                               "status": "info", "note": "a number for context", "tolerance": ""}
    claim = data["claims"][0]
    for key in ("id", "text", "principal", "test", "verdict", "a", "b", "values_a", "values_b", "delta", "ci90",
                "ci95", "method", "runs", "runs_needed", "reason"):
        assert key in claim, key
    # two arms (unpaired): which run each value comes from, N behind it, what the statistic is and its unit
    assert claim["run_ids_a"] == claim["run_ids_b"] == [1, 2, 3, 4, 5, 6] and claim["run_ids"] == []
    assert claim["n_per_run_a"] == claim["n_per_run_b"] == [500] * 6
    assert claim["definition_a"] == "bytes received x 8 / seconds" and claim["unit_a"] == claim["unit_b"] == "Mbit/s"
    plan = data["plan"]
    assert plan["plan"]["seed"] == 11 and plan["plan"]["repetitions"] == 6 and len(plan["order"]) == 12
    assert [(r["arm"], r["repetition"], r["status"], r["valid"]) for r in plan["runs"]] == [
        (s["arm"], s["repetition"], "complete", True) for s in plan["order"]]
    assert all(r["started"] <= r["ended"] for r in plan["runs"])
    assert data["claim"] == {"text": "a runs at 100 Mbit/s and b slower", "rows": [], "status": "reproduced",
                             "claims": ["a-faster"]}
    assert data["multiplicity"]["m"] == 2 and data["counts"]["reproduced"] == 1
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["verdict"]["outcome"] == "mismatch"
    back = Verdict.load(tmp_path)
    assert back.kind == "measured" and back.outcome == "mismatch" and back.summary() == v.summary()
    assert isinstance(back.rows[0], MeasuredRow) and back.rows[0] == v.rows[0]
    assert back.claims == v.claims and back.multiplicity() == v.multiplicity()


def test_the_tables_show_interval_margin_runs_and_claims(judged):
    entry, out, v = judged
    console = Console(record=True, width=200)
    console.print(v.rich_table())
    text = console.export_text()
    r = v.rows[0]
    assert "95 % interval" in text and f"[{r.ci95_value[0]:.4g}, {r.ci95_value[1]:.4g}] Mbit/s" in text
    assert "±5 %" in text and "6 (a)" in text and "1 of 2 reproduced; m·α = 0.1" in text
    assert "a-faster *" in text and "holds" in text and "margin ±5 % from emulation allowance" in text
    frame = v.to_frame()
    assert list(frame.columns) == ["name", "published", "estimate", "95 % interval", "margin", "runs", "status",
                                   "note"]
    html = v._repr_html_()
    assert "1 of 2 reproduced; m·α" in html and "a-faster" in html and "principal claim: <b>reproduced</b>" in html


def _verdict(statuses: list[str], claims: list[tuple[str, bool]] = ()) -> Verdict:
    v = Verdict("x", kind="measured")
    v.rows = [MeasuredRow(f"r{i}", 1.0, None, status=s) for i, s in enumerate(statuses)]
    v.claims = [ClaimResult(f"c{i}", "t", principal, "a > b", verdict) for i, (verdict, principal) in
                enumerate(claims)]
    return v


@pytest.mark.parametrize(("rows", "claims", "outcome", "claim_status"), [
    (["reproduced", "reproduced"], [("holds", True)], "reproduced", "reproduced"),
    (["reproduced", "mismatch"], [("holds", True)], "mismatch", "reproduced"),
    (["reproduced"], [("fails", True)], "mismatch", "mismatch"),                 # a failed principal claim
    (["reproduced"], [("fails", False), ("holds", True)], "reproduced", "reproduced"),  # not principal
    (["reproduced", "inconclusive"], [("holds", True)], "inconclusive", "reproduced"),
    (["reproduced"], [("inconclusive", True)], "inconclusive", "inconclusive"),
    (["mismatch", "inconclusive"], [("holds", True)], "mismatch", "reproduced"),
    (["reproduced", "not derivable"], [("holds", True)], "partial", "reproduced"),
    (["reproduced", "not comparable"], [("holds", True)], "partial", "reproduced"),
    (["reproduced"], [("not derivable", True)], "partial", "not derivable"),
    (["reproduced"], [("not derivable", True), ("fails", True)], "mismatch", "mismatch"),
    (["figure redrawn", "info"], [], "figure redrawn", "figure redrawn"),
    (["not comparable", "figure redrawn"], [], "partial", "figure redrawn"),
    (["inconclusive", "not derivable"], [], "inconclusive", "not derivable"),
])
def test_outcome_rules(rows, claims, outcome, claim_status):
    v = _verdict(rows, claims)
    assert v.outcome == outcome and v.claim_status() == claim_status


def test_k_of_m_counts_judged_rows_only():
    v = _verdict(["reproduced"] * 17 + ["mismatch"] * 2 + ["inconclusive"] + ["not comparable", "info"])
    m = v.multiplicity()
    assert (m["k"], m["m"], m["mismatches"], m["inconclusive"]) == (17, 20, 2, 1)
    assert m["expected_mismatches"] == pytest.approx(1.0)
    assert m["text"] == ("17 of 20 reproduced; m·α = 1 mismatches expected by chance at α = 0.05 (2 observed, "
                         "P(at least 2) = 0.26)")
    assert _verdict(["not comparable"]).multiplicity() is None


def test_a_v1_file_still_loads_with_its_figure_rows_redrawn(tmp_path):
    v1 = {"schema": "benchbook.verdict/1", "figure_id": "wiedner-itc23-fig9", "title": "t", "citation": "c",
          "ok": True, "outcome": "reproduced", "claim": {"text": "", "rows": [], "status": "reproduced"},
          "counts": {"match": 0, "mismatch": 0, "not derivable": 0, "figure only": 2, "info": 0},
          "summary": "0/0 published values matched, 2 figure only",
          "rows": [{"name": "Figure 9", "published": None, "computed": None, "unit": "", "runs": "",
                    "status": "figure only", "note": "", "tolerance": ""},
                   {"name": "Figure 9b", "published": None, "computed": None, "unit": "", "runs": "",
                    "status": "figure only", "note": "", "tolerance": ""}],
          "figures": {}, "notes": []}
    (tmp_path / "verdict.json").write_text(json.dumps(v1))
    back = Verdict.load(tmp_path)
    assert back.kind == "published-data" and [r.status for r in back.rows] == ["figure redrawn"] * 2
    assert back.outcome == "figure redrawn" and back.summary() == "0/0 published values matched, 2 figure redrawn"


def test_measured_rows_come_from_the_judge_only(judged, tmp_path):
    entry, out, _ = judged
    v = Verdict.for_entry(entry)
    with pytest.raises(ValueError, match="call verdict.judge_runs\\(output_dir\\), not check"):
        v.check("a rate", 100.0)
    with pytest.raises(ValueError, match="not one of reproduced, mismatch, inconclusive"):
        v.add("x", 1.0, 1.0, status="match")
    with pytest.raises(ValueError, match="rows come from judge_runs"):
        v.add("x", 1.0, 1.0, status="reproduced")
    v.judge_runs(out)
    with pytest.raises(ValueError, match=r"rows \['a rate', 'b rate'\] exist already"):
        v.judge_runs(out)
    pub = tmp_path / "m.toml"
    pub.write_text(ENTRY.split("[[published]]")[0].replace('"local-measurement"', '"published-data"'))
    with pytest.raises(ValueError, match="judge_runs\\(\\) judges a measured entry across runs"):
        Verdict.for_entry(load_entry_file(pub)).judge_runs(out)
    with pytest.raises(ValueError, match="not one of match, mismatch, not derivable, figure redrawn, info"):
        Verdict.for_entry(load_entry_file(pub)).add("x", 1, 1, status="reproduced")


def test_a_verdict_without_judge_runs_says_so(judged, tmp_path):
    entry, out, _ = judged
    v = Verdict.for_entry(entry)
    v.figure_redrawn("Figure 1")
    v.write(tmp_path)
    data = json.loads((tmp_path / "verdict.json").read_text())
    assert [r["status"] for r in data["rows"]] == ["figure redrawn", "not derivable", "not derivable"]
    assert "judge_runs was not called" in data["rows"][1]["reason"] and data["outcome"] == "partial"


def test_measured_mode_entries_without_declared_values_keep_exact_rows(tmp_path):
    p = Path(tmp_path / "d.toml")
    p.write_text(ENTRY.split("[[published]]")[0].replace('id = "m"', 'id = "d"'))
    v = Verdict.for_entry(load_entry_file(p))
    assert v.kind == "exact-measured"
    v.add("pre packets", 300000, 300000, "packets", "", "match")
    assert v.outcome == "reproduced" and v.summary() == "1/1 published values matched"
