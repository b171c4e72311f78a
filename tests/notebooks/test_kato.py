"""Kato et al. (2018) as a gated-link model: the gate schedule, the realised periods and the per-second summary on
values of known shape, the dry run listing every gate step, and (root) two short runs judged across runs that
leave nothing behind."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchbook.commands.reproduce import EXIT_INCONCLUSIVE, EXIT_MISMATCH
from benchbook.reproduce.registry import load_entry
from benchbook.testbed.cleanup import leftovers
from conftest import reproduce_cli, require_program, require_root

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT / "notebooks" / "kato-ijat18"))
import kato  # noqa: E402


def test_gate_schedule_alternates_closed_and_open_through_the_window() -> None:
    sch = kato.gate_schedule(100_000_000, 6.0, 10.0, 110, 320)
    rates = [s.rate_bps for s in sch.steps]
    assert sch.steps[0].t_s == 0 and rates[0] == 100_000_000
    assert rates[1:-1:2] == [kato.GATE_CLOSED_BPS] * 24 and set(rates[2::2]) == {100_000_000}
    assert sch.steps[1].t_s == 6.0 and sch.steps[2].t_s == 6.11 and sch.steps[3].t_s == 6.43
    assert sch.rate_at(15.99, 1) in (kato.GATE_CLOSED_BPS, 100_000_000) and sch.rate_at(16.5, 1) == 100_000_000
    assert kato.gate_window(sch) == (6.0, 10.0)
    assert kato.gate_window(kato.gate_schedule(50_000_000, 2.0, 3.0, 100, 400)) == (2.0, 3.0)


def test_realised_periods_and_the_degraded_share() -> None:
    applied, t = [], 0.0
    for _ in range(3):
        applied.append({"rate_bps": kato.GATE_CLOSED_BPS, "done_at_s": t})
        applied.append({"rate_bps": 100_000_000, "done_at_s": t + 0.112})
        t += 0.43
    applied.append({"rate_bps": 100_000_000, "done_at_s": t + 5})
    g = kato.gate_periods(applied)
    assert g["cycles"] == 3 and abs(g["closed_ms"] - 112) < 1e-6 and abs(g["open_ms"] - 318) < 1e-6
    ps = {"t_s": np.arange(10.0), "mbps": np.array([50, 90, 90, 45, 30, 60, 90, 100, 90, 90.0]),
          "retransmits": np.array([0, 0, 0, 2, 1, 0, 0, 0, 0, 0]), "cwnd": np.r_[np.nan, np.arange(9.0)]}
    st = kato.summary(ps, 3.0, 3.0)          # window: seconds 3, 4, 5; normal: 1, 2, 6-9 (second 0 is slow start)
    assert st["normal_mbps"] == 550 / 6 and st["degraded_min_mbps"] == 30
    assert st["degraded_share"] == 30 / (550 / 6) and st["cwnd_max"] == 8
    assert st["cwnd_peak"] == 4 and st["cwnd_fall"] == 4   # cwnd rises through second 5, the window's last: no fall
    ps["cwnd"] = np.array([np.nan, 5, 9, 7, 3, 6, 8, 8, 8, 8])
    st = kato.summary(ps, 3.0, 3.0)          # the peak (9) comes before the window, which falls to 3
    assert (st["cwnd_peak"], st["cwnd_fall"], st["cwnd_max"]) == (9, 3, 9)
    assert (st["retransmits_in_window"], st["retransmits_outside"]) == (3, 0)


def test_a_run_whose_gate_drifted_is_invalid() -> None:
    steps = [{"t_s": 0.0, "rate_bps": 100_000_000}, {"t_s": 1.0, "rate_bps": kato.GATE_CLOSED_BPS},
             {"t_s": 1.11, "rate_bps": 100_000_000}]

    def record(done: list[float]) -> dict:
        applied = [{**st, "done_at_s": d} for st, d in zip(steps, done, strict=False)]
        return {"config": {"schedule": {"steps": steps}}, "metrics": {"emulation": {"schedule": {"applied": applied}}}}

    assert kato.gate_lateness(record([0.5, 1.004, 1.31])) is None         # the start may lag; 200 ms late is on time
    assert "done 250 ms after its time" in kato.gate_lateness(record([0.0, 1.25, 1.12]))
    assert "1 of 2 gate steps were never applied" in kato.gate_lateness(record([0.0, 1.004]))
    assert "no record" in kato.gate_lateness({"metrics": {}})


def test_a_run_with_a_skipped_gate_step_is_invalid_and_its_periods_leave_the_step_out() -> None:
    """A skipped step is not on time, whatever the others' lateness: the run is invalid; the realised periods use
    the steps that were done."""
    steps = [{"t_s": 0.0, "rate_bps": 100_000_000}, {"t_s": 1.0, "rate_bps": kato.GATE_CLOSED_BPS},
             {"t_s": 1.11, "rate_bps": 100_000_000}, {"t_s": 1.43, "rate_bps": kato.GATE_CLOSED_BPS},
             {"t_s": 1.54, "rate_bps": 100_000_000}]
    applied = [{**steps[0], "done_at_s": 0.01}, {**steps[1], "done_at_s": 1.02},
               {**steps[2], "done_at_s": 1.13},
               {**steps[3], "done_at_s": None, "applied_at_s": None, "checked_at_s": 1.55, "skipped": True,
                "reason": "the next step (1.54 s) was already due when this one's turn came (1.550 s)"},
               {**steps[4], "done_at_s": 1.60}]
    rec = {"config": {"schedule": {"steps": steps}}, "metrics": {"emulation": {"schedule": {"applied": applied}}}}
    why = kato.gate_lateness(rec)
    assert why is not None and "1 of 5 gate steps were skipped, the first at 1.43 s" in why
    assert "already due" in why
    g = kato.gate_periods(applied)
    assert g["cycles"] == 1 and g["closed_ms"] == pytest.approx(110.0)
    done = [{k: v for k, v in a.items() if k not in ("skipped", "reason", "checked_at_s")} for a in applied]
    done[3]["done_at_s"] = 1.44
    assert kato.gate_lateness({**rec, "metrics": {"emulation": {"schedule": {"applied": done}}}}) is None


def test_registry_and_dry_run_list_every_gate_step(tmp_path: Path) -> None:
    entry = load_entry("kato-ijat18-fig9")
    values = {p.name: p for p in entry.published}
    assert values["Fig. 8: sleeping period (mean)"].value == 110 and values["Fig. 8: awake period (mean)"].value == 320
    assert values["Fig. 8: sleeping period (mean)"].margin_abs == 10.0            # the earlier tolerance, re-stated
    assert values["Fig. 9 (TSQ not used): largest cwnd"].value == 970
    assert [p.name for p in entry.published if p.comparable] == ["Fig. 8: sleeping period (mean)",
                                                                 "Fig. 8: awake period (mean)"]
    assert [c.id for c in entry.claims if c.principal] == ["throughput-collapses-while-scanning"]
    r = reproduce_cli(tmp_path, "kato-ijat18-fig9", "--dry-run", "-p", "window_start_s=6", "-p", "window_s=10",
                      "-p", "duration_s=22", timeout_s=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    steps = [ln for ln in r.stdout.splitlines() if "tbf rate 1000bit burst 1514" in ln]
    assert len(steps) == 24 and "(at 6 s after the flows start)" in steps[0]


@pytest.mark.root
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_two_short_gated_runs_are_judged_across_runs_and_leave_nothing(tmp_path: Path) -> None:
    """Two runs of 6 s with a 3 s gated window: each run's measures are its statistics, a run whose gate drifted is
    invalid (rule 'gate on time'), the realised periods of the valid runs are judged against Fig. 8's with the
    declared margin, the 802.11 values are not comparable but carry the model's estimate, and two runs are too few
    for an interval: the rows and the claims say how many runs would decide."""
    require_root()
    require_program("iperf3")

    r = reproduce_cli(tmp_path, "kato-ijat18-fig9", "-p", "repetitions=2", "-p", "duration_s=6",
                      "-p", "window_start_s=1", "-p", "window_s=3", timeout_s=600)
    assert r.returncode in (EXIT_INCONCLUSIVE, EXIT_MISMATCH), r.stdout[-3000:] + r.stderr[-3000:]
    (run,) = sorted((tmp_path / "kato-ijat18-fig9").iterdir())
    verdict = json.loads((run / "verdict.json").read_text())
    assert verdict["schema"] == "benchbook.verdict/2" and verdict["kind"] == "measured"
    assert verdict["plan"]["plan"]["repetitions"] == 2
    assert "gate on time" in [rule["name"] for rule in verdict["plan"]["plan"]["rules"]]
    records = [json.loads((run / "raw" / "cubic" / f"rep{k}" / "repetition.json").read_text()) for k in (1, 2)]
    for rec in records:   # a run is valid, or invalid because its gate drifted on a loaded host
        assert rec["status"] == "complete", rec.get("reason")
        assert rec["valid"] or [x["rule"] for x in rec["invalid_by"]] == ["gate on time"], rec["invalid_by"]
    valid = sum(rec["valid"] for rec in records)
    rows = {row["name"]: row for row in verdict["rows"]}
    sleeping = rows["Fig. 8: sleeping period (mean)"]
    assert sleeping["arm"] == "cubic" and sleeping["runs"] == valid == len(sleeping["values"]), sleeping
    assert rows["Fig. 3 (TSQ used): lowest throughput in a degraded period / normal"]["status"] == "not comparable"
    share = rows["Fig. 9 (TSQ not used): lowest throughput in a degraded period / normal"]
    assert share["status"] == "not comparable"
    claims = {c["id"]: c for c in verdict["claims"]}
    collapse = claims["throughput-collapses-while-scanning"]
    assert collapse["principal"]
    if valid:
        assert sleeping["margin"]["text"] == "±10 ms" and sleeping["margin"]["sources"] == ["emulation allowance"]
        assert 50 < sleeping["estimate"] < 170 and sleeping["status"] == "inconclusive"
        assert sleeping["runs_needed"] >= 6 and 0 <= share["estimate"] < 1
        assert len(collapse["values_a"]) == len(collapse["values_b"]) == valid
        assert all(a < b for a, b in zip(collapse["values_a"], collapse["values_b"], strict=True)), collapse
        assert collapse["verdict"] == "inconclusive" and collapse["runs_needed"] >= 6, collapse
        stats = pd.read_parquet(run / "run-statistics.parquet")
        normal = stats[(stats["statistic"] == "normal_mbps") & stats["valid"]].sort_values("run")
        assert normal["value"].tolist() == pytest.approx(collapse["values_b"])
    else:
        assert sleeping["status"] == "not derivable" and collapse["verdict"] == "not derivable"
    token = records[0]["metrics"]["token"]
    assert token and leftovers({token}) == leftovers(set())
