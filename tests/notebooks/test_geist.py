"""Geist & Jaeger (IITM WS 2018/19) Figs. 1 and 4: the shape measures on windows of known shape, and (root)
a short reproduction of Fig. 1 that measures Reno's sawtooth and leaves nothing behind."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from benchbook.commands.reproduce import EXIT_MISMATCH, EXIT_PARTIAL
from benchbook.reproduce.registry import load_entry
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
    fig1 = {p.name: p for p in load_entry("geist-iitm19-fig1").published}
    assert fig1["Fig. 1 (Reno): end of slow start"].value == 1.0
    assert fig1["Fig. 1 (Reno): cwnd after a loss / cwnd before it"].value == 0.5
    fig4 = {p.name: p for p in load_entry("geist-iitm19-fig4").published}
    assert fig4["Fig. 4 (Cubic): W_max reached again"].value == 8.0
    assert all(p.note for p in [*fig1.values(), *fig4.values()])


@pytest.mark.root
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_fig1_short_reproduction_measures_the_sawtooth_and_leaves_nothing(tmp_path: Path) -> None:
    require_root()
    require_program("iperf3")
    from benchbook.testbed.cleanup import leftovers

    r = reproduce_cli(tmp_path, "geist-iitm19-fig1", "-p", "duration_s=4", timeout_s=300)
    assert r.returncode in (EXIT_PARTIAL, EXIT_MISMATCH), r.stdout[-3000:] + r.stderr[-3000:]
    (run,) = sorted((tmp_path / "geist-iitm19-fig1").iterdir())
    verdict = json.loads((run / "verdict.json").read_text())
    rows = {row["name"]: row for row in verdict["rows"]}
    halved = rows["Fig. 1 (Reno): cwnd after a loss / cwnd before it"]
    assert halved["status"] in ("match", "mismatch") and 0.2 < halved["computed"] < 0.9, halved
    assert "epoch" in halved["note"] and halved["tolerance"]
    assert rows["Fig. 1 (Reno): straightness of the increase between losses (R^2 of a line)"]["computed"] is not None
    slow_start = rows["Fig. 1 (Reno): end of slow start"]
    assert slow_start["status"] == "not derivable" and "measured here" in slow_start["note"]
    assert "cwnd-reno" in verdict["figures"] and (run / "cwnd-reno.html").is_file()
    samples = (run / "raw" / "reno" / "rep1" / "ss-flow1.jsonl").read_text().splitlines()
    assert len(samples) > 50 and all("cwnd" in json.loads(s) for s in samples[:20])
    record = json.loads((run / "raw" / "reno" / "rep1" / "repetition.json").read_text())
    assert record["status"] == "complete" and record["valid"] and record["position"] == 1
    stats = {s["name"]: s for s in record["statistics"]}
    assert stats["reduction_median"]["value"] == pytest.approx(halved["computed"])
    assert stats["reduction_median"]["n"] >= 1 and stats["reduction_median"]["definition"]
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["runs"]["reno"]["dir"] == "raw/reno/rep1" and isinstance(metrics["seed"], int)
    token = metrics["runs"]["reno"]["token"]
    assert token and leftovers({token}) == leftovers(set())
