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
from benchbook.experiment.dumbbell_runs import FlowsArm, FlowsRun
from benchbook.reproduce.registry import load_entry
from benchbook.testbed.cleanup import leftovers
from benchbook.testbed.dumbbell import FlowSpec, LinkSpec
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


def _run_of(s: dict[str, np.ndarray], cca: str) -> FlowsRun:
    """A run whose ss samples of the data socket are the window ``s`` (what shape_statistics reads of a run)."""
    rows = [{"t_ns": int(t * 1e9), "cwnd": int(w), "local_port": 40000, "bytes_acked": 1}
            for t, w in zip(s["t_s"], s["cwnd"], strict=True)]
    arm = FlowsArm(LinkSpec(rate_bps=50_000_000, buffer_packets=248, delay_ms=60.0), (FlowSpec(cca),), 60)
    return FlowsRun(ctx=None, arm=arm, flows=[], qdisc=[], emulation={}, ss={1: rows})  # type: ignore[arg-type]


def test_cubic_epoch_counts_are_the_runs_statistics_for_the_count_claim() -> None:
    """The principal claim of Fig. 4 sums these counts over runs: every judged epoch of a cubic curve counts, no
    epoch of the opposite (logistic) shape does, and the passing epochs are counted apart."""
    for s_curve, ok in ((False, True), (True, False)):
        c = geist.cubic_shape(_cubic(s_curve=s_curve))
        stats = {st.name: st for st in geist.shape_statistics(_run_of(_cubic(s_curve=s_curve), "cubic"))}
        assert stats["epochs_judged"].value == c["judged"] >= 3
        assert stats["epochs_shape_ok"].value == (c["judged"] if ok else 0)
        assert stats["epochs_passing"].value == c["passing"] >= 3
        assert stats["epochs_passing_convex"].value == (c["passing"] if ok else 0)
        assert stats["share_shape_ok"].value == (1.0 if ok else 0.0)
    entry = load_entry("geist-iitm19-fig4")
    counted = {str(ref) for c in entry.claims for ref in (c.successes, c.trials)}
    assert counted == {"cubic:epochs_shape_ok", "cubic:epochs_judged", "cubic:epochs_passing_convex",
                       "cubic:epochs_passing"}


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
    entry4 = load_entry("geist-iitm19-fig4")
    fig4 = {p.name: p for p in entry4.published}
    w_max = fig4["Fig. 4 (Cubic): W_max reached again"]
    assert w_max.value == 8.0 and not w_max.comparable and w_max.run_statistic == "first_w_max_reached_s"
    slowest = fig4["Fig. 4 (Cubic): cwnd at the slowest growth / W_max"]
    assert slowest.margin_abs == 0.1 and slowest.margin_source == ("instrument resolution",)
    assert entry4.measured
    assert [(c.id, c.test, c.q) for c in entry4.claims if c.principal] == [
        ("cubic-concave-then-convex", "share >=", 0.9)]
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


@pytest.mark.root
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_fig4_one_short_run_counts_epochs_for_the_claim_and_leaves_nothing(tmp_path: Path) -> None:
    """Fig. 4 with one 30 s Cubic run: the run's epoch counts are its statistics, the count claim sums them with its
    Clopper-Pearson interval (a few epochs cannot clear q = 0.9: inconclusive with the runs needed), and one run
    gives the row no interval."""
    require_root()
    require_program("iperf3")

    r = reproduce_cli(tmp_path, "geist-iitm19-fig4", "-p", "duration_s=30", timeout_s=900)
    assert r.returncode in (EXIT_INCONCLUSIVE, EXIT_MISMATCH), r.stdout[-3000:] + r.stderr[-3000:]
    (run,) = sorted((tmp_path / "geist-iitm19-fig4").iterdir())
    verdict = json.loads((run / "verdict.json").read_text())
    assert verdict["kind"] == "measured" and verdict["plan"]["plan"]["repetitions"] == 1
    rows = {row["name"]: row for row in verdict["rows"]}
    slowest = rows["Fig. 4 (Cubic): cwnd at the slowest growth / W_max"]
    assert slowest["runs"] == 1 and slowest["status"] == "inconclusive" and slowest["runs_needed"] >= 6, slowest
    assert slowest["margin"]["text"] == "±0.1" and slowest["margin"]["sources"] == ["instrument resolution"]
    w_max = rows["Fig. 4 (Cubic): W_max reached again"]
    assert w_max["status"] == "not comparable" and w_max["estimate"] is not None and 0 < w_max["estimate"] < 30
    claims = {c["id"]: c for c in verdict["claims"]}
    shape = claims["cubic-concave-then-convex"]
    assert shape["principal"] and shape["runs"] == 1 and shape["counts"] == [shape["values_a"][0],
                                                                             shape["values_b"][0]]
    k, n = shape["counts"]
    assert 1 <= n <= 4 and 0 <= k <= n, shape          # 30 s hold a few epochs of 8 to 10 s
    assert shape["ci95"][0] < 0.9, shape                # n <= 34 epochs cannot show a share of at least 0.9
    if shape["ci95"][1] < 0.9:                          # few epochs of the shape: the claim fails
        assert shape["verdict"] == "fails", shape
    else:
        assert shape["verdict"] == "inconclusive" and shape["runs_needed"] > 1, shape
    stats = pd.read_parquet(run / "run-statistics.parquet")
    judged = stats[(stats["statistic"] == "epochs_judged") & stats["valid"]]
    assert judged["value"].tolist() == [n]
    metrics = json.loads((run / "metrics.json").read_text())
    token = metrics["runs"]["cubic"]["token"]
    assert token and leftovers({token}) == leftovers(set())
