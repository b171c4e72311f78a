"""Zunker (master thesis, TU Berlin 2024), Fig. 6.5: a latency-critical UDP flow under TCP background traffic,
with and without per-class isolation at the bottleneck.

Imported by latency-under-load.ipynb beside it. Per arm and run one local dumbbell
(:mod:`benchbook.experiment.dumbbell_runs`, repeated by :mod:`benchbook.experiment.repetitions`) carries a 100
packet/s UDP probe (:mod:`benchbook.tools.udp_probe`: one-way latency, sender and receiver namespaces share the
host's monotonic clock) and one saturating iperf3 TCP flow from the same sender to the same receiver. Arm "fifo":
htb at the link rate over one pfifo (the thesis' data plane without shaper). Arm "isolated": htb with two classes,
the probe's UDP port in a class of its own with a guaranteed rate and priority, a pfifo per class; it stands in for
the thesis' CAKE, which this kernel lacks (as fq_codel).

Published numbers come only from the entry TOML of this folder.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import plotly.graph_objects as go

from benchbook.analysis.resolvability import resolve
from benchbook.atomic_write import write_json_atomic
from benchbook.experiment.dumbbell_runs import During, FlowsArm, FlowsRun, flows_run
from benchbook.experiment.repetitions import Calibrate, RunContext, Statistic, base_arm, run_repetitions
from benchbook.testbed.capabilities import probe_qdisc
from benchbook.testbed.dumbbell import RCV_ADDR, Dumbbell, FlowSpec, LinkSpec
from benchbook.tools import udp_probe

PROBE_PORT = 7000
LEAD_S = 1.0          # the probe runs alone this long before the TCP flow starts
# the receiver ends this long after the last probe arrived (at 100 packets/s a second is 100 probe gaps, far above
# the longest queueing delay, a 1000-packet FIFO at 100 Mbit/s holding about 0.12 s); it waited out a fixed 3 s
IDLE_S = 1.0


def link_of(arm: str, rate_mbps: float, buffer_packets: int, isolated_rate_mbps: float) -> LinkSpec:
    if arm not in ("fifo", "isolated"):
        raise ValueError(f"arm must be fifo or isolated, got {arm!r}")
    return LinkSpec(rate_bps=int(rate_mbps * 1e6), buffer_packets=int(buffer_packets),
                    isolate_udp_dport=PROBE_PORT if arm == "isolated" else None,
                    isolated_rate_bps=int(isolated_rate_mbps * 1e6))


def _probe_argv(duration_s: float, rate_pps: float, size_bytes: int, out: Path) -> tuple[list[str], list[str]]:
    return (udp_probe.send_argv(RCV_ADDR, PROBE_PORT, rate_pps, duration_s, size_bytes),
            udp_probe.recv_argv(PROBE_PORT, duration_s + 3, out, idle_s=IDLE_S))


def dry_run(arms: list[str], links: dict[str, LinkSpec], duration_s: int, rate_pps: float, size_bytes: int,
            output_dir: Path | str) -> Path:
    lines = []
    for arm in arms:
        send, recv = _probe_argv(LEAD_S + duration_s + 1, rate_pps, size_bytes, Path(f"raw/{arm}/rep1/probe.txt"))
        lines.append(f"# arm {arm} (token 000000 stands for the run token)")
        lines += Dumbbell(links[arm], [FlowSpec("cubic")]).dry_run(duration_s, 1.0)
        lines += [f"[rcv] {' '.join(recv)}   (started first)",
                  f"[s1] {' '.join(send)}   (the TCP flow starts {LEAD_S:g} s after its packet 0 is due)"]
    path = Path(output_dir) / "dry-run.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def _probe_beside(duration_s: int, rate_pps: float, size_bytes: int) -> During:
    """The probe runs from ``LEAD_S`` before the TCP flow is due (counted from the time the sender's packet 0 was
    due) to a second after it should end (run's probe.txt); when it started and when the TCP flow was due go into
    the run's metrics (``probe_start_ns``, ``tcp_planned_start_ns``; :func:`_probe_statistics` adds when the TCP
    client was launched, ``tcp_start_ns``: on a loaded host the iperf3 server and client start late)."""

    @contextmanager
    def during(db: Dumbbell, ctx: RunContext) -> Iterator[None]:
        assert db.tb is not None
        send, recv = _probe_argv(LEAD_S + duration_s + 1, rate_pps, size_bytes, ctx.directory / "probe.txt")
        receiver = udp_probe.start_receiver(db.tb.host("rcv"), recv)
        sender, start_ns = udp_probe.start_sender(db.tb.host("s1"), send)
        ctx.metrics["probe_start_ns"] = start_ns
        time.sleep(max(0.0, (start_ns + LEAD_S * 1e9 - time.monotonic_ns()) / 1e9))
        ctx.metrics["tcp_planned_start_ns"] = time.monotonic_ns()
        ctx.metrics["sent"] = int(rate_pps * (LEAD_S + duration_s + 1))
        yield
        sender.wait(timeout_s=LEAD_S + duration_s + 30)
        receiver.wait(timeout_s=LEAD_S + duration_s + 30)

    return during


def _probe_statistics(duration_s: int, bound_ms: float | None) -> Callable[[FlowsRun], list[Statistic]]:
    def measures(run: FlowsRun) -> list[Statistic]:
        # The window is placed after the TCP client's launch, not after the planned start: the iperf3 server and
        # client start up to seconds late on a loaded host, and a window before the flow ran finds an empty queue.
        launched_s = run.flows[0].launched_at_s
        if launched_s is None:
            raise ValueError(f"{run.directory}: the TCP flow has no launch time; expected one from run_flows")
        run.ctx.metrics["tcp_start_ns"] = run.ctx.metrics["started_monotonic_ns"] + round(launched_s * 1e9)
        run.ctx.metrics["tcp_start_late_s"] = round(
            (run.ctx.metrics["tcp_start_ns"] - run.ctx.metrics["tcp_planned_start_ns"]) / 1e9, 6)
        info = {"dir": ".", **run.ctx.metrics}
        st = under_load(probe_latencies(run.directory, info), info, duration_s, bound_ms or float("inf"))
        window = f"probes sent while the TCP flow ran, its first second left out ({st['expected']} expected)"
        p99 = resolve(99.0, st["received"])      # V2: a run's p99 needs 368 probes (duration_s >= 5 at 100/s)
        out = [Statistic("probe_p50_ms", st["p50_ms"], st["received"], "ms", "median one-way latency (numpy "
                         f"linear interpolation) of the {window}; n: received"),
               Statistic("probe_p99_ms", st["p99_ms"] if p99.ok else None, st["received"], "ms", "99th percentile "
                         f"one-way latency (numpy linear interpolation) of the {window}; n: received"
                         + ("" if p99.ok else f"; null: {p99.reason}")),
               Statistic("probe_lost", st["lost"], st["expected"], "packets", f"{window}: not received"),
               Statistic("probe_alone_p50_ms", st["alone_p50_ms"], st["alone_received"], "ms", "median one-way "
                         f"latency of the probes sent in the {LEAD_S:g} s before the TCP flow; n: received")]
        if bound_ms is not None:
            out.append(Statistic("probe_share_within_bound", st["share_within_bound"], st["expected"], "",
                                 f"share of the {window} received within {bound_ms:g} ms (lost ones count as late)"))
        return out

    return measures


def run(arms: list[str], links: dict[str, LinkSpec], duration_s: int, rate_pps: float, size_bytes: int,
        output_dir: Path | str, progress: Any = print, repetitions: int = 1, seed: int | None = None,
        bound_ms: float | None = None, calibrate: Calibrate = None) -> dict[str, Any]:
    """Each arm ``repetitions`` times, a fresh dumbbell each, in the runner's seeded order (:mod:`benchbook.
    experiment.repetitions`; calling again on ``output_dir`` resumes): raw/<arm>/rep<k>/probe.txt ("seq send_ns
    recv_ns" per received probe), the iperf3 report, commands and the run's record with the probe's statistics
    (with ``bound_ms``: also the share within it); metrics.json and capabilities.json (CAKE and fq_codel probed
    and recorded). ``arms``: per arm its first valid run. ``calibrate``: A/A runs of that arm instead (the
    runner's; the copy's runs are arm ``<arm>@aa``)."""
    out = Path(output_dir)
    flows = {arm: FlowsArm(links[arm], (FlowSpec("cubic"),), duration_s, 1.0) for arm in arms}
    res = run_repetitions(out, flows, repetitions,
                          flows_run(during=_probe_beside(duration_s, rate_pps, size_bytes),
                                    measures=_probe_statistics(duration_s, bound_ms)),
                          seed=seed, progress=progress, calibrate=calibrate)
    result: dict[str, Any] = {"arms": {}, "not_runnable": res.not_runnable(), "duration_s": duration_s,
                              "rate_pps": rate_pps, "size_bytes": size_bytes, "lead_s": LEAD_S,
                              "repetitions": repetitions, "seed": res.summary["plan"]["seed"], "output_dir": str(out)}
    record: dict[str, Any] = {}
    for rec in res.runs():
        m = rec["metrics"]
        record = m["emulation"]
        if rec["arm"] not in result["arms"]:
            link = links[base_arm(rec["arm"])]
            result["arms"][rec["arm"]] = {
                "dir": rec["dir"], "token": m["token"], "tcp_start_ns": m["tcp_start_ns"],
                "probe_start_ns": m["probe_start_ns"], "sent": m["sent"],
                "tcp_receiver_bps": m["flows"][0]["receiver_bps"], "qdisc": m["qdisc"],
                "valid_runs": len(res.runs(rec["arm"])),
                "link": {"rate_bps": link.rate_bps, "buffer_packets": link.buffer_packets,
                         "isolate_udp_dport": link.isolate_udp_dport, "isolated_rate_bps": link.isolated_rate_bps}}
    result["shaper_capabilities"] = [probe_qdisc(k).as_dict() for k in ("cake", "fq_codel")]
    missing = [{"capability": f"arm {a}", "status": "missing", "detail": why}
               for a, why in result["not_runnable"].items()]
    write_json_atomic(out / "metrics.json", {**result, "link_emulation": record})
    write_json_atomic(out / "capabilities.json", [*res.capabilities(), *result["shaper_capabilities"], *missing])
    return result


def probe_latencies(output_dir: Path | str, arm_info: dict[str, Any]) -> dict[str, np.ndarray]:
    """t_s (send time from the TCP flow's start), one-way latency_ms, seq of every received probe."""
    log = udp_probe.read_log(Path(output_dir) / arm_info["dir"] / "probe.txt")
    return {"seq": log.seq, "t_s": (log.send_ns - arm_info["tcp_start_ns"]) / 1e9, "latency_ms": log.latency_ns / 1e6}


def under_load(p: dict[str, np.ndarray], arm_info: dict[str, Any], duration_s: int, bound_ms: float) -> dict[str, Any]:
    """Over the probes sent while the TCP flow ran (t in [1 s, duration] after its client was launched, its first
    second being slow start; probes are due every 1/rate from ``probe_start_ns``, the window is cut at the last
    probe sent): share received within ``bound_ms`` (lost probes count as late), p50, p99 and the lost count; and
    the probe's median latency alone (before the TCP flow) with the number of probes behind it."""
    rate = arm_info["sent"] / (LEAD_S + duration_s + 1)
    offset_s = (arm_info["tcp_start_ns"] - arm_info["probe_start_ns"]) / 1e9
    first = int(np.ceil((offset_s + 1.0) * rate))
    last = min(int(np.floor((offset_s + duration_s) * rate)), int(arm_info["sent"]))
    sel = (p["seq"] >= first) & (p["seq"] < last)
    lat = np.sort(p["latency_ms"][sel])
    expected = max(last - first, 0)
    alone = p["latency_ms"][p["t_s"] < 0]
    return {"expected": expected, "received": int(lat.size), "lost": expected - int(lat.size),
            "share_within_bound": float(np.sum(lat <= bound_ms) / expected) if expected else None,
            "p50_ms": float(np.percentile(lat, 50)) if lat.size else None,
            "p99_ms": float(np.percentile(lat, 99)) if lat.size else None,
            "alone_received": int(alone.size), "alone_p50_ms": float(np.median(alone)) if alone.size else None}


def cdf_figure(lat: dict[str, np.ndarray], bound_ms: float, title: str) -> Any:
    fig = go.Figure()
    for arm, v in lat.items():
        x = np.sort(v)
        fig.add_trace(go.Scatter(x=x, y=np.arange(1, x.size + 1) / max(x.size, 1), mode="lines", name=arm))
    fig.add_vline(x=bound_ms, line={"dash": "dash", "color": "crimson"},
                  annotation_text=f"flow's maximum latency {bound_ms:g} ms")
    fig.update_layout(title=title, xaxis_title="one-way latency [ms]", yaxis_title="share of probes <= x",
                      xaxis_type="log")
    return fig


LABEL = {"fifo": "Without the traffic shaper", "isolated": "With the traffic shaper"}


def add_info_rows(verdict: Any, result: dict[str, Any], output_dir: Path | str, bound_ms: float) -> None:
    """The context rows (never judged) after ``verdict.judge_runs(output_dir)``: per arm its set-up, and over its
    valid runs the share of probes within ``bound_ms``, the probe's p50 and p99 under load and alone, and the TCP
    flow's throughput (median with the 95 % interval of the median; a p99 the runs cannot resolve says so); an arm
    that could not run says why."""
    for arm, why in result["not_runnable"].items():
        verdict.add(f"{arm}: not runnable here", None, None, "", "", "info", why)
    for arm, info in result["arms"].items():
        link = info["link"]
        setup = (f"{link['rate_bps'] / 1e6:g} Mbit/s, pfifo {link['buffer_packets']} packets"
                 + (f" per class, probe class {link['isolated_rate_bps'] / 1e6:g} Mbit/s guaranteed, priority 0"
                    if arm == "isolated" else "") + f"; {info['valid_runs']} valid run(s)")
        verdict.add(f"{arm}: set-up ({LABEL[arm].lower()}, local bottleneck only)", None, None, "", arm, "info", setup)
        verdict.add_run_summary(f"{arm}: share of probes within {bound_ms:g} ms (local bottleneck only)", output_dir,
                                arm, "probe_share_within_bound", note="lost probes count as late")
        for stat, what in (("probe_p50_ms", "p50 under load"), ("probe_p99_ms", "p99 under load"),
                           ("probe_alone_p50_ms", "p50 alone, before the TCP flow")):
            verdict.add_run_summary(f"{arm}: probe one-way latency, {what}", output_dir, arm, stat)
        verdict.add_run_summary(f"{arm}: TCP background throughput", output_dir, arm, "flow1.receiver_bps", 1e-6,
                                "Mbit/s", "one cubic iperf3 flow saturating the bottleneck")
