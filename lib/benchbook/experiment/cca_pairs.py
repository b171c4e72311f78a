"""Congestion controls competing through the dumbbell: runs of flow sets x repetitions, and their summary.

``run_sets`` runs every flow set ``repetitions`` times through :func:`benchbook.experiment.repetitions.
run_repetitions` (a fresh dumbbell each time, sets interleaved in a seeded random order, resumable) with the
dumbbell run function of :mod:`benchbook.experiment.dumbbell_runs`, and writes::

    <output_dir>/raw/<set>/rep<k>/iperf3-flow<i>.json   the iperf3 -J report of each flow (sender side)
    <output_dir>/raw/<set>/rep<k>/repetition.json       the run's record: bottleneck qdisc statistics, emulation,
                                                        capabilities, per-run statistics (throughput, RTT, both
                                                        Jain variants), valid or not and why
    <output_dir>/raw/<set>/rep<k>/commands.jsonl, cmd/  every command of that run (tools.host.CommandLog)
    <output_dir>/repetitions.json, run-statistics.parquet   the plan, seed and order; the per-run table
    <output_dir>/cca-runs.json                          per complete run: flows, throughputs, RTT, both Jain variants
    <output_dir>/metrics.json, capabilities.json        for the run record (emulation settings, what is missing)

A set whose congestion controls are not all available here is not run; its runs are recorded as not
runnable with the reason (never substituted). Per flow, throughput is the receiver's byte count over
the sender's test time (iperf3 end totals), the RTT is the mean of iperf3's per-interval smoothed RTT
(sender kernel), and the per-interval series for Jain's index are the sender's interval rates.

Each run's statistics (run-statistics.parquet; what verdicts are judged from, :func:`pair_statistics`): per flow
i ``flow<i>_throughput_mbps`` and ``flow<i>_share`` (of the flows' summed throughput), the highest and lowest
flow's throughput, and both Jain variants and the per-interval minimum; with those of every dumbbell run
(:func:`benchbook.experiment.dumbbell_runs.flow_statistics`: ``flow<i>.mean_rtt_ms``, retransmissions, drops).

:func:`set_summary` summarises a set over its runs as the median of the per-run values with its 95 %
order-statistic interval (:func:`benchbook.analysis.intervals.median_interval`): no interval from fewer than
``MIN_RUNS`` (6) runs (the summary names the runs needed), and every bound inside the statistic's range (rates
and RTTs >= 0, Jain's index of n flows in [1/n, 1]).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchbook.analysis.fairness import VARIANT_LABELS, FlowSeries, combine, summarize
from benchbook.analysis.intervals import RATE, SHARE, Range, jain_range, median_interval
from benchbook.atomic_write import write_json_atomic
from benchbook.experiment.dumbbell_runs import FlowsArm, FlowsRun, flows_run, report_file
from benchbook.experiment.repetitions import RunContext, RunFunction, Statistic, run_repetitions
from benchbook.testbed.capabilities import NotRunnable, congestion_controls
from benchbook.testbed.dumbbell import Dumbbell, FlowResult, FlowSpec, LinkSpec
from benchbook.tools.iperf3 import Iperf3Report, flow_series, read_report

JAIN_STATISTICS = ("jain_of_means", "jain_mean_of_intervals", "jain_min_interval")


@dataclass(frozen=True)
class RunParams:
    sets: dict[str, list[str]]               # set name -> each flow: "cca" or "cca@<added delay ms>"
    link: LinkSpec
    duration_s: int = 30
    repetitions: int = 3
    interval_s: float = 0.3


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
    lines = [f"# {len(params.sets)} sets x {params.repetitions} repetitions, a fresh dumbbell each time, in an "
             "order drawn from a seed at run time (one permuted block of the sets per repetition)"]
    for name, ccas in params.sets.items():
        db = Dumbbell(params.link, [flow_spec(c) for c in ccas])
        lines.append(f"# set {name} ({' vs '.join(ccas)}), repeated {params.repetitions} times, a fresh "
                     "dumbbell each time (token 000000 stands for the run token)")
        lines += db.dry_run(params.duration_s, params.interval_s)
    path = Path(output_dir) / "dry-run.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def arms_of(params: RunParams) -> dict[str, FlowsArm]:
    """Each set as an arm of the runner."""
    return {name: FlowsArm(params.link, tuple(flow_spec(c) for c in ccas), params.duration_s, params.interval_s)
            for name, ccas in params.sets.items()}


def pair_statistics(flows: list[FlowResult], ccas: list[str], interval_s: float) -> list[Statistic]:
    """One run's statistics of the competing flows (what the verdicts are judged from): per flow i its
    throughput in Mbit/s and its share of the flows' summed throughput, the highest and lowest flow's throughput,
    both Jain variants and the per-interval minimum over the senders' ``interval_s`` rates."""
    rate = {f.index: f.receiver_bps for f in flows}
    known = [v for v in rate.values() if v is not None]
    total = sum(known) if len(known) == len(rate) else None
    what = "bytes the receiver counted (iperf3 -J end totals: TCP payload, each byte once) x 8 / the sender's test " \
           "seconds"
    out = []
    for i, bps in sorted(rate.items()):
        out.append(Statistic(f"flow{i}_throughput_mbps", None if bps is None else bps / 1e6, None, "Mbit/s",
                             f"flow {i} ({ccas[i - 1]}): {what}"))
        out.append(Statistic(f"flow{i}_share", None if bps is None or not total else bps / total, None, "",
                             f"flow {i}'s throughput / the sum over the {len(rate)} flows' throughputs ({what})"))
    if len(known) >= 2 and total is not None:
        out += [Statistic("highest_flow_throughput_mbps", max(known) / 1e6, None, "Mbit/s",
                          f"the largest of the {len(known)} flows' throughputs ({what})"),
                Statistic("lowest_flow_throughput_mbps", min(known) / 1e6, None, "Mbit/s",
                          f"the smallest of the {len(known)} flows' throughputs ({what})")]
    s = summarize(run_series([f.report for f in flows], ccas, interval_s))
    grid = (f"over the senders' {interval_s * 1000:g} ms interval rates; n: intervals in which every flow had "
            "a rate")
    return out + [Statistic(k, s[k], s["intervals_counted"], "", f"{VARIANT_LABELS[k]} {grid}")
                  for k in JAIN_STATISTICS]


def run_function(params: RunParams) -> RunFunction:
    """One run of a set: not runnable when the kernel lacks one of its congestion controls, else the flows
    through a fresh dumbbell, with both Jain variants (and the minimum) of the run as statistics."""

    def measures(run: FlowsRun) -> list[Statistic]:
        return pair_statistics(run.flows, params.sets[run.ctx.arm], params.interval_s)

    flows = flows_run(measures=measures)

    def run(ctx: RunContext) -> list[Statistic]:
        avail, _default = congestion_controls()
        missing = sorted({flow_spec(c).cca for c in params.sets[ctx.arm] if flow_spec(c).cca not in avail})
        if missing:
            raise NotRunnable(f"the kernel has no tcp_{', tcp_'.join(missing)} (available: {' '.join(avail)})")
        return flows(ctx)

    return run


def run_sets(params: RunParams, output_dir: Path | str, progress: Callable[[str], None] = print,
             seed: int | None = None) -> dict[str, Any]:
    """Every set ``params.repetitions`` times (see the module docstring); calling it again on the same
    ``output_dir`` with the same parameters finishes an interrupted run. Returns the complete runs (in the
    order of the sets, then repetition), the sets not runnable here with the reason, the emulation record."""
    out = Path(output_dir)
    res = run_repetitions(out, arms_of(params), params.repetitions, run_function(params), seed=seed,
                          progress=progress)
    names = list(params.sets)
    runs: list[dict[str, Any]] = []
    for rec in sorted(res.runs(), key=lambda r: (names.index(r["arm"]), r["repetition"])):
        stats = {s["name"]: s for s in rec["statistics"]}
        m = rec["metrics"]
        fifo = next((q for q in m["qdisc"] if q["kind"] in ("pfifo", "bfifo")), {})
        runs.append({"set": rec["arm"], "repetition": rec["repetition"], "position": rec["position"],
                     "ccas": params.sets[rec["arm"]], "dir": rec["dir"], "token": m["token"],
                     "files": [f"{rec['dir']}/{report_file(f['flow'])}" for f in m["flows"]],
                     "interval_s": params.interval_s, "flows": m["flows"],
                     **{k: stats[k]["value"] for k in JAIN_STATISTICS},
                     "intervals_counted": stats["jain_mean_of_intervals"]["n"],
                     "bottleneck_drops": fifo.get("drops"), "bottleneck_packets": fifo.get("packets")})
    complete = [r for r in res.records if r["status"] == "complete"]
    emulation = complete[-1]["metrics"]["emulation"] if complete else {}
    not_runnable = res.not_runnable()
    repetitions = {"seed": res.summary["plan"]["seed"], "counts": res.summary["counts"],
                   "excluded": res.summary["excluded"], "file": "repetitions.json"}
    result = {"params": {**asdict(params), "link": asdict(params.link)}, "runs": runs, "not_runnable": not_runnable,
              "emulation": emulation, "repetitions": repetitions, "output_dir": str(out)}
    write_json_atomic(out / "cca-runs.json", result)
    write_json_atomic(out / "metrics.json", {"link_emulation": emulation, "repetitions": repetitions, "runs": [
        {k: r[k] for k in ("set", "repetition", "position", "token", "flows", "jain_of_means",
                           "jain_mean_of_intervals", "bottleneck_drops")} for r in runs], "not_runnable": not_runnable})
    caps = res.capabilities()
    caps += [{"capability": f"flow set {n}", "status": "missing", "detail": why} for n, why in not_runnable.items()]
    write_json_atomic(out / "capabilities.json", caps)
    return result


def load_run_reports(output_dir: Path | str, run: dict[str, Any]) -> list[Iperf3Report]:
    return [read_report(Path(output_dir) / f) for f in run["files"]]


def median_summary(values: list[float], value_range: Range) -> dict[str, Any] | None:
    """The median of per-run values with its 95 % order-statistic interval (analysis.intervals): ``low`` and
    ``high`` are None below MIN_RUNS runs, and ``reason`` and ``runs_needed`` say why; bounds stay inside
    ``value_range``. None without values."""
    if not values:
        return None
    iv = median_interval(values, value_range=value_range)
    out: dict[str, Any] = {"median": float(np.median(values)), "n": len(values), "level": iv.confidence,
                           "method": iv.method, "low": None, "high": None}
    if iv.ok:
        out.update(low=iv.low, high=iv.high, coverage=iv.coverage)
    else:
        out.update(reason=iv.reason, runs_needed=iv.runs_needed)
    return out


def set_summary(result: dict[str, Any], name: str) -> dict[str, Any] | None:
    """A set over its complete runs: per flow position the throughput (Mbit/s) and RTT (ms), and both Jain
    variants, each as :func:`median_summary` (the median with its order-statistic interval; none below 6 runs).
    None when the set has no completed run."""
    runs = [r for r in result["runs"] if r["set"] == name]
    if not runs:
        return None
    n_flows = len(runs[0]["flows"])
    flows = []
    for i in range(n_flows):
        tput = [r["flows"][i]["receiver_bps"] / 1e6 for r in runs if r["flows"][i]["receiver_bps"] is not None]
        rtt = [r["flows"][i]["mean_rtt_ms"] for r in runs if r["flows"][i]["mean_rtt_ms"] is not None]
        flows.append({"cca": runs[0]["ccas"][i], "throughput_mbps": median_summary(tput, RATE),
                      "rtt_ms": median_summary(rtt, RATE)})
    out: dict[str, Any] = {"set": name, "repetitions": len(runs), "flows": flows,
                           "runs": ", ".join(r["dir"] for r in runs)}
    for key in JAIN_STATISTICS:
        out[key] = median_summary([r[key] for r in runs if r[key] is not None], jain_range(n_flows))
    shares = [[r["flows"][i]["receiver_bps"] for i in range(n_flows)] for r in runs]
    out["shares"] = [median_summary([row[i] / sum(row) for row in shares if None not in row and sum(row) > 0],
                                    SHARE) for i in range(n_flows)]
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


__all__ = ["JAIN_STATISTICS", "RunParams", "dry_run", "flow_spec", "interval_frame", "load_run_reports",
           "median_summary", "pair_statistics", "run_series", "run_sets", "set_summary"]
