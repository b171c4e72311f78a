"""Congestion controls competing through the dumbbell: runs of flow sets x repetitions, and their summary.

``run_sets`` brings up a fresh dumbbell for every (flow set, repetition), runs the flows together and
writes::

    <output_dir>/raw/<set>/rep<k>/flow<i>-<cca>.json    the iperf3 -J report of each flow (sender side)
    <output_dir>/raw/<set>/rep<k>/qdisc.json            bottleneck qdisc statistics after the run
    <output_dir>/raw/<set>/rep<k>/commands.jsonl, cmd/  every command of that run (tools.host.CommandLog)
    <output_dir>/cca-runs.json                          per run: flows, throughputs, RTT, both Jain variants
    <output_dir>/metrics.json, capabilities.json        for the run record (emulation settings, what is missing)

A set whose congestion controls are not all available here is not run; it is recorded as not
runnable with the reason (never substituted). Per flow, throughput is the receiver's byte count over
the sender's test time (iperf3 end totals), the RTT is the mean of iperf3's per-interval smoothed RTT
(sender kernel), and the per-interval series for Jain's index are the sender's interval rates.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchbook.analysis.fairness import FlowSeries, combine, confidence_interval, summarize
from benchbook.testbed.capabilities import NotRunnable, congestion_controls
from benchbook.testbed.dumbbell import Dumbbell, FlowSpec, LinkSpec
from benchbook.tools.host import CommandLog
from benchbook.tools.iperf3 import Iperf3Report, flow_series, read_report


@dataclass(frozen=True)
class RunParams:
    sets: dict[str, list[str]]               # set name -> each flow: "cca" or "cca@<added delay ms>"
    link: LinkSpec
    duration_s: int = 30
    repetitions: int = 3
    interval_s: float = 0.3


def _write_json(path: Path, obj: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(obj, indent=1, default=str))
    os.replace(tmp, path)


def flow_spec(spec: str) -> FlowSpec:
    """"cubic" or "cubic@200" (200 ms added to that flow's path) as a FlowSpec."""
    cca, _, delay = spec.partition("@")
    try:
        return FlowSpec(cca, float(delay) if delay else 0.0)
    except ValueError as exc:
        raise ValueError(f"flow {spec!r}: expected cca or cca@<delay ms>") from exc


def run_series(reports: list[Iperf3Report], ccas: list[str], interval_s: float | None = None) -> FlowSeries:
    """The clients of one run side by side on one grid: ``interval_s`` is the ``-i`` they ran with (else each
    report's own median interval, to the millisecond)."""
    return combine([flow_series(r, f"{i}-{c}", interval_s=interval_s)
                    for i, (r, c) in enumerate(zip(reports, ccas, strict=True), 1)])


def dry_run(params: RunParams, output_dir: Path | str) -> Path:
    """dry-run.txt: every command of one run of each set, per namespace; nothing runs."""
    lines = []
    for name, ccas in params.sets.items():
        db = Dumbbell(params.link, [flow_spec(c) for c in ccas])
        lines.append(f"# set {name} ({' vs '.join(ccas)}), repeated {params.repetitions} times, a fresh "
                     "dumbbell each time (token 000000 stands for the run token)")
        lines += db.dry_run(params.duration_s, params.interval_s)
    path = Path(output_dir) / "dry-run.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def run_sets(params: RunParams, output_dir: Path | str, progress: Callable[[str], None] = print) -> dict[str, Any]:
    out = Path(output_dir)
    avail, _default = congestion_controls()
    runs: list[dict[str, Any]] = []
    not_runnable: dict[str, str] = {}
    emulation: dict[str, Any] = {}
    for name, ccas in params.sets.items():
        missing = sorted({flow_spec(c).cca for c in ccas if flow_spec(c).cca not in avail})
        if missing:
            not_runnable[name] = (f"the kernel has no tcp_{', tcp_'.join(missing)} "
                                  f"(available: {' '.join(avail)})")
            progress(f"{name}: not runnable: {not_runnable[name]}")
            continue
        for rep in range(1, params.repetitions + 1):
            d = out / "raw" / name / f"rep{rep}"
            d.mkdir(parents=True, exist_ok=True)
            progress(f"{name} ({' vs '.join(ccas)}) repetition {rep}/{params.repetitions}, {params.duration_s} s")
            try:
                with Dumbbell(params.link, [flow_spec(c) for c in ccas], log=CommandLog(d)) as db:
                    res = db.run_flows(params.duration_s, params.interval_s)
            except NotRunnable as exc:
                not_runnable[name] = str(exc)
                progress(f"{name}: not runnable: {exc}")
                break
            emulation = res["record"]
            files = []
            for f in res["flows"]:
                p = d / f"flow{f.index}-{f.cca}{f'-plus{f.extra_delay_ms:g}ms' if f.extra_delay_ms else ''}.json"
                p.write_text(f.raw_json)
                files.append(str(p.relative_to(out)))
            _write_json(d / "qdisc.json", res["qdisc"])
            summary = summarize(run_series([f.report for f in res["flows"]], ccas, params.interval_s))
            fifo = next((q for q in res["qdisc"] if q["kind"] in ("pfifo", "bfifo")), {})
            runs.append({"set": name, "repetition": rep, "ccas": ccas, "dir": str(d.relative_to(out)),
                         "token": (res["record"].get("topology") or {}).get("token"),
                         "files": files, "interval_s": params.interval_s,
                         "flows": [f.as_dict() for f in res["flows"]],
                         "jain_of_means": summary["jain_of_means"],
                         "jain_mean_of_intervals": summary["jain_mean_of_intervals"],
                         "jain_min_interval": summary["jain_min_interval"],
                         "intervals_counted": summary["intervals_counted"],
                         "bottleneck_drops": fifo.get("drops"), "bottleneck_packets": fifo.get("packets")})
    result = {"params": {**asdict(params), "link": asdict(params.link)}, "runs": runs, "not_runnable": not_runnable,
              "emulation": emulation, "output_dir": str(out)}
    _write_json(out / "cca-runs.json", result)
    _write_json(out / "metrics.json", {"link_emulation": emulation, "runs": [
        {k: r[k] for k in ("set", "repetition", "token", "flows", "jain_of_means", "jain_mean_of_intervals",
                           "bottleneck_drops")} for r in runs], "not_runnable": not_runnable})
    caps = [c for c in emulation.get("capabilities", [])]
    caps += [{"capability": f"flow set {n}", "status": "missing", "detail": why} for n, why in not_runnable.items()]
    _write_json(out / "capabilities.json", caps)
    return result


def load_run_reports(output_dir: Path | str, run: dict[str, Any]) -> list[Iperf3Report]:
    return [read_report(Path(output_dir) / f) for f in run["files"]]


def set_summary(result: dict[str, Any], name: str, level: float = 0.95) -> dict[str, Any] | None:
    """Means over repetitions with Student-t intervals: per flow position throughput (Mbit/s) and RTT (ms),
    and both Jain variants. None when the set has no completed run."""
    runs = [r for r in result["runs"] if r["set"] == name]
    if not runs:
        return None
    n_flows = len(runs[0]["flows"])
    flows = []
    for i in range(n_flows):
        tput = [r["flows"][i]["receiver_bps"] / 1e6 for r in runs if r["flows"][i]["receiver_bps"] is not None]
        rtt = [r["flows"][i]["mean_rtt_ms"] for r in runs if r["flows"][i]["mean_rtt_ms"] is not None]
        flows.append({"cca": runs[0]["ccas"][i],
                      "throughput_mbps": confidence_interval(tput, level).as_dict() if tput else None,
                      "rtt_ms": confidence_interval(rtt, level).as_dict() if rtt else None})
    out: dict[str, Any] = {"set": name, "repetitions": len(runs), "flows": flows,
                           "runs": ", ".join(r["dir"] for r in runs)}
    for key in ("jain_of_means", "jain_mean_of_intervals", "jain_min_interval"):
        vals = [r[key] for r in runs if r[key] is not None]
        out[key] = confidence_interval(vals, level).as_dict() if vals else None
    return out


def interval_frame(output_dir: Path | str, run: dict[str, Any]) -> dict[str, Any]:
    """One run's per-interval series for figures: t_s, per-flow Mbit/s and RTT ms, per-interval Jain."""
    reports = load_run_reports(output_dir, run)
    series = run_series(reports, run["ccas"], run.get("interval_s"))
    per = summarize(series)["intervals"]
    t_s = series.start_ns / 1e9
    rtt = {}
    for i, rep in enumerate(reports, 1):
        by_iv: dict[int, list[float]] = {}
        for r in rep.intervals:
            if r.get("rtt_us"):
                by_iv.setdefault(r["interval"], []).append(r["rtt_us"] / 1000.0)
        rtt[f"{i}-{run['ccas'][i - 1]}"] = np.array([np.mean(by_iv[k]) if k in by_iv else np.nan
                                                     for k in range(t_s.size)])
    return {"t_s": t_s, "mbps": {f: series.bps[:, j] / 1e6 for j, f in enumerate(series.flows)},
            "jain": np.array([np.nan if iv["jain"] is None else iv["jain"] for iv in per]), "rtt_ms": rtt}


__all__ = ["RunParams", "dry_run", "flow_spec", "interval_frame", "load_run_reports", "run_series", "run_sets",
           "set_summary"]
