"""The cgroup-latency experiment: a DuT's latency per isolation mode x packet rate x repetition.

One *point* = one CPU isolation mode x one packet rate x one repetition, measured on a backend from the
registry (:mod:`benchbook.testbed.backends`): ``local`` (network namespaces on this machine) or
``testbed``/``ssh`` (the real hosts of an inventory). Every point takes the one path
``backend.plan(measurement)`` -> ``backend.execute(plan, log)``: the plan is data (the steps each host
runs, :mod:`benchbook.testbed.plan`), and a dry run (``dry_run``) writes those same plans to
``<output_dir>/dry-run.txt`` - every command per host, values known only at run time as placeholders -
and measures nothing.

On the local backend a point is a fresh topology (LoadGen -> DuT -> Timestamper sink in network
namespaces), the isolation recipe of the mode, the DuT (dpdk-testpmd by default) pinned to the DuT core
inside the DuT cgroup, tcpdump at the DuT's ingress (LoadGen egress) and egress (sink ingress),
``perf stat`` on the DuT process for the sending window, bb-loadgen at a constant rate. Afterwards the
captures are matched by the packet id (IdKey(offset=42, width=8, big-endian)) and everything measured
is kept. Every point is one run of the repetition runner (:mod:`benchbook.experiment.repetitions`): the
arms are mode x rate (``<mode>-rate<pps>``), each repetition a fresh set-up, in the runner's seeded
interleaved order (``seed``), one directory and one record per run:

    <output_dir>/repetitions.json      the plan (arms, repetitions, seed), the order, every run's status
    <output_dir>/run-statistics.parquet  every run's statistics (loss, achieved rate, latency percentiles)
    <output_dir>/raw/<mode>-rate<pps>/rep<k>/   one run: {pre.pcap, post.pcap, latencies.parquet, point.json,
                                       repetition.json, commands.jsonl, cmd/ (every command of the run)}
    <output_dir>/latency-points.json   every point (no arrays): rates, loss, drops, perf, percentiles
    <output_dir>/metrics.json          achieved rate, loss and capture drops per point (run record)
    <output_dir>/capabilities.json     what was missing or substituted here, with the reason

On the testbed backend the raw data of each point are collected into its directory's ``raw/<role>/``
and, where tcpdump taps took them, matched the same way.

A mode whose recipe cannot run on this host (v2 on hybrid-cgroup hosts) is recorded as not
runnable with the reason for each of its points; nothing is emulated in its place.
"""

from __future__ import annotations

import json
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from benchbook.analysis.latency import IdKey, match_captures
from benchbook.analysis.percentiles import REPORTED_PERCENTILES, discrete_percentiles, exact_ladder
from benchbook.analysis.resolvability import RULE_TEXT, resolved_percentiles
from benchbook.atomic_write import write_json_atomic
from benchbook.errors import BenchbookError
from benchbook.experiment.repetitions import (
    SUMMARY_FILE,
    RunContext,
    RunsFailed,
    Statistic,
    interleaved_order,
    run_repetitions,
)
from benchbook.testbed.backends import Backend, backend_names, get_backend
from benchbook.testbed.capabilities import NotRunnable
from benchbook.testbed.names import new_token
from benchbook.testbed.plan import DRY_RUN_DIR, DRY_RUN_TOKEN, RUNTIME_VALUES, Measurement
from benchbook.tools import loadgen
from benchbook.tools.host import CommandLog

RESULT_FILE = "latency-points.json"
DRY_RUN_FILE = "dry-run.txt"
# the packet id bb-loadgen writes into every frame
LOADGEN_ID = IdKey(offset=loadgen.ID_OFFSET, width=loadgen.ID_WIDTH, byteorder=loadgen.ID_BYTEORDER)


class MeasurementFailed(BenchbookError, RuntimeError):
    """Points of an experiment failed; every result, failed ones with their reason, was written first."""


@dataclass
class ExperimentParams:
    backend: str = "local"                      # a backend of benchbook.testbed.backends: "local" | "testbed"
    inventory: str | None = None                # testbed: the host inventory (TOML)
    dry_run: bool = False                       # list the commands (dry-run.txt), measure nothing
    probe: bool = False                         # testbed dry run: ask the hosts what they have (read-only ssh)
    rates_pps: list[float] = field(default_factory=lambda: [10_000.0, 50_000.0])
    frame_size: int = 64                        # bytes incl. FCS, as MoonGen counts
    duration_s: float = 3.0
    repetitions: int = 3
    seed: int | None = None                     # of the runs' interleaved order (None: drawn, then recorded)
    isolation_modes: list[str] = field(default_factory=lambda: ["v1", "v2"])  # testbed.isolation.ISOLATION_MODES
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
        if self.backend not in backend_names():
            raise ValueError(f"backend {self.backend!r}: expected one of {', '.join(backend_names())}")


def backend_for(params: ExperimentParams, log: CommandLog | None = None) -> Backend:
    """The experiment's backend from the registry (its commands into ``log``)."""
    options: dict[str, Any] = {"log": log or CommandLog(), "dry_run": params.dry_run}
    if params.inventory:
        options["inventory"] = params.inventory
    if params.probe:
        options["probe"] = True
    return get_backend(params.backend, **options)


# -------------------------------------------------------------------------------------------------
# one measurement point
# -------------------------------------------------------------------------------------------------
def arm_name(mode: str, rate_pps: float) -> str:
    """An arm of the experiment: one isolation mode at one rate (its runs are raw/<arm>/rep<k>/)."""
    return f"{mode}-rate{int(rate_pps)}"


def _point_dir(out: Path, mode: str, rate_pps: float, rep: int) -> Path:
    """The directory of repetition ``rep`` (1-based) of an arm, as the repetition runner lays it out."""
    return out / "raw" / arm_name(mode, rate_pps) / f"rep{rep}"


def measurement(params: ExperimentParams, mode: str, rate_pps: float, rep: int, run_dir: Path | str,
                token: str = "") -> Measurement:
    """The Measurement a backend plans for one point (token "": a dry run's)."""
    return Measurement(run_id=f"{arm_name(mode, rate_pps)}-rep{rep}", cgroup_mode=mode, rate_pps=rate_pps,
                       frame_size=params.frame_size, duration_s=params.duration_s, repetition=rep, token=token,
                       run_dir=str(run_dir), dut_kind=params.dut_kind, dut_cpu=params.dut_cpu,
                       perf_repeats=params.perf_repeats, settle_s=params.settle_s)


def measure_point(params: ExperimentParams, mode: str, rate_pps: float, rep: int, out_dir: Path,
                  log: CommandLog | None = None, backend: Backend | None = None,
                  run_dir: Path | None = None) -> dict[str, Any]:
    """Measure one point on the experiment's backend: its plan, executed; returns the point's record (also
    written as point.json into ``run_dir``, default raw/<mode>-rate<pps>/rep<rep>/ of ``out_dir``). Every
    command goes into ``log`` (default: a command log in <out_dir>/raw/)."""
    d = Path(run_dir) if run_dir is not None else _point_dir(out_dir, mode, rate_pps, rep)
    d.mkdir(parents=True, exist_ok=True)
    log = log or CommandLog(out_dir / "raw")
    backend = backend or backend_for(params, log)
    first, first_lost = len(log.records), len(log.write_errors)
    rec: dict[str, Any] = {"mode": mode, "rate_pps": rate_pps, "repetition": rep, "status": "failed",
                           "backend": params.backend, "dut_kind": params.dut_kind, "frame_size": params.frame_size,
                           "duration_s": params.duration_s, "dir": str(d.relative_to(out_dir))}
    t0 = time.time()
    try:
        plan = backend.plan(measurement(params, mode, rate_pps, rep, d, token=new_token()))
        run = backend.execute(plan, log)
        got = run.pop("results", {}) or {}
        for key in ("testbed", "isolation", "dut", "perf"):
            if key in run:
                rec[key] = run.pop(key)
        rec["execution"] = run
        rec.update({k: got[k] for k in ("loadgen", "captures", "dut_stats") if k in got})
        if "dut_log" in got:
            try:
                (d / "dut.log").write_text(got["dut_log"])
            except OSError as exc:
                rec["dut_log_error"] = f"{d / 'dut.log'}: {exc.strerror}"
        if run["status"] != "complete":
            rec["error"] = run["error"]
        elif "capture_dir" in got and "loadgen" in got and "captures" in got:
            rec["analysis"] = analyse_point(Path(got["capture_dir"]), d / "latencies.parquet")
            rec["status"] = "complete"
        else:
            rec["status"] = "collected"
            rec["reason"] = ("raw data collected in raw/<role>/; percentiles from MoonSniff/MoonGen output are "
                             "not computed by this experiment")
    except Exception as exc:  # keep what was measured; the point is marked failed with the reason
        rec["error"] = f"{type(exc).__name__}: {exc}"
        rec["traceback"] = traceback.format_exc()
    rec["commands"] = _command_range(log, first, out_dir)
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


def _command_range(log: CommandLog, first: int, out_dir: Path) -> dict[str, Any]:
    """Where the point's commands are in its command log (the log's path relative to the output directory)."""
    ns = [r.n for r in log.since(first)]
    where = None
    if log.directory is not None:
        path = log.directory / "commands.jsonl"
        where = str(path.relative_to(out_dir)) if path.is_relative_to(out_dir) else str(path)
    return {"log": where, "first": ns[0] if ns else None, "last": ns[-1] if ns else None}


PERCENTILE_STATISTICS = ("50", "99", "99.9", "99.99")   # the per-run latency percentiles a run gives its record
PERF_COUNT_UNITS = {"cpu-migrations": "migrations", "context-switches": "switches"}   # perf prints no unit for these


def point_statistics(p: dict[str, Any]) -> list[Statistic]:
    """The statistics of a complete point for its run's record, with N = the matched packets behind each
    latency statistic: loss, achieved rate, the latency percentiles p50, p99, p99.9, p99.99 (``null`` where the
    run's N cannot resolve one, V2: the definition says why), the observed maximum (an extreme: no interval at any
    N, V11), and each ``perf stat`` counter of the DuT over the sending window (``null`` where perf reports it
    ``<not supported>`` or ``<not counted>``: missing, never zero)."""
    an = p["analysis"]
    c, n = an["counts"], an["counts"]["matched"]
    m = point_metrics(p)
    out = [Statistic("loss_fraction", m["loss_fraction"], c["pre"], "1",
                     "packets captured before the DuT and not after it / packets captured before it"),
           Statistic("achieved_pps", m["achieved_pps"], m["sent"], "pkt/s",
                     "bb-loadgen's sent packets / its send time"),
           Statistic("matched_packets", n, None, "packets", "packets captured before and after the DuT, matched by "
                                                            "their id: the N behind the latency statistics")]
    unresolved = _unresolved(an, n)
    for q in PERCENTILE_STATISTICS:
        definition = (f"discrete percentile of the matched packets' latency (tcpdump software timestamps at the DuT's "
                      f"ingress and egress): the smallest with at least {q} % at or below it")
        if q in unresolved:
            out.append(Statistic(f"p{q}_latency", None, n, "ns", f"{definition}; null: {unresolved[q]}"))
        else:
            out.append(Statistic(f"p{q}_latency", an["percentiles_ns"].get(q), n, "ns", definition))
    if an["max_ns"] is not None:
        out.append(Statistic("max_latency", an["max_ns"], n, "ns", "largest latency of the matched packets (the "
                             "observed maximum: an extreme of its run, without a confidence interval at any N)"))
    return out + perf_statistics(p)


def _unresolved(an: dict[str, Any], n: int) -> dict[str, str]:
    """Why each percentile of PERCENTILE_STATISTICS the run cannot resolve is null (V2), by its percent text;
    for analyses written before they were kept (``unresolved_percentiles``), decided from N here."""
    if "unresolved_percentiles" in an:
        return dict(an["unresolved_percentiles"])
    _, why = resolved_percentiles({q: an["percentiles_ns"].get(q) for q in PERCENTILE_STATISTICS}, n)
    return why


def perf_statistics(p: dict[str, Any]) -> list[Statistic]:
    """Each counter of the DuT's ``perf stat -r R`` over the sending window as a run statistic: perf prints the
    mean of R consecutive sub-windows, so the count over the window is that mean times R (n = R sub-windows);
    a counter perf reports ``<not supported>`` (no PMU in a VM, say) or ``<not counted>`` is null with that
    reason, never zero. None when perf did not run on the DuT (its reason is in the point's perf record)."""
    perf = p.get("perf") or {}
    if perf.get("status") != "run":
        return []
    argv = [str(a) for a in perf.get("argv", [])]
    repeats = int(argv[argv.index("-r") + 1]) if "-r" in argv[:-1] else 1
    out = []
    for c in perf.get("counters", []):
        event = str(c["event"])
        unit = str(c.get("unit") or PERF_COUNT_UNITS.get(event, event))
        what = (f"perf stat -r {repeats} on the DuT process over the sending window: the mean count of {repeats} "
                f"consecutive sub-windows x {repeats} (the count over the window)")
        if c.get("status") == "counted" and c.get("value") is not None:
            out.append(Statistic(event, float(c["value"]) * repeats, repeats, unit, what))
        else:
            out.append(Statistic(event, None, repeats, unit,
                                 f"{what}; null: perf reported <{c.get('status')}> (missing, not zero)"))
    return out


def analyse_point(d: Path, out_parquet: Path | None = None) -> dict[str, Any]:
    """Match pre/post of one point (pure function of the raw files; re-runnable offline); the latencies go to
    ``out_parquet`` (default: latencies.parquet beside the captures)."""
    res = match_captures(d / "pre.pcap", d / "post.pcap", key=LOADGEN_ID,
                         out_parquet=out_parquet or d / "latencies.parquet")
    lat = np.sort(res.latency_ns)
    exact = discrete_percentiles(lat, [float(p) for p in REPORTED_PERCENTILES])
    shown, unresolved = resolved_percentiles({p: exact[float(p)] for p in REPORTED_PERCENTILES}, len(lat))
    return {
        "counts": {k: int(v) for k, v in res.counts.items()},
        "warnings": list(res.warnings),
        "min_ns": int(lat[0]) if len(lat) else None,
        "max_ns": int(lat[-1]) if len(lat) else None,
        "mean_ns": float(lat.mean()) if len(lat) else None,
        "percentiles_ns": shown,
        "unresolved_percentiles": unresolved,
        "percentile_method": "exact discrete (smallest latency with at least p of packets at or below it); "
                             + RULE_TEXT,
    }


def load_latencies(out_dir: Path, point: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """(t_pre_ns, latency_ns) of a point from its Parquet table."""
    t = pq.read_table(Path(out_dir) / point["dir"] / "latencies.parquet", columns=["t_pre_ns", "latency_ns"])
    return t.column("t_pre_ns").to_numpy(), t.column("latency_ns").to_numpy()


# -------------------------------------------------------------------------------------------------
# the whole experiment
# -------------------------------------------------------------------------------------------------
def arm_status(params: ExperimentParams, backend: Backend) -> dict[str, dict[str, Any]]:
    """Per isolation mode: runnable on the backend's DuT host? (with the reason)"""
    return backend.mode_status(params.isolation_modes)


def capabilities(arms: dict[str, dict[str, Any]]) -> list[dict[str, str]]:
    return [{"capability": f"cgroup isolation {m}", "status": "present" if st["runnable"] else "missing",
             "detail": st["reason"]} for m, st in arms.items()]


def _grid(params: ExperimentParams) -> list[tuple[str, float, int]]:
    """(mode, rate, repetition) of every run, in the order they run: the repetition runner's seeded interleaving
    when ``params.seed`` is given, else mode by mode (the order a real run draws is in its repetitions.json)."""
    arms = _arms(params)
    if params.seed is None:
        return [(m, r, k) for m in params.isolation_modes for r in params.rates_pps
                for k in range(1, params.repetitions + 1)]
    return [(arms[s["arm"]]["mode"], arms[s["arm"]]["rate_pps"], s["repetition"])
            for s in interleaved_order(list(arms), params.repetitions, params.seed)]


def _arms(params: ExperimentParams) -> dict[str, dict[str, Any]]:
    return {arm_name(m, r): {"mode": m, "rate_pps": r} for m in params.isolation_modes for r in params.rates_pps}


def dry_run_plan(params: ExperimentParams, backend: Backend | None = None) -> dict[str, list[str]]:
    """Per host, every command it would run for the whole sweep: the backend's plan of each point, as printed
    by the backend (commands built by benchbook.tools; run-time values as placeholders); nothing is run."""
    backend = backend or backend_for(params)
    per_host: dict[str, list[str]] = {}
    for mode, rate_pps, rep in _grid(params):
        run_dir = _point_dir(Path(DRY_RUN_DIR), mode, rate_pps, rep)
        try:
            plan = backend.plan(measurement(params, mode, rate_pps, rep, run_dir))
        except BenchbookError as exc:   # e.g. a mode or DuT this host cannot plan
            per_host.setdefault("local", []).append(f"# {mode} @ {rate_pps:g} pkt/s repetition {rep}: "
                                                    f"not planned: {exc}")
            continue
        for role, lines in backend.render(plan).items():
            per_host.setdefault(role, []).extend(lines)
    return per_host


def write_dry_run(params: ExperimentParams, output_dir: Path, backend: Backend | None = None) -> Path:
    """<output_dir>/dry-run.txt: a section per host with every command it would run."""
    plan = dry_run_plan(params, backend)
    where = f"inventory {params.inventory}" if params.inventory else "this machine"
    lines = [f"# benchbook dry run: backend {params.backend} ({where}); nothing was run",
             f"# modes {', '.join(params.isolation_modes)} x rates "
             f"{', '.join(f'{r:g}' for r in params.rates_pps)} pkt/s x {params.repetitions} repetitions",
             f"# {DRY_RUN_DIR}: the output directory; names carry the run token ({DRY_RUN_TOKEN} here); values known "
             f"only at run time: " + "; ".join(f"{k}: {v}" for k, v in RUNTIME_VALUES.items())]
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
    """Run the grid on the chosen backend through the repetition runner: arms = mode x rate, each repetition a
    run of its own (a fresh plan executed, its directory raw/<arm>/rep<k>/ with its command log, point.json and
    repetition.json) in the seeded interleaved order (repetitions.json: seed, order, every run); then write
    latency-points.json, metrics.json, capabilities.json. With dry_run: only dry-run.txt (the result lists no
    points). When a point failed (a process of the chain died, a capture is incomplete, ...), MeasurementFailed
    names the failed points and their reasons after all of that is written; their raw data stay in place."""
    if isinstance(params, dict):
        params = ExperimentParams.from_dict(params)
    params.check()
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    if params.dry_run:
        path = write_dry_run(params, out)
        return {"schema": "benchbook.latency-points/1", "params": asdict(params), "arms": {}, "points": [],
                "dry_run": str(path)}
    backend = backend_for(params, CommandLog(out / "raw"))   # the backend's own commands (the ssh probe)
    arms = arm_status(params, backend)
    measured: dict[str, dict[str, Any]] = {}

    def one_run(ctx: RunContext) -> list[Statistic]:
        mode, rate_pps = ctx.config["mode"], ctx.config["rate_pps"]
        if not arms[mode]["runnable"]:
            raise NotRunnable(arms[mode]["reason"])
        if progress:
            progress(f"{mode} @ {rate_pps:g} pkt/s, repetition {ctx.repetition}/{params.repetitions} "
                     f"(run {ctx.position} of the seeded order)")
        p = measure_point(params, mode, rate_pps, ctx.repetition, out, ctx.log, backend, run_dir=ctx.directory)
        p.update(round=ctx.round, position=ctx.position)
        measured[str(ctx.directory.relative_to(out))] = p
        ctx.metrics.update(point_metrics(p))
        if p["status"] == "failed":
            raise MeasurementFailed(str(p.get("error")))
        return point_statistics(p) if p["status"] == "complete" else []

    try:
        runs = run_repetitions(out, _arms(params), params.repetitions, one_run, seed=params.seed, progress=None)
    except RunsFailed as exc:
        runs = exc.result
    points = [_point_of(rec, out, measured, arms) for rec in runs.records]
    result = {"schema": "benchbook.latency-points/1", "params": asdict(params), "arms": arms, "points": points,
              "repetitions": {"file": SUMMARY_FILE, "seed": runs.summary["plan"]["seed"],
                              "counts": runs.summary["counts"], "record_write_errors": runs.write_errors}}
    write_json_atomic(out / RESULT_FILE, result)
    metrics = _read_json(out / "metrics.json", {})
    metrics["latency_points"] = {"arms": arms, "points": [point_metrics(p) for p in points],
                                 "leftovers_after": backend.leftovers(run_tokens(points))}
    write_json_atomic(out / "metrics.json", metrics)
    caps = _read_json(out / "capabilities.json", [])
    first = _grid(params)[0] if params.isolation_modes and params.rates_pps and params.repetitions else None
    caps.extend(capabilities(arms))
    caps.extend(backend.capability_lines(measurement(params, *first, run_dir=out) if first else None))
    write_json_atomic(out / "capabilities.json", caps)
    failed = [p for p in points if p["status"] in ("failed", "interrupted")]
    if failed:
        raise MeasurementFailed(
            f"{len(failed)} of {len(points)} points failed (every point with its reason: {out / RESULT_FILE}; "
            f"raw data kept): " + "; ".join(f"{p['mode']} @ {p['rate_pps']:g} pkt/s repetition {p['repetition']}: "
                                            f"{str(p.get('error')).splitlines()[0]}" for p in failed[:3]))
    return result


def _point_of(rec: dict[str, Any], out: Path, measured: dict[str, dict[str, Any]],
              arms: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A run's point: what this call measured, else its point.json (a run finished before a resume), else what
    its repetition record says (not runnable, or ended without a point)."""
    cfg = rec["config"]
    p = measured.get(rec["dir"]) or _read_json(out / rec["dir"] / "point.json", None)
    if p is not None:
        return {**p, "round": rec["round"], "position": rec["position"]}
    base = {"mode": cfg["mode"], "rate_pps": cfg["rate_pps"], "repetition": rec["repetition"], "dir": rec["dir"],
            "round": rec["round"], "position": rec["position"]}
    if rec["status"] == "not runnable":
        return {**base, "status": "not runnable", "reason": arms.get(cfg["mode"], {}).get("reason") or rec["reason"]}
    last = (rec.get("reason") or "").strip().splitlines()
    return {**base, "status": "failed", "error": last[-1] if last else rec["status"]}


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
        return -1.0 if v is None else float(v)   # a percentile the point cannot resolve ranks below any value

    return max(points, key=score)


def point_label(p: dict[str, Any]) -> str:
    m = point_metrics(p)
    loss = m.get("loss_fraction")
    return (f"{p['mode']} @ {p['rate_pps']:g} pkt/s "
            f"(rep {p['repetition']}; achieved {m['achieved_pps']:.0f} pkt/s, "
            f"loss {'unknown' if loss is None else f'{loss * 100:.2f} %'}, "
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
             for mode in result["params"]["isolation_modes"])
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
    for mode in result["params"]["isolation_modes"]:
        arm = result["arms"].get(mode, {})
        if not arm.get("runnable", True):
            lines.append(f"{mode}: not runnable here ({arm.get('reason', '')[:90]})")
            continue
        for p in [q for q in result["points"] if q["mode"] == mode and q["rate_pps"] == rate_pps]:
            m = point_metrics(p)
            if p["status"] != "complete":
                lines.append(f"{mode} rep {p['repetition']}: {p['status']}")
                continue
            loss = m["loss_fraction"]
            lines.append(f"{mode} rep {p['repetition']}: {m['achieved_pps']:.0f}/{m['requested_pps']:.0f} pkt/s, "
                         f"loss {'unknown' if loss is None else f'{loss * 100:.2f} %'}, "
                         f"capture drops pre/post {m['capture_drops_pre']}/{m['capture_drops_post']}")
    fig.add_annotation(text="<br>".join(lines), xref="paper", yref="paper", x=0.01, y=0.99, xanchor="left",
                       yanchor="top", showarrow=False, align="left", font={"size": 10},
                       bgcolor="rgba(255,255,255,0.8)")
    return fig


def rate_table(result: dict[str, Any]) -> Any:
    """One row per point: requested/achieved rate, loss, capture drops, percentiles (or why not run)."""
    return pd.DataFrame([point_metrics(p) for p in result["points"]])


def perf_table(result: dict[str, Any], rate_pps: float | None = None,
               events_expected: tuple[str, ...] = ("instructions", "branches", "cpu-migrations")) -> Any:
    """Per mode and perf event the mean over repetitions (None where missing) and the status; a mode
    without a completed point gets a "not run" row for each of events_expected."""
    rows = []
    for mode in result["params"]["isolation_modes"]:
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
