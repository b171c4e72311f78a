"""Geist & Jaeger (IITM WS 2018/19) Figs. 1 and 4: the shape measures on windows of known shape, and (root)
a short reproduction of Fig. 1 that measures Reno's sawtooth and leaves nothing behind."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchbook.commands.reproduce import EXIT_INCONCLUSIVE, EXIT_MISMATCH, EXIT_PARTIAL
from benchbook.reproduce.registry import load_entry
from benchbook.testbed.cleanup import leftovers
from conftest import reproduce_cli, require_program, require_root

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT / "notebooks" / "geist-iitm19"))
import geist  # noqa: E402


def _series(t: np.ndarray, cwnd: np.ndarray) -> dict[str, np.ndarray]:
    return {"t_s": t, "cwnd": np.floor(cwnd), "ssthresh": np.full(t.size, np.nan), "rtt_ms": np.full(t.size, 40.0),
            "pacing_gain": np.full(t.size, np.nan)}


def _reno(periods: int = 6, low: float = 34, dt: float = 0.02, rtt_s: float = 0.04) -> dict[str, np.ndarray]:
    """AIMD: slow start to 2 * low, then +1 segment per RTT from low to 2 * low and halved, ``periods`` times."""
    t, w, now = [], [], 0.0
    for x in (10, 20, 40, 2 * low):
        t.append(now), w.append(x)
        now += dt
    for _ in range(periods):
        x = low
        while x <= 2 * low:
            t.append(now), w.append(x)
            x += dt / rtt_s
            now += dt
    return _series(np.array(t), np.array(w))


def _cubic(s_curve: bool = False, w_max: float = 400.0, c: float = 0.4, beta: float = geist.CUBIC_BETA,
           dt: float = 0.02) -> dict[str, np.ndarray]:
    """Epochs of W(t) = C (t - K)^3 + W_max from beta * W_max, each lost 5 % above its W_max, which sets
    the next epoch's W_max (a loss above the previous W_max: no fast convergence). ``s_curve``: the
    opposite shape over the same span, convex below W_max and concave above (a logistic curve)."""
    t, w, now = [0.0, dt], [10.0, w_max], 2 * dt
    for _ in range(4):
        k = (w_max * (1 - beta) / c) ** (1 / 3)
        x, tt = beta * w_max, 0.0
        while x <= 1.05 * w_max and tt < 4 * k:
            t.append(now), w.append(x)
            tt += dt
            now += dt
            x = c * (tt - k) ** 3 + w_max
            if s_curve:
                x = beta * w_max + (1.1 - beta) * w_max / (1 + np.exp(-(tt - k) / (k / 6)))
        w_max = max(w[-1], w_max)
    return _series(np.array(t), np.array(w))


def test_reno_sawtooth_is_halved_and_linear() -> None:
    r = geist.reno_shape(_reno())
    assert r["losses"] == 6
    assert abs(r["reduction_median"] - 0.5) < 0.02
    assert r["linear_r2_median"] > 0.99
    assert abs(r["increase_per_rtt_median"] - 1.0) < 0.05


def test_cubic_growth_is_slowest_at_w_max_and_an_s_curve_is_not() -> None:
    c = geist.cubic_shape(_cubic())
    assert c["judged"] >= 3 and c["share_shape_ok"] == 1.0
    assert abs(c["slowest_over_w_max_median"] - 1.0) < 0.02
    assert abs(c["reduction_median"] - geist.CUBIC_BETA) < 0.02
    s_curve = geist.cubic_shape(_cubic(s_curve=True))
    assert s_curve["judged"] >= 3 and s_curve["share_shape_ok"] == 0.0


def test_registry_keeps_the_text_claims_and_the_two_printed_times() -> None:
    entry = load_entry("geist-iitm19-fig1")
    fig1 = {p.name: p for p in entry.published}
    slow_start = fig1["Fig. 1 (Reno): end of slow start"]
    assert slow_start.value == 1.0 and not slow_start.comparable
    halved = fig1["Fig. 1 (Reno): cwnd after a loss / cwnd before it"]  # the claims' epoch bands are the margins
    assert halved.value == 0.5 and halved.margin_abs == 0.1 == pytest.approx(geist.HALVED[1] - 0.5)
    assert geist.HALVED[0] == pytest.approx(0.5 - halved.margin_abs)
    straight = fig1["Fig. 1 (Reno): straightness of the increase between losses (R^2 of a line)"]
    assert straight.margin_abs == pytest.approx(1 - geist.LINEAR_R2)
    assert [c.id for c in entry.claims if c.principal] == ["reno-halves-on-loss", "reno-grows-linearly"]
    fig4 = {p.name: p for p in load_entry("geist-iitm19-fig4").published}
    assert fig4["Fig. 4 (Cubic): W_max reached again"].value == 8.0
    assert all(p.note for p in [*fig1.values(), *fig4.values()])


@pytest.mark.root
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_fig1_six_short_runs_are_judged_across_runs_and_leave_nothing(tmp_path: Path) -> None:
    """Fig. 1 with 6 runs of 3 s: each run's shape measures are its statistics; the rows hold the median over runs
    with its 95 % interval against the declared margin, the claims pool the runs' loss epochs."""
    require_root()
    require_program("iperf3")

    r = reproduce_cli(tmp_path, "geist-iitm19-fig1", "-p", "duration_s=3", "-p", "repetitions=6", timeout_s=900)
    assert r.returncode in (EXIT_PARTIAL, EXIT_INCONCLUSIVE, EXIT_MISMATCH), r.stdout[-3000:] + r.stderr[-3000:]
    assert "95 % interval" in r.stdout and "of 2 reproduced; m·α = 0.1" in r.stdout, r.stdout[-3000:]
    (run,) = sorted((tmp_path / "geist-iitm19-fig1").iterdir())
    verdict = json.loads((run / "verdict.json").read_text())
    assert verdict["schema"] == "benchbook.verdict/2" and verdict["kind"] == "measured"
    assert verdict["plan"]["plan"]["repetitions"] == 6 and len(verdict["plan"]["order"]) == 6
    rows = {row["name"]: row for row in verdict["rows"]}
    halved = rows["Fig. 1 (Reno): cwnd after a loss / cwnd before it"]
    assert halved["kind"] == "measured" and halved["arm"] == "reno" and halved["runs"] == 6, halved
    assert halved["status"] in ("reproduced", "mismatch", "inconclusive") and 0.2 < halved["estimate"] < 0.9
    assert halved["ci95"] is not None and halved["margin"]["text"] == "±0.1"
    assert halved["margin"]["sources"] == ["instrument resolution", "emulation allowance"]
    slow_start = rows["Fig. 1 (Reno): end of slow start"]
    assert slow_start["status"] == "not comparable" and "unstated" not in slow_start["reason"]
    assert "does not state" in slow_start["reason"] and slow_start["estimate"] is not None
    claims = {c["id"]: c for c in verdict["claims"]}
    losses = claims["reno-halves-on-loss"]
    assert losses["verdict"] in ("holds", "fails", "inconclusive") and losses["runs"] == 6
    assert losses["counts"][1] == sum(losses["values_b"]) >= 6 and losses["ci95"] is not None
    assert "cwnd-reno" in verdict["figures"] and (run / "cwnd-reno.html").is_file()
    stats = pd.read_parquet(run / "run-statistics.parquet")
    reductions = stats[(stats["statistic"] == "reduction_median") & stats["valid"]].sort_values("run")
    assert reductions["value"].tolist() == pytest.approx(halved["values"])
    metrics = json.loads((run / "metrics.json").read_text())
    token = metrics["runs"]["reno"]["token"]
    assert token and leftovers({token}) == leftovers(set())
