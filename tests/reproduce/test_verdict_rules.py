"""The rules of a reproduced entry's verdict (reproduce/verdict.py), as a user of `benchbook reproduce` meets them:
the kinds of entry and the words of rows, claims and outcomes with their ranking and exit status; the rows
check() / not_derivable() / figure_redrawn() / add() write, field by field; the tolerance of a published value at
its boundary (exactly at it, one ulp past it); the outcome and principal-claim rules of both kinds, with k of m
beside m * alpha; verdict.json written then read back equal (/2, and /1 or minimal files with their defaults);
the side files metrics.json and capabilities.json; and the exact tables, notes and colours printed.

Data: the registry's published-data entries rebuilt from the values `benchbook reproduce` recorded for them
(tests/data/reproduce-verdicts.json), and the measured test entry tests/data/measured-paper/measured-intervals.toml
judged over runs drawn by its notebook's own seeded run function (known_truth.ipynb: 8 runs per arm, seed 2026),
whose verdict holds every row status and every claim verdict."""

from __future__ import annotations

import io
import json
import math
from dataclasses import replace
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from benchbook.commands.reproduce import EXIT_CODES
from benchbook.experiment.repetitions import Statistic, run_repetitions
from benchbook.reproduce import verdict as verdict_module
from benchbook.reproduce.registry import FigureEntry, load_entry_file, load_registry
from benchbook.reproduce.verdict import (
    EXACT_MEASURED,
    MEASURED,
    OUTCOMES,
    PUBLISHED_DATA,
    SCHEMA,
    SCHEMAS,
    VERDICT_FILE,
    Verdict,
)
from benchbook.reproduce.verdict_rows import ClaimResult, MeasuredRow, VerdictRow

DATA = Path(__file__).resolve().parents[1] / "data"
SNAPSHOT = json.loads((DATA / "reproduce-verdicts.json").read_text(encoding="utf-8"))["entries"]
MEASURED_ENTRY = DATA / "measured-paper" / "measured-intervals.toml"


@pytest.fixture(scope="module")
def registry():
    return load_registry(use_env=False)


# -- runs with known truth (tests/data/measured-paper/known_truth.ipynb, its run function verbatim) ---------------

ARMS = {"a": {"rate_mbps": 100.0}, "b": {"rate_mbps": 80.0}}
SEED = 2026


def _one_run(ctx):
    rng = np.random.default_rng([SEED, list(ARMS).index(ctx.arm), ctx.repetition])
    rate = ctx.config["rate_mbps"] * np.exp(rng.normal(0, 0.01))
    stats = [Statistic("rate_mbps", rate, 1000, "Mbit/s", "bytes received x 8 / seconds, drawn with known truth")]
    if ctx.arm == "a":
        share = 0.505 + rng.normal(0, 0.01)
        stats += [
            Statistic("rtt_ms", 20.0 * np.exp(rng.normal(0, 0.3)), 1000, "ms", "median RTT of the run's packets"),
            Statistic("jain", min(1.0, 0.985 + rng.normal(0, 0.002)), 2, "", "Jain's index of the two flows' rates"),
            Statistic("p99.9_ms", 30.0 * np.exp(rng.normal(0, 0.05)), 1000, "ms", "p99.9 of the packets' delay"),
            Statistic("converge_s", 3.0 * np.exp(rng.normal(0, 0.05)), None, "s", "time until the rates settle"),
            Statistic("flow1_mbps", rate * share, 500, "Mbit/s", "flow 1's rate"),
            Statistic("flow2_mbps", rate * (1 - share), 500, "Mbit/s", "flow 2's rate"),
            Statistic("probes_delivered", float(rng.binomial(200, 0.97)), None, "", "probes that arrived"),
            Statistic("probes_sent", 200.0, None, "", "probes sent"),
        ]
    return stats


@pytest.fixture(scope="module")
def known_truth(tmp_path_factory):
    """(entry, run directory, the verdict judged from it at alpha 0.05)."""
    out = tmp_path_factory.mktemp("known-truth") / "run"
    run_repetitions(out, ARMS, 8, _one_run, seed=SEED, progress=None)
    entry = load_entry_file(MEASURED_ENTRY)
    return entry, out, Verdict.for_entry(entry).judge_runs(out)


def _entry(tmp_path: Path, text: str) -> FigureEntry:
    """An entry file written under its id (the registry wants the file named as the entry)."""
    entry_id = text.split('"')[1]
    path = tmp_path / f"{entry_id}.toml"
    path.write_text(text, encoding="utf-8")
    return load_entry_file(path)


PUBLISHED = '''id = "pd"
title = "Table 3: maximum latency"
citation = "A. Author et al., A Paper, 2023"
notebook = "x.ipynb"
mode = "published-data"
claim = "a stays near 100 us"
claim_rows = ["a"]
notes = "values transcribed from the paper's Table 3"
[[published]]
name = "a"
value = 100.19
unit = "us"
tolerance_abs = 0.005
note = "Table 3, first row"
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
def pd_entry(tmp_path):
    return _entry(tmp_path, PUBLISHED)


def _text(renderable, width: int = 100, styles: bool = False) -> str:
    console = Console(record=True, width=width, force_terminal=styles, color_system="standard" if styles else None,
                      file=io.StringIO())
    console.print(renderable)
    return console.export_text(styles=styles)


# -- words, kinds, outcomes and their exit status -----------------------------------------------------------------


def test_kinds_are_the_words_verdict_json_holds(registry, known_truth):
    assert (PUBLISHED_DATA, MEASURED, EXACT_MEASURED) == ("published-data", "measured", "exact-measured")
    assert (VERDICT_FILE, SCHEMA, SCHEMAS) == ("verdict.json", "benchbook.verdict/2",
                                               ("benchbook.verdict/1", "benchbook.verdict/2"))
    assert Verdict.for_entry(registry["wiedner-itc23-table3"]).kind == "published-data"
    demo = Verdict.for_entry(registry["benchbook-latency-demo"])   # measured mode, no value declared: exact rows
    assert demo.kind == "exact-measured" and not demo.measured and demo.to_dict()["kind"] == "exact-measured"
    _, _, v = known_truth
    assert v.kind == "measured" and v.measured and v.to_dict()["kind"] == "measured"
    assert Verdict("x").kind == "published-data" and Verdict("x").to_dict()["kind"] == "published-data"


def test_outcomes_rank_worst_last_and_give_the_exit_status():
    """`reproduce --all` exits with the worst outcome: failed > mismatch > inconclusive > partial > figure redrawn >
    reproduced (docs/statistics.md), each with its exit status."""
    assert OUTCOMES == ("reproduced", "figure redrawn", "partial", "inconclusive", "mismatch", "failed")
    assert [EXIT_CODES[o] for o in OUTCOMES] == [0, 0, 4, 6, 1, 5]


# -- the rows a notebook writes -------------------------------------------------------------------------------------


def test_check_writes_the_row_with_both_notes_and_the_tolerance(pd_entry):
    v = Verdict.for_entry(pd_entry)
    row = v.check("a", np.float64(100.185), runs="r0", note="median of 3 repeats")
    assert row.as_dict() == {"name": "a", "published": 100.19, "computed": 100.185, "unit": "us", "runs": "r0",
                             "status": "match", "note": "median of 3 repeats; Table 3, first row",
                             "tolerance": "±0.005 µs"}
    assert type(row.computed) is float
    plain = v.check("b", 511.0)   # no runs, no note of its own: the paper's note only (none here)
    assert plain.as_dict() == {"name": "b", "published": 505.0, "computed": 511.0, "unit": "us", "runs": "",
                               "status": "mismatch", "note": "", "tolerance": "±1 %"}
    only_paper = Verdict.for_entry(pd_entry).check("a", 100.19)
    assert only_paper.note == "Table 3, first row" and only_paper.runs == ""


@pytest.mark.parametrize("computed", [None, math.nan, math.inf, -math.inf, np.float64(math.nan)])
def test_a_value_that_could_not_be_computed_is_not_derivable_without_a_value(pd_entry, computed):
    v = Verdict.for_entry(pd_entry)
    row = v.check("b", computed)
    assert row.status == "not derivable" and row.computed is None and row.as_dict()["computed"] is None
    assert v.outcome == "partial" and v.ok


def test_not_derivable_figure_redrawn_and_info_rows(pd_entry):
    v = Verdict.for_entry(pd_entry)
    assert v.not_derivable("c", "the run is not in the dataset").as_dict() == {
        "name": "c", "published": 1.0, "computed": None, "unit": "", "runs": "", "status": "not derivable",
        "note": "the run is not in the dataset", "tolerance": "±0"}
    assert v.figure_redrawn("Figure 4").as_dict() == {
        "name": "Figure 4", "published": None, "computed": None, "unit": "", "runs": "", "status": "figure redrawn",
        "note": "no published numbers to compare: the figure is redrawn", "tolerance": ""}
    # verdict/1 notebooks call it figure_only (notebooks/wiedner-itc23 does)
    assert v.figure_only("Figure 5", runs="r1; r2").as_dict() == {
        "name": "Figure 5", "published": None, "computed": None, "unit": "", "runs": "r1; r2",
        "status": "figure redrawn", "note": "no published numbers to compare: the figure is redrawn", "tolerance": ""}
    assert v.add("context", None, np.int64(3)).as_dict() == {
        "name": "context", "published": None, "computed": 3, "unit": "", "runs": "", "status": "info", "note": "",
        "tolerance": ""}
    assert [r.status for r in v.rows] == ["not derivable", "figure redrawn", "figure redrawn", "info"]


@pytest.mark.parametrize(("value", "plain"), [
    (np.int64(7), 7), (np.float32(0.5), 0.5), (np.bool_(True), True), (True, True), ("n/a", "n/a"), (None, None),
    (Decimal("1.25"), "1.25"), (12, 12), (2.5, 2.5),
])
def test_values_are_kept_as_plain_json(value, plain):
    row = Verdict("x").add("v", value, value)
    assert row.published == plain and type(row.published) is type(plain)
    assert json.loads(json.dumps(row.as_dict()))["computed"] == plain


def test_refusals_name_the_verdict_the_status_and_what_to_call(pd_entry, known_truth):
    v = Verdict.for_entry(pd_entry)
    with pytest.raises(ValueError) as bad:
        v.add("x", 1, 2, status="reproduced")
    assert str(bad.value) == ("verdict status 'reproduced' is not one of match, mismatch, not derivable, figure "
                              "redrawn, info (the statuses of a published-data entry)")
    with pytest.raises(KeyError, match=r"pd.toml: no \[\[published\]\] value named 'z' \(known: 'a', 'b', 'c'\)"):
        v.check("z", 1.0)
    with pytest.raises(ValueError) as no_entry:
        Verdict("x").check("a", 1.0)
    assert str(no_entry.value) == "check() by name needs a Verdict created with Verdict.for_entry(entry)"
    with pytest.raises(ValueError) as no_entry:
        Verdict("x").not_derivable("a", "why")
    assert str(no_entry.value) == "not_derivable() by name needs a Verdict created with Verdict.for_entry(entry)"
    entry, out, _ = known_truth
    m = Verdict.for_entry(entry)
    with pytest.raises(ValueError) as judged_only:
        m.add("a: rate", 100.0, 99.0, status="reproduced")
    assert str(judged_only.value) == ("measured-intervals: a measured entry's 'reproduced' rows come from "
                                      "judge_runs(output_dir); add only info and figure redrawn rows")
    assert m.add("note", None, 1.0).status == "info" and m.figure_redrawn("Figure 1").status == "figure redrawn"
    with pytest.raises(ValueError) as not_judged:
        Verdict.for_entry(pd_entry).judge_runs(out)
    assert str(not_judged.value) == ("pd: judge_runs() judges a measured entry across runs; this verdict is of kind "
                                     "published-data (use check())")
    with pytest.raises(ValueError) as no_entry:
        Verdict("m", kind="measured").judge_runs(out)
    assert str(no_entry.value) == ("m: judge_runs() judges a measured entry across runs; this verdict is of kind "
                                   "measured (use check())")


# -- a published value's tolerance at its boundary -------------------------------------------------------------------


@pytest.mark.parametrize(("entry_id", "name", "at_bound"), [
    # wiedner-itc23-table3: 9969.08 µs printed with 2 decimals, +-0.005 µs
    ("wiedner-itc23-table3", "Container kernel-space / non-optimized vanilla", (9969.075, 9969.085)),
    # scheerer-iitm23-return-level: "approximately 505 µs", +-1 µs
    ("scheerer-iitm23-return-level", "10000-observation return level", (504.0, 506.0)),
    # xi printed as -0.356, +-0.015 (a negative value)
    ("scheerer-iitm23-return-level", "xi 95% CI lower", (-0.371, -0.341)),
])
def test_exactly_at_the_tolerance_matches_one_ulp_past_it_does_not(registry, entry_id, name, at_bound):
    """The deviation is taken between the decimals the numbers print as, so the bound itself matches and the next
    float beyond it does not."""
    low, high = at_bound
    for computed, status in ((low, "match"), (high, "match"), (math.nextafter(low, -math.inf), "mismatch"),
                             (math.nextafter(high, math.inf), "mismatch"), (math.nextafter(low, math.inf), "match"),
                             (math.nextafter(high, -math.inf), "match")):
        v = Verdict.for_entry(registry[entry_id])
        assert v.check(name, computed).status == status, computed
        assert v.outcome == ("reproduced" if status == "match" else "mismatch") and v.ok is (status == "match")


def test_a_value_printed_with_decimals_is_rounded_as_printed_before_the_comparison(tmp_path):
    entry = _entry(tmp_path, PUBLISHED.replace('id = "pd"', 'id = "dec"').replace(
        "tolerance_abs = 0.005\n", 'decimals = 2\nrounding = "half-up"\n', 1))
    v = Verdict.for_entry(entry)
    assert v.check("a", 100.185).status == "match"                                  # prints as 100.19
    assert v.check("a", math.nextafter(100.185, -math.inf)).status == "mismatch"    # prints as 100.18
    assert v.check("a", 100.19499999999).status == "match"
    assert v.check("a", 100.195).status == "mismatch"                               # prints as 100.20
    assert v.rows[0].tolerance == "printed with 2 decimals (half-up), exact"
    # the table prints the computed value itself (up to 4 decimals), not its rounded print
    assert [r.computed for r in v.rows][:1] == [100.185]
    assert "100.185 µs" in _text(v.rich_table())


# -- outcome and principal claim of a published-data entry ------------------------------------------------------------


@pytest.mark.parametrize(("rows", "claim_rows", "outcome", "claim_status", "ok"), [
    ({"a": "match", "b": "match", "c": "match"}, ("a",), "reproduced", "reproduced", True),
    ({"a": "match", "b": "mismatch", "c": "match"}, ("a",), "mismatch", "reproduced", False),
    ({"a": "mismatch", "b": "match"}, ("a",), "mismatch", "mismatch", False),
    ({"a": "match", "b": "not derivable"}, ("a",), "partial", "reproduced", True),
    ({"b": "match"}, ("a",), "reproduced", "not derivable", True),           # a claim row no notebook wrote
    ({"a": "not derivable", "b": "mismatch"}, ("a",), "mismatch", "not derivable", False),
    ({"a": "match", "b": "mismatch"}, (), "mismatch", "mismatch", False),  # no claim rows: every row
    ({"a": "match", "c": "not derivable"}, (), "partial", "not derivable", True),
    ({"a": "match"}, ("a", "c"), "reproduced", "not derivable", True),
    ({"a": "info", "b": "figure redrawn"}, (), "figure redrawn", "figure redrawn", True),
    ({"a": "info", "b": "match"}, ("a",), "reproduced", "figure redrawn", True),  # the claim row compared nothing
    ({}, (), "figure redrawn", "figure redrawn", True),
])
def test_published_data_outcome_and_principal_claim(rows, claim_rows, outcome, claim_status, ok):
    v = Verdict("pd", claim_rows=claim_rows)
    v.rows = [VerdictRow(name, 1.0, 1.0, status=status) for name, status in rows.items()]
    assert (v.outcome, v.claim_status(), v.ok) == (outcome, claim_status, ok)
    assert v.claim() == {"text": "", "rows": list(claim_rows), "status": claim_status}


@pytest.mark.parametrize("figure_id", ["wiedner-itc23-table3", "scheerer-iitm23-return-level",
                                       "benchbook-latency-demo", "benchbook-evt-wiedner-tails",
                                       "wiedner-itc23-fig9"])
def test_registry_entries_rebuilt_from_the_recorded_values_give_the_recorded_verdict(registry, figure_id, tmp_path):
    """The values `benchbook reproduce` computed for the registry's entries (tests/data/reproduce-verdicts.json),
    checked again: the same row statuses, outcome, exit status, ok, summary, principal claim, and the computed
    values printed as the table printed them."""
    before = SNAPSHOT[figure_id]
    entry = registry[figure_id]
    v = Verdict.for_entry(entry)
    names = {pv.name for pv in entry.published}
    for row in before["rows"]:
        unit = {"µs": "us"}.get(*[row["computed_text"].partition(" ")[2]] * 2)
        if row["status"] == "figure redrawn":
            v.figure_redrawn(row["name"])
        elif row["name"] in names:
            v.check(row["name"], row["computed"])
        else:   # rows the notebook writes itself: info rows, the demo's counts checked against known truth
            published = row["computed"] if row["status"] == "match" else None
            v.add(row["name"], published, row["computed"], unit, "", row["status"], "not computed here")
    v.write(tmp_path)
    back = Verdict.load(tmp_path)
    for got in (v, back):
        assert [r.status for r in got.rows] == [r["status"] for r in before["rows"]]
        assert (got.outcome, got.ok, got.summary(), got.claim_status()) == \
            (before["outcome"], before["ok"], before["summary"], before["claim"])
        assert EXIT_CODES[got.outcome] == before["exit"]
    table = _text(v.rich_table(), width=200)
    for row in before["rows"]:
        assert f" {row['computed_text']} " in table, row["name"]


def test_write_finalizes_the_values_no_row_covers(pd_entry, tmp_path):
    v = Verdict.for_entry(pd_entry)
    v.check("a", 100.19)
    v.write(tmp_path)
    assert [(r.name, r.status, r.note) for r in v.rows] == [
        ("a", "match", "Table 3, first row"), ("b", "not derivable", "the notebook did not compute this value"),
        ("c", "not derivable", "the notebook did not compute this value")]
    assert v.outcome == "partial" and v.claim_status() == "reproduced"
    Verdict("no entry").finalize()   # a verdict without its entry has nothing to finalize


# -- measured entries: rows and claims judged across runs -----------------------------------------------------------


def test_known_truth_gives_every_row_status_and_claim_verdict(known_truth):
    _, _, v = known_truth
    assert [(r.name, r.status) for r in v.rows] == [
        ("a: rate", "reproduced"), ("b: rate", "mismatch"), ("a: round-trip time", "inconclusive"),
        ("a and b: Jain's fairness index", "reproduced"), ("a: p99.9 of the per-packet delay", "inconclusive"),
        ("a: time to converge", "not comparable"), ("c: rate", "not derivable")]
    assert [(c.id, c.principal, c.verdict) for c in v.claims] == [
        ("a-faster", True, "holds"), ("a-half-again", False, "fails"), ("flows-fair", False, "inconclusive"),
        ("mostly-delivered", True, "holds"), ("c-slower", False, "not derivable")]
    assert (v.outcome, v.claim_status(), v.ok) == ("mismatch", "reproduced", False)
    assert v.counts() == {"reproduced": 2, "mismatch": 1, "inconclusive": 2, "not comparable": 1,
                          "not derivable": 1, "figure redrawn": 0, "info": 0}
    assert v.claim_counts() == {"holds": 2, "fails": 1, "inconclusive": 1, "not derivable": 1}
    assert v.summary() == ("2 of 5 reproduced (m·α = 0.25), 1 mismatch, 2 inconclusive, 1 not comparable, "
                           "1 not derivable, claims: 2 of 5 hold, 1 fails, 1 inconclusive, 1 not derivable")
    assert v.multiplicity() == {
        "k": 2, "m": 5, "mismatches": 1, "inconclusive": 2, "alpha": 0.05, "expected_mismatches": 0.25,
        "p_chance": pytest.approx(1 - 0.95**5),
        "text": ("2 of 5 reproduced; m·α = 0.25 mismatches expected by chance at α = 0.05 (1 observed, "
                 "P(at least 1) = 0.23)")}
    # the principal claim: its own text when the entry has none, the principal claims' texts joined
    assert v.claim() == {"text": "a is faster than b; at least 90 % of a's probes are delivered", "rows": [],
                         "status": "reproduced", "claims": ["a-faster", "mostly-delivered"]}


def test_judge_runs_at_another_alpha_records_it_everywhere(known_truth):
    entry, out, _ = known_truth
    v = Verdict.for_entry(entry).judge_runs(out, alpha=0.01)
    assert v.alpha == 0.01 and {r.alpha for r in v.rows} == {0.01} and {c.alpha for c in v.claims} == {0.01}
    assert v.multiplicity()["text"] == ("2 of 5 reproduced; m·α = 0.05 mismatches expected by chance at α = 0.01 "
                                        "(1 observed, P(at least 1) = 0.049)")
    assert v.to_dict()["alpha"] == 0.01 and Verdict.from_dict(v.to_dict()).alpha == 0.01
    preset = Verdict.for_entry(entry)
    preset.alpha = 0.02
    assert preset.judge_runs(out).alpha == 0.02 and {r.alpha for r in preset.rows} == {0.02}


def _measured(statuses, claims=(), **kw) -> Verdict:
    v = Verdict("m", kind="measured", **kw)
    v.rows = [MeasuredRow(f"r{i}", 1.0, None, status=s) for i, s in enumerate(statuses)]
    v.claims = [ClaimResult(f"c{i}", f"claim {i}", principal, "a > b", verdict)
                for i, (verdict, principal) in enumerate(claims)]
    return v


@pytest.mark.parametrize(("rows", "claims", "outcome", "claim_status"), [
    (["reproduced"], [], "reproduced", "reproduced"),
    (["reproduced", "info"], [], "reproduced", "reproduced"),
    (["mismatch"], [("holds", True)], "mismatch", "reproduced"),          # a row decides without a claim failing
    (["reproduced"], [("fails", True), ("holds", True)], "mismatch", "mismatch"),
    (["inconclusive"], [("holds", True)], "inconclusive", "reproduced"),
    (["reproduced"], [("inconclusive", True), ("holds", True)], "inconclusive", "inconclusive"),
    (["reproduced"], [("inconclusive", True), ("not derivable", True)], "partial", "not derivable"),
    (["not comparable"], [("holds", True)], "partial", "reproduced"),
    (["not derivable"], [("holds", True)], "partial", "reproduced"),
    (["not comparable", "not derivable"], [], "partial", "not derivable"),
    (["not comparable"], [], "partial", "figure redrawn"),                  # nothing compared, yet not "nothing"
    (["info"], [("holds", True)], "reproduced", "reproduced"),             # only a claim judged
    (["info"], [("fails", False)], "reproduced", "figure redrawn"),        # only a claim, not principal
    (["info", "figure redrawn"], [], "figure redrawn", "figure redrawn"),
    ([], [], "figure redrawn", "figure redrawn"),
    (["reproduced", "inconclusive"], [("fails", False)], "inconclusive", "inconclusive"),
])
def test_measured_outcome_and_principal_claim(rows, claims, outcome, claim_status):
    v = _measured(rows, claims)
    assert (v.outcome, v.claim_status()) == (outcome, claim_status)
    assert v.ok is (outcome != "mismatch")


@pytest.mark.parametrize(("statuses", "k", "m", "text"), [
    (["reproduced"], 1, 1, "1 of 1 reproduced; m·α = 0.05 mismatches expected by chance at α = 0.05"),
    (["inconclusive", "info"], 0, 1, "0 of 1 reproduced; m·α = 0.05 mismatches expected by chance at α = 0.05"),
    (["mismatch"], 0, 1, "0 of 1 reproduced; m·α = 0.05 mismatches expected by chance at α = 0.05 (1 observed, "
                         "P(at least 1) = 0.05)"),
    (["reproduced"] * 38 + ["mismatch"] * 2, 38, 40,
     "38 of 40 reproduced; m·α = 2 mismatches expected by chance at α = 0.05 (2 observed, P(at least 2) = 0.6)"),
])
def test_k_of_m_beside_m_alpha(statuses, k, m, text):
    v = _measured(statuses)
    mult = v.multiplicity()
    assert (mult["k"], mult["m"], mult["mismatches"], mult["inconclusive"], mult["alpha"]) == \
        (k, m, statuses.count("mismatch"), statuses.count("inconclusive"), 0.05)
    assert mult["expected_mismatches"] == pytest.approx(m * 0.05) and mult["text"] == text
    assert list(mult) == ["k", "m", "mismatches", "inconclusive", "alpha", "expected_mismatches", "p_chance", "text"]
    assert v.summary().startswith(f"{k} of {m} reproduced (m·α = {m * 0.05:.2g})")


def test_no_k_of_m_without_judged_rows_or_for_exact_rows():
    assert _measured(["not comparable", "not derivable", "info"]).multiplicity() is None
    assert _measured([]).multiplicity() is None
    assert _measured(["info", "figure redrawn"]).summary() == "no value judged, 1 figure redrawn, 1 info"
    pd = Verdict("pd")
    pd.rows = [VerdictRow("a", 1.0, 2.0, status="mismatch"), VerdictRow("b", 1.0, 1.0, status="match")]
    assert pd.multiplicity() is None and "multiplicity" not in pd.to_dict()


def test_claims_summary_counts_each_verdict_once():
    v = _measured(["reproduced"], [("holds", True), ("holds", False), ("fails", False), ("inconclusive", False),
                                   ("inconclusive", False), ("not derivable", False)])
    assert v.claim_counts() == {"holds": 2, "fails": 1, "inconclusive": 2, "not derivable": 1}
    assert v.summary() == ("1 of 1 reproduced (m·α = 0.05), claims: 2 of 6 hold, 1 fails, 2 inconclusive, "
                           "1 not derivable")
    one = _measured(["reproduced"], [("holds", True)])
    assert one.summary() == "1 of 1 reproduced (m·α = 0.05), claims: 1 of 1 hold"
    assert _measured(["reproduced"]).claim_counts() == {"holds": 0, "fails": 0, "inconclusive": 0,
                                                        "not derivable": 0}


def test_a_measured_verdict_without_judge_runs_reports_every_value_not_derivable(known_truth):
    entry, _, _ = known_truth
    v = Verdict.for_entry(entry)
    v.finalize()
    assert [r.status for r in v.rows] == ["not derivable"] * 7 and all(type(r) is MeasuredRow for r in v.rows)
    row = v.rows[1]
    assert (row.name, row.published, row.computed, row.unit, row.runs, row.arm, row.run_statistic, row.alpha) == \
        ("b: rate", 100.0, None, "Mbit/s", 0, "b", "rate_mbps", 0.05)
    assert row.reason == "the notebook did not compute this value (judge_runs was not called)"
    assert row.note == "test truth: b's runs draw around 80 Mbit/s, 20 % below the value"
    assert row.tolerance == "±5 % (paper spread)"
    assert (v.outcome, v.summary()) == ("partial", "no value judged, 7 not derivable, claims: 0 of 5 hold, 5 not "
                                                   "derivable")
    parts = v.rich_table().renderables
    assert "│ 2 │ b: rate                          │ 100 Mbit/s │ -        │ -             │ -      │ 0    │ " \
           "not derivable │" in _text(parts[0], width=120)
    plain = [getattr(p, "plain", None) for p in parts]
    assert ("[2] the notebook did not compute this value (judge_runs was not called); test truth: b's runs draw "
            "around 80 Mbit/s, 20 % below the value") in plain
    assert "a-faster: the notebook did not judge this claim (judge_runs was not called)" in plain


def test_judge_runs_adds_to_the_notebooks_own_rows_and_refuses_a_second_judgement(known_truth):
    entry, out, _ = known_truth
    v = Verdict.for_entry(entry)
    v.figure_redrawn("Figure 1")
    v.judge_runs(out)
    assert [r.name for r in v.rows][:2] == ["Figure 1", "a: rate"] and len(v.rows) == 8
    assert v.plan["plan"]["seed"] == SEED and v.noise_floor is None and len(v.claims) == 5
    with pytest.raises(ValueError) as twice:
        v.judge_runs(out)
    assert str(twice.value).startswith("measured-intervals: rows ['a: rate', 'b: rate', 'a: round-trip time', ")
    assert str(twice.value).endswith("exist already; judge_runs adds every published value")


def test_run_summaries_are_info_rows_with_the_median_and_its_interval(known_truth):
    entry, out, v = known_truth
    rate = next(r for r in v.rows if r.name == "a: rate")
    s = Verdict.for_entry(entry)
    row = s.add_run_summary("a: rate over runs", out, "a", "rate_mbps")
    assert row.as_dict() == {"name": "a: rate over runs", "published": None, "computed": rate.estimate,
                             "unit": "Mbit/s", "runs": "a", "status": "info",
                             "note": "median of 8 run(s) x N = 1000; 95 % interval of the median [98.46, 99.5] Mbit/s",
                             "tolerance": ""}
    scaled = s.add_run_summary("a: rate in kbit/s", out, "a", "rate_mbps", 1000.0, "kbit/s", note="for context")
    assert scaled.computed == pytest.approx(rate.estimate * 1000, rel=1e-12) and scaled.unit == "kbit/s"
    assert scaled.note == ("median of 8 run(s) x N = 1000; 95 % interval of the median [9.846e+04, 9.95e+04] "
                           "kbit/s; for context")
    missing = s.add_run_summary("c: rate", out, "c", "rate_mbps", note="no arm c")
    assert (missing.computed, missing.unit, missing.runs) == (None, "", "c")
    assert missing.note == f"arm 'c' is not in the plan of {out} (arms: a, b); no arm c"
    assert [r.status for r in s.rows] == ["info"] * 3


# -- verdict.json ------------------------------------------------------------------------------------------------------


PD_KEYS = ["schema", "kind", "figure_id", "title", "citation", "ok", "outcome", "claim", "counts", "summary", "rows",
           "figures", "notes"]


def test_published_data_verdict_json_round_trip(pd_entry, tmp_path):
    v = Verdict.for_entry(pd_entry)
    v.check("a", 100.185, runs="r0", note="median")
    v.check("b", 511.0)
    v.figure_redrawn("Figure 4")
    v.add("context", None, 3.0)
    v.add_figure("fig4", {"html": tmp_path / "fig4.html", "png": "unavailable: no chromium"})
    path = v.write(tmp_path)
    assert path == tmp_path / "verdict.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    assert list(data) == PD_KEYS
    assert {k: data[k] for k in PD_KEYS if k != "rows"} == {
        "schema": "benchbook.verdict/2", "kind": "published-data", "figure_id": "pd",
        "title": "Table 3: maximum latency", "citation": "A. Author et al., A Paper, 2023", "ok": False,
        "outcome": "mismatch", "claim": {"text": "a stays near 100 us", "rows": ["a"], "status": "reproduced"},
        "counts": {"match": 1, "mismatch": 1, "not derivable": 1, "figure redrawn": 1, "info": 1},
        "summary": "1/2 published values matched, 1 mismatch, 1 not derivable, 1 figure redrawn, 1 info",
        "figures": {"fig4": {"html": str(tmp_path / "fig4.html"), "png": "unavailable: no chromium"}},
        "notes": ["values transcribed from the paper's Table 3"]}
    back = Verdict.load(path)
    assert back == v and back.to_dict() == data
    assert back.entry is None and (back.title, back.citation, back.claim_text, back.claim_rows) == (
        "Table 3: maximum latency", "A. Author et al., A Paper, 2023", "a stays near 100 us", ("a",))
    assert (back.figures, back.notes, back.plan, back.noise_floor, back.alpha, back.claims) == (
        data["figures"], data["notes"], None, None, 0.05, [])
    assert Verdict.load(tmp_path) == v   # a run directory reads its verdict.json


def test_a_verdict_built_without_an_entry_reads_back_equal(tmp_path):
    calibrated = Verdict("bare", kind="measured", alpha=0.025, plan={"plan": {"seed": 7}, "order": [], "runs": []},
                         noise_floor="data/calibration/bare/3f2a9c0d41e8b7a6.json")
    for v in (Verdict("bare"), Verdict("bare", kind="measured"), Verdict("bare", kind="exact-measured"), calibrated):
        v.write(tmp_path)
        back = Verdict.load(tmp_path)
        assert back == v and back.to_dict() == v.to_dict()
    bare = Verdict("bare")
    assert (bare.title, bare.citation, bare.claim_text, bare.claim_rows, bare.kind, bare.plan, bare.noise_floor,
            bare.alpha, bare.rows, bare.figures, bare.notes, bare.claims, bare.entry) == (
        "", "", "", (), "published-data", None, None, 0.05, [], {}, [], [], None)
    assert bare.to_dict() == {
        "schema": "benchbook.verdict/2", "kind": "published-data", "figure_id": "bare", "title": "", "citation": "",
        "ok": True, "outcome": "figure redrawn", "claim": {"text": "", "rows": [], "status": "figure redrawn"},
        "counts": {"match": 0, "mismatch": 0, "not derivable": 0, "figure redrawn": 0, "info": 0},
        "summary": "0/0 published values matched", "rows": [], "figures": {}, "notes": []}
    assert Verdict("bare", kind="measured").to_dict() | {"rows": []} == {
        "schema": "benchbook.verdict/2", "kind": "measured", "figure_id": "bare", "title": "", "citation": "",
        "ok": True, "outcome": "figure redrawn", "claim": {"text": "", "rows": [], "status": "figure redrawn"},
        "counts": {"reproduced": 0, "mismatch": 0, "inconclusive": 0, "not comparable": 0, "not derivable": 0,
                   "figure redrawn": 0, "info": 0},
        "summary": "no value judged", "rows": [], "figures": {}, "notes": [], "alpha": 0.05, "multiplicity": None,
        "claims": [], "claim_counts": {"holds": 0, "fails": 0, "inconclusive": 0, "not derivable": 0},
        "plan": None, "noise_floor": None}


def test_measured_verdict_json_round_trip(known_truth, tmp_path):
    entry, out, judged = known_truth
    v = Verdict.for_entry(entry).judge_runs(out, alpha=0.01)
    v.add("context", None, 3.0, "ms", "a", "info", "a number for context")
    path = v.write(tmp_path)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert list(data) == [*PD_KEYS, "alpha", "multiplicity", "claims", "claim_counts", "plan", "noise_floor"]
    assert (data["alpha"], data["multiplicity"], data["claim_counts"], data["noise_floor"]) == (
        0.01, json.loads(json.dumps(v.multiplicity())), v.claim_counts(), None)
    assert [c["id"] for c in data["claims"]] == ["a-faster", "a-half-again", "flows-fair", "mostly-delivered",
                                                 "c-slower"]
    assert data["plan"]["plan"]["seed"] == SEED and data["claim"]["claims"] == ["a-faster", "mostly-delivered"]
    back = Verdict.load(path)
    # the entry has no claim text of its own: the file's claim text (the principal claims' texts) reads back
    assert back.claim_text == "a is faster than b; at least 90 % of a's probes are delivered" and v.claim_text == ""
    assert replace(back, claim_text="") == v and back.to_dict() == data
    assert (back.alpha, back.plan, back.claims, back.kind) == (0.01, v.plan, v.claims, "measured")
    assert back.outcome == judged.outcome == "mismatch"


def test_a_minimal_file_reads_with_the_defaults(tmp_path):
    """Fields a file lacks (an early /1 writer wrote few) read as their defaults."""
    (tmp_path / "verdict.json").write_text('{"schema": "benchbook.verdict/1", "figure_id": "old"}')
    v = Verdict.load(tmp_path)
    assert (v.figure_id, v.title, v.citation, v.kind, v.rows, v.figures, v.notes, v.claim_text, v.claim_rows,
            v.claims, v.plan, v.noise_floor, v.alpha) == (
        "old", "", "", "published-data", [], {}, [], "", (), [], None, None, 0.05)
    assert v == Verdict("old") and (v.outcome, v.summary()) == ("figure redrawn", "0/0 published values matched")
    (tmp_path / "verdict.json").write_text('{"schema": "benchbook.verdict/2", "figure_id": "m", "kind": "measured", '
                                           '"claim": null, "claims": null, "alpha": 0.025}')
    m = Verdict.load(tmp_path / "verdict.json")
    assert (m.kind, m.claims, m.alpha, m.claim_text) == ("measured", [], 0.025, "")


def test_a_v1_file_reads_as_published_data_with_figure_rows_redrawn(tmp_path):
    v1 = {"schema": "benchbook.verdict/1", "figure_id": "wiedner-itc23-fig9", "title": "Figure 9", "citation": "c",
          "ok": True, "outcome": "reproduced", "claim": {"text": "t", "rows": ["Figure 9"], "status": "reproduced"},
          "rows": [{"name": "Figure 9", "published": None, "computed": None, "unit": "", "runs": "r1",
                    "status": "figure only", "note": "", "tolerance": ""}],
          "figures": {"fig9": {"html": "fig9.html"}}, "notes": ["n"]}
    (tmp_path / "verdict.json").write_text(json.dumps(v1))
    v = Verdict.load(tmp_path)
    assert (v.kind, v.title, v.citation, v.figures, v.notes, v.claim_text, v.claim_rows) == (
        "published-data", "Figure 9", "c", {"fig9": {"html": "fig9.html"}}, ["n"], "t", ("Figure 9",))
    assert [(r.name, r.status, r.runs) for r in v.rows] == [("Figure 9", "figure redrawn", "r1")]
    assert (v.outcome, v.claim_status()) == ("figure redrawn", "figure redrawn")
    assert v.to_dict()["schema"] == "benchbook.verdict/2"


def test_a_row_of_a_status_its_kind_does_not_list_is_counted_once(tmp_path):
    """A hand-edited or foreign file: counts() adds the status it finds instead of dropping the row."""
    (tmp_path / "verdict.json").write_text(json.dumps({
        "schema": "benchbook.verdict/2", "figure_id": "x", "kind": "published-data",
        "rows": [{"name": "a", "published": 1.0, "computed": 1.0, "status": "inconclusive"},
                 {"name": "b", "published": 1.0, "computed": 1.0, "status": "match"}]}))
    assert Verdict.load(tmp_path).counts() == {"match": 1, "mismatch": 0, "not derivable": 0, "figure redrawn": 0,
                                               "info": 0, "inconclusive": 1}


def test_load_refuses_other_files_naming_them(tmp_path):
    path = tmp_path / "verdict.json"
    path.write_text('{"schema": "benchbook.verdict/3", "figure_id": "x"}')
    with pytest.raises(ValueError) as other:
        Verdict.load(tmp_path)
    assert str(other.value) == (f"{path}: expected schema 'benchbook.verdict/1' or 'benchbook.verdict/2', got "
                                "'benchbook.verdict/3'")
    path.write_text('{"figure_id": "x"}')
    with pytest.raises(ValueError, match="got None$"):
        Verdict.load(path)
    path.write_text('{\n  "schema": "benchbook.verdict/2",\n  "figure_id": \n}')
    with pytest.raises(ValueError) as broken:
        Verdict.load(path)
    assert str(broken.value) == f"{path}:4: not valid JSON (Expecting value)"


def test_write_records_the_verdict_for_the_run_record(pd_entry, tmp_path):
    (tmp_path / "metrics.json").write_text('{"packets": 12}')
    (tmp_path / "capabilities.json").write_text('[{"capability": "ptp", "status": "missing", "detail": "no nic"}]')
    v = Verdict.for_entry(pd_entry)
    v.check("a", 100.19)
    v.check("b", 600.0)
    v.add_figure("fig", {"html": "fig.html", "png": "unavailable: no chromium", "pdf": "unavailable: no kaleido"})
    v.add_figure("fig2", {"svg": "fig2.svg"})
    v.write(tmp_path)
    assert json.loads((tmp_path / "metrics.json").read_text()) == {"packets": 12, "verdict": {
        "ok": False, "outcome": "mismatch", "match": 1, "mismatch": 1, "not derivable": 1, "figure redrawn": 0,
        "info": 0}}
    assert json.loads((tmp_path / "capabilities.json").read_text()) == [
        {"capability": "ptp", "status": "missing", "detail": "no nic"},
        {"capability": "figure export png", "status": "missing", "detail": "fig.png: unavailable: no chromium"},
        {"capability": "figure export pdf", "status": "missing", "detail": "fig.pdf: unavailable: no kaleido"}]


def test_write_replaces_unreadable_side_files_and_leaves_foreign_ones(tmp_path):
    (tmp_path / "metrics.json").write_text("{not json")
    (tmp_path / "capabilities.json").write_text("[")
    v = Verdict("x")
    v.add_figure("f", {"png": "unavailable: no chromium"})
    v.write(tmp_path)
    assert json.loads((tmp_path / "metrics.json").read_text()) == {"verdict": {
        "ok": True, "outcome": "figure redrawn", "match": 0, "mismatch": 0, "not derivable": 0, "figure redrawn": 0,
        "info": 0}}
    assert json.loads((tmp_path / "capabilities.json").read_text()) == [
        {"capability": "figure export png", "status": "missing", "detail": "f.png: unavailable: no chromium"}]
    other = tmp_path / "other"
    other.mkdir()
    (other / "metrics.json").write_text("[1, 2]")
    (other / "capabilities.json").write_text('{"a": 1}')
    v.write(other)
    assert (other / "metrics.json").read_text() == "[1, 2]" and (other / "capabilities.json").read_text() == '{"a": 1}'
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    Verdict("y").write(fresh)
    assert json.loads((fresh / "capabilities.json").read_text()) == []
    assert json.loads((fresh / "metrics.json").read_text())["verdict"]["outcome"] == "figure redrawn"


def test_the_repr_leaves_the_registry_entry_out(pd_entry):
    v = Verdict.for_entry(pd_entry)
    assert "entry=" not in repr(v) and "FigureEntry" not in repr(v)
    assert repr(v).startswith("Verdict(figure_id='pd', title='Table 3: maximum latency', ")
    # and two verdicts of the same rows are equal whether or not they carry the entry
    bare = Verdict.from_dict(v.to_dict())
    assert bare == v and bare.entry is None and v.entry is pd_entry


# -- what the user reads: tables, notes, colours -------------------------------------------------------------------


PD_TABLE_FULL = "\n".join([
    '   pd: 1/2 published values matched, 1 mismatch, 1 not derivable, 1 figure    ',
    '                               redrawn, 1 info                                ',
    '┏━━━┳━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━┳━━━━━━━━━━━━━━━━┳━━━━━━━━┳━━━━━━━━━━━━━━━━┓',
    '┃ # ┃ published value ┃ published ┃ computed       ┃ run(s) ┃ status         ┃',
    '┡━━━╇━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━╇━━━━━━━━━━━━━━━━╇━━━━━━━━╇━━━━━━━━━━━━━━━━┩',
    '│ 1 │ a               │ 100.19 µs │ 100.185 µs     │ r0     │ match          │',
    '│ 2 │ b               │ 505 µs    │ 1.23457e+06 µs │ r1     │ mismatch       │',
    '│ 3 │ Figure 4        │ -         │ -              │        │ figure redrawn │',
    '│ 4 │ context         │ -         │ 3              │        │ info           │',
    '│ 5 │ c               │ 1         │ -              │        │ not derivable  │',
    '└───┴─────────────────┴───────────┴────────────────┴────────┴────────────────┘',
    '[1] median of 3 repeats; Table 3, first row (tolerance ±0.005 µs)',
    '[3] no published numbers to compare: the figure is redrawn',
    '[5] the run is not in the dataset (tolerance ±0)',
]) + "\n"


PD_TABLE_NARROW = "\n".join([
    '    pd: 1/2 published values matched, 1 mismatch, 1 not     ',
    '            derivable, 1 figure redrawn, 1 info             ',
    '┏━━━┳━━━━┳━━━━━━━━━━━┳━━━━━━━━━━━━━━━━┳━━━┳━━━━━━━━━━━━━━━━┓',
    '┃   ┃ pu ┃           ┃                ┃   ┃                ┃',
    '┃   ┃ bl ┃           ┃                ┃   ┃                ┃',
    '┃   ┃ is ┃           ┃                ┃ r ┃                ┃',
    '┃   ┃ he ┃           ┃                ┃ u ┃                ┃',
    '┃   ┃ d  ┃           ┃                ┃ n ┃                ┃',
    '┃   ┃ va ┃           ┃                ┃ ( ┃                ┃',
    '┃   ┃ lu ┃           ┃                ┃ s ┃                ┃',
    '┃ # ┃ e  ┃ published ┃ computed       ┃ ) ┃ status         ┃',
    '┡━━━╇━━━━╇━━━━━━━━━━━╇━━━━━━━━━━━━━━━━╇━━━╇━━━━━━━━━━━━━━━━┩',
    '│ 1 │ a  │ 100.19 µs │ 100.185 µs     │ r │ match          │',
    '│   │    │           │                │ 0 │                │',
    '│ 2 │ b  │ 505 µs    │ 1.23457e+06 µs │ r │ mismatch       │',
    '│   │    │           │                │ 1 │                │',
    '│ 3 │ Fi │ -         │ -              │   │ figure redrawn │',
    '│   │ gu │           │                │   │                │',
    '│   │ re │           │                │   │                │',
    '│   │  4 │           │                │   │                │',
    '│ 4 │ co │ -         │ 3              │   │ info           │',
    '│   │ nt │           │                │   │                │',
    '│   │ ex │           │                │   │                │',
    '│   │ t  │           │                │   │                │',
    '│ 5 │ c  │ 1         │ -              │   │ not derivable  │',
    '└───┴────┴───────────┴────────────────┴───┴────────────────┘',
    '[1] median of 3 repeats; Table 3, first row (tolerance ',
    '±0.005 µs)',
    '[3] no published numbers to compare: the figure is redrawn',
    '[5] the run is not in the dataset (tolerance ±0)',
]) + "\n"


MEASURED_ROWS = "\n".join([
    '   measured-intervals: 2 of 5 reproduced (m·α = 0.25), 1 mismatch, 2 inconclusive, 1 not comparable, 1 not    ',
    '                   derivable, claims: 2 of 5 hold, 1 fails, 1 inconclusive, 1 not derivable                   ',
    '┏━━━┳━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━┳━━━━━━━┳━━━━━━━━━━━━━━━━┓',
    '┃ # ┃ published value   ┃ published  ┃ estimate       ┃ 95 % interval      ┃ margin ┃ runs  ┃ status         ┃',
    '┡━━━╇━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━╇━━━━━━━╇━━━━━━━━━━━━━━━━┩',
    '│ 1 │ a: rate           │ 100 Mbit/s │ 99.1643 Mbit/s │ [98.46, 101.9]     │ ±10 %  │ 8 (a) │ reproduced     │',
    '│   │                   │            │                │ Mbit/s             │        │       │                │',
    '│ 2 │ b: rate           │ 100 Mbit/s │ 80.0994 Mbit/s │ [78.26, 81.01]     │ ±5 %   │ 8 (b) │ mismatch       │',
    '│   │                   │            │                │ Mbit/s             │        │       │                │',
    '│ 3 │ a: round-trip     │ 21 ms      │ 18.3589 ms     │ [13.65, 21.51] ms  │ ±5 %   │ 8 (a) │ inconclusive   │',
    '│   │ time              │            │                │                    │        │       │                │',
    "│ 4 │ a and b: Jain's   │ 0.98       │ 0.9859         │ [0.9832, 0.9888]   │ ±0.02  │ 8 (a) │ reproduced     │",
    '│   │ fairness index    │            │                │                    │        │       │                │',
    '│ 5 │ a: p99.9 of the   │ 35 ms      │ 30.5432 ms     │ -                  │ ±10 %  │ 8 (a) │ inconclusive   │',
    '│   │ per-packet delay  │            │                │                    │        │       │                │',
    '│ 6 │ a: time to        │ 2 s        │ 2.8754 s       │ -                  │ -      │ 8 (a) │ not comparable │',
    '│   │ converge          │            │                │                    │        │       │                │',
    '│ 7 │ c: rate           │ 100 Mbit/s │ -              │ -                  │ ±10 %  │ 0     │ not derivable  │',
    '└───┴───────────────────┴────────────┴────────────────┴────────────────────┴────────┴───────┴────────────────┘',
]) + "\n"


CLAIMS_TABLE = "\n".join([
    '                                     claims (principal claim: reproduced)                                     ',
    '┏━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━┳━━━━━━━━━━━━━━━┓',
    '┃ claim              ┃ test               ┃ Delta              ┃ 95 % interval      ┃ runs   ┃ verdict       ┃',
    '┡━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━╇━━━━━━━━━━━━━━━┩',
    '│ a-faster *         │ a:rate_mbps >      │ +23.80 %           │ [+22.29 %, +25.74  │ [8, 8] │ holds         │',
    '│                    │ b:rate_mbps        │                    │ %]                 │        │               │',
    '│ a-half-again       │ a:rate_mbps /      │ a / b = 1.238      │ [1.223, 1.257]     │ [8, 8] │ fails         │',
    '│                    │ b:rate_mbps within │                    │                    │        │               │',
    '│                    │ [1.4, 1.6]         │                    │                    │        │               │',
    '│ flows-fair         │ a:flow1_mbps ~     │ +5.09 %            │ [+0.22 %, +8.81 %] │ 8      │ inconclusive  │',
    '│                    │ a:flow2_mbps       │                    │                    │        │               │',
    '│                    │ within ±2 %        │                    │                    │        │               │',
    '│ mostly-delivered * │ a:probes_delivered │ 1545 of 1600 =     │ [0.9555, 0.974]    │ 8      │ holds         │',
    '│                    │ / a:probes_sent >= │ 0.966              │                    │        │               │',
    '│                    │ 0.9                │                    │                    │        │               │',
    '│ c-slower           │ c:rate_mbps <      │ -                  │ -                  │ -      │ not derivable │',
    '│                    │ a:rate_mbps        │                    │                    │        │               │',
    '└────────────────────┴────────────────────┴────────────────────┴────────────────────┴────────┴───────────────┘',
]) + "\n"


MEASURED_ROWS_NARROW = "\n".join([
    ' measured-intervals: 1 of 1 reproduced (m·α = 0.05), 1  ',
    '          not comparable, claims: 1 of 1 hold           ',
    '┏━━━┳━━━━━┳━━━━━┳━━━━━┳━━━━┳━━━━━┳━━━━┳━━━━━━━━━━━━━━━━┓',
    '┃   ┃ pub ┃     ┃     ┃ 95 ┃     ┃    ┃                ┃',
    '┃   ┃ lis ┃     ┃     ┃ %  ┃     ┃    ┃                ┃',
    '┃   ┃ hed ┃     ┃     ┃ in ┃     ┃    ┃                ┃',
    '┃   ┃     ┃ pub ┃ est ┃ te ┃     ┃    ┃                ┃',
    '┃   ┃ val ┃ lis ┃ ima ┃ rv ┃ mar ┃ ru ┃                ┃',
    '┃ # ┃ ue  ┃ hed ┃ te  ┃ al ┃ gin ┃ ns ┃ status         ┃',
    '┡━━━╇━━━━━╇━━━━━╇━━━━━╇━━━━╇━━━━━╇━━━━╇━━━━━━━━━━━━━━━━┩',
    '│ 1 │ a:  │ 100 │ 99. │ [9 │ ±10 │ 8  │ reproduced     │',
    '│   │ rat │ Mbi │ 164 │ 8. │ %   │ (a │                │',
    '│   │ e   │ t/s │ 3   │ 46 │     │ )  │                │',
    '│   │     │     │ Mbi │ ,  │     │    │                │',
    '│   │     │     │ t/s │ 10 │     │    │                │',
    '│   │     │     │     │ 1. │     │    │                │',
    '│   │     │     │     │ 9] │     │    │                │',
    '│   │     │     │     │    │     │    │                │',
    '│   │     │     │     │ Mb │     │    │                │',
    '│   │     │     │     │ it │     │    │                │',
    '│   │     │     │     │ /s │     │    │                │',
    '│ 2 │ a:  │ 2 s │ 2.8 │ -  │ -   │ 8  │ not comparable │',
    '│   │ tim │     │ 754 │    │     │ (a │                │',
    '│   │ e   │     │  s  │    │     │ )  │                │',
    '│   │ to  │     │     │    │     │    │                │',
    '│   │ con │     │     │    │     │    │                │',
    '│   │ ver │     │     │    │     │    │                │',
    '│   │ ge  │     │     │    │     │    │                │',
    '└───┴─────┴─────┴─────┴────┴─────┴────┴────────────────┘',
]) + "\n"

CLAIMS_TABLE_NARROW = "\n".join([
    '          claims (principal claim: reproduced)          ',
    '┏━━━━━━━━┳━━━━━━━━┳━━━━━━━━┳━━━━━━━━┳━━━━━━━━┳━━━━━━━━━┓',
    '┃        ┃        ┃        ┃ 95 %   ┃        ┃         ┃',
    '┃        ┃        ┃        ┃ interv ┃        ┃         ┃',
    '┃ claim  ┃ test   ┃ Delta  ┃ al     ┃ runs   ┃ verdict ┃',
    '┡━━━━━━━━╇━━━━━━━━╇━━━━━━━━╇━━━━━━━━╇━━━━━━━━╇━━━━━━━━━┩',
    '│ a-fast │ a:rate │ +23.80 │ [+22.2 │ [8, 8] │ holds   │',
    '│ er *   │ _mbps  │ %      │ 9 %,   │        │         │',
    '│        │ >      │        │ +25.74 │        │         │',
    '│        │ b:rate │        │ %]     │        │         │',
    '│        │ _mbps  │        │        │        │         │',
    '└────────┴────────┴────────┴────────┴────────┴─────────┘',
]) + "\n"


def _pd_verdict(entry) -> Verdict:
    v = Verdict.for_entry(entry)
    v.check("a", 100.185, runs="r0", note="median of 3 repeats")
    v.check("b", 1234567.0, runs="r1")
    v.figure_redrawn("Figure 4")
    v.add("context", None, 3.0)
    v.not_derivable("c", "the run is not in the dataset")
    return v


def test_published_data_table_as_printed(pd_entry):
    text = _text(_pd_verdict(pd_entry).rich_table(), width=100)
    assert text == PD_TABLE_FULL


def test_published_data_table_keeps_numbers_and_status_whole_when_narrow(pd_entry):
    text = _text(_pd_verdict(pd_entry).rich_table(), width=60)
    assert text == PD_TABLE_NARROW


def test_statuses_are_coloured(pd_entry, known_truth):
    text = _text(_pd_verdict(pd_entry).rich_table(), width=120, styles=True)
    for status, code in (("match", "32"), ("mismatch", "1;31"), ("figure redrawn", "36"), ("info", "2"),
                         ("not derivable", "33")):
        assert f"\x1b[{code}m{status}\x1b[0m" in text, status
    _, _, v = known_truth
    text = _text(v.rich_table(), width=250, styles=True)
    for word, code in (("reproduced", "32"), ("mismatch", "1;31"), ("inconclusive", "35"), ("not comparable", "33"),
                       ("not derivable", "33"), ("holds", "32"), ("fails", "1;31")):
        assert f"\x1b[{code}m{word}\x1b[0m" in text, word


def test_measured_table_as_printed(known_truth):
    """The rows with estimate, interval, margin and runs; k of m beside m * alpha; the claims (principal ones
    starred); then the claims' reasons and the rows' numbered notes (reason; margin and its sources: note)."""
    _, out, v = known_truth
    parts = v.rich_table().renderables
    assert len(parts) == 12
    assert _text(parts[0], width=110) == MEASURED_ROWS
    assert parts[1].plain == ("2 of 5 reproduced; m·α = 0.25 mismatches expected by chance at α = 0.05 "
                              "(1 observed, P(at least 1) = 0.23)")
    assert _text(parts[2], width=110) == CLAIMS_TABLE
    assert [p.plain for p in parts[3:]] == [
        "flows-fair: the intervals overlap the claimed range; about 32 runs would likely decide",
        f"c-slower: arm 'c' is not in the plan of {out} (arms: a, b)",
        "[1] margin ±10 % from emulation allowance: test truth: a's runs draw around 100 Mbit/s with 1 % spread, "
        "well inside +-10 %",
        "[2] margin ±5 % from paper spread; test truth: b's runs draw around 80 Mbit/s, 20 % below the value",
        "[3] the intervals overlap the margin ±5 %; about 116 runs would likely decide; margin ±5 % from instrument "
        "resolution: test truth: the runs draw around 20 ms with a spread (30 % log-normal) that 8 runs cannot "
        "narrow to +-5 %",
        "[4] margin ±0.02 from paper spread; test truth: 0.985 with a spread of 0.002",
        "[5] not resolvable at N = 1000: the 99.9 percentile needs N >= 3688 samples per run for a 95 % interval "
        "(V2); more runs do not help, more samples per run may; margin ±10 % from emulation allowance: test truth: "
        "1,000 packets per run cannot resolve a p99.9 (it needs 3,688)",
        "[6] test truth: the paper's link differs, so its time is not this link's",
        f"[7] arm 'c' is not in the plan of {out} (arms: a, b); test truth: the plan has no arm c, so no run "
        "carries the value"]


def test_measured_tables_fold_long_cells_and_keep_status_and_verdict_whole_when_narrow(known_truth):
    _, _, judged = known_truth
    v = Verdict("measured-intervals", kind="measured", rows=[judged.rows[0], judged.rows[5]], claims=judged.claims[:1])
    parts = v.rich_table().renderables
    assert _text(parts[0], width=56) == MEASURED_ROWS_NARROW
    assert _text(parts[2], width=56) == CLAIMS_TABLE_NARROW


@pytest.mark.parametrize("kind", ["published-data", "measured"])
def test_row_numbers_and_statuses_stay_whole_at_any_usable_width(pd_entry, known_truth, kind):
    """The notes refer to rows by number: however narrow the terminal (down to the width the whole cells need:
    54 columns for the published-data table, 28 for the measured one), each row keeps its number and its status
    on one line; other cells fold."""
    v = _pd_verdict(pd_entry) if kind == "published-data" else known_truth[2]
    table = v.rich_table().renderables[0]
    widths = (54, 56, 60, 66, 74, 90, 120) if kind == "published-data" else (28, 30, 34, 40, 48, 60, 80, 120)
    for width in widths:
        lines = _text(table, width=width).splitlines()
        for i, r in enumerate(v.rows, start=1):
            assert any(line.startswith(f"│ {i} │") and f"│ {r.status} " in line for line in lines), (width, i)


def test_measured_frames(known_truth):
    _, out, v = known_truth
    frame = v.to_frame()
    assert list(frame.columns) == ["name", "published", "estimate", "95 % interval", "margin", "runs", "status",
                                   "note"]
    assert frame.iloc[1].to_dict() == {
        "name": "b: rate", "published": "100 Mbit/s", "estimate": "80.0994 Mbit/s",
        "95 % interval": "[78.26, 81.01] Mbit/s", "margin": "±5 %", "runs": "8 (b)", "status": "mismatch",
        "note": "margin ±5 % from paper spread; test truth: b's runs draw around 80 Mbit/s, 20 % below the value"}
    assert frame.iloc[5].to_dict() == {
        "name": "a: time to converge", "published": "2 s", "estimate": "2.8754 s", "95 % interval": "-",
        "margin": "-", "runs": "8 (a)", "status": "not comparable",
        "note": "test truth: the paper's link differs, so its time is not this link's"}
    claims = v.claims_frame()
    assert list(claims.columns) == ["claim", "principal", "test", "Delta", "95 % interval", "runs", "verdict",
                                    "reason"]
    assert claims.iloc[3].to_dict() == {
        "claim": "mostly-delivered", "principal": True, "test": "a:probes_delivered / a:probes_sent >= 0.9",
        "Delta": "1545 of 1600 = 0.966", "95 % interval": "[0.9555, 0.974]", "runs": 8, "verdict": "holds",
        "reason": ""}
    assert claims.iloc[4]["reason"] == f"arm 'c' is not in the plan of {out} (arms: a, b)"


def test_published_data_frame(pd_entry):
    frame = _pd_verdict(pd_entry).to_frame()
    assert frame.to_dict("records") == [
        {"name": "a", "published": "100.19 µs", "computed": "100.185 µs", "runs": "r0", "status": "match",
         "note": "median of 3 repeats; Table 3, first row"},
        {"name": "b", "published": "505 µs", "computed": "1.23457e+06 µs", "runs": "r1", "status": "mismatch",
         "note": ""},
        {"name": "Figure 4", "published": "-", "computed": "-", "runs": "", "status": "figure redrawn",
         "note": "no published numbers to compare: the figure is redrawn"},
        {"name": "context", "published": "-", "computed": "3", "runs": "", "status": "info", "note": ""},
        {"name": "c", "published": "1", "computed": "-", "runs": "", "status": "not derivable",
         "note": "the run is not in the dataset"}]


def test_notebook_html(known_truth, pd_entry):
    _, _, v = known_truth
    html = v._repr_html_()
    head = ("<p><b>measured-intervals</b>: mismatch: 2 of 5 reproduced (m·α = 0.25), 1 mismatch, 2 inconclusive, "
            "1 not comparable, 1 not derivable, claims: 2 of 5 hold, 1 fails, 1 inconclusive, 1 not derivable</p>")
    assert html == (head + v.to_frame().to_html(index=False)
                    + f"<p>{v.multiplicity()['text']}</p>"
                    + "<p>principal claim: <b>reproduced</b></p>" + v.claims_frame().to_html(index=False))
    assert "<th>0</th>" not in html and html.count("<table") == 2
    pd = _pd_verdict(pd_entry)
    assert pd._repr_html_() == ("<p><b>pd</b>: mismatch: 1/2 published values matched, 1 mismatch, 1 not derivable, "
                                "1 figure redrawn, 1 info</p>" + pd.to_frame().to_html(index=False))
    judged_no_claims = _measured(["reproduced"])
    assert judged_no_claims._repr_html_().endswith(
        "</table><p>1 of 1 reproduced; m·α = 0.05 mismatches expected by chance at α = 0.05</p>")
    assert _measured(["info"])._repr_html_().endswith("</table>")


SHARE = {"successes": "a:delivered", "trials": "a:sent", "q": 0.9}


def _claim(test: str, **kw) -> ClaimResult:
    return ClaimResult("c", "t", True, test, "holds", **kw)


@pytest.mark.parametrize(("claim", "delta", "interval"), [
    (_claim("share >=", **SHARE, share=0.9656, counts=[1545, 1600], ci95=[0.95551, 0.97401]),
     "1545 of 1600 = 0.966", "[0.9555, 0.974]"),
    (_claim("share >=", **SHARE, share=0.5, counts=None), "-", "-"),
    (_claim("share >=", **SHARE, share=None, counts=[1, 2]), "-", "-"),
    # a share claim is read as the share whatever scale its record carries
    (_claim("share >=", **SHARE, scale="log-ratio", share=0.9656, counts=[1545, 1600], ci95=[0.95551, 0.97401]),
     "1545 of 1600 = 0.966", "[0.9555, 0.974]"),
    (_claim("a / b within", scale="log-ratio", delta=math.log(1.2381), ci95=[math.log(1.2232), math.log(1.2571)]),
     "a / b = 1.238", "[1.223, 1.257]"),
    (_claim("a / b within", scale="log-ratio", delta=None, ci95=None), "-", "-"),
    (_claim("a > b", scale="log-ratio", delta=math.log(1.238), ci95=[math.log(1.2229), math.log(1.2574)]),
     "+23.80 %", "[+22.29 %, +25.74 %]"),
    (_claim("a < b", scale="log-ratio", delta=math.log(0.9), ci95=[math.log(0.85), math.log(0.95)]),
     "-10.00 %", "[-15.00 %, -5.00 %]"),
    (_claim("a ~ b", scale="difference", delta=0.00123456, ci95=[-0.0012345, 0.0036]), "+0.001235",
     "[-0.001234, 0.0036]"),
    (_claim("a > b", scale="difference", delta=-12.5, ci95=[-20.0, -5.0]), "-12.5", "[-20, -5]"),
])
def test_claim_delta_and_interval_as_the_claim_reads(claim, delta, interval):
    v = _measured(["reproduced"])
    v.claims = [claim]
    frame = v.claims_frame()
    assert (frame.iloc[0]["Delta"], frame.iloc[0]["95 % interval"]) == (delta, interval)
    text = _text(v.rich_table(), width=200)
    assert f"│ {delta} " in text and f"│ {interval} " in text


def test_claim_runs_and_principal_mark_in_the_claims_table():
    v = _measured(["reproduced"], [("holds", True), ("fails", False)])
    v.claims[0].runs, v.claims[1].runs, v.claims[1].reason = 8, None, "why it fails"
    text = _text(v.rich_table(), width=120)
    assert "claims (principal claim: reproduced)" in text
    assert "│ c0 *  │" in text and "│ c1    │" in text and "│ 8    │" in text and "│ -    │" in text
    assert text.endswith("c1: why it fails\n")


def test_measured_info_and_figure_rows_print_plain_cells():
    v = Verdict("m", kind="measured")
    v.add("context", None, 1234.5, "us", "a", "info", "a number", "±1 µs")
    v.add("Figure 2", None, None, status="figure redrawn")
    v.rows.append(MeasuredRow("n", 1.0, None, "ms", 0, "not derivable", "paper note", reason="no run"))
    v.rows.append(MeasuredRow("j", 2.0, 2.1, "ms", 6, "reproduced", arm=None, estimate=2.1,
                              ci95_value=[2.0, 2.2], margin={"text": "±10 %", "sources": ["a", "b"]}))
    v.rows.append(MeasuredRow("k", 3.0, 2.9, "s", 6, "not comparable", arm="a", estimate=2.9, margin={"text": ""}))
    records = v.to_frame().to_dict("records")
    assert records[0] == {"name": "context", "published": "-", "estimate": "1,234.5 µs", "95 % interval": "-",
                          "margin": "±1 µs", "runs": "a", "status": "info", "note": "a number"}
    assert records[1] == {"name": "Figure 2", "published": "-", "estimate": "-", "95 % interval": "-", "margin": "-",
                          "runs": "-", "status": "figure redrawn", "note": ""}
    assert records[2] == {"name": "n", "published": "1 ms", "estimate": "-", "95 % interval": "-", "margin": "-",
                          "runs": "0", "status": "not derivable", "note": "no run; paper note"}
    assert records[3] == {"name": "j", "published": "2 ms", "estimate": "2.1 ms", "95 % interval": "[2, 2.2] ms",
                          "margin": "±10 %", "runs": "6", "status": "reproduced", "note": "margin ±10 % from a, b"}
    assert records[4] == {"name": "k", "published": "3 s", "estimate": "2.9 s", "95 % interval": "-", "margin": "-",
                          "runs": "6 (a)", "status": "not comparable", "note": ""}
    text = _text(v.rich_table(), width=150)
    assert text.splitlines()[-3:] == ["[1] a number", "[3] no run; paper note", "[4] margin ±10 % from a, b"]


def test_the_exports_are_what_the_module_offers():
    assert sorted(verdict_module.__all__) == sorted(
        ["EXACT_MEASURED", "MEASURED", "OUTCOMES", "PUBLISHED_DATA", "SCHEMA", "SCHEMAS", "STATUSES", "VERDICT_FILE",
         "ClaimResult", "MeasuredRow", "Verdict", "VerdictRow"])


# -- faults found by review (each failed before its fix) ---------------------------------------------------------------

@pytest.mark.parametrize("computed", [np.float32(math.nan), np.float32(math.inf), np.float16(-math.inf)])
def test_a_numpy_nan_of_any_width_is_not_derivable_never_a_mismatch(pd_entry, computed):
    v = Verdict.for_entry(pd_entry)
    row = v.check("b", computed)
    assert (row.status, row.computed, v.outcome) == ("not derivable", None, "partial")
    assert v.check("a", np.float32(100.19)).status == "match"


CLAIMS_ONLY = '''id = "co"
title = "t"
citation = "c"
notebook = "x.ipynb"
mode = "local-measurement"
[[claims]]
id = "faster"
text = "a is faster than b"
principal = true
test = "a > b"
a = "a:rate_mbps"
b = "b:rate_mbps"
[[claims]]
id = "near"
text = "a near b"
test = "a / b within"
a = "a:rate_mbps"
b = "b:rate_mbps"
within = [0.9, 1.1]
[[claims]]
id = "delivered"
text = "most probes arrive"
test = "share >="
successes = "a:probes_delivered"
trials = "a:probes_sent"
q = 0.9
'''


def test_a_claims_only_entry_without_judge_runs_is_partial_not_redrawn(tmp_path):
    """Its claims were never judged: finalize marks them not derivable (it had ended "figure redrawn", ok)."""
    v = Verdict.for_entry(_entry(tmp_path, CLAIMS_ONLY))
    v.finalize()
    assert [(c.id, c.verdict, c.principal, c.a, c.b, c.within, c.successes, c.trials, c.q) for c in v.claims] == [
        ("faster", "not derivable", True, "a:rate_mbps", "b:rate_mbps", None, None, None, None),
        ("near", "not derivable", False, "a:rate_mbps", "b:rate_mbps", [0.9, 1.1], None, None, None),
        ("delivered", "not derivable", False, None, None, None, "a:probes_delivered", "a:probes_sent", 0.9)]
    assert [c.relation() for c in v.claims] == [
        "a:rate_mbps > b:rate_mbps", "a:rate_mbps / b:rate_mbps within [0.9, 1.1]",
        "a:probes_delivered / a:probes_sent >= 0.9"]
    assert {c.reason for c in v.claims} == {"the notebook did not judge this claim (judge_runs was not called)"}
    assert v.outcome == "partial" and v.claim_status() == "not derivable"
    v.finalize()
    assert len(v.claims) == 3                                        # once


@pytest.mark.parametrize(("text", "problem"), [
    ("[]", "expected a JSON object, got list"),
    ('{"schema": "benchbook.verdict/2"}', "figure_id: expected a non-empty string, got None"),
    ('{"schema": "benchbook.verdict/2", "figure_id": ""}', "figure_id: expected a non-empty string, got ''"),
    ('{"schema": "benchbook.verdict/2", "figure_id": "x", "rows": {}}', "rows: expected a list, got dict"),
    ('{"schema": "benchbook.verdict/2", "figure_id": "x", "rows": [null]}', "rows[0]: expected an object, got null"),
    ('{"schema": "benchbook.verdict/2", "figure_id": "x", "rows": [{"status": "match"}]}',
     "rows[0]: expected a string name"),
    ('{"schema": "benchbook.verdict/2", "figure_id": "x", "claims": [[]]}', "claims[0]: expected an object, got list"),
    ('{"schema": "benchbook.verdict/2", "figure_id": "x", "claims": [{"test": "a > b"}]}',
     "claims[0]: expected a string id"),
    ('{"schema": "benchbook.verdict/2", "figure_id": "x", "notes": [1]}', "notes[0]: expected a string, got int"),
    ('{"schema": "benchbook.verdict/2", "figure_id": "x", "claim": "c"}', "claim: expected an object or null, got str"),
    ('{"schema": "benchbook.verdict/2", "figure_id": "x", "figures": []}',
     "figures: expected an object or null, got list"),
    ('{"schema": "benchbook.verdict/2", "figure_id": "x", "plan": 3}', "plan: expected an object or null, got int"),
    ('{"schema": "benchbook.verdict/2", "figure_id": "x", "claims": [{"id": "c", "text": "t", "principal": true, '
     '"test": "a > b", "verdict": "maybe"}]}',
     "not a verdict: claim verdict 'maybe' is not one of holds, fails, inconclusive, not derivable"),
])
def test_a_malformed_verdict_json_is_refused_naming_the_file_and_the_field(tmp_path, text, problem):
    path = tmp_path / "verdict.json"
    path.write_text(text)
    with pytest.raises(ValueError) as exc:
        Verdict.load(path)
    assert str(exc.value) == f"{path}: {problem}"
