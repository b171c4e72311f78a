"""Judging measured entries from their runs (SPEC-21 sections 3 and 4), on run-statistics tables generated with
known truth by the real repetition runner: every row status (reproduced, mismatch, inconclusive with the runs
needed, not resolvable, below the noise floor, not comparable, not derivable) and every claim test (holds, fails,
inconclusive; paired within one arm and unpaired across arms); then, by simulation, that a paired "a > b" claim
holds under a true null at most at its error rate."""

from __future__ import annotations

import math
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchbook.analysis.intervals import proportion_interval
from benchbook.experiment.repetitions import Statistic, run_repetitions, statistics_table
from benchbook.reproduce.judge import JudgeError, RunStatistics, judge_claim, judge_entry, within_run_limit
from benchbook.reproduce.noise_floor import load_noise_floors, write_calibration
from benchbook.reproduce.registry import load_entry_file
from benchbook.testbed.capabilities import NotRunnable

TRUTH = {"a": 100.0, "a2": 100.0, "b": 80.0}          # Mbit/s medians of the arms' per-run throughput
SPREAD = 0.01                                          # run-to-run sigma of ln(throughput)


def one_run(ctx) -> list[Statistic]:
    """A run with known truth: throughput lognormal around TRUTH[arm]; in arm "a" also a second throughput 20 %
    below the first in the same run (a paired effect), a twin of it (paired null), a Jain index, a p99.9 from
    1000 packets, a maximum, and 9 of 10 epochs ok."""
    if ctx.arm == "gone":
        raise NotRunnable("no such qdisc here (a test arm)")
    rng = np.random.default_rng([zlib.crc32(ctx.arm.encode()), ctx.repetition])  # not hash(): salted per process
    thr = TRUTH[ctx.arm] * math.exp(rng.normal(0, SPREAD))
    out = [Statistic("throughput_mbps", thr, 1000, "Mbit/s", "mean receiver rate over the run")]
    if ctx.arm == "a":
        out += [Statistic("lower_mbps", thr * 0.8 * math.exp(rng.normal(0, SPREAD)), 1000, "Mbit/s", "80 % of it"),
                Statistic("twin_mbps", thr * math.exp(rng.normal(0, SPREAD)), 1000, "Mbit/s", "the same again"),
                Statistic("jain", min(1.0, 0.95 + rng.normal(0, 0.005)), 200, "", "Jain's index of 2 flows"),
                Statistic("p99.9_latency_ms", 5.0 + rng.normal(0, 0.01), 1000, "ms", "discrete p99.9 of 1000"),
                Statistic("max_latency_ms", 9.0 + rng.normal(0, 0.1), 1000, "ms", "largest latency"),
                Statistic("epochs_ok", 9, None, "", "epochs of the right shape"),
                Statistic("epochs", 10, None, "", "epochs judged"),
                Statistic("sometimes", None if ctx.repetition == 2 else thr, None, "Mbit/s", "missing in run 2")]
    return out


@pytest.fixture(scope="module")
def runs8(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("runs8")
    run_repetitions(out, {"a": None, "a2": None, "b": None, "gone": None}, 8, one_run, seed=7, progress=None)
    return out


@pytest.fixture(scope="module")
def runs3(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("runs3")
    run_repetitions(out, {"a": None, "b": None}, 3, one_run, seed=7, progress=None)
    return out


HEAD = 'id = "e"\ntitle = "t"\ncitation = "c"\nnotebook = "x.ipynb"\nmode = "local-measurement"\n'


def value(name: str, published: float, arm: str, stat: str, margin: str = "margin_rel = 0.05",
          value_range: str = "rate", unit: str = "Mbit/s", extra: str = "") -> str:
    return (f'[[published]]\nname = "{name}"\nvalue = {published}\nunit = "{unit}"\narm = "{arm}"\n'
            f'run_statistic = "{stat}"\n{margin}\nmargin_source = ["paper spread"]\nvalue_range = "{value_range}"\n'
            + extra)


def claim(cid: str, test: str, a: str = "", b: str = "", extra: str = "", principal: bool = True) -> str:
    ab = (f'a = "{a}"\nb = "{b}"\n' if a else "")
    return (f'[[claims]]\nid = "{cid}"\ntext = "{cid}"\nprincipal = {str(principal).lower()}\ntest = "{test}"\n'
            + ab + extra)


def entry_of(tmp_path: Path, body: str, claims: str = ""):
    p = tmp_path / "e.toml"
    p.write_text(HEAD + body + (claims or claim("any", "a > b", "a:throughput_mbps", "b:throughput_mbps")))
    return load_entry_file(p)


def rows_of(tmp_path: Path, runs: Path, body: str, **kw) -> dict:
    return {r.name: r for r in judge_entry(entry_of(tmp_path, body), runs, **kw).rows}


def test_row_statuses_from_runs_with_known_truth(tmp_path, runs8):
    body = (value("same", 100, "a", "throughput_mbps")                      # truth 100 within +-5 %
            + value("off", 130, "a", "throughput_mbps")                     # truth 23 % below
            + value("jain", 0.95, "a", "jain", "margin_abs = 0.02", "jain:2", "")
            + value("p999", 5.0, "a", "p99.9_latency_ms", unit="ms")        # 1000 packets cannot resolve p99.9
            + value("max", 9.0, "a", "max_latency_ms", unit="ms")           # an extreme: never resolvable
            + '[[published]]\nname = "nc"\nvalue = 1.0\nunit = "Mbit/s"\narm = "a"\nrun_statistic = '
              '"throughput_mbps"\ncomparable = false\nnot_comparable_reason = "the paper counts goodput"\n'
            + value("gone", 100, "gone", "throughput_mbps")
            + value("nostat", 100, "a", "goodput_mbps")
            + value("gaps", 100, "a", "sometimes"))
    rows = rows_of(tmp_path, runs8, body)
    same = rows["same"]
    assert same.status == "reproduced" and same.runs == 8 and same.run_ids == list(range(1, 9))
    assert len(same.values) == 8 and same.n_per_run == [1000] * 8 and same.definition.startswith("mean receiver")
    assert same.estimate == pytest.approx(np.median(same.values)) and same.computed == same.estimate
    assert -math.log(1.05) < same.ci90[0] <= same.ci95[1] < math.log(1.05) and same.ci95[0] <= same.ci90[0]
    assert same.ci95_value == pytest.approx([100 * math.exp(x) for x in same.ci95])
    assert min(same.values) <= same.ci95_value[0] and same.ci95_value[1] <= max(same.values)
    assert same.margin == {"delta": pytest.approx(math.log(1.05)), "scale": "log-ratio", "text": "±5 %",
                           "sources": ["paper spread"], "note": "", "print_precision": None}
    assert same.method.startswith("order-statistic") and same.alpha == 0.05 and same.runs_needed is None
    off = rows["off"]
    assert off.status == "mismatch" and off.ci95[1] < -math.log(1.05)
    assert rows["jain"].status == "reproduced" and rows["jain"].margin["scale"] == "difference"
    for name, why in (("p999", "not resolvable at N = 1000: the 99.9 percentile needs N >= 3688"),
                      ("max", "an extreme of its run")):
        r = rows[name]
        assert r.status == "inconclusive" and why in r.reason and r.runs_needed is None and r.ci95 is None, r
        assert r.estimate is not None                 # the per-run values stay visible
    assert rows["nc"].status == "not comparable" and rows["nc"].reason == "the paper counts goodput"
    assert rows["nc"].runs == 8
    gone = rows["gone"]
    assert gone.status == "not derivable" and "no valid run of arm 'gone'" in gone.reason
    assert "no such qdisc here" in gone.reason and gone.values == []
    assert rows["nostat"].status == "not derivable"
    assert "carry no statistic 'goodput_mbps' (they carry: " in rows["nostat"].reason
    gaps = rows["gaps"]
    assert gaps.runs == 7 and gaps.runs_without_value == [2] and "runs [2]" in gaps.reason


def test_too_few_runs_is_inconclusive_with_the_runs_needed(tmp_path, runs3):
    r = rows_of(tmp_path, runs3, value("same", 100, "a", "throughput_mbps"))["same"]
    assert r.status == "inconclusive" and r.runs == 3 and r.ci95 is None and r.runs_needed >= 6
    assert "needs at least 6 runs" in r.reason and f"about {r.runs_needed} runs" in r.reason


def test_a_margin_below_the_noise_floor_is_inconclusive(tmp_path, runs8):
    fp = {"hostname": "testbed-1", "kernel": {"release": "6.1"}, "cpu": {"model": "x", "count": 2}, "tools": {}}
    body = value("same", 100, "a", "throughput_mbps")
    write_calibration("e", fp, {"a:throughput_mbps": {"mde": 0.08, "scale": "log-ratio"}}, {"a": 6, "a-twin": 6},
                      root=tmp_path / "cal")
    floors = load_noise_floors("e", tmp_path / "cal", fp)
    r = rows_of(tmp_path, runs8, body, floors=floors)["same"]
    assert r.status == "inconclusive" and "below the noise floor" in r.reason and "MDE 0.08" in r.reason
    assert r.noise_floor["applies"] and r.runs_needed is None and r.ci90 is not None
    write_calibration("e", fp, {"throughput_mbps": {"mde": 0.01, "scale": "log-ratio"}}, {"a": 6},
                      root=tmp_path / "cal")
    r = rows_of(tmp_path, runs8, body, floors=load_noise_floors("e", tmp_path / "cal", fp))["same"]
    assert r.status == "reproduced" and r.noise_floor["applies"] is False
    # another host (its key differs) has no calibration: nothing applies
    other = load_noise_floors("e", tmp_path / "cal", {**fp, "hostname": "testbed-2"})
    assert other.path is None and rows_of(tmp_path, runs8, body, floors=other)["same"].noise_floor is None


def test_runs_that_do_not_fit_the_declaration(tmp_path, runs8):
    with pytest.raises(JudgeError, match=r"e.toml: \[\[published\]\] 'u': the runs give a:throughput_mbps in "
                                         r"'Mbit/s', the paper prints 'Gbit/s'"):
        rows_of(tmp_path, runs8, value("u", 0.1, "a", "throughput_mbps", unit="Gbit/s"))
    r = rows_of(tmp_path, runs8, value("j", 0.5, "a", "throughput_mbps", "margin_abs = 0.1", "share"))["j"]
    assert r.status == "not derivable" and "outside the range of the statistic" in r.reason
    empty = rows_of(tmp_path, tmp_path / "nothing-ran", value("same", 100, "a", "throughput_mbps"))["same"]
    assert empty.status == "not derivable" and "ran no repetitions here" in empty.reason


def claims_of(tmp_path: Path, runs: Path, claims: str) -> dict:
    return {c.id: c for c in judge_entry(entry_of(tmp_path, "", claims), runs).claims}


def test_claims_hold_fail_or_stay_inconclusive(tmp_path, runs8, runs3):
    rel10 = 'margin_rel = 0.10\nmargin_source = ["paper spread"]\n'
    text = (claim("gt", "a > b", "a:throughput_mbps", "b:throughput_mbps")             # unpaired, a 25 % above b
            + claim("lt", "a < b", "a:throughput_mbps", "b:throughput_mbps")
            + claim("pgt", "a > b", "a:throughput_mbps", "a:lower_mbps")               # paired, per run
            + claim("plt", "a < b", "a:throughput_mbps", "a:lower_mbps")
            + claim("pnull", "a > b", "a:throughput_mbps", "a:twin_mbps")               # paired null
            + claim("eq", "a ~ b", "a:throughput_mbps", "a2:throughput_mbps", rel10)   # unpaired, same truth
            + claim("neq", "a ~ b", "a:throughput_mbps", "b:throughput_mbps", rel10)
            + claim("peq", "a ~ b", "a:throughput_mbps", "a:twin_mbps", rel10)         # paired, same truth
            + claim("in", "a / b within", "a:throughput_mbps", "b:throughput_mbps", "within = [1.1, 1.4]\n")
            + claim("out", "a / b within", "a:throughput_mbps", "b:throughput_mbps", "within = [1.5, 2.0]\n")
            + claim("pin", "a / b within", "a:lower_mbps", "a:throughput_mbps", "within = [0.7, 0.9]\n")
            + claim("sh", "share >=", extra='successes = "a:epochs_ok"\ntrials = "a:epochs"\nq = 0.8\n')
            + claim("shf", "share >=", extra='successes = "a:epochs_ok"\ntrials = "a:epochs"\nq = 0.97\n')
            + claim("shi", "share >=", extra='successes = "a:epochs_ok"\ntrials = "a:epochs"\nq = 0.88\n')
            + claim("nd", "a > b", "a:throughput_mbps", "gone:throughput_mbps"))
    c = claims_of(tmp_path, runs8, text)
    verdicts = {k: v.verdict for k, v in c.items()}
    assert verdicts == {"gt": "holds", "lt": "fails", "pgt": "holds", "plt": "fails", "pnull": "inconclusive",
                        "eq": "holds", "neq": "fails", "peq": "holds", "in": "holds", "out": "fails", "pin": "holds",
                        "sh": "holds", "shf": "fails", "shi": "inconclusive", "nd": "not derivable"}
    gt, pgt = c["gt"], c["pgt"]
    assert not gt.paired and gt.runs == [8, 8] and gt.scale == "log-ratio" and gt.seed == 7
    assert gt.delta == pytest.approx(math.log(np.median(gt.values_a) / np.median(gt.values_b)))
    assert gt.ci95[0] > 0 and "bootstrap over runs" in gt.method
    assert pgt.paired and pgt.runs == 8 and pgt.run_ids == list(range(1, 9)) and pgt.ci95[0] > 0
    assert pgt.delta == pytest.approx(np.median(np.log(np.array(pgt.values_a) / pgt.values_b)))
    assert "order-statistic" in pgt.method and pgt.seed is None
    assert pgt.run_ids_a == pgt.run_ids_b == pgt.run_ids and pgt.n_per_run_a == pgt.n_per_run_b == [1000] * 8
    assert (pgt.definition_a, pgt.definition_b, pgt.unit_b) == ("mean receiver rate over the run", "80 % of it",
                                                               "Mbit/s")
    assert c["pnull"].ci95[0] <= 0 <= c["pnull"].ci95[1] and c["pnull"].runs_needed is None or \
        c["pnull"].runs_needed > 8
    assert c["eq"].margin["text"] == "±10 %" and c["in"].within == [1.1, 1.4]
    sh = c["sh"]
    assert sh.counts == [72, 80] and sh.share == 0.9 and sh.ci95[0] >= 0.8 and "independent" in sh.method
    assert sh.run_ids_a == sh.run_ids_b == list(range(1, 9)) and sh.definition_b == "epochs judged"
    assert c["shf"].ci95[1] < 0.97
    shi = c["shi"]
    assert shi.ci95[0] < 0.88 <= shi.ci95[1] and shi.runs_needed > 8 and f"about {shi.runs_needed} runs" in shi.reason
    assert "no valid run of arm 'gone'" in c["nd"].reason
    few = claims_of(tmp_path, runs3, claim("gt", "a > b", "a:throughput_mbps", "b:throughput_mbps")
                    + claim("eq", "a ~ b", "a:throughput_mbps", "b:throughput_mbps", rel10)
                    + claim("in", "a / b within", "a:throughput_mbps", "b:throughput_mbps", "within = [1.1, 1.4]\n"))
    for k, v in few.items():  # 3 runs per arm: a bootstrap would look decisive; the judge says how many would do
        assert v.verdict == "inconclusive" and v.ci95 is None and v.runs_needed >= 6 and "per arm" in v.reason, k


def test_the_share_runs_needed_decide_at_that_count(tmp_path, runs8):
    """runs_needed of a share claim: the run count at which the interval of the same share clears q."""
    c = claims_of(tmp_path, runs8, claim("shi", "share >=",
                                         extra='successes = "a:epochs_ok"\ntrials = "a:epochs"\nq = 0.88\n'))["shi"]
    r = c.runs_needed
    assert proportion_interval(9 * r, 10 * r).low >= 0.88 > proportion_interval(9 * (r - 1), 10 * (r - 1)).low


def test_claims_on_values_that_have_no_ratio(tmp_path):
    table = pd.DataFrame({"arm": ["a"] * 12, "statistic": ["x", "y"] * 6, "run": np.repeat(np.arange(1, 7), 2),
                          "position": 0, "value": [1.0, 0.0] * 6, "n": pd.array([None] * 12, dtype="Int64"),
                          "unit": "", "definition": "d", "valid": True})
    data = RunStatistics("mem", table, {"plan": {"arms": {"a": None}}})
    e = entry_of(tmp_path, "", claim("w", "a / b within", "a:x", "a:y", "within = [1, 2]\n")
                 + claim("gt", "a > b", "a:x", "a:y")
                 + claim("eq", "a ~ b", "a:x", "a:y", 'margin_rel = 0.1\nmargin_source = ["paper spread"]\n'))
    w, gt, eq = (judge_claim(c, data) for c in e.claims)
    assert w.verdict == "not derivable" and "has no log ratio" in w.reason
    # a claim judged no further still carries its claimed range or margin: verdict.json and the tables show them
    # (the range was missing, and relation() raised a KeyError in `Verdict.claims_frame`)
    assert w.within == [1.0, 2.0] and w.relation() == "a:x / a:y within [1, 2]"
    assert eq.verdict == "not derivable" and "declare margin_abs" in eq.reason
    assert eq.margin["text"] == "±10 %" and eq.relation() == "a:x ~ a:y within ±10 %"
    assert gt.verdict == "holds" and gt.scale == "difference" and gt.delta == 1.0


@pytest.mark.parametrize(("name", "n", "limited"), [
    ("p99", [368, 400], None), ("p99", [367, 400], "needs N >= 368"), ("probe_p99_ms", [10], "N >= 368"),
    ("p99.9_latency", [5000], None), ("flow1.p50", [6], None), ("max_latency", [10**6], "extreme"),
    ("cwnd_max", [10], "extreme"), ("min", [1], "extreme"), ("first_w_max_reached_s", [None], None),
    ("slowest_over_w_max_median", [5], None), ("reduction_median", [3], None), ("p99", [None], "records no N"),
])
def test_which_statistics_a_run_cannot_resolve(name, n, limited):
    why = within_run_limit(name, n)
    assert (why is None) if limited is None else (limited in why), why


def _records(deltas: np.ndarray) -> pd.DataFrame:
    """A runner table of one arm whose runs carry a and b with ln(a/b) = deltas (one data set per call)."""
    r = deltas.size
    a = np.exp(deltas) * 100.0
    recs = [{"arm": "x", "repetition": i + 1, "position": i + 1, "valid": True,
             "statistics": [{"name": "a", "value": float(a[i]), "n": None, "unit": "", "definition": "a"},
                            {"name": "b", "value": 100.0, "n": None, "unit": "", "definition": "b"}]}
             for i in range(r)]
    return statistics_table(recs)


def test_paired_directional_claims_keep_their_error_rate_by_simulation(tmp_path):
    """200 data sets of 8 paired runs with no true effect (ln(a/b) ~ N(0, 0.05)): "a > b" and "a < b" each hold in
    at most 5 % of them. The 95 % interval the claims read is equal-tailed: [X(1), X(8)] of 8 runs, so each
    direction holds with probability 1/256 (the shortest interval, [X(1), X(7)], would let "a < b" hold with
    9/256 = 3.5 %: more than the 2.5 % a one-sided reading assumes). With a true effect of 0.1 (two standard
    deviations) "a > b" holds in most of 100."""
    e = entry_of(tmp_path, "", claim("gt", "a > b", "x:a", "x:b") + claim("lt", "a < b", "x:a", "x:b"))
    rng = np.random.default_rng(21)
    null = [[judge_claim(c, data).verdict for c in e.claims]
            for data in (RunStatistics("mem", _records(rng.normal(0, 0.05, 8)), {}) for _ in range(200))]
    effect = [judge_claim(e.claims[0], RunStatistics("mem", _records(rng.normal(0.1, 0.05, 8)), {})).verdict
              for _ in range(100)]
    for side in (0, 1):
        assert sum(v[side] == "holds" for v in null) <= 0.025 * 200, side
    assert effect.count("holds") >= 85 and effect.count("fails") == 0


def test_equivalence_claims_use_the_90_percent_interval(tmp_path):
    """TOST: "a ~ b" holds when the 90 % interval lies inside the margin although the 95 % one does not. Paired
    log ratios of 8 runs: the 90 % interval is [X(2), X(7)] = [-0.02, 0.03], the 95 % one [X(1), X(7)] reaches
    -0.09, the margin is ln(1.05) = 0.0488."""
    deltas = np.array([-0.09, -0.02, -0.01, 0.0, 0.01, 0.02, 0.03, 0.04])
    e = entry_of(tmp_path, "", claim("eq", "a ~ b", "x:a", "x:b",
                                     'margin_rel = 0.05\nmargin_source = ["paper spread"]\n'))
    c = judge_claim(e.claims[0], RunStatistics("mem", _records(deltas), {}))
    assert c.ci90 == pytest.approx([-0.02, 0.03]) and c.ci95[0] == pytest.approx(-0.09)
    assert c.verdict == "holds"


def test_alpha_per_look_widens_every_interval_and_is_recorded(tmp_path: Path, runs8: Path) -> None:
    """At alpha = 0.05 / 4 (a look of --until-decisive planned with 4 looks) every row and claim is judged with
    the 97.5 % and 98.75 % intervals and says so; 8 runs still decide what they decide at 0.05 here (the effects
    are far from the margins), 6 runs cannot give a 98.75 % interval of a median (it needs 8)."""
    entry = entry_of(tmp_path, value("a", 100.0, "a", "throughput_mbps"),
                     claim("paired", "a > b", "a:throughput_mbps", "a:lower_mbps")
                     + claim("unpaired", "a > b", "a:throughput_mbps", "b:throughput_mbps", principal=False)
                     + claim("share", "share >=", extra='successes = "a:epochs_ok"\ntrials = "a:epochs"\nq = 0.5\n',
                             principal=False))
    wide, usual = judge_entry(entry, runs8, alpha=0.0125), judge_entry(entry, runs8)
    assert [r.alpha for r in wide.rows] == [0.0125] and {c.alpha for c in wide.claims} == {0.0125}
    assert [r.status for r in wide.rows] == [r.status for r in usual.rows] == ["reproduced"]
    assert [c.verdict for c in wide.claims] == [c.verdict for c in usual.claims] == ["holds"] * 3
    for w, u in zip([*wide.rows, *wide.claims], [*usual.rows, *usual.claims], strict=True):
        assert w.ci95[0] <= u.ci95[0] and u.ci95[1] <= w.ci95[1]     # never narrower
        if u.ci90 is not None:                                        # share claims: Clopper-Pearson only
            assert w.ci90[0] <= u.ci90[0] and u.ci90[1] <= w.ci90[1]
    # equal tails over 8 runs: the 95 % and 98.75 % intervals are both [X(1), X(8)]; the 90 % one is [X(2), X(7)],
    # the 97.5 % one [X(1), X(8)]
    assert wide.rows[0].ci95 == usual.rows[0].ci95 and wide.rows[0].ci90 != usual.rows[0].ci90
    six = tmp_path / "six"
    run_repetitions(six, {"a": None, "b": None}, 6, one_run, seed=7, progress=None)
    few = judge_entry(entry, six, alpha=0.0125)
    assert few.rows[0].status == "inconclusive" and few.rows[0].runs_needed >= 8
    assert judge_entry(entry, six).rows[0].status == "reproduced"


def latency_run(ctx) -> list[Statistic]:
    """Runs as the cgroup-latency experiment records them, with known truth: 20,000 packets per run, the p99 of
    arm "slow" 20 % above that of "fast" (run-to-run sigma 1 %), the p99.99 null (20,000 packets cannot resolve
    it: the runner stores null with the reason), a maximum, and an instruction count perf could not count. In
    run 3 of "fast" only 3,000 packets were matched, so its p99.9 is null while the other runs carry one."""
    rng = np.random.default_rng([7 if ctx.arm == "slow" else 8, ctx.repetition])
    scale = 1.2 if ctx.arm == "slow" else 1.0
    n = 3000 if (ctx.arm, ctx.repetition) == ("fast", 3) else 20_000
    why = "null: not resolvable at N = 20000: p99.99 needs N >= 36887 for a 95 % interval"
    return [Statistic("p99_latency", 40_000 * scale * math.exp(rng.normal(0, SPREAD)), n, "ns", "discrete p99"),
            Statistic("p99.9_latency", None if n < 3688 else 90_000 * scale, n, "ns", "discrete p99.9"),
            Statistic("p99.99_latency", None, n, "ns", f"discrete p99.99; {why}"),
            Statistic("max_latency", 500_000 * scale * math.exp(rng.normal(0, 0.3)), n, "ns", "largest latency"),
            Statistic("instructions", None, 3, "instructions", "perf stat; null: perf reported <not supported>")]


def test_statistics_no_run_resolves_are_never_judged_as_numbers(tmp_path):
    """A claim or value on a percentile the runs' N cannot resolve (stored null by the runner, or carried with too
    small an N) and a claim on maxima are inconclusive with the reason and no runs needed (more runs do not
    help); a percentile some runs resolve and others do not is not judged on the runs that happen to resolve it;
    a counter no run could count is not derivable, saying why; a resolvable percentile is judged."""
    runs = tmp_path / "runs"
    run_repetitions(runs, {"slow": None, "fast": None}, 6, latency_run, seed=3, progress=None)
    rel10 = 'margin_rel = 0.10\nmargin_source = ["paper spread"]\n'
    c = claims_of(tmp_path, runs, claim("p99", "a > b", "slow:p99_latency", "fast:p99_latency")
                  + claim("p9999", "a ~ b", "slow:p99.99_latency", "fast:p99.99_latency", rel10)
                  + claim("p999", "a > b", "slow:p99.9_latency", "fast:p99.9_latency")
                  + claim("max", "a > b", "slow:max_latency", "fast:max_latency")
                  + claim("pmax", "a > b", "slow:max_latency", "slow:p99_latency")
                  + claim("ins", "a > b", "slow:instructions", "fast:instructions"))
    assert c["p99"].verdict == "holds" and c["p99"].ci95[0] > 0
    for k, why in (("p9999", "not resolvable at N = 20000: the 99.99 percentile needs N >= 36887"),
                   ("p999", "not resolvable at N = 3000: the 99.9 percentile needs N >= 3688"),
                   ("max", "an extreme of its run"), ("pmax", "slow:max_latency: not resolvable")):
        assert c[k].verdict == "inconclusive" and why in c[k].reason and c[k].runs_needed is None, (k, c[k].reason)
        assert c[k].ci95 is None and c[k].delta is None and "resolvability" in c[k].method
    top = max(c["max"].values_a)
    assert f"..{top:.6g} ns over 6 run(s) x N = 20000" in c["max"].reason   # the observed maxima over r x N
    assert c["ins"].verdict == "not derivable" and "<not supported>" in c["ins"].reason
    assert "slow:instructions" in c["ins"].reason and "fast:instructions" in c["ins"].reason   # both sides say why
    rows = rows_of(tmp_path, runs, value("p9999", 100_000, "fast", "p99.99_latency", unit="ns")
                   + value("p999", 90_000, "fast", "p99.9_latency", unit="ns")
                   + value("ins", 5e9, "fast", "instructions", unit="instructions"))
    for name in ("p9999", "p999"):
        assert rows[name].status == "inconclusive" and "not resolvable at N = " in rows[name].reason, rows[name]
        assert rows[name].runs_needed is None and rows[name].ci95 is None
    assert rows["ins"].status == "not derivable" and "<not supported>" in rows["ins"].reason
