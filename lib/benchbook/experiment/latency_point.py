"""Latency of a DuT at one point, and the sweep over isolation modes x rates x repetitions.

One *point* = one CPU isolation mode x one packet rate x one repetition. On the ``local`` backend:
a fresh topology (LoadGen -> DuT -> Timestamper sink in network namespaces), the isolation recipe
of the mode, the DuT (dpdk-testpmd by default) pinned to the DuT core inside the DuT cgroup,
tcpdump at the DuT's ingress (LoadGen egress) and egress (sink ingress), ``perf stat`` on the DuT
process for the sending window, bb-loadgen at a constant rate. Afterwards the captures are
matched by the packet id (IdKey(offset=42, width=8, big-endian)) and everything measured is kept:

    <output_dir>/raw/commands.jsonl, raw/cmd/    every command run (the one command log)
    <output_dir>/raw/<mode>/rate<pps>/rep<k>/{pre.pcap, post.pcap, latencies.parquet, point.json}
    <output_dir>/latency-points.json   every point (no arrays): rates, loss, drops, perf, percentiles
    <output_dir>/metrics.json          achieved rate, loss and capture drops per point (run record)
    <output_dir>/capabilities.json     what was missing or substituted here, with the reason

On the ``testbed`` backend (real hosts of an inventory, :mod:`benchbook.testbed.ssh`) each point is
the ssh backend's plan, executed; with ``dry_run`` nothing is run on either backend and
``<output_dir>/dry-run.txt`` lists every command each host would run, as built by
:mod:`benchbook.tools`.

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

from benchbook.analysis.percentiles import discrete_percentiles, exact_ladder
from benchbook.errors import BenchbookError
from benchbook.experiment.record import write_json_atomic
from benchbook.tools.host import CommandLog

RESULT_FILE = "latency-points.json"
DRY_RUN_FILE = "dry-run.txt"
ID_OFFSET = 42
UDP_DPORT = 5678
PERCENTILES = (50.0, 90.0, 99.0, 99.9, 99.99)
BACKENDS = ("local", "testbed")


class MeasurementFailed(BenchbookError, RuntimeError):
    """Points of an experiment failed; every result, failed ones with their reason, was written first."""


@dataclass
class ExperimentParams:
    backend: str = "local"                      # "local" | "testbed" (real hosts of `inventory`, over ssh)
    inventory: str | None = None                # testbed: the host inventory (TOML)
    dry_run: bool = False                       # list the commands (dry-run.txt), measure nothing
    rates_pps: list[float] = field(default_factory=lambda: [10_000.0, 50_000.0])
    frame_size: int = 64                        # bytes incl. FCS, as MoonGen counts
    duration_s: float = 3.0
    repetitions: int = 3
    cgroup_modes: list[str] = field(default_factory=lambda: ["v1", "v2"])
    dut_kind: str = "testpmd"
    dut_cpu: int = 1
    perf_repeats: int = 3
    worst_by: str = "max"                       # which repetition is "worst": "max" or a percentile "99.9"
    settle_s: float = 0.5                       # wait after sending before stopping captures

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ExperimentParams:
        known = {f for f in cls.__dataclass_fields__}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown experiment parameters: {sorted(unknown)}; known: {sorted(known)}")
        p = cls(**d)
        p.rates_pps = [float(r) for r in p.rates_pps]
        if p.frame_size < 64:
            raise ValueError(f"frame_size {p.frame_size}: at least 64 B (the packet id needs bytes 42..49)")
        p.check()
        return p

    def check(self) -> None:
        if self.backend not in BACKENDS:
            raise ValueError(f"backend {self.backend!r}: expected one of {', '.join(BACKENDS)}")
        if self.backend == "testbed" and not self.inventory:
            raise ValueError("backend 'testbed' needs inventory=<host inventory TOML> (see docs/testbed-inventory.md)")


# -------------------------------------------------------------------------------------------------
# one measurement point
# -------------------------------------------------------------------------------------------------
def _point_dir(out: Path, mode: str, rate_pps: float, rep: int) -> Path:
    return out / "raw" / mode / f"rate{int(rate_pps)}" / f"rep{rep}"


def _rate_label(rate_pps: float) -> str:
    return f"rate{int(rate_pps)}"


def measure_point(params: ExperimentParams, mode: str, rate_pps: float, rep: int, out_dir: Path,
                  log: CommandLog | None = None) -> dict[str, Any]:
    """Measure one point on the local testbed; returns its record (also written as point.json).
    Every command goes into ``log`` (default: the run's command log in <out_dir>/raw/)."""
    from benchbook.testbed.dut import open_dut
    from benchbook.testbed.isolation import isolation
    from benchbook.testbed.local import LocalBackend
    from benchbook.tools import loadgen, perf, tcpdump

    d = _point_dir(out_dir, mode, rate_pps, rep)
    d.mkdir(parents=True, exist_ok=True)
    log = log or CommandLog(out_dir / "raw")
    first, first_lost = len(log.records), len(log.write_errors)
    rec: dict[str, Any] = {"mode": mode, "rate_pps": rate_pps, "repetition": rep, "status": "failed",
                           "dut_kind": params.dut_kind, "frame_size": params.frame_size,
                           "duration_s": params.duration_s, "dir": str(d.relative_to(out_dir))}
    backend = LocalBackend(log=log)
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
                    pre = tcpdump.start_capture(tb.host("lg"), tcpdump.build_argv(
                        tb.ifname("lg0"), pre_path, direction="out", bpf_filter=filt), pre_path, what="tcpdump pre")
                    post = tcpdump.start_capture(tb.host("ts"), tcpdump.build_argv(
                        tb.ifname("ts0"), post_path, direction="in", bpf_filter=filt), post_path, what="tcpdump post")
                    perf_run = None
                    if dut.pid is not None:
                        try:
                            perf_run = perf.start_perf_stat(tb.host(None), dut.pid, params.duration_s,
                                                            repeats=params.perf_repeats)
                        except perf.PerfError as exc:
                            rec["perf"] = {"status": "not run", "reason": str(exc)}
                    else:
                        rec["perf"] = {"status": "not applicable",
                                       "reason": f"DuT kind {dut.kind!r} has no process to attach to"}
                    cfg = loadgen.LoadgenConfig(iface=tb.ifname("lg0"), rate_pps=rate_pps, duration_s=params.duration_s,
                                                frame_size=params.frame_size, dst_mac=dut.dst_mac, dport=UDP_DPORT,
                                                cpu=hk_cpu)
                    try:
                        rec["loadgen"] = loadgen.run_loadgen(tb.host("lg"), cfg)
                    finally:
                        time.sleep(params.settle_s)
                        rec["captures"] = {"pre": pre.stop(), "post": post.stop()}
                        if perf_run is not None:
                            rec["perf"] = {"status": "run", **perf_run.finish()}
                    problems = [pb for pb in (pre.problem(), post.problem()) if pb]
                    if problems:
                        raise tcpdump.CaptureError("; ".join(problems))
                rec["dut_stats"] = {k: v for k, v in dut.stats.items() if k != "log_tail"}
                (d / "dut.log").write_text(str(dut.stats.get("log_tail", "")))
            rec["isolation"]["restore_problems"] = iso.report.get("restore_problems", [])
        rec["analysis"] = analyse_point(d)
        rec["status"] = "complete"
    except Exception as exc:  # keep what was measured; the point is marked failed with the reason
        rec["error"] = f"{type(exc).__name__}: {exc}"
        rec["traceback"] = traceback.format_exc()
    rec["commands"] = _command_range(log, first)
    lost = log.write_errors[first_lost:]
    if lost:  # e.g. a full disk: what the log misses is named; the point is not complete without it
        rec["log_write_errors"] = lost
        if rec["status"] == "complete":
            rec["status"], rec["error"] = "failed", f"the command log is incomplete: {lost[0]}"
    rec["wall_s"] = round(time.time() - t0, 3)
    try:
        (d / "point.json").write_text(json.dumps(rec, indent=1, default=str))
    except OSError as exc:  # e.g. the capture directory is full: the record still reaches latency-points.json
        rec["point_file_error"] = f"{d / 'point.json'}: {exc.strerror}"
    return rec


def _command_range(log: CommandLog, first: int) -> dict[str, Any]:
    """Where the point's commands are in the run's command log."""
    ns = [r.n for r in log.since(first)]
    return {"log": "raw/commands.jsonl" if log.directory is not None else None,
            "first": ns[0] if ns else None, "last": ns[-1] if ns else None}


def _testbed_measurement(params: ExperimentParams, mode: str, rate_pps: float, rep: int) -> Any:
    from benchbook.testbed.ssh import Measurement

    return Measurement(run_id=f"{mode}-{_rate_label(rate_pps)}-rep{rep}", cgroup_mode=mode, rate_pps=rate_pps,
                       frame_size=params.frame_size, duration_s=int(math.ceil(params.duration_s)), repetition=rep)


def measure_testbed_point(backend: Any, params: ExperimentParams, mode: str, rate_pps: float, rep: int,
                          out_dir: Path) -> dict[str, Any]:
    """One point on the real testbed: the ssh backend's plan, executed; the raw data are collected
    into the point's directory (their analysis is not part of this function)."""
    d = _point_dir(out_dir, mode, rate_pps, rep)
    d.mkdir(parents=True, exist_ok=True)
    first = len(backend.log.records)
    rec: dict[str, Any] = {"mode": mode, "rate_pps": rate_pps, "repetition": rep, "status": "failed",
                           "frame_size": params.frame_size, "duration_s": params.duration_s,
                           "dir": str(d.relative_to(out_dir)), "backend": "testbed"}
    try:
        run = backend.execute(_testbed_measurement(params, mode, rate_pps, rep), d)
        rec["testbed_run"] = run
        got = run.get("results") or {}
        if run["status"] == "complete" and "capture_dir" in got and "loadgen" in got and "captures" in got:
            # tcpdump taps on the timestamper: matched like a local point (pre/post pcaps by packet id)
            cap = Path(got["capture_dir"])
            rec.update(loadgen=got["loadgen"], captures=got["captures"], dut_stats=got.get("dut_stats", {}),
                       analysis=analyse_point(cap), status="complete")
            (cap / "latencies.parquet").replace(d / "latencies.parquet")
        elif run["status"] == "complete":
            rec["status"] = "collected"
            rec["reason"] = ("raw data collected in raw/<role>/; percentiles from MoonSniff/MoonGen output are "
                             "not computed by this experiment")
        else:
            rec["error"] = run["error"]
    except Exception as exc:  # noqa: BLE001 - the point is failed with the reason
        rec["error"] = f"{type(exc).__name__}: {exc}"
        rec["traceback"] = traceback.format_exc()
    rec["commands"] = _command_range(backend.log, first)
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
        "percentiles_ns": {f"{p:g}": v for p, v in discrete_percentiles(lat, PERCENTILES).items()},
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
def arm_status(params: ExperimentParams, backend: Any = None) -> dict[str, dict[str, Any]]:
    """Per isolation mode: runnable here? (with the reason). On the testbed the DuT host's own
    boot decides: probed over ssh when the backend is given, else checked by the plan."""
    if params.backend == "testbed" and backend is not None:
        return backend.mode_status(params.cgroup_modes)
    if params.backend == "testbed":
        return {m: {"runnable": True, "reason": "checked on the DuT host by the plan"} for m in params.cgroup_modes}
    from benchbook.testbed.isolation import mode_status

    return {m: dict(zip(("runnable", "reason"), mode_status(m), strict=True)) for m in params.cgroup_modes}


def capabilities(params: ExperimentParams, arms: dict[str, dict[str, Any]]) -> list[dict[str, str]]:
    from benchbook.tools import perf

    caps = []
    for m, st in arms.items():
        caps.append({"capability": f"cgroup isolation {m}", "status": "present" if st["runnable"] else "missing",
                     "detail": st["reason"]})
    if params.backend == "testbed":
        return caps
    hw = perf.hardware_counters_supported()
    caps.append({"capability": "perf hardware counters (instructions, branches)",
                 "status": "present" if hw else "missing",
                 "detail": "perf stat -e instructions counts" if hw
                 else "perf stat reports <not supported>: recorded as missing, not zero"})
    caps += [
        {"capability": "load generator", "status": "substituted",
         "detail": "MoonGen on a 10G NIC -> bb-loadgen (AF_PACKET sendmmsg) on veth"},
        {"capability": "timestamper", "status": "substituted",
         "detail": "hardware timestamps on optical taps -> "
                   "tcpdump nanosecond software timestamps at LoadGen egress and sink ingress"},
        {"capability": "DuT", "status": "substituted" if params.dut_kind != "testpmd-lxc" else "present",
         "detail": f"DPDK L2 forwarder in an LXC container -> DuT kind {params.dut_kind!r}"},
    ]
    return caps


def _grid(params: ExperimentParams) -> list[tuple[str, float, int]]:
    return [(m, r, k) for m in params.cgroup_modes for r in params.rates_pps for k in range(params.repetitions)]


def dry_run_plan(params: ExperimentParams) -> dict[str, list[str]]:
    """Per host, every command it would run for the whole sweep (tool command lines built by
    benchbook.tools); nothing is run."""
    per_host: dict[str, list[str]] = {}
    if params.backend == "testbed":
        from benchbook.testbed.ssh import SshBackend

        backend = SshBackend(params.inventory, dry_run=True)
        for mode, rate_pps, rep in _grid(params):
            m = _testbed_measurement(params, mode, rate_pps, rep)
            run_dir = f"RUN/raw/{mode}/{_rate_label(rate_pps)}/rep{rep}"
            for role, lines in backend.host_commands(m, run_dir=run_dir).items():
                per_host.setdefault(role, []).extend(lines)
        return per_host
    for mode, rate_pps, rep in _grid(params):
        for role, lines in local_plan(params, mode, rate_pps, rep).items():
            per_host.setdefault(role, []).extend(lines)
    return per_host


DRY_RUN_TOKEN = "000000"   # run token of the names in a local dry run (a real run draws a fresh one)


def local_plan(params: ExperimentParams, mode: str, rate_pps: float, rep: int) -> dict[str, list[str]]:
    """Per role of the local topology ("local": this machine's own namespaces), the commands one
    point runs, built by benchbook.tools. Values known only at run time appear as DUT_PID and
    DUT_INGRESS_MAC; the isolation recipe writes cgroup files (no commands) and is named in a comment."""
    import shlex

    from benchbook.testbed.local import LocalTestbed
    from benchbook.testbed.names import make_name
    from benchbook.testbed.topology import loadgen_dut_timestamper
    from benchbook.tools import loadgen, perf, tcpdump, testpmd

    tb = LocalTestbed(loadgen_dut_timestamper(), token=DRY_RUN_TOKEN)
    d = Path("RUN") / _point_dir(Path("."), mode, rate_pps, rep)
    out: dict[str, list[str]] = {"local": [], "lg": [], "dut": [], "ts": []}
    out["local"].append(f"# point {mode} @ {rate_pps:g} pkt/s, repetition {rep}; isolation recipe {mode!r}: "
                        f"cgroup file writes under /sys/fs/cgroup (benchbook.testbed.isolation)")
    for role, argv, _ in tb.setup_commands():
        out[role or "local"].append(shlex.join(argv))
    filt = f"udp dst port {UDP_DPORT}"
    out["lg"].append(shlex.join(tcpdump.build_argv(tb.ifname("lg0"), d / "pre.pcap", direction="out", bpf_filter=filt)))
    out["ts"].append(shlex.join(tcpdump.build_argv(tb.ifname("ts0"), d / "post.pcap", direction="in", bpf_filter=filt)))
    if params.dut_kind == "testpmd":
        out["dut"].append(shlex.join(testpmd.build_argv(
            [tb.ifname("din"), tb.ifname("dout")], main_cpu=params.dut_cpu, fwd_cpu=params.dut_cpu,
            file_prefix=make_name(tb.token, "tp"))) + f"   # started inside the DuT cgroup of recipe {mode!r}")
        out["local"].append(shlex.join(perf.build_argv("DUT_PID", params.duration_s, repeats=params.perf_repeats)))
    else:
        out["dut"].append(f"# DuT kind {params.dut_kind!r}: see benchbook.testbed.dut")
    hk_cpu = next(c for c in range(64) if c != params.dut_cpu)
    cfg = loadgen.LoadgenConfig(iface=tb.ifname("lg0"), rate_pps=rate_pps, duration_s=params.duration_s,
                                frame_size=params.frame_size, dst_mac="DUT_INGRESS_MAC", dport=UDP_DPORT, cpu=hk_cpu)
    out["lg"].append(shlex.join(loadgen.build_argv(cfg)))
    for role in ("lg", "dut", "ts"):
        out[role] = [shlex.join(["ip", "netns", "exec", tb.netns(role)]) + " " + c if not c.startswith("#") else c
                     for c in out[role]]
    out["local"] += [shlex.join(["ip", "netns", "del", tb.netns(r)]) for r in reversed(tb.topology.roles)]
    return out


def write_dry_run(params: ExperimentParams, output_dir: Path) -> Path:
    """<output_dir>/dry-run.txt: a section per host with every command it would run."""
    plan = dry_run_plan(params)
    where = f"inventory {params.inventory}" if params.backend == "testbed" else "this machine"
    lines = [f"# benchbook dry run: backend {params.backend} ({where}); nothing was run",
             f"# modes {', '.join(params.cgroup_modes)} x rates {', '.join(f'{r:g}' for r in params.rates_pps)} pkt/s"
             f" x {params.repetitions} repetitions"]
    for role, cmds in plan.items():
        lines.append("")
        lines.append(f"## host {role}")
        lines += cmds
    out = Path(output_dir) / DRY_RUN_FILE
    tmp = out.with_suffix(".tmp")
    tmp.write_text("\n".join(lines) + "\n")
    tmp.replace(out)
    return out


def read_dry_run(path: Path | str) -> dict[str, list[str]]:
    """dry-run.txt back as {host: [command, ...]} (multi-line commands keep their lines)."""
    out: dict[str, list[str]] = {}
    role = None
    for line in Path(path).read_text().splitlines():
        if line.startswith("## host "):
            role = line[len("## host "):]
            out[role] = []
        elif role is not None and line:
            out[role].append(line)
    return out


def run_experiment(params: ExperimentParams | dict[str, Any], output_dir: Path | str,
                   progress: Any = None) -> dict[str, Any]:
    """Run every point of the grid on the chosen backend; write latency-points.json, metrics.json,
    capabilities.json. With dry_run: only dry-run.txt (the result lists no points). When a point
    failed (a process of the chain died, a capture is incomplete, ...), MeasurementFailed names the
    failed points and their reasons after all of that is written; their raw data stay in place."""
    if isinstance(params, dict):
        params = ExperimentParams.from_dict(params)
    params.check()
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    if params.dry_run:
        path = write_dry_run(params, out)
        return {"schema": "benchbook.latency-points/1", "params": asdict(params), "arms": {}, "points": [],
                "dry_run": str(path)}
    log = CommandLog(out / "raw")
    backend: Any = None
    if params.backend == "testbed":
        from benchbook.testbed.backends import get_backend

        backend = get_backend("testbed", inventory=params.inventory, dry_run=False, log=log)
    arms = arm_status(params, backend)
    points: list[dict[str, Any]] = []
    for mode, rate_pps, rep in _grid(params):
        if not arms[mode]["runnable"]:
            points.append({"mode": mode, "rate_pps": rate_pps, "repetition": rep, "status": "not runnable",
                           "reason": arms[mode]["reason"]})
            continue
        if progress:
            progress(f"{mode} @ {rate_pps:g} pkt/s, repetition {rep + 1}/{params.repetitions}")
        if backend is None:
            points.append(measure_point(params, mode, rate_pps, rep, out, log))
        else:
            points.append(measure_testbed_point(backend, params, mode, rate_pps, rep, out))
    result = {"schema": "benchbook.latency-points/1", "params": asdict(params), "arms": arms, "points": points}
    write_json_atomic(out / RESULT_FILE, result)
    metrics = _read_json(out / "metrics.json", {})
    from benchbook.testbed.cleanup import leftovers

    leftovers_after = leftovers(run_tokens(points)) if params.backend == "local" else None
    metrics["latency_points"] = {"arms": arms, "points": [point_metrics(p) for p in points],
                                 "leftovers_after": leftovers_after}
    write_json_atomic(out / "metrics.json", metrics)
    caps = _read_json(out / "capabilities.json", [])
    caps.extend(capabilities(params, arms))
    if backend is not None:
        caps.extend(backend.capability_lines())
    write_json_atomic(out / "capabilities.json", caps)
    failed = [p for p in points if p["status"] == "failed"]
    if failed:
        raise MeasurementFailed(
            f"{len(failed)} of {len(points)} points failed (every point with its reason: {out / RESULT_FILE}; "
            f"raw data kept): " + "; ".join(f"{p['mode']} @ {p['rate_pps']:g} pkt/s repetition {p['repetition']}: "
                                            f"{str(p.get('error')).splitlines()[0]}" for p in failed[:3]))
    return result


def add_capabilities(output_dir: Path | str, caps: list[dict[str, str]]) -> None:
    """Append capability lines (capability, status, detail) to <output_dir>/capabilities.json."""
    path = Path(output_dir) / "capabilities.json"
    write_json_atomic(path, _read_json(path, []) + list(caps))


def run_tokens(points: list[dict[str, Any]]) -> set[str]:
    """The testbed run tokens the points used (to check that nothing of theirs is left)."""
    return {p["testbed"]["token"] for p in points if isinstance(p.get("testbed"), dict) and "token" in p["testbed"]}


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
def complete_points(result: dict[str, Any], mode: str | None = None,
                    rate_pps: float | None = None) -> list[dict[str, Any]]:
    return [p for p in result["points"] if p.get("status") == "complete"
            and (mode is None or p["mode"] == mode) and (rate_pps is None or p["rate_pps"] == rate_pps)]


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
    return (f"{p['mode']} @ {p['rate_pps']:g} pkt/s "
            f"(rep {p['repetition']}; achieved {m['achieved_pps']:.0f} pkt/s, "
            f"loss {0 if loss is None else loss * 100:.2f} %, "
            f"capture drops {m['capture_drops_pre']}/{m['capture_drops_post']})")


def hdr_series(result: dict[str, Any], output_dir: Path | str, rate_pps: float,
               worst_by: str = "max") -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], list[str]]:
    """Per runnable mode: the worst repetition's exact percentile ladder at one rate."""
    series, runs = {}, []
    for p in _worst_per_mode(result, rate_pps, worst_by):
        _, lat = load_latencies(Path(output_dir), p)
        series[point_label(p)] = exact_ladder(lat)
        runs.append(p["dir"])
    return series, runs


def _worst_per_mode(result: dict[str, Any], rate_pps: float, worst_by: str) -> list[dict[str, Any]]:
    """The worst complete repetition of each mode at one rate (modes without one are left out)."""
    worst = (worst_repetition(complete_points(result, mode, rate_pps), worst_by)
             for mode in result["params"]["cgroup_modes"])
    return [p for p in worst if p is not None]


def worst_series(result: dict[str, Any], output_dir: Path | str, rate_pps: float, n: int = 5000,
                 worst_by: str = "max") -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], list[str]]:
    """Per mode: the n worst latencies of the worst repetition, against seconds since its first packet."""
    series, runs = {}, []
    for p in _worst_per_mode(result, rate_pps, worst_by):
        t, lat = load_latencies(Path(output_dir), p)
        if len(lat) == 0:
            continue
        idx = np.argsort(lat, kind="stable")[-n:]
        idx.sort()
        series[point_label(p)] = ((t[idx] - t.min()) / 1e9, lat[idx])
        runs.append(p["dir"])
    return series, runs


def annotate_points(fig: Any, result: dict[str, Any], rate_pps: float) -> Any:
    """Write achieved rate, loss and capture drops of every point at `rate_pps` (and arms not run) onto fig."""
    lines = []
    for mode in result["params"]["cgroup_modes"]:
        arm = result["arms"].get(mode, {})
        if not arm.get("runnable", True):
            lines.append(f"{mode}: not runnable here ({arm.get('reason', '')[:90]})")
            continue
        for p in [q for q in result["points"] if q["mode"] == mode and q["rate_pps"] == rate_pps]:
            m = point_metrics(p)
            if p["status"] != "complete":
                lines.append(f"{mode} rep {p['repetition']}: {p['status']}")
                continue
            loss = m["loss_fraction"] or 0.0
            lines.append(f"{mode} rep {p['repetition']}: {m['achieved_pps']:.0f}/{m['requested_pps']:.0f} pkt/s, "
                         f"loss {loss * 100:.2f} %, "
                         f"capture drops pre/post {m['capture_drops_pre']}/{m['capture_drops_post']}")
    fig.add_annotation(text="<br>".join(lines), xref="paper", yref="paper", x=0.01, y=0.99, xanchor="left",
                       yanchor="top", showarrow=False, align="left", font={"size": 10},
                       bgcolor="rgba(255,255,255,0.8)")
    return fig


def rate_table(result: dict[str, Any]) -> Any:
    """One row per point: requested/achieved rate, loss, capture drops, percentiles (or why not run)."""
    import pandas as pd

    return pd.DataFrame([point_metrics(p) for p in result["points"]])


def perf_table(result: dict[str, Any], rate_pps: float | None = None,
               events_expected: tuple[str, ...] = ("instructions", "branches", "cpu-migrations")) -> Any:
    """Per mode and perf event the mean over repetitions (None where missing) and the status; a mode
    without a completed point gets a "not run" row for each of events_expected."""
    import pandas as pd

    rows = []
    for mode in result["params"]["cgroup_modes"]:
        pts = [p for p in complete_points(result, mode, rate_pps) if p.get("perf", {}).get("status") == "run"]
        arm = result["arms"].get(mode, {})
        events: dict[str, list[dict[str, Any]]] = {}
        for p in pts:
            for c in p["perf"]["counters"]:
                events.setdefault(c["event"], []).append(c)
        if not pts:
            why = arm.get("reason") if not arm.get("runnable", True) else "no completed point with perf stat"
            for ev in events_expected:
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


def mean_of(pt: Any, mode: str, event: str) -> float | None:
    """The mean of ``event`` for ``mode`` in a perf_table (None where missing)."""
    if pt is None or len(pt) == 0:
        return None
    row = pt[(pt["mode"] == mode) & (pt["event"] == event)]
    if len(row) == 0:
        return None
    v = row.iloc[0]["mean"]
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)
