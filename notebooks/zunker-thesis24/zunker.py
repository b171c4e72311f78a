"""Zunker (master thesis, TU Berlin 2024), Fig. 6.5: a latency-critical UDP flow under TCP background traffic,
with and without per-class isolation at the bottleneck.

Imported by latency-under-load.ipynb beside it. Per arm one local dumbbell (:mod:`benchbook.testbed.dumbbell`)
carries a 100 packet/s UDP probe (``udp_probe.py`` beside this module: one-way latency, sender and receiver
namespaces share the host's monotonic clock) and one saturating iperf3 TCP flow from the same sender to the
same receiver. Arm "fifo": htb at the link rate over one pfifo (the thesis' data plane without shaper).
Arm "isolated": htb with two classes, the probe's UDP port in a class of its own with a guaranteed rate and
priority, a pfifo per class; it stands in for the thesis' CAKE, which this kernel lacks (as fq_codel).

Published numbers come only from the entry TOML of this folder.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchbook.testbed.capabilities import NotRunnable, probe_qdisc
from benchbook.testbed.dumbbell import RCV_ADDR, Dumbbell, FlowSpec, LinkSpec
from benchbook.tools.host import CommandLog

PROBE = Path(__file__).resolve().parent / "udp_probe.py"
PROBE_PORT = 7000
LEAD_S = 1.0          # the probe runs alone this long before the TCP flow starts


def _write_json(path: Path, obj: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(obj, indent=1, default=str))
    os.replace(tmp, path)


def link_of(arm: str, rate_mbps: float, buffer_packets: int, isolated_rate_mbps: float) -> LinkSpec:
    if arm not in ("fifo", "isolated"):
        raise ValueError(f"arm must be fifo or isolated, got {arm!r}")
    return LinkSpec(rate_bps=int(rate_mbps * 1e6), buffer_packets=int(buffer_packets),
                    isolate_udp_dport=PROBE_PORT if arm == "isolated" else None,
                    isolated_rate_bps=int(isolated_rate_mbps * 1e6))


def _probe_argv(duration_s: float, rate_pps: float, size_bytes: int, out: Path) -> tuple[list[str], list[str]]:
    send = [sys.executable, str(PROBE), "send", RCV_ADDR, str(PROBE_PORT), f"{rate_pps:g}", f"{duration_s:g}",
            str(size_bytes)]
    recv = [sys.executable, str(PROBE), "recv", str(PROBE_PORT), f"{duration_s + 3:g}", str(out)]
    return send, recv


def dry_run(arms: list[str], links: dict[str, LinkSpec], duration_s: int, rate_pps: float, size_bytes: int,
            output_dir: Path | str) -> Path:
    lines = []
    for arm in arms:
        send, recv = _probe_argv(LEAD_S + duration_s + 1, rate_pps, size_bytes, Path(f"raw/{arm}/probe.txt"))
        lines.append(f"# arm {arm} (token 000000 stands for the run token)")
        lines += Dumbbell(links[arm], [FlowSpec("cubic")]).dry_run(duration_s, 1.0)
        lines += [f"[rcv] {' '.join(recv)}   (started first)", f"[s1] {' '.join(send)}   (the TCP flow starts "
                                                                   f"{LEAD_S:g} s later)"]
    path = Path(output_dir) / "dry-run.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def run(arms: list[str], links: dict[str, LinkSpec], duration_s: int, rate_pps: float, size_bytes: int,
        output_dir: Path | str, progress: Any = print) -> dict[str, Any]:
    """Each arm once: raw/<arm>/probe.txt ("seq send_ns recv_ns" per received probe), iperf3.json, qdisc.json,
    commands; metrics.json and capabilities.json (CAKE and fq_codel probed and recorded)."""
    out = Path(output_dir)
    result: dict[str, Any] = {"arms": {}, "not_runnable": {}, "duration_s": duration_s, "rate_pps": rate_pps,
                              "size_bytes": size_bytes, "lead_s": LEAD_S, "output_dir": str(out)}
    record: dict[str, Any] = {}
    for arm in arms:
        d = out / "raw" / arm
        d.mkdir(parents=True, exist_ok=True)
        probe_file = d / "probe.txt"
        send, recv = _probe_argv(LEAD_S + duration_s + 1, rate_pps, size_bytes, probe_file)
        progress(f"{arm}: probe at {rate_pps:g} packets/s, TCP from {LEAD_S:g} s for {duration_s} s")
        try:
            with Dumbbell(links[arm], [FlowSpec("cubic")], log=CommandLog(d)) as db:
                receiver = db.tb.host("rcv").start(recv, what="udp probe receiver")
                time.sleep(0.5)
                sender = db.tb.host("s1").start(send, what="udp probe sender")
                t_send_start = time.monotonic_ns()
                time.sleep(LEAD_S)
                t_tcp_ns = time.monotonic_ns()
                res = db.run_flows(duration_s, 1.0)
                sender.wait(timeout_s=LEAD_S + duration_s + 30)
                receiver.wait(timeout_s=LEAD_S + duration_s + 30)
        except NotRunnable as exc:
            result["not_runnable"][arm] = str(exc)
            progress(f"{arm}: not runnable: {exc}")
            continue
        record = res["record"]
        flow = res["flows"][0]
        (d / "iperf3.json").write_text(flow.raw_json)
        _write_json(d / "qdisc.json", res["qdisc"])
        result["arms"][arm] = {"dir": str(d.relative_to(out)), "token": (record.get("topology") or {}).get("token"),
                               "tcp_start_ns": t_tcp_ns, "probe_start_ns": t_send_start,
                               "sent": int(rate_pps * (LEAD_S + duration_s + 1)),
                               "tcp_receiver_bps": flow.receiver_bps, "qdisc": res["qdisc"],
                               "link": {"rate_bps": links[arm].rate_bps, "buffer_packets": links[arm].buffer_packets,
                                        "isolate_udp_dport": links[arm].isolate_udp_dport,
                                        "isolated_rate_bps": links[arm].isolated_rate_bps}}
    result["shaper_capabilities"] = [probe_qdisc(k).as_dict() for k in ("cake", "fq_codel")]
    missing = [{"capability": f"arm {a}", "status": "missing", "detail": why}
               for a, why in result["not_runnable"].items()]
    _write_json(out / "metrics.json", {**result, "link_emulation": record})
    _write_json(out / "capabilities.json", [*record.get("capabilities", []), *result["shaper_capabilities"], *missing])
    return result


def probe_latencies(output_dir: Path | str, arm_info: dict[str, Any]) -> dict[str, np.ndarray]:
    """t_s (send time from the TCP flow's start), one-way latency_ms, seq of every received probe."""
    path = Path(output_dir) / arm_info["dir"] / "probe.txt"
    rows = np.loadtxt(path, dtype=np.int64, ndmin=2) if path.stat().st_size else np.zeros((0, 3), np.int64)
    return {"seq": rows[:, 0], "t_s": (rows[:, 1] - arm_info["tcp_start_ns"]) / 1e9,
            "latency_ms": (rows[:, 2] - rows[:, 1]) / 1e6}


def under_load(p: dict[str, np.ndarray], arm_info: dict[str, Any], duration_s: int, bound_ms: float) -> dict[str, Any]:
    """Over the probes sent while the TCP flow ran (t in [1 s, duration]: its first second is slow start):
    share received within ``bound_ms`` (lost probes count as late), p50, p99 and the lost count; and the
    probe's median latency alone (before the TCP flow)."""
    rate = arm_info["sent"] / (LEAD_S + duration_s + 1)
    first = int(np.ceil((LEAD_S + 1.0) * rate))
    last = int(np.floor((LEAD_S + duration_s) * rate))
    sel = (p["seq"] >= first) & (p["seq"] < last)
    lat = np.sort(p["latency_ms"][sel])
    expected = max(last - first, 0)
    alone = p["latency_ms"][p["t_s"] < 0]
    return {"expected": expected, "received": int(lat.size), "lost": expected - int(lat.size),
            "share_within_bound": float(np.sum(lat <= bound_ms) / expected) if expected else None,
            "p50_ms": float(np.percentile(lat, 50)) if lat.size else None,
            "p99_ms": float(np.percentile(lat, 99)) if lat.size else None,
            "alone_p50_ms": float(np.median(alone)) if alone.size else None}


def cdf_figure(lat: dict[str, np.ndarray], bound_ms: float, title: str) -> Any:
    import plotly.graph_objects as go

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


def add_verdict_rows(verdict: Any, result: dict[str, Any], stats: dict[str, dict[str, Any]], bound_ms: float) -> None:
    why = ("not derivable: the thesis measures through its WAN Connector over four emulated LEO links replaying the "
           "ESA SCNE latency trace (the 56 ms bound is the mean of those links' mean latencies), with CAKE as the "
           "shaper; neither the WAN Connector, the trace nor CAKE is available here; the info rows show the same "
           "comparison on the local bottleneck alone (no path latency), with htb classes standing in for CAKE")
    for arm in ("fifo", "isolated"):
        name = f"{LABEL[arm]}: share of probes within {bound_ms:g} ms"
        verdict.not_derivable(name, why if arm in stats else
                              f"not derivable here: {result['not_runnable'].get(arm, 'arm not run')}")
    for arm, st in stats.items():
        info = result["arms"][arm]
        setup = (f"{info['link']['rate_bps'] / 1e6:g} Mbit/s, pfifo {info['link']['buffer_packets']} packets"
                 + (f" per class, probe class {info['link']['isolated_rate_bps'] / 1e6:g} Mbit/s guaranteed, "
                    "priority 0" if arm == "isolated" else "") + f"; {st['expected']} probes under load, "
                 f"{st['lost']} lost (counted as late)")
        verdict.add(f"{arm}: share of probes within {bound_ms:g} ms (local bottleneck only)", None,
                    st["share_within_bound"], "", info["dir"], "info", setup)
        verdict.add(f"{arm}: probe one-way latency p50 / p99 under load", None,
                    None if st["p50_ms"] is None else f"{st['p50_ms']:.2f} / {st['p99_ms']:.2f}", "ms", info["dir"],
                    "info", f"alone (before the TCP flow): p50 {st['alone_p50_ms']:.3f} ms"
                    if st["alone_p50_ms"] is not None else "")
        verdict.add(f"{arm}: TCP background throughput", None, (info["tcp_receiver_bps"] or 0) / 1e6, "Mbit/s",
                    info["dir"], "info", "one cubic iperf3 flow saturating the bottleneck")
