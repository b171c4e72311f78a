"""Kato et al. (2018) as a gated-link model: the gate schedule, the realised periods and the per-second summary on
values of known shape, and the dry run listing every gate step."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from benchbook.reproduce.registry import load_entry
from conftest import reproduce_cli

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
    assert (st["retransmits_in_window"], st["retransmits_outside"]) == (3, 0)


def test_registry_and_dry_run_list_every_gate_step(tmp_path: Path) -> None:
    values = {p.name: p.value for p in load_entry("kato-ijat18-fig9").published}
    assert values["Fig. 8: sleeping period (mean)"] == 110 and values["Fig. 9 (TSQ not used): largest cwnd"] == 970
    r = reproduce_cli(tmp_path, "kato-ijat18-fig9", "--dry-run", timeout_s=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    steps = [ln for ln in r.stdout.splitlines() if "tbf rate 1000bit burst 1514" in ln]
    assert len(steps) == 24 and "(at 6 s after the flows start)" in steps[0]
