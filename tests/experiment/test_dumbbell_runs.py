"""The dumbbell run function of the repetition runner: a tiny experiment as root (two arms x 2 repetitions, one
fresh dumbbell each) run in the seeded order, a record and the iperf3/ss files per run, the per-run statistics,
nothing left behind; an arm this kernel cannot run recorded not runnable with the dumbbell's reason; the data
socket among recorded ss samples."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchbook.experiment.dumbbell_runs import (
    FlowsArm,
    FlowsRun,
    data_socket,
    flows_run,
    read_flow_report,
    read_ss_samples,
)
from benchbook.experiment.repetitions import TABLE_FILE, Statistic, run_repetitions
from benchbook.testbed.capabilities import probe_netem
from benchbook.testbed.cleanup import leftovers
from benchbook.testbed.dumbbell import FlowSpec, LinkSpec
from benchbook.tools import ss
from conftest import require_program, require_root

SS_BBR = Path(__file__).resolve().parents[1] / "data" / "tcp" / "ss-tin-bbr.txt"   # iperf3 -P 2 -C bbr, recorded


def test_the_data_socket_is_the_one_that_acked_most_and_a_bad_sample_line_is_named(tmp_path: Path) -> None:
    rows = ss.parse(SS_BBR.read_text())            # the control connection (184 bytes acked) and two streams
    assert [r["local_port"] for r in data_socket(rows * 2)] == [44606, 44606]
    assert data_socket([{"local_port": 1, "bytes_acked": 9}]) == []
    (tmp_path / "ss-flow1.jsonl").write_text(json.dumps(rows[0]) + "\n{not json\n")
    with pytest.raises(ValueError, match="ss-flow1.jsonl: line 2 column 2: expected one JSON object per line"):
        read_ss_samples(tmp_path)


def _samples(run: FlowsRun) -> list[Statistic]:
    return [Statistic("ss.samples", len(run.ss.get(1, [])), None, "samples", "ss -tin samples of sender 1")]


@pytest.mark.root
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_two_arms_twice_through_fresh_dumbbells_in_the_seeded_order(tmp_path) -> None:
    require_root()
    require_program("iperf3")

    link = LinkSpec(rate_bps=20_000_000, buffer_packets=50)
    arms = {"cubic": FlowsArm(link, (FlowSpec("cubic"),), duration_s=1, interval_s=0.5, ss_interval_s=0.1),
            "reno": FlowsArm(link, (FlowSpec("reno"), FlowSpec("reno", 5.0)), duration_s=1, interval_s=0.5)}
    res = run_repetitions(tmp_path, arms, 2, flows_run(measures=_samples), seed=2024, progress=None)
    rng = np.random.default_rng(2024)
    order = [(list(arms)[i], rnd) for rnd in (1, 2) for i in rng.permutation(2)]
    assert [(r["arm"], r["repetition"]) for r in res.records] == order
    assert [r["status"] for r in res.records] == ["complete"] * 4, [r["reason"] for r in res.records]
    tokens = [r["metrics"]["token"] for r in res.records]
    assert len(set(tokens)) == 4 and None not in tokens              # a fresh dumbbell every run
    starts = [r["metrics"]["started_unix_s"] for r in res.records]
    assert starts == sorted(starts)
    for rec in res.records:
        d = res.path(rec)
        n_flows = len(arms[rec["arm"]].flows)
        assert [f["cca_reported"] for f in rec["metrics"]["flows"]] == [rec["arm"]] * n_flows
        assert (d / "commands.jsonl").is_file() and any("iperf3" in line for line in
                                                         (d / "commands.jsonl").read_text().splitlines())
        for i in range(1, n_flows + 1):
            rep = read_flow_report(d, i)
            assert rep.cca_sender == rec["arm"] and rep.streams[0].bytes_received > 0
        assert {c["capability"] for c in rec["capabilities"]} >= {"iperf3", "qdisc:htb", f"tcp-cc:{rec['arm']}"}
        stats = {s["name"]: s for s in rec["statistics"]}
        assert 0 < stats["flow1.receiver_bps"]["value"] <= 20_000_000 * 1.05
        assert stats["bottleneck.drops"]["n"] > 0
        if rec["arm"] == "cubic":
            samples = read_ss_samples(d)
            assert len(samples) == stats["ss.samples"]["value"] > 3 and any("cwnd" in s for s in samples)
        else:
            assert "flow2.receiver_bps" in stats and not (d / "ss-flow1.jsonl").exists()
            delay = rec["metrics"]["emulation"]["delay"]
            if delay["mode"] == "delay-line":     # the arm's line is calibrated in its first run only
                line = delay["delay_lines"]["2"]
                assert line["after_run"]["a_to_b"]["delay_ns"] == 5_000_000
                calibrations = [c for c in (d / "commands.jsonl").read_text().splitlines() if "calibration" in c]
                if rec["repetition"] == 1:
                    assert line["calibration_udp_1gbps_1s"]["received_bps"] > 0 and len(calibrations) == 1
                else:
                    assert line["calibration_udp_1gbps_1s"] is None and line["calibration_lateness"] is None
                    assert "raw/reno/rep1" in line["calibration_note"] and calibrations == []
    table = pd.read_parquet(tmp_path / TABLE_FILE)
    tput = table[table["statistic"] == "flow1.receiver_bps"]
    assert sorted(zip(tput["arm"], tput["run"], strict=True)) == sorted(order) and tput["valid"].all()
    assert leftovers(set(tokens)) == leftovers(set())


@pytest.mark.root
def test_an_arm_the_dumbbell_cannot_build_is_recorded_not_runnable(tmp_path) -> None:
    require_root()
    require_program("iperf3")
    if probe_netem().ok:
        pytest.skip("this kernel has netem: jitter is runnable")
    arms = {"jitter": FlowsArm(LinkSpec(jitter_ms=5), (FlowSpec("reno"),), duration_s=1)}
    res = run_repetitions(tmp_path, arms, 2, flows_run(), seed=1, progress=None)
    assert [r["status"] for r in res.records] == ["not runnable"] * 2
    assert "jitter needs netem" in res.records[0]["reason"] and res.not_runnable()["jitter"].startswith("dumbbell:")
    assert {"capability": "delay emulation", "status": "missing"}.items() <= next(
        c for c in res.records[0]["capabilities"] if c["capability"] == "delay emulation").items()
    summary = json.loads((tmp_path / "repetitions.json").read_text())
    assert [x["rule"] for x in summary["excluded"]] == ["completed", "completed"]
