"""Kato et al. (IARIA Int. J. Adv. Telecom. 2018): TCP over 802.11n while the station scans for access points,
recorded as a gated-link model (802.11 itself cannot be emulated on this kernel: no mac80211_hwsim).

Imported by gated-link.ipynb beside it. While it scans, the station sleeps (the AP holds its frames) and
wakes in turn; the paper measures sleeping periods of 110 ms and awake periods of 320 ms for about 10 s.
The model: one TCP flow through the local dumbbell (:mod:`benchbook.experiment.dumbbell_runs`, each run a fresh
one, repeated by :mod:`benchbook.experiment.repetitions`) whose bottleneck
follows a link schedule (:mod:`benchbook.testbed.link_schedule`): the full rate, then a degraded window of
alternating near-zero rate ("sleeping") and full rate ("awake"), then the full rate again. The queue sits at
the router, outside the sender's socket accounting, which is the paper's "TSQ not used" case (TSQ cannot be
switched off on 6.x kernels). Per second, as the paper reports: the sender's throughput (iperf3 intervals)
and the mean congestion window (ss -tin samples, the paper averages tcpprobe's per-segment values).

Published numbers come only from the entry TOML of this folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import plotly.graph_objects as go

from benchbook.atomic_write import write_json_atomic
from benchbook.experiment.dumbbell_runs import (
    FlowsArm,
    FlowsRun,
    data_socket,
    flows_run,
    read_flow_report,
    read_ss_samples,
)
from benchbook.experiment.repetitions import Rule, Statistic, run_repetitions
from benchbook.testbed.dumbbell import FlowSpec, LinkSpec
from benchbook.testbed.link_schedule import LinkSchedule, Step
from benchbook.tools.iperf3 import Iperf3Report

GATE_CLOSED_BPS = 1000      # the "sleeping" rate: one 1514-byte frame in 12 s, i.e. the link holds its queue
GATE_LATE_S = 0.215         # half of Fig. 8's 430 ms cycle: a gate step later than this can run into the next period


def gate_schedule(rate_bps: int, start_s: float, window_s: float, sleep_ms: float, awake_ms: float) -> LinkSchedule:
    """Full rate from 0; from ``start_s`` for ``window_s``: closed ``sleep_ms``, open ``awake_ms``, repeated;
    full rate after the window."""
    steps = [Step(0.0, rate_bps)]
    t = start_s
    while t < start_s + window_s:
        steps.append(Step(round(t, 6), GATE_CLOSED_BPS))
        steps.append(Step(round(t + sleep_ms / 1000, 6), rate_bps))
        t += (sleep_ms + awake_ms) / 1000
    if steps[-1].t_s < start_s + window_s:
        steps.append(Step(round(start_s + window_s, 6), rate_bps))
    return LinkSchedule(tuple(steps), f"gated link: {sleep_ms:g} ms closed / {awake_ms:g} ms open from {start_s:g} s "
                                      f"for {window_s:g} s at {rate_bps / 1e6:g} Mbit/s")


def gate_window(schedule: LinkSchedule, closed_bps: int = GATE_CLOSED_BPS) -> tuple[float, float]:
    """(start_s, window_s) of the gated window as the schedule gives it: from its first closed step to its last
    step."""
    closed = [st.t_s for st in schedule.steps if st.rate_bps == closed_bps]
    if not closed:
        raise ValueError(f"schedule {schedule.source!r}: no closed step (rate {closed_bps} bit/s)")
    return closed[0], schedule.steps[-1].t_s - closed[0]


def gate_lateness(rec: dict[str, Any]) -> str | None:
    """Why a finished run's gate did not follow the schedule: a step never applied, a step skipped (the dumbbell
    skips a step whose successor is already due when its turn comes, so lateness does not pile up; a skipped step
    was not on time, whatever its time), or a step after the start done more than GATE_LATE_S after its time
    (half of Fig. 8's 430 ms cycle, where a late step runs into the next period; each step is a tc process, 20 to
    100 ms here, slower on a loaded host); None when it did."""
    sched = rec.get("metrics", {}).get("emulation", {}).get("schedule")
    if not sched:
        return "no record of the applied link schedule"
    recorded = sched["applied"]
    planned = [st for st in rec.get("config", {}).get("schedule", {}).get("steps", []) if st["t_s"] > 0]
    missing = len(planned) - len([a for a in recorded if a["t_s"] > 0])
    if missing > 0:
        return f"{missing} of {len(planned)} gate steps were never applied"
    skipped = [a for a in recorded if a.get("skipped")]
    if skipped:
        return (f"{len(skipped)} of {len(recorded)} gate steps were skipped, the first at {skipped[0]['t_s']:g} s "
                f"({skipped[0].get('reason', 'no reason recorded')}): the gated window lost the model's shape; a "
                "loaded host delays the tc commands")
    late = max((a["done_at_s"] - a["t_s"] for a in recorded if a["t_s"] > 0), default=0.0)
    if late > GATE_LATE_S:
        return (f"a gate step was done {late * 1000:.0f} ms after its time (more than {GATE_LATE_S * 1000:.0f} ms, "
                "half a cycle: the gated window lost the model's shape; a loaded host delays the tc commands)")
    return None


GATE_RULE = Rule("gate on time", f"runs whose gate steps were all applied (none skipped), each within "
                 f"{GATE_LATE_S * 1000:.0f} ms of its time", gate_lateness)


def run(ccas: list[str], link: LinkSpec, schedule: LinkSchedule, duration_s: int, output_dir: Path | str,
        ss_interval_s: float = 0.05, progress: Any = print, repetitions: int = 1,
        seed: int | None = None) -> dict[str, Any]:
    """Each congestion control through a fresh gated dumbbell, ``repetitions`` times in the runner's seeded order
    (:mod:`benchbook.experiment.repetitions`; calling again on ``output_dir`` resumes); the model's measures per
    run are the run's statistics. ``runs``: per CCA its first valid run."""
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "schedule.txt").write_text(schedule.text())
    arms = {cca: FlowsArm(link, (FlowSpec(cca),), duration_s, 1.0, ss_interval_s=ss_interval_s, schedule=schedule)
            for cca in ccas}
    res = run_repetitions(out, arms, repetitions, flows_run(measures=model_statistics), seed=seed,
                          rules=[GATE_RULE], progress=progress)
    result: dict[str, Any] = {"runs": {}, "not_runnable": res.not_runnable(), "duration_s": duration_s,
                              "repetitions": repetitions, "seed": res.summary["plan"]["seed"], "output_dir": str(out),
                              "link": {"rate_bps": link.rate_bps, "buffer_packets": link.buffer_packets}}
    record: dict[str, Any] = {}
    for rec in res.runs():
        record = rec["metrics"]["emulation"]
        if rec["arm"] not in result["runs"]:
            result["runs"][rec["arm"]] = {"dir": rec["dir"], "token": rec["metrics"]["token"],
                                          "applied": record["schedule"]["applied"], "qdisc": rec["metrics"]["qdisc"],
                                          "valid_runs": len(res.runs(rec["arm"]))}
    write_json_atomic(out / "metrics.json", {**result, "link_emulation": record})
    write_json_atomic(out / "capabilities.json", [*res.capabilities(),
                                                  {"capability": "802.11 emulation (mac80211_hwsim)",
                                                   "status": "missing",
                                                   "detail": "modelled as a gated link; A-MPDU aggregation, power-save "
                                                             "frames and MAC rates are not modelled"}])
    return result


def per_second(output_dir: Path | str, run_info: dict[str, Any]) -> dict[str, np.ndarray]:
    """A run's per-second series (see :func:`per_second_of`)."""
    d = Path(output_dir) / run_info["dir"]
    return per_second_of(read_flow_report(d), read_ss_samples(d))


def per_second_of(rep: Iperf3Report, rows: list[dict[str, Any]]) -> dict[str, np.ndarray]:
    """Per 1 s: t_s (interval start), sender throughput Mbit/s, retransmissions, mean cwnd of the ss samples."""
    t = np.array([r["start_s"] for r in rep.intervals])
    mbps = np.array([r["bps"] / 1e6 for r in rep.intervals])
    rtx = np.array([r["retransmits"] or 0 for r in rep.intervals])
    rows = data_socket(rows)
    cwnd = np.full(t.size, np.nan)
    if rows:
        ts = np.array([(r["t_ns"] - rows[0]["t_ns"]) / 1e9 for r in rows])
        cw = np.array([r["cwnd"] for r in rows], float)
        for k, start in enumerate(t):
            sel = (ts >= start) & (ts < start + 1)
            if sel.any():
                cwnd[k] = cw[sel].mean()
    return {"t_s": t, "mbps": mbps, "retransmits": rtx, "cwnd": cwnd}


def model_statistics(run: FlowsRun) -> list[Statistic]:
    """The model's measures of one run: throughput outside and at its lowest inside the gated window (from the
    schedule), the largest per-second cwnd, and the realised gate periods."""
    assert run.arm.schedule is not None
    start_s, window_s = gate_window(run.arm.schedule)
    ps = per_second_of(run.flows[0].report, run.ss.get(1, []))
    st = summary(ps, start_s, window_s)
    t = ps["t_s"]
    n_inside = int(np.sum((t >= start_s) & (t + 1 <= start_s + window_s)))
    n_normal = int(np.sum(((t + 1 <= start_s) | (t >= start_s + window_s)) & (t >= 1)))
    g = gate_periods(run.emulation["schedule"]["applied"])
    return [Statistic("normal_mbps", st["normal_mbps"], n_normal, "Mbit/s", "mean of the sender's 1 s interval "
                      "rates outside the gated window (whole seconds, the first second left out)"),
            Statistic("degraded_lowest_mbps", st["degraded_min_mbps"], n_inside, "Mbit/s", "lowest of the sender's "
                      "1 s interval rates inside the gated window; n: whole seconds inside"),
            Statistic("cwnd_peak_to_window_end", st["cwnd_peak"], None, "packets", "largest per-second mean of "
                      "the data socket's ss cwnd samples from the second second to the gated window's last whole "
                      "second"),
            Statistic("cwnd_window_lowest_after_peak", st["cwnd_fall"], None, "packets", "smallest per-second mean "
                      "of the ss cwnd samples in the whole seconds inside the gated window from the second of "
                      "cwnd_peak_to_window_end on (the peak itself when it comes in the window's last second)"),
            Statistic("retransmits_in_window", st["retransmits_in_window"], n_inside, "segments", "the sender's "
                      "retransmissions (iperf3 intervals) in the whole seconds inside the gated window"),
            Statistic("degraded_share", st["degraded_share"], n_inside, "", "lowest 1 s rate inside the gated "
                      "window / normal_mbps; n: whole seconds inside"),
            Statistic("cwnd_max", st["cwnd_max"], len(run.ss.get(1, [])), "packets", "largest per-second mean of "
                      "the data socket's ss cwnd samples; n: ss samples"),
            Statistic("gate_closed_ms", g["closed_ms"], g["cycles"], "ms", "mean time from a closing tc command's "
                      "end to the next opening one's; n: cycles"),
            Statistic("gate_open_ms", g["open_ms"], g["cycles"], "ms", "mean time from an opening tc command's end "
                      "to the next closing one's, first and last open span left out")]


def summary(ps: dict[str, np.ndarray], start_s: float, window_s: float) -> dict[str, Any]:
    """Normal average (whole seconds outside the window, after the first), the lowest second inside it, and
    its share of the normal average; the largest per-second cwnd; retransmissions inside and outside."""
    t = ps["t_s"]
    inside = (t >= start_s) & (t + 1 <= start_s + window_s)
    normal = ((t + 1 <= start_s) | (t >= start_s + window_s)) & (t >= 1)
    avg = float(ps["mbps"][normal].mean()) if normal.any() else None
    low = float(ps["mbps"][inside].min()) if inside.any() else None
    finite = np.isfinite(ps["cwnd"])
    return {"normal_mbps": avg, "degraded_min_mbps": low,
            "degraded_share": low / avg if avg and low is not None else None,
            "cwnd_max": float(np.nanmax(ps["cwnd"])) if finite.any() else None,
            **_cwnd_fall(t, ps["cwnd"], inside, start_s + window_s),
            "retransmits_in_window": int(ps["retransmits"][inside].sum()),
            "retransmits_outside": int(ps["retransmits"][~inside].sum())}


def _cwnd_fall(t: np.ndarray, cwnd: np.ndarray, inside: np.ndarray, end_s: float) -> dict[str, float | None]:
    """The largest per-second cwnd from second 1 to the window's end, and the smallest inside the window from
    that second on: whether the window grown large falls while the link is gated."""
    upto = np.isfinite(cwnd) & (t >= 1) & (t + 1 <= end_s)
    if not upto.any():
        return {"cwnd_peak": None, "cwnd_fall": None}
    k = np.flatnonzero(upto)[int(np.argmax(cwnd[upto]))]
    after = inside & np.isfinite(cwnd) & (t >= t[k])
    return {"cwnd_peak": float(cwnd[k]), "cwnd_fall": float(cwnd[after].min()) if after.any() else None}


def gate_periods(applied: list[dict[str, Any]], closed_bps: int = GATE_CLOSED_BPS) -> dict[str, float | None]:
    """Mean realised closed and open periods (ms) from the times the steps were done (skipped steps left out: a
    run with one is invalid by GATE_RULE)."""
    applied = [a for a in applied if not a.get("skipped")]
    closed, opened = [], []
    for a, b in zip(applied, applied[1:], strict=False):
        span = (b["done_at_s"] - a["done_at_s"]) * 1000
        (closed if a["rate_bps"] == closed_bps else opened).append(span)
    inner_open = opened[1:-1] if len(opened) > 2 else opened
    return {"closed_ms": float(np.mean(closed)) if closed else None,
            "open_ms": float(np.mean(inner_open)) if inner_open else None, "cycles": len(closed)}


def figure(ps: dict[str, np.ndarray], cca: str, start_s: float, window_s: float, title: str) -> Any:
    fig = go.Figure()
    fig.add_trace(go.Bar(x=ps["t_s"] + 0.5, y=ps["mbps"], name="throughput per 1 s [Mbit/s]", opacity=0.6))
    fig.add_trace(go.Scatter(x=ps["t_s"] + 0.5, y=ps["cwnd"], mode="lines+markers", name="cwnd, mean per 1 s "
                             "[packets]", yaxis="y2"))
    fig.add_vrect(x0=start_s, x1=start_s + window_s, fillcolor="grey", opacity=0.15, line_width=0,
                  annotation_text="gated (scan) window")
    fig.update_layout(title=title, xaxis_title="Time [s]", yaxis_title="Throughput [Mbit/s]",
                      yaxis2={"title": "cwnd [packets]", "overlaying": "y", "side": "right"})
    return fig


def add_verdict_rows(verdict: Any, result: dict[str, Any], stats: dict[str, dict[str, Any]], model: str) -> None:
    """Info rows of the first valid run per congestion control beside the judged ones (the published values and
    claims are judged across runs by ``verdict.judge_runs``)."""
    for cca, st in stats.items():
        run = result["runs"][cca]["dir"]
        verdict.add(f"model, {cca}: retransmissions inside the gated window", None, st["retransmits_in_window"],
                    "segments", run, "info", f"outside it: {st['retransmits_outside']} (slow start's overflow of the "
                    f"router FIFO among them); the first valid run; {model}")
