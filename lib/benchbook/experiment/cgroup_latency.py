"""The cgroup v1 vs v2 latency experiment (Daichendt, Wiedner, Andre, IITM SS23), scaled to one host.

One *point* = one cgroup mode x one packet rate x one repetition: a fresh local topology
(LoadGen -> DuT -> Timestamper sink in network namespaces), the isolation recipe of the mode,
the DuT (dpdk-testpmd by default) pinned to the DuT core inside the DuT cgroup, tcpdump at the
DuT's ingress (LoadGen egress) and egress (sink ingress), ``perf stat`` on the DuT process for
the sending window, bb-loadgen at a constant rate. Afterwards the captures are matched by the
packet id (IdKey(offset=42, width=8, big-endian)) and everything measured is kept:

    <output_dir>/raw/<mode>/rate<pps>/rep<k>/{pre.pcap, post.pcap, latencies.parquet, point.json, commands.txt}
    <output_dir>/cgroup-latency.json   every point (no arrays): rates, loss, drops, perf, percentiles
    <output_dir>/metrics.json          achieved rate, loss and capture drops per point (run record)
    <output_dir>/capabilities.json     what was missing or substituted here, with the reason

A mode whose recipe cannot run on this host (v2 on hybrid-cgroup hosts) is recorded as not
runnable with the reason for each of its points; nothing is emulated in its place.
"""

from __future__ import annotations

import json
import math
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

RESULT_FILE = "cgroup-latency.json"
ID_OFFSET = 42
UDP_DPORT = 5678
PERCENTILES = (50.0, 90.0, 99.0, 99.9, 99.99)

# Table 1 of the paper (perf stat -B, container start + 60 s at 1.52 Mpkt/s + stop, mean of 3)
PAPER_TABLE1 = {
    "instructions": {"v1": 674e9, "v2": 659e9},
    "branches": {"v1": 98e9, "v2": 96e9},
    "cpu-migrations": {"v1": 297.0, "v2": 148.0},
}
PAPER_RATES_PPS = (1.52e6, 6.24e6)


@dataclass
class ExperimentParams:
    backend: str = "local"                      # "local" | "testbed" (real hosts via the ssh backend)
    rates_pps: list[float] = field(default_factory=lambda: [10_000.0, 50_000.0])
    frame_size: int = 64                        # bytes incl. FCS, as MoonGen counts
    duration_s: float = 3.0
    repetitions: int = 3
    cgroup_modes: list[str] = field(default_factory=lambda: ["v1", "v2"])
    dut_kind: str = "testpmd"
    dut_cpu: int = 1
    perf_repeats: int = 3
    worst_n: int = 5000
    worst_by: str = "max"                       # which repetition is "worst": "max" or a percentile "99.9"
    settle_s: float = 0.5                       # wait after sending before stopping captures

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ExperimentParams":
        known = {f for f in cls.__dataclass_fields__}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown experiment parameters: {sorted(unknown)}; known: {sorted(known)}")
        p = cls(**d)
        p.rates_pps = [float(r) for r in p.rates_pps]
        if p.frame_size < 64:
            raise ValueError(f"frame_size {p.frame_size}: at least 64 B (the packet id needs bytes 42..49)")
        return p


# -------------------------------------------------------------------------------------------------
# percentiles
# -------------------------------------------------------------------------------------------------
def discrete_percentiles(sorted_ns: np.ndarray, ps: tuple[float, ...] | list[float] = PERCENTILES) -> dict[str, int | None]:
    """The smallest latency with at least p % of packets at or below it (exact), per p."""
    n = len(sorted_ns)
    out: dict[str, int | None] = {}
    for p in ps:
        key = f"{p:g}"
        if n == 0:
            out[key] = None
            continue
        rank = max(1, math.ceil(p / 100.0 * n - 1e-9))
        out[key] = int(sorted_ns[min(rank, n) - 1])
    return out


def percentile_ladder(latency_ns: np.ndarray, ticks_per_decade: int = 30) -> tuple[np.ndarray, np.ndarray]:
    """(percent, value_ns) on a log grid of 1/(1-p) up to the last full rank, for HDR plots (exact)."""
    lat = np.sort(np.asarray(latency_ns, dtype=np.int64))
    n = len(lat)
    if n == 0:
        return np.array([]), np.array([])
    max_x = float(n)  # 1/(1-p) where p = (n-1)/n: the last rank before 100 %
    xs = np.unique(np.concatenate([np.logspace(0, math.log10(max_x), int(ticks_per_decade * max(1.0, math.log10(max_x))) + 1),
                                   [max_x]]))
    ps = 1.0 - 1.0 / xs
    ranks = np.clip(np.ceil(ps * n - 1e-9).astype(np.int64), 1, n)
    return ps * 100.0, lat[ranks - 1]


# -------------------------------------------------------------------------------------------------
# one measurement point
# -------------------------------------------------------------------------------------------------
def _point_dir(out: Path, mode: str, rate: float, rep: int) -> Path:
    return out / "raw" / mode / f"rate{int(rate)}" / f"rep{rep}"


def measure_point(params: ExperimentParams, mode: str, rate: float, rep: int, out_dir: Path) -> dict[str, Any]:
    """Measure one point on the local testbed; returns its record (also written as point.json)."""
    from benchbook.testbed.dut import open_dut
    from benchbook.testbed.isolation import isolation
    from benchbook.testbed.local import LocalBackend
    from benchbook.tools import loadgen, perf, tcpdump

    d = _point_dir(out_dir, mode, rate, rep)
    d.mkdir(parents=True, exist_ok=True)
    rec: dict[str, Any] = {"mode": mode, "rate_pps": rate, "repetition": rep, "status": "failed",
                           "dut_kind": params.dut_kind, "frame_size": params.frame_size,
                           "duration_s": params.duration_s, "dir": str(d.relative_to(out_dir))}
    backend = LocalBackend()
    t0 = time.time()
    try:
        with backend.topology() as tb:
            rec["testbed"] = tb.describe()
            with isolation(mode, tb.token, params.dut_cpu) as iso:
                rec["isolation"] = {"mode": iso.mode, "dut_cpus": iso.dut_cpus,
                                    "housekeeping_cpus": iso.housekeeping_cpus, **iso.report}
                hk_cpu = int(iso.housekeeping_cpus.split(",")[0])
                with open_dut(params.dut_kind, tb, cpu=params.dut_cpu, isolation=iso) as dut:
                    rec["dut"] = dut.description
                    filt = f"udp dst port {UDP_DPORT}"
                    pre_path, post_path = d / "pre.pcap", d / "post.pcap"
                    pre = tcpdump.start_capture(tcpdump.build_argv(tb.ifname("lg0"), pre_path, direction="out", bpf_filter=filt),
                                                pre_path, popen=lambda a, **kw: tb.popen("lg", a, **kw), what="tcpdump pre")
                    post = tcpdump.start_capture(tcpdump.build_argv(tb.ifname("ts0"), post_path, direction="in", bpf_filter=filt),
                                                 post_path, popen=lambda a, **kw: tb.popen("ts", a, **kw), what="tcpdump post")
                    perf_run = None
                    if dut.pid is not None:
                        try:
                            perf_run = perf.start_perf_stat(dut.pid, params.duration_s, repeats=params.perf_repeats)
                        except perf.PerfError as exc:
                            rec["perf"] = {"status": "not run", "reason": str(exc)}
                    else:
                        rec["perf"] = {"status": "not applicable", "reason": f"DuT kind {dut.kind!r} has no process to attach to"}
                    cfg = loadgen.LoadgenConfig(iface=tb.ifname("lg0"), rate_pps=rate, duration_s=params.duration_s,
                                                frame_size=params.frame_size, dst_mac=dut.dst_mac, dport=UDP_DPORT, cpu=hk_cpu)
                    try:
                        rec["loadgen"] = loadgen.run_loadgen(cfg, netns=tb.netns("lg"))
                    finally:
                        time.sleep(params.settle_s)
                        rec["captures"] = {"pre": pre.stop(), "post": post.stop()}
                        if perf_run is not None:
                            rec["perf"] = {"status": "run", **perf_run.finish()}
                rec["dut_stats"] = {k: v for k, v in dut.stats.items() if k != "log_tail"}
                (d / "dut.log").write_text(str(dut.stats.get("log_tail", "")))
            rec["isolation"]["restore_problems"] = iso.report.get("restore_problems", [])
        (d / "commands.txt").write_text("\n".join(backend.log.commands) + "\n")
        rec["analysis"] = analyse_point(d)
        rec["status"] = "complete"
    except Exception as exc:  # keep what was measured; the point is marked failed with the reason
        rec["error"] = f"{type(exc).__name__}: {exc}"
        rec["traceback"] = traceback.format_exc()
        (d / "commands.txt").write_text("\n".join(backend.log.commands) + "\n")
    rec["wall_s"] = round(time.time() - t0, 3)
    (d / "point.json").write_text(json.dumps(rec, indent=1, default=str))
    return rec


def analyse_point(d: Path) -> dict[str, Any]:
    """Match pre/post of one point (pure function of the raw files; re-runnable offline)."""
    from benchbook.analysis.latency import IdKey, match_captures

    res = match_captures(d / "pre.pcap", d / "post.pcap", key=IdKey(offset=ID_OFFSET, width=8, byteorder="big"),
                         out_parquet=d / "latencies.parquet")
    lat = np.sort(res.latency_ns)
    return {
        "counts": {k: int(v) for k, v in res.counts.items()},
        "warnings": list(res.warnings),
        "min_ns": int(lat[0]) if len(lat) else None,
        "max_ns": int(lat[-1]) if len(lat) else None,
        "mean_ns": float(lat.mean()) if len(lat) else None,
        "percentiles_ns": discrete_percentiles(lat),
        "percentile_method": "exact discrete (smallest latency with at least p of packets at or below it)",
    }


def load_latencies(out_dir: Path, point: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """(t_pre_ns, latency_ns) of a point from its Parquet table."""
    import pyarrow.parquet as pq

    t = pq.read_table(Path(out_dir) / point["dir"] / "latencies.parquet", columns=["t_pre_ns", "latency_ns"])
    return t.column("t_pre_ns").to_numpy(), t.column("latency_ns").to_numpy()


# -------------------------------------------------------------------------------------------------
# the whole experiment
# -------------------------------------------------------------------------------------------------
def arm_status(params: ExperimentParams) -> dict[str, dict[str, Any]]:
    """Per cgroup mode: runnable here? (with the reason)."""
    from benchbook.testbed.isolation import mode_status

    return {m: dict(zip(("runnable", "reason"), mode_status(m))) for m in params.cgroup_modes}


def capabilities(params: ExperimentParams, arms: dict[str, dict[str, Any]]) -> list[dict[str, str]]:
    from benchbook.tools import perf

    caps = []
    for m, st in arms.items():
        caps.append({"capability": f"cgroup isolation {m}", "status": "present" if st["runnable"] else "missing",
                     "detail": st["reason"]})
    hw = perf.hardware_counters_supported()
    caps.append({"capability": "perf hardware counters (instructions, branches)", "status": "present" if hw else "missing",
                 "detail": "perf stat -e instructions counts" if hw else "perf stat reports <not supported>: recorded as missing, not zero"})
    caps += [
        {"capability": "load generator", "status": "substituted",
         "detail": "MoonGen on a 10G NIC -> bb-loadgen (AF_PACKET sendmmsg) on veth"},
        {"capability": "timestamper", "status": "substituted",
         "detail": "E810 hardware timestamps on optical taps -> tcpdump nanosecond software timestamps at LoadGen egress and sink ingress"},
        {"capability": "packet rates", "status": "substituted",
         "detail": f"paper 1.52 and 6.24 Mpkt/s -> {', '.join(f'{r:g}' for r in params.rates_pps)} pkt/s (scaled to a 2-core VM)"},
        {"capability": "DuT", "status": "substituted" if params.dut_kind != "testpmd-lxc" else "present",
         "detail": f"DPDK L2 forwarder in an LXC container -> DuT kind {params.dut_kind!r}"},
    ]
    return caps


def run_experiment(params: ExperimentParams | dict[str, Any], output_dir: Path | str, progress: Any = None) -> dict[str, Any]:
    """Run every point of the grid; write cgroup-latency.json, metrics.json, capabilities.json."""
    from benchbook.experiment.runner import write_json_atomic

    if isinstance(params, dict):
        params = ExperimentParams.from_dict(params)
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    if params.backend not in ("local", "testbed"):
        raise ValueError(f"backend {params.backend!r}: expected 'local' or 'testbed'")
    arms = arm_status(params)
    if params.backend == "testbed":
        reason = _testbed_reason()
        for m in arms:
            arms[m] = {"runnable": False, "reason": reason}
    points: list[dict[str, Any]] = []
    for mode in params.cgroup_modes:
        for rate in params.rates_pps:
            for rep in range(params.repetitions):
                if not arms[mode]["runnable"]:
                    points.append({"mode": mode, "rate_pps": rate, "repetition": rep, "status": "not runnable",
                                   "reason": arms[mode]["reason"]})
                    continue
                if progress:
                    progress(f"{mode} @ {rate:g} pkt/s, repetition {rep + 1}/{params.repetitions}")
                points.append(measure_point(params, mode, rate, rep, out))
    result = {"schema": "benchbook.cgroup-latency/1", "params": asdict(params), "arms": arms, "points": points,
              "paper": {"table1": PAPER_TABLE1, "rates_pps": PAPER_RATES_PPS}}
    write_json_atomic(out / RESULT_FILE, result)
    metrics = _read_json(out / "metrics.json", {})
    metrics["cgroup_latency"] = {"arms": arms, "points": [point_metrics(p) for p in points],
                                 "leftovers_after": leftovers(run_tokens(points)) if params.backend == "local" else None}
    write_json_atomic(out / "metrics.json", metrics)
    caps = _read_json(out / "capabilities.json", [])
    caps.extend(capabilities(params, arms))
    write_json_atomic(out / "capabilities.json", caps)
    return result


def run_tokens(points: list[dict[str, Any]]) -> set[str]:
    """The testbed run tokens the points used (to check that nothing of theirs is left)."""
    return {p["testbed"]["token"] for p in points if isinstance(p.get("testbed"), dict) and "token" in p["testbed"]}


def _testbed_reason() -> str:
    from benchbook.reproduce.capabilities import check_requirement

    why = check_requirement("testbed")
    return why or ("backend 'testbed' (real hosts via the ssh backend) is not wired into this notebook yet; "
                   "use backend='local'")


def _read_json(path: Path, default: Any) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return default


def point_metrics(p: dict[str, Any]) -> dict[str, Any]:
    """What the run record keeps per point: achieved rate, loss, capture drops, key percentiles."""
    m: dict[str, Any] = {k: p.get(k) for k in ("mode", "rate_pps", "repetition", "status")}
    if p.get("status") != "complete":
        m["reason"] = p.get("reason") or p.get("error")
        return m
    lg, caps, an = p["loadgen"], p["captures"], p["analysis"]
    c = an["counts"]
    sent = int(lg["sent"])
    m.update({
        "requested_pps": lg["requested_pps"], "achieved_pps": lg["achieved_pps"],
        "rate_deviation_rel": lg.get("rate_deviation_rel"), "sent": sent,
        # bit rates, conventions stated: L2 counts the frame incl. FCS, "wire" adds preamble + IFG (20 B)
        "achieved_l2_mbps": lg["achieved_pps"] * lg["frame_size"] * 8 / 1e6,
        "achieved_wire_mbps": lg["achieved_pps"] * (lg["frame_size"] + 20) * 8 / 1e6,
        "pre_captured": caps["pre"]["captured"], "post_captured": caps["post"]["captured"],
        "capture_drops_pre": _drops(caps["pre"], sent), "capture_drops_post": _drops(caps["post"], None),
        "kernel_drops_pre": caps["pre"]["dropped_by_kernel"], "kernel_drops_post": caps["post"]["dropped_by_kernel"],
        "matched": c["matched"], "lost": c["lost"], "loss_fraction": (c["lost"] / c["pre"]) if c["pre"] else None,
        "dut_rx_dropped": (p.get("dut_stats", {}).get("total") or {}).get("RX-dropped"),
        "p50_ns": an["percentiles_ns"].get("50"), "p99_ns": an["percentiles_ns"].get("99"),
        "p99.9_ns": an["percentiles_ns"].get("99.9"), "max_ns": an["max_ns"],
    })
    return m


def _drops(cap: dict[str, Any], sent: int | None) -> int | None:
    """Kernel drops plus packets the filter saw but tcpdump never wrote (and, pre side, packets
    sent but not seen at all)."""
    k, rcv, got = cap.get("dropped_by_kernel"), cap.get("received_by_filter"), cap.get("captured")
    if k is None or rcv is None or got is None:
        return None
    drops = k + max(0, rcv - got)
    if sent is not None:
        drops = max(drops, sent - got)
    return drops


def load_result(output_dir: Path | str) -> dict[str, Any]:
    return json.loads((Path(output_dir) / RESULT_FILE).read_text())


# -------------------------------------------------------------------------------------------------
# analysis for the figures and the table
# -------------------------------------------------------------------------------------------------
def complete_points(result: dict[str, Any], mode: str | None = None, rate: float | None = None) -> list[dict[str, Any]]:
    return [p for p in result["points"] if p.get("status") == "complete"
            and (mode is None or p["mode"] == mode) and (rate is None or p["rate_pps"] == rate)]


def worst_repetition(points: list[dict[str, Any]], worst_by: str = "max") -> dict[str, Any] | None:
    """The paper reports the worst of its three repetitions; worst by maximum latency or a percentile."""
    if not points:
        return None

    def score(p: dict[str, Any]) -> float:
        an = p["analysis"]
        v = an["max_ns"] if worst_by == "max" else an["percentiles_ns"].get(worst_by)
        return -1.0 if v is None else float(v)

    return max(points, key=score)


def point_label(p: dict[str, Any]) -> str:
    m = point_metrics(p)
    loss = m.get("loss_fraction")
    return (f"{p['mode']} @ {p['rate_pps']:g} pkt/s (rep {p['repetition']}; achieved {m['achieved_pps']:.0f} pkt/s, "
            f"loss {0 if loss is None else loss * 100:.2f} %, capture drops {m['capture_drops_pre']}/{m['capture_drops_post']})")


def hdr_series(result: dict[str, Any], output_dir: Path | str, rate: float, worst_by: str = "max") -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], list[str]]:
    """Per runnable mode: the worst repetition's exact percentile ladder at one rate."""
    series, runs = {}, []
    for mode in result["params"]["cgroup_modes"]:
        p = worst_repetition(complete_points(result, mode, rate), worst_by)
        if p is None:
            continue
        _, lat = load_latencies(Path(output_dir), p)
        series[point_label(p)] = percentile_ladder(lat)
        runs.append(p["dir"])
    return series, runs


def worst_series(result: dict[str, Any], output_dir: Path | str, rate: float, n: int = 5000, worst_by: str = "max") -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], list[str]]:
    """Per mode: the n worst latencies of the worst repetition, against seconds since its first packet."""
    series, runs = {}, []
    for mode in result["params"]["cgroup_modes"]:
        p = worst_repetition(complete_points(result, mode, rate), worst_by)
        if p is None:
            continue
        t, lat = load_latencies(Path(output_dir), p)
        if len(lat) == 0:
            continue
        idx = np.argsort(lat, kind="stable")[-n:]
        idx.sort()
        series[point_label(p)] = ((t[idx] - t.min()) / 1e9, lat[idx])
        runs.append(p["dir"])
    return series, runs


def annotate_points(fig: Any, result: dict[str, Any], rate: float) -> Any:
    """Write achieved rate, loss and capture drops of every point at `rate` (and arms not run) onto fig."""
    lines = []
    for mode in result["params"]["cgroup_modes"]:
        arm = result["arms"].get(mode, {})
        if not arm.get("runnable", True):
            lines.append(f"{mode}: not runnable here ({arm.get('reason', '')[:90]})")
            continue
        for p in [q for q in result["points"] if q["mode"] == mode and q["rate_pps"] == rate]:
            m = point_metrics(p)
            if p["status"] != "complete":
                lines.append(f"{mode} rep {p['repetition']}: {p['status']}")
                continue
            loss = m["loss_fraction"] or 0.0
            lines.append(f"{mode} rep {p['repetition']}: {m['achieved_pps']:.0f}/{m['requested_pps']:.0f} pkt/s, "
                         f"loss {loss * 100:.2f} %, capture drops pre/post {m['capture_drops_pre']}/{m['capture_drops_post']}")
    fig.add_annotation(text="<br>".join(lines), xref="paper", yref="paper", x=0.01, y=0.99, xanchor="left",
                       yanchor="top", showarrow=False, align="left", font={"size": 10},
                       bgcolor="rgba(255,255,255,0.8)")
    return fig


def rate_table(result: dict[str, Any]) -> Any:
    """One row per point: requested/achieved rate, loss, capture drops, percentiles (or why not run)."""
    import pandas as pd

    return pd.DataFrame([point_metrics(p) for p in result["points"]])


def perf_table(result: dict[str, Any], rate: float | None = None) -> Any:
    """Table 1 analogue: per mode and event the mean over repetitions (None where missing) and the status."""
    import pandas as pd

    rows = []
    for mode in result["params"]["cgroup_modes"]:
        pts = [p for p in complete_points(result, mode, rate) if p.get("perf", {}).get("status") == "run"]
        arm = result["arms"].get(mode, {})
        events: dict[str, list[dict[str, Any]]] = {}
        for p in pts:
            for c in p["perf"]["counters"]:
                events.setdefault(c["event"], []).append(c)
        if not pts:
            why = arm.get("reason") if not arm.get("runnable", True) else "no completed point with perf stat"
            for ev in PAPER_TABLE1:
                rows.append({"mode": mode, "event": ev, "mean": None, "runs": 0, "status": "not run", "note": why})
            continue
        for ev, cs in events.items():
            vals = [c["value"] for c in cs if c["status"] == "counted" and c["value"] is not None]
            statuses = sorted({c["status"] for c in cs})
            rows.append({"mode": mode, "event": ev, "mean": float(np.mean(vals)) if vals else None,
                         "runs": len(vals), "unit": cs[0]["unit"],
                         "status": "counted" if len(vals) == len(cs) else "/".join(statuses),
                         "note": "" if vals else "perf reported " + "/".join(statuses) + ": missing, not zero"})
    return pd.DataFrame(rows)


def _ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return a / b


def add_verdict_rows(verdict: Any, result: dict[str, Any], output_dir: Path | str, part: str) -> None:
    """Rows for fig3 / fig4 (HDR at the low / high rate), fig5 (worst 5000), table1 (perf)."""
    arms = result["arms"]
    modes = result["params"]["cgroup_modes"]
    rates = result["params"]["rates_pps"]
    both = "v1" in arms and "v2" in arms and arms["v1"]["runnable"] and arms["v2"]["runnable"]
    missing = "; ".join(f"{m}: {a['reason']}" for m, a in arms.items() if not a["runnable"])
    worst_by = result["params"].get("worst_by", "max")

    if part in ("fig3", "fig4", "fig5"):
        rate = min(rates) if part in ("fig3", "fig5") else max(rates)
        for mode in modes:
            p = worst_repetition(complete_points(result, mode, rate), worst_by)
            if p is None:
                continue
            an = p["analysis"]
            for q in ("99", "99.9", "99.99"):
                verdict.add(f"{mode} p{q} latency at {rate:g} pkt/s (worst of {result['params']['repetitions']})",
                            None, (an["percentiles_ns"].get(q) or 0) / 1000.0, "us", p["dir"], "info",
                            "measured here; the paper prints no absolute latencies")
        q = "99.9"
        name = f"p{q} latency ratio v1/v2 at {rate:g} pkt/s"
        pub = "> 1 (v1 slightly higher around p99.9; identical up to p99)"
        if both:
            v1 = worst_repetition(complete_points(result, "v1", rate), worst_by)
            v2 = worst_repetition(complete_points(result, "v2", rate), worst_by)
            r = _ratio(v1 and v1["analysis"]["percentiles_ns"].get(q), v2 and v2["analysis"]["percentiles_ns"].get(q))
            verdict.add(name, pub, r, "", "", "info" if r is not None else "not derivable",
                        "measured relation on the local testbed; scaled-down rates, software timestamps")
        else:
            verdict.add(name, pub, None, "", "", "not derivable", f"not derivable here: {missing}")
    if part == "fig5":
        verdict.figure_only("Fig. 5: 5000 worst-case latencies over time", note="scatter produced from the worst repetition per mode")
        name = "outliers v1 vs v2 (paper: slightly more for v1, extreme ones more for v2)"
        if not both:
            verdict.add(name, "qualitative", None, "", "", "not derivable", f"not derivable here: {missing}")
    if part == "table1":
        rate = min(rates)
        pt = perf_table(result, rate)
        for ev, paper in PAPER_TABLE1.items():
            for mode in ("v1", "v2"):
                pub_name = f"{ev} {mode}"
                measured = _mean_of(pt, mode, ev)
                row = pt[(pt["mode"] == mode) & (pt["event"] == ev)] if len(pt) else pt
                why = (f"not derivable here: the paper counts 60 s at 1.52 Mpkt/s on an EPYC 7551P DuT incl. container "
                       f"start/stop; this run: {result['params']['duration_s']:g} s at {rate:g} pkt/s, so absolute counts "
                       f"are not comparable")
                if measured is not None:
                    why += f"; measured here: {measured:g}"
                elif len(row):
                    why += f"; measured here: {row.iloc[0]['status']} {row.iloc[0]['note'] or ''}".rstrip()
                if verdict.entry is not None and any(pv.name == pub_name for pv in verdict.entry.published):
                    verdict.not_derivable(pub_name, why)
                else:
                    verdict.add(pub_name, paper[mode], None, "", "", "not derivable", why)
            pv1, pv2 = paper["v1"], paper["v2"]
            rname = f"{ev} ratio v1/v2"
            m1 = _mean_of(pt, "v1", ev)
            m2 = _mean_of(pt, "v2", ev)
            r = _ratio(m1, m2)
            if r is not None:
                verdict.add(rname, pv1 / pv2, r, "", "", "info", "measured relation (scaled-down run)")
            else:
                reasons = []
                if not both:
                    reasons.append(missing)
                if m1 is None and m2 is None or (m1 is None and both):
                    reasons.append(f"{ev}: no counted value (perf: not supported / not counted here)")
                verdict.add(rname, pv1 / pv2, None, "", "", "not derivable", "not derivable here: " + "; ".join(reasons or ["no data"]))
        for ev in ("task-clock", "context-switches", "cpu-migrations"):
            for mode in modes:
                m = _mean_of(pt, mode, ev)
                if m is not None:
                    verdict.add(f"measured {ev} ({mode}, {rate:g} pkt/s, mean of repetitions)", None, m,
                                "msec" if ev == "task-clock" else "", "", "info", "")


def _mean_of(pt: Any, mode: str, ev: str) -> float | None:
    if pt is None or len(pt) == 0:
        return None
    row = pt[(pt["mode"] == mode) & (pt["event"] == ev)]
    if len(row) == 0:
        return None
    v = row.iloc[0]["mean"]
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)


def leftovers(tokens: set[str] | None = None) -> dict[str, list[str]]:
    """benchbook-owned namespaces, links, cgroups and DPDK dirs on this host whose run is over
    (resources of runs still in progress in other processes are not leftovers); with tokens:
    only those of these runs."""
    from benchbook.testbed.names import token_of
    from benchbook.testbed.state import live_tokens
    from benchbook.testbed.sweep import benchbook_cgroups, benchbook_links, benchbook_netns

    live = live_tokens()

    def dead(names: list[str]) -> list[str]:
        return [n for n in names if token_of(Path(n).name) not in live
                and (tokens is None or token_of(Path(n).name) in tokens)]

    dpdk = Path("/var/run/dpdk")
    return {
        "netns": dead(benchbook_netns()), "links": dead(benchbook_links()),
        "cgroups": dead([str(p) for p in benchbook_cgroups()]),
        "dpdk": dead([p.name for p in dpdk.iterdir() if p.name.startswith("bb-")]) if dpdk.is_dir() else [],
    }
