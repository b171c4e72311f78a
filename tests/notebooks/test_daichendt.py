"""Daichendt et al. (IITM SS23) Figs. 3-5 and Table 1: the paper's claims as tests across runs.

The v2 arm cannot run on a hybrid-cgroup host (this CI VM), so the claims are exercised where v2 "runs" on run
directories written by the real repetition runner from capture pairs generated with known latency models, each
analysed by the experiment's own analyse_point and point_statistics (the statistics a real run gives its record):
the relations hold where the truth has them, fail where it contradicts them, a percentile the runs' N cannot
resolve and a maximum are inconclusive and never judged as numbers, a counter perf cannot count is missing, and
without the v2 arm every claim is not derivable with the reason. A root test reproduces Fig. 3 for real."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
import pytest

from benchbook.capture.synth import LatencyModel, make_capture_pair
from benchbook.commands.reproduce import EXIT_PARTIAL
from benchbook.experiment import cgroup_latency as cl
from benchbook.experiment.repetitions import RunContext, Statistic, run_repetitions
from benchbook.paths import NOTEBOOKS_DIR
from benchbook.reproduce.registry import load_entry
from benchbook.reproduce.verdict import Verdict
from benchbook.testbed.capabilities import NotRunnable
from benchbook.tools import loadgen
from conftest import reproduce_cli, require_program, require_root

PAPER = NOTEBOOKS_DIR / "daichendt-iitm23"
sys.path.insert(0, str(PAPER))
import daichendt  # noqa: E402

V2_MISSING = ("cgroup v2 cpuset controller not available: cpuset controller is bound to a v1 hierarchy (cannot be "
              "rebound to v2 at run time)")          # what the local backend records on this VM
# v1 and v2 alike up to p99, v1 with more spikes: its p99.9 far above v2's (about 155 us against 9 us)
ALIKE = {"v1": LatencyModel(base_ns=5000, tail_mean_ns=500, spike_prob=4e-3, spike_ns=200_000),
         "v2": LatencyModel(base_ns=5000, tail_mean_ns=500, spike_prob=1e-3, spike_ns=20_000)}
# v1's p99 about 30 % above v2's (not "nearly identical") and v1 without spikes: its p99.9 below v2's
APART = {"v1": LatencyModel(base_ns=5000, tail_mean_ns=1000, spike_prob=0.0),
         "v2": LatencyModel(base_ns=5000, tail_mean_ns=500, spike_prob=4e-3, spike_ns=200_000)}


def _point(d: Path, mode: str, n: int, model: LatencyModel, seed: int, migrations: float) -> dict:
    """A complete point as measure_point records it, from a capture pair generated with known truth."""
    make_capture_pair(d / "pre.pcap", d / "post.pcap", n_packets=n, rate_pps=10_000, latency=model, seed=seed,
                      id_offset=loadgen.ID_OFFSET)
    cap = {"captured": n, "dropped_by_kernel": 0, "received_by_filter": n}
    return {"mode": mode, "rate_pps": 10_000.0, "status": "complete", "analysis": cl.analyse_point(d),
            "loadgen": {"sent": n, "requested_pps": 10_000.0, "achieved_pps": 10_000.0, "frame_size": 64},
            "captures": {"pre": cap, "post": cap},
            "perf": {"status": "run", "argv": ["perf", "stat", "-r", "3", "-x,", "-p", "1", "--", "sleep", "1"],
                     "counters": [{"event": "instructions", "value": None, "unit": "", "status": "not supported"},
                                  {"event": "cpu-migrations", "value": migrations, "unit": "", "status": "counted"}]}}


def _runs(out: Path, models: dict[str, LatencyModel], n: int = 5000, v2: bool = True, runs: int = 6) -> dict:
    """Runs of v1 and v2 at 10,000 pkt/s through the real repetition runner (arms as the experiment names them);
    returns the experiment's result as the notebook sees it."""
    def one_run(ctx: RunContext) -> list[Statistic]:
        mode = ctx.config["mode"]
        if mode == "v2" and not v2:
            raise NotRunnable(V2_MISSING)
        p = _point(ctx.directory, mode, n, models[mode], 10 * ctx.repetition + (mode == "v2"),
                   migrations=(4.0 if mode == "v1" else 2.0) + ctx.repetition % 2)
        return cl.point_statistics(p)

    arms = {cl.arm_name(m, 10_000): {"mode": m, "rate_pps": 10_000.0} for m in ("v1", "v2")}
    run_repetitions(out, arms, runs, one_run, seed=5, progress=None)
    return {"params": {"isolation_modes": ["v1", "v2"], "rates_pps": [10_000.0]},
            "arms": {"v1": {"runnable": True, "reason": ""},
                     "v2": {"runnable": v2, "reason": "" if v2 else V2_MISSING}}}


def _verdict(entry_id: str, out: Path, result: dict, part: str) -> tuple[dict, dict, dict]:
    verdict = Verdict.for_entry(load_entry(entry_id)).judge_runs(out)
    daichendt.add_info_rows(verdict, result, out, part)
    doc = verdict.to_dict()
    return doc, {c["id"]: c for c in doc["claims"]}, {r["name"]: r for r in doc["rows"]}


@pytest.fixture(scope="module")
def alike(tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("alike")
    return out, _runs(out, ALIKE)


def test_where_v2_runs_the_claims_are_judged_and_hold_on_data_that_has_them(alike):
    out, result = alike
    doc, claims, rows = _verdict("daichendt-iitm23-fig3", out, result, "fig3")
    for cid in ("same-median", "same-p99", "v1-higher-p99.9"):
        c = claims[cid]
        assert c["verdict"] == "holds" and c["principal"] and c["runs"] == [6, 6], (cid, c["reason"])
        assert len(c["values_a"]) == len(c["values_b"]) == 6 and c["ci95"] is not None and c["seed"] == 5
        assert "bootstrap over runs" in c["method"]
    assert claims["same-p99"]["margin"]["text"] == "±10 %"
    assert claims["same-p99"]["margin"]["sources"] == ["emulation allowance"]
    assert -0.0953 < claims["same-p99"]["ci90"][0] <= claims["same-p99"]["ci90"][1] < 0.0953  # inside ln 1.1
    assert claims["v1-higher-p99.9"]["ci95"][0] > 0
    again = claims["same-again-p99.99"]        # 5,000 packets per run cannot resolve p99.99 (36,887 needed)
    assert again["verdict"] == "inconclusive" and not again["principal"] and again["ci95"] is None
    assert "not resolvable at N = 5000: the 99.99 percentile needs N >= 36887" in again["reason"]
    assert again["runs_needed"] is None and again["values_a"] == []
    assert doc["outcome"] == "reproduced" and doc["claim"]["status"] == "reproduced"
    p999 = rows["v1: p99.9 latency at 10000 pkt/s"]
    assert p999["status"] == "info" and 100 < p999["computed"] < 200 and "95 % interval of the median" in p999["note"]
    assert "not resolvable at N = 5000" in rows["v2: p99.99 latency at 10000 pkt/s"]["note"]
    assert rows["v2: p99.99 latency at 10000 pkt/s"]["computed"] is None          # never a number, never 0
    top = rows["v1: observed maximum latency at 10000 pkt/s"]
    assert "largest observed over 6 run(s) x N = 5000" in top["note"] and top["computed"] > 100


def test_the_per_run_statistics_carry_n_and_null_where_a_run_cannot_resolve(alike):
    out, _ = alike
    table = pd.read_parquet(out / "run-statistics.parquet")
    p = table[(table["arm"] == "v1-rate10000") & (table["statistic"] == "p99.9_latency")]
    assert len(p) == 6 and set(p["n"]) == {5000} and p["value"].notna().all() and set(p["unit"]) == {"ns"}
    null = table[table["statistic"] == "p99.99_latency"]
    assert len(null) == 12 and null["value"].isna().all() and set(null["n"]) == {5000}
    assert null["definition"].str.contains("null: not resolvable at N = 5000", regex=False).all()
    ins = table[table["statistic"] == "instructions"]
    assert ins["value"].isna().all()
    assert ins["definition"].str.contains("<not supported> (missing, not zero)", regex=False).all()
    mig = table[(table["statistic"] == "cpu-migrations") & (table["arm"] == "v1-rate10000")]
    assert set(mig["value"]) == {12.0, 15.0} and set(mig["unit"]) == {"migrations"}   # 3 x perf's mean


def test_relations_the_data_contradict_fail(tmp_path):
    result = _runs(tmp_path, APART)
    doc, claims, _ = _verdict("daichendt-iitm23-fig3", tmp_path, result, "fig3")
    assert claims["same-p99"]["verdict"] == "fails" and claims["same-p99"]["ci95"][0] > 0.0953
    assert claims["v1-higher-p99.9"]["verdict"] == "fails"
    assert claims["same-median"]["verdict"] == "holds"
    assert doc["outcome"] == "mismatch" and doc["claim"]["status"] == "mismatch"


def test_a_maximum_and_a_counter_perf_cannot_count_are_never_judged(alike):
    out, result = alike
    _, worst, _ = _verdict("daichendt-iitm23-fig5", out, result, "fig5")   # fig5 reads the same rate and arms
    extreme = worst["v2-extreme-outliers"]
    assert extreme["verdict"] == "inconclusive" and "an extreme of its run" in extreme["reason"]
    assert "over 6 run(s) x N = 5000" in extreme["reason"] and extreme["ci95"] is None
    doc, claims, rows = _verdict("daichendt-iitm23-table1", out, result, "table1")
    ins = claims["v2-fewer-instructions"]
    assert ins["verdict"] == "not derivable" and "<not supported>" in ins["reason"]
    assert claims["v2-fewer-migrations"]["verdict"] == "holds"      # 12 or 15 against 6 or 9 per run
    row = rows["instructions v1"]
    assert row["status"] == "not comparable" and "60 s of forwarding" in row["reason"] and row["values"] == []
    assert rows["cpu-migrations v1"]["status"] == "not comparable" and rows["cpu-migrations v1"]["estimate"] == 13.5
    assert rows["v1: instructions per run at 10000 pkt/s"]["computed"] is None
    assert doc["outcome"] == "partial"    # not comparable rows, a principal claim not derivable


def test_without_the_v2_arm_every_claim_is_not_derivable_with_the_reason(tmp_path):
    result = _runs(tmp_path, ALIKE, v2=False, runs=2)
    doc, claims, rows = _verdict("daichendt-iitm23-fig3", tmp_path, result, "fig3")
    for c in claims.values():
        assert c["verdict"] == "not derivable" and V2_MISSING in c["reason"], c
    assert doc["outcome"] == "partial" and doc["claim"]["status"] == "not derivable"
    assert rows["cgroup v2: not runnable here"]["note"] == V2_MISSING
    v1 = rows["v1: p99 latency at 10000 pkt/s"]       # the v1 side is measured: 2 runs, no interval yet
    assert v1["status"] == "info" and v1["computed"] > 0 and "no interval" in v1["note"]


def test_the_entries_state_the_papers_claims():
    fig3 = load_entry("daichendt-iitm23-fig3")
    assert [c.id for c in fig3.claims if c.principal] == ["same-median", "same-p99", "v1-higher-p99.9"]
    assert all(c.margin_note and c.margin_source == ("emulation allowance",) for c in fig3.claims if c.test == "a ~ b")
    assert fig3.parameters["repetitions"] >= 6
    table1 = load_entry("daichendt-iitm23-table1")
    assert table1.measured and all(not p.comparable and p.not_comparable_reason
                                                for p in table1.published)
    for e in ("fig3", "fig4", "fig5", "table1"):
        entry = load_entry(f"daichendt-iitm23-{e}")
        assert entry.measured and any(c.principal for c in entry.claims)
        arms = {ref.arm for c in entry.claims for ref in (c.a, c.b)}
        rate = int(entry.parameters["rates_pps"][0])
        assert arms == {f"v1-rate{rate}", f"v2-rate{rate}"}, e


@pytest.mark.root
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_fig3_measures_the_v1_side_and_refuses_p99_99_from_10000_packets(tmp_path):
    """Fig. 3 with 2 runs per mode of 1 s at 10,000 pkt/s: each run's statistics carry N; its p99.99 is null with
    the reason (36,887 packets needed), never 0; without the v2 arm on this host the claims are not derivable."""
    require_root()
    for program in ("dpdk-testpmd", "tcpdump"):
        require_program(program)
    r = reproduce_cli(tmp_path, "daichendt-iitm23-fig3", "-p", "duration_s=1", "-p", "repetitions=2",
                      timeout_s=600)
    (run,) = sorted((tmp_path / "daichendt-iitm23-fig3").iterdir())
    verdict = json.loads((run / "verdict.json").read_text())
    points = json.loads((run / "latency-points.json").read_text())["points"]
    done = [p for p in points if p["mode"] == "v1" and p["status"] == "complete"]
    assert len(done) == 2, r.stdout[-3000:] + r.stderr[-3000:]
    for p in done:
        an = p["analysis"]
        assert an["percentiles_ns"]["99.99"] is None and an["percentiles_ns"]["99.9"] is not None
        assert "p99.99 needs N >= 36887" in an["unresolved_percentiles"]["99.99"]
    table = pd.read_parquet(run / "run-statistics.parquet")
    v1 = table[table["arm"] == "v1-rate10000"]
    assert set(v1[v1["statistic"] == "p50_latency"]["n"]) <= {10_000} and len(set(v1["run"])) == 2
    assert v1[v1["statistic"] == "p99.99_latency"]["value"].isna().all()
    v2_ran = any(p["mode"] == "v2" and p["status"] == "complete" for p in points)
    if not v2_ran:
        assert r.returncode == EXIT_PARTIAL, r.stdout[-3000:] + r.stderr[-3000:]
        assert verdict["claim"]["status"] == "not derivable"
        assert all(c["verdict"] == "not derivable" and "v2" in c["reason"] for c in verdict["claims"])
    rows = {row["name"]: row for row in verdict["rows"]}
    assert rows["v1: p99.99 latency at 10000 pkt/s"]["computed"] is None
    assert "hdr-rate10000" in verdict["figures"]
