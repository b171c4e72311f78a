"""Geist & Jaeger (IITM WS 2018/19), Figs. 1 and 4: the congestion window of one Reno / Cubic flow over time.

Imported by cwnd-shapes.ipynb beside it. One flow per congestion control runs alone through the local
dumbbell (:mod:`benchbook.experiment.dumbbell_runs`, repeated by :mod:`benchbook.experiment.repetitions`),
``ss -tin`` samples its socket in the sender namespace, and the shape of the window is measured (per run, as
the run's statistics, and for the figure):

- loss epochs: a loss shows as a decline of the window below 90 % of its peak since the previous one;
  the epoch's reduction is the smallest window after it over the peak before it;
- Reno: how straight the increase between losses is (R^2 of a least-squares line from the epoch's
  smallest window to its end) and the increase per RTT;
- Cubic: a cubic polynomial fitted to each epoch's growth; its inflection point (slowest growth)
  against W_max (concave below, convex above), the window the kernel aims for: the window at the last loss, or with fast
  convergence (a loss below the previous W_max) that window times (1 + beta) / 2, beta = 717/1024;
  sampled peaks may miss the window at the loss, so both comparisons allow PEAK_SLACK;
- BBR (benchbook's extension, not in the paper): the ProbeBW gain cycle seen in ``pacing_gain``.

Published numbers come only from the entry TOMLs of this folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import plotly.graph_objects as go

from benchbook.atomic_write import write_json_atomic
from benchbook.experiment.dumbbell_runs import FlowsArm, FlowsRun, data_socket, flows_run, read_ss_samples
from benchbook.experiment.repetitions import Statistic, run_repetitions
from benchbook.testbed.dumbbell import BASE_PORT, Dumbbell, FlowSpec, LinkSpec
from benchbook.tools import ss

CUBIC_BETA = 717 / 1024          # Linux tcp_cubic's multiplicative decrease (beta_scale 1024)
MIN_EPOCH_SAMPLES = 10
PEAK_SLACK = 0.02                # a sampled peak may miss the window at the loss by this fraction
HALVED = (0.4, 0.6)              # a Reno loss "halves" the window: reduction within the Fig. 1 entry's margin +-0.1
LINEAR_R2 = 0.95                 # an epoch's increase is "linear": R^2 within the Fig. 1 entry's margin 0.05 of 1


def link_for(rate_mbps: float, delay_ms: float, buffer_bdp: float) -> LinkSpec:
    """The bottleneck with a FIFO of ``buffer_bdp`` bandwidth-delay products (1514-byte packets)."""
    bdp_packets = rate_mbps * 1e6 * delay_ms / 1000 / 8 / 1514
    return LinkSpec(rate_bps=int(rate_mbps * 1e6), buffer_packets=max(2, int(round(buffer_bdp * bdp_packets))),
                    delay_ms=float(delay_ms))


def dry_run(ccas: list[str], link: LinkSpec, duration_s: int, sample_interval_s: float, output_dir: Path | str) -> Path:
    lines = []
    for cca in ccas:
        lines.append(f"# {cca}: one flow alone, ss -tin every {sample_interval_s * 1000:g} ms in s1 "
                     "(token 000000 stands for the run token)")
        lines += Dumbbell(link, [FlowSpec(cca)]).dry_run(duration_s, 1.0)
        lines.append(f"[s1] {' '.join(ss.argv(f'dport = :{BASE_PORT + 1}'))}   (repeated while the flow runs)")
    path = Path(output_dir) / "dry-run.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def run(ccas: list[str], link: LinkSpec, duration_s: int, sample_interval_s: float, output_dir: Path | str,
        progress: Any = print, repetitions: int = 1, seed: int | None = None) -> dict[str, Any]:
    """Each congestion control alone through a fresh dumbbell, ``repetitions`` times, in the runner's seeded
    order (:mod:`benchbook.experiment.repetitions`; calling again on ``output_dir`` resumes). raw/<cca>/rep<k>/
    holds the iperf3 report, the ss samples, every command and the run's record with this paper's shape measures
    as statistics; metrics.json and capabilities.json the emulation record. ``runs``: per CCA its first valid
    run (what the figures and verdict rows use)."""
    out = Path(output_dir)
    arms = {cca: FlowsArm(link, (FlowSpec(cca),), duration_s, 1.0, ss_interval_s=sample_interval_s) for cca in ccas}
    res = run_repetitions(out, arms, repetitions, flows_run(measures=shape_statistics), seed=seed,
                          progress=progress)
    runs: dict[str, Any] = {}
    record: dict[str, Any] = {}
    for rec in res.runs():
        m = rec["metrics"]
        record = m["emulation"]
        if rec["arm"] not in runs:
            flow = m["flows"][0]
            runs[rec["arm"]] = {"dir": rec["dir"], "token": m["token"],
                                "samples": len(read_ss_samples(res.path(rec))), "receiver_bps": flow["receiver_bps"],
                                "retransmits": flow["retransmits"], "qdisc": m["qdisc"],
                                "valid_runs": len(res.runs(rec["arm"]))}
    not_runnable = res.not_runnable()
    result = {"ccas": ccas, "link": {"rate_bps": link.rate_bps, "buffer_packets": link.buffer_packets,
                                     "delay_ms": link.delay_ms}, "duration_s": duration_s,
              "sample_interval_s": sample_interval_s, "repetitions": repetitions, "seed": res.summary["plan"]["seed"],
              "runs": runs, "not_runnable": not_runnable, "output_dir": str(out)}
    write_json_atomic(out / "metrics.json", {**result, "link_emulation": record})
    caps = res.capabilities()
    caps += [{"capability": f"congestion control {c}", "status": "missing", "detail": why}
             for c, why in not_runnable.items()]
    write_json_atomic(out / "capabilities.json", caps)
    return result


def cwnd_series(output_dir: Path | str, run_info: dict[str, Any]) -> dict[str, np.ndarray]:
    """A run's data socket from its ss samples (see :func:`cwnd_of_samples`)."""
    return cwnd_of_samples(read_ss_samples(Path(output_dir) / run_info["dir"]))


def cwnd_of_samples(rows: list[dict[str, Any]]) -> dict[str, np.ndarray]:
    """The data socket's samples (:func:`~benchbook.experiment.dumbbell_runs.data_socket`): t_s from the first
    sample, cwnd and ssthresh in segments (ssthresh NaN until the first reduction),
    rtt_ms, pacing_gain (BBR, else NaN)."""
    rows = data_socket(rows)
    if not rows:
        return {k: np.array([]) for k in ("t_s", "cwnd", "ssthresh", "rtt_ms", "pacing_gain")}
    t0 = rows[0]["t_ns"]
    col = lambda key: np.array([float(r.get(key, np.nan)) for r in rows])  # noqa: E731
    return {"t_s": np.array([(r["t_ns"] - t0) / 1e9 for r in rows]), "cwnd": col("cwnd"),
            "ssthresh": col("ssthresh"), "rtt_ms": col("rtt_ms"), "pacing_gain": col("bbr_pacing_gain")}


def shape_statistics(run: FlowsRun) -> list[Statistic]:
    """This paper's shape measures of one run as per-run statistics (none when ss saw no window)."""
    s = cwnd_of_samples(run.ss.get(1, []))
    cca = run.arm.flows[0].cca
    if s["cwnd"].size == 0:
        return []
    if cca == "reno":
        r = reno_shape(s)
        return [Statistic("slow_start_end_s", r["slow_start_end_s"], None, "s", "time of the first loss or first "
                          "ssthresh, from the first ss sample"),
                Statistic("reduction_median", r["reduction_median"], r["losses"], "", "median over loss epochs of "
                          "the smallest cwnd after a loss / the largest before it; n: loss epochs"),
                Statistic("linear_r2_median", r["linear_r2_median"], len(r["linear_r2"]), "", "median R^2 of a "
                          "least-squares line through each epoch's increase; n: epochs with enough samples"),
                Statistic("increase_per_rtt_median", r["increase_per_rtt_median"], len(r["linear_r2"]), "segments",
                          "median over epochs of the fitted slope times the epoch's mean sampled RTT"),
                Statistic("losses", r["losses"], None, "", "loss epochs: declines of the window below 90 % of its "
                          "peak since the previous loss"),
                Statistic("losses_halved", sum(HALVED[0] <= x <= HALVED[1] for x in r["reduction"]), None, "",
                          f"loss epochs whose smallest window after the loss / the peak before it lies in "
                          f"[{HALVED[0]:g}, {HALVED[1]:g}]"),
                Statistic("epochs_fitted", len(r["linear_r2"]), None, "", f"loss epochs with at least "
                          f"{MIN_EPOCH_SAMPLES} samples and a changing window (a line fitted)"),
                Statistic("epochs_linear", sum(x >= LINEAR_R2 for x in r["linear_r2"]), None, "",
                          f"fitted loss epochs whose least-squares line has R^2 >= {LINEAR_R2:g}")]
    if cca == "cubic":
        c = cubic_shape(s)
        return [Statistic("first_w_max_reached_s", c["first_w_max_reached_s"], None, "s", "time the window first "
                          f"comes within {PEAK_SLACK:.0%} of W_max again after a loss"),
                Statistic("slowest_over_w_max_median", c["slowest_over_w_max_median"], c["judged"], "", "median "
                          "over judged epochs of the fitted cubic's value at its slowest growth / W_max"),
                Statistic("share_shape_ok", c["share_shape_ok"], c["judged"], "", "share of judged epochs concave "
                          "up to W_max and convex beyond it (cubic fit); n: epochs judged"),
                Statistic("reduction_median", c["reduction_median"], len(c["epochs"]), "", "median over loss "
                          "epochs of the smallest cwnd after a loss / the largest before it; n: loss epochs"),
                Statistic("epochs_judged", c["judged"], None, "", f"loss epochs with at least {MIN_EPOCH_SAMPLES} "
                          "samples that reach W_max again (a cubic fitted; epochs cut by the run's end left out)"),
                Statistic("epochs_shape_ok", sum(bool(x.get("shape_ok")) for x in c["epochs"]), None, "",
                          "judged epochs concave up to W_max and, where they pass it, convex beyond it (cubic fit: "
                          "positive leading coefficient, inflection inside the epoch, or not before 90 % of the time "
                          "W_max is reached when the next loss comes at W_max)"),
                Statistic("epochs_passing", c["passing"], None, "", f"judged epochs whose window passes W_max by "
                          f"more than {PEAK_SLACK:.0%} (they have a convex part)"),
                Statistic("epochs_passing_convex", c["passing_convex"], None, "", "judged epochs that pass W_max "
                          "and fit a cubic with its inflection inside the epoch: convex beyond W_max")]
    if cca == "bbr":
        b = bbr_cycle(s)
        return [Statistic("cycle_over_min_rtt", b["cycle_over_min_rtt"], b["probe_phases"], "", "median time "
                          "between entries into pacing gain 1.25 / the smallest sampled RTT; n: such entries")]
    return []


def epochs(s: dict[str, np.ndarray], drop: float = 0.9) -> list[dict[str, Any]]:
    """Loss epochs: each starts where the window begins a decline that ends below ``drop`` times its
    largest value since the previous epoch (a loss; ssthresh may keep its value when the window peaks
    at the same size again) and ends where the next begins. Per epoch: start and end index (exclusive),
    t_s, peak_before, min_after and its index."""
    cw = s["cwnd"]
    out: list[dict[str, Any]] = []
    peak, k = float(cw[0]), 1
    while k < cw.size:
        if cw[k] < cw[k - 1]:
            j = k
            while k + 1 < cw.size and cw[k + 1] <= cw[k]:
                k += 1
            if cw[k] < drop * peak:
                out.append({"start": j, "t_s": float(s["t_s"][j]), "peak_before": peak})
                peak = float(cw[k])
        peak = max(peak, float(cw[k]))
        k += 1
    for n, e in enumerate(out):
        e["end"] = out[n + 1]["start"] if n + 1 < len(out) else cw.size
        e["i_min"] = e["start"] + int(np.argmin(cw[e["start"]:e["end"]]))
        e["min_after"] = float(cw[e["i_min"]])
    return out


def slow_start_end_s(s: dict[str, np.ndarray], eps: list[dict[str, Any]]) -> float | None:
    """The first loss or the first ssthresh (a slow-start exit without loss, e.g. HyStart), whichever is first."""
    times = [eps[0]["t_s"]] if eps else []
    finite = np.nonzero(np.isfinite(s["ssthresh"]))[0]
    if finite.size:
        times.append(float(s["t_s"][finite[0]]))
    return min(times) if times else None


def _r2_line(t: np.ndarray, y: np.ndarray) -> float:
    a, b = np.polyfit(t, y, 1)
    resid = y - (a * t + b)
    tot = float(np.sum((y - y.mean()) ** 2))
    return 1.0 - float(np.sum(resid ** 2)) / tot if tot > 0 else float("nan")


def reno_shape(s: dict[str, np.ndarray]) -> dict[str, Any]:
    """Slow-start end, median reduction factor, median R^2 of the linear increase, increase per RTT."""
    eps = epochs(s)
    losses = eps
    r2, per_rtt = [], []
    for e in losses:
        sl = slice(e["i_min"], e["end"])
        t, y = s["t_s"][sl], s["cwnd"][sl]
        if t.size >= MIN_EPOCH_SAMPLES and np.ptp(y) > 0:
            r2.append(_r2_line(t, y))
            per_rtt.append(float(np.polyfit(t, y, 1)[0] * np.nanmean(s["rtt_ms"][sl]) / 1000.0))
    return {"slow_start_end_s": slow_start_end_s(s, eps), "losses": len(losses),
            "reduction": [e["min_after"] / e["peak_before"] for e in losses],
            "reduction_median": float(np.median([e["min_after"] / e["peak_before"] for e in losses])) if losses
            else None, "linear_r2": r2, "linear_r2_median": float(np.median(r2)) if r2 else None,
            "increase_per_rtt_median": float(np.median(per_rtt)) if per_rtt else None}


def cubic_shape(s: dict[str, np.ndarray], beta: float = CUBIC_BETA) -> dict[str, Any]:
    """Per loss epoch: W_max (kernel rule with fast convergence) and a cubic fitted to the growth from the
    epoch's smallest window. An epoch that passes W_max must be concave below and convex above it: leading
    coefficient > 0 and the inflection (slowest growth) inside the epoch. An epoch whose next loss comes at
    W_max has no convex part and must be concave up to W_max: leading coefficient > 0 and the inflection
    not before 90 % of the time the window first reaches W_max. The slowest growth inside the epoch (the
    inflection, or the end when it lies beyond) is compared with W_max. Epochs that never reach W_max (cut
    by the run's end) are not judged."""
    eps = epochs(s)
    last_max = 0.0
    judged = []
    first_wmax_t = None
    for e in eps:
        peak = e["peak_before"]
        last_max = peak * (1 + beta) / 2 if peak < (1 - PEAK_SLACK) * last_max else peak
        sl = slice(e["i_min"], e["end"])
        t, y = s["t_s"][sl] - s["t_s"][e["i_min"]], s["cwnd"][sl]
        reach = (1 - PEAK_SLACK) * last_max
        passes = bool(y.size and y.max() > (1 + PEAK_SLACK) * last_max)
        item: dict[str, Any] = {"t_s": e["t_s"], "w_max": last_max, "reduction": e["min_after"] / peak,
                                "samples": int(t.size), "reaches_w_max": bool(y.size and y.max() >= reach),
                                "passes_w_max": passes}
        if item["reaches_w_max"] and first_wmax_t is None:
            first_wmax_t = float(s["t_s"][e["i_min"]] + t[int(np.argmax(y >= reach))])
        if t.size >= MIN_EPOCH_SAMPLES and item["reaches_w_max"]:
            coef = np.polyfit(t, y, 3)
            t_infl = float(-coef[1] / (3 * coef[0])) if coef[0] != 0 else float("nan")
            t_reach = float(t[int(np.argmax(y >= reach))])
            ok = bool(coef[0] > 0 and t_infl >= 0 and (t_infl <= t[-1] if passes else t_infl >= 0.9 * t_reach))
            t_slow = min(max(t_infl, 0.0), float(t[-1])) if np.isfinite(t_infl) else float(t[-1])
            item.update({"coef_cubic": float(coef[0]), "t_inflection_s": t_infl, "shape_ok": ok,
                         "slowest_over_w_max": float(np.polyval(coef, t_slow)) / last_max})
            judged.append(item)
        item["judged"] = "shape_ok" in item
        e["cubic"] = item
    losses = [e["cubic"] for e in eps]
    passing = [j for j in judged if j["passes_w_max"]]
    return {"slow_start_end_s": slow_start_end_s(s, eps), "epochs": losses, "judged": len(judged),
            "share_shape_ok": (sum(j["shape_ok"] for j in judged) / len(judged)) if judged else None,
            "slowest_over_w_max_median": float(np.median([j["slowest_over_w_max"] for j in judged])) if judged
            else None, "passing": len(passing), "passing_convex": sum(j["shape_ok"] for j in passing),
            "reduction_median": float(np.median([x["reduction"] for x in losses])) if losses else None,
            "first_w_max_reached_s": first_wmax_t}


def bbr_cycle(s: dict[str, np.ndarray]) -> dict[str, Any]:
    """ProbeBW: the median time between entries into the 1.25 pacing-gain phase over the median RTT
    (BBR v1 cycles through 8 phases of one min RTT each)."""
    g = s["pacing_gain"]
    up = np.isfinite(g) & (np.abs(g - 1.25) < 0.01)
    starts = s["t_s"][1:][up[1:] & ~up[:-1]]
    period = float(np.median(np.diff(starts))) if starts.size >= 3 else None
    rtt = float(np.nanmin(s["rtt_ms"])) if np.isfinite(s["rtt_ms"]).any() else None
    return {"probe_phases": int(starts.size), "cycle_period_s": period, "min_rtt_ms": rtt,
            "cycle_over_min_rtt": period / (rtt / 1000.0) if period and rtt else None}


def cwnd_figure(s: dict[str, np.ndarray], title: str, marks: list[dict[str, Any]] | None = None,
                gain: bool = False) -> Any:
    """cwnd and ssthresh (segments) over time; W_max of each Cubic epoch as a dotted step; BBR's
    pacing gain on a second axis."""
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=s["t_s"], y=s["cwnd"], mode="lines", name="cwnd (ss -tin)"))
    fig.add_trace(go.Scatter(x=s["t_s"], y=s["ssthresh"], mode="lines", name="ssthresh", line={"dash": "dot"}))
    for m in marks or []:
        fig.add_hline(y=m["w_max"], line={"dash": "dash", "color": "grey", "width": 1})
    if gain:
        fig.add_trace(go.Scatter(x=s["t_s"], y=s["pacing_gain"], mode="lines", name="BBR pacing gain",
                                 yaxis="y2", line={"width": 1}))
        fig.update_layout(yaxis2={"title": "pacing gain", "overlaying": "y", "side": "right"})
    fig.update_layout(title=title, xaxis_title="Time [s]", yaxis_title="Congestion window [segments]")
    return fig


def add_verdict_rows(verdict: Any, result: dict[str, Any], shapes: dict[str, dict[str, Any]], figure: str) -> None:
    """The info rows beside the judged ones (the published values and claims are judged across runs by
    ``verdict.judge_runs``): of the first valid run per congestion control."""
    link = result["link"]
    reps = result.get("repetitions", 1)
    setup = (f"{link['rate_bps'] / 1e6:g} Mbit/s, +{link['delay_ms']:g} ms, FIFO {link['buffer_packets']} packets, "
             + (f"one {result['duration_s']} s run" if reps == 1 else
                f"the first valid of {reps} runs of {result['duration_s']} s"))
    if figure == "fig1":
        r = shapes.get("reno")
        if r:
            verdict.add("Reno: increase per RTT between losses", None, r["increase_per_rtt_median"], "segments",
                        result["runs"]["reno"]["dir"], "info", "median over loss epochs of the fitted slope times "
                        f"the mean sampled RTT (RFC 5681: about one segment per RTT); {setup}")
        return
    c = shapes.get("cubic")
    if c:
        verdict.add("Cubic: epochs that pass W_max and are convex beyond it", None, c["passing_convex"], "",
                    result["runs"]["cubic"]["dir"], "info", f"of {c['passing']} epoch(s) that pass W_max (the others "
                    f"end with a loss at W_max, where the link is full, and have no convex part); {setup}")
        verdict.add("Cubic: cwnd after a loss / cwnd before it", None, c["reduction_median"], "",
                    result["runs"]["cubic"]["dir"], "info", "the text says Cubic 'behaves similarly [to Reno] when "
                    f"receiving a lost packet'; Linux's cubic multiplies by beta = 717/1024 ({CUBIC_BETA:.3f})")
    b = shapes.get("bbr")
    if b is not None:
        verdict.add("BBR (benchbook's extension): ProbeBW gain cycle / min RTT", None, b["cycle_over_min_rtt"], "",
                    result["runs"]["bbr"]["dir"], "info", f"{b['probe_phases']} entries into pacing gain 1.25 "
                    "seen in ss samples; BBR v1 cycles 8 phases of one min RTT (not in the paper)")
    elif "bbr" in result["ccas"]:
        verdict.add("BBR (benchbook's extension): ProbeBW gain cycle / min RTT", None, None, "", "", "info",
                    f"not run: {result['not_runnable'].get('bbr', 'no run')}")
