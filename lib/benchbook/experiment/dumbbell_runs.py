"""One arm's flows through the dumbbell, as the run function of :mod:`benchbook.experiment.repetitions`.

    arms = {"reno": FlowsArm(link, (FlowSpec("reno"),), duration_s=20, ss_interval_s=0.02)}
    result = run_repetitions(out, arms, repetitions=1, run=flows_run(measures=my_measures), seed=seed)

Each run brings up a fresh :class:`~benchbook.testbed.dumbbell.Dumbbell` with the run's command log, runs the
arm's flows together (``Dumbbell.run_flows``) and tears it down. A dumbbell that cannot be built here, or a
congestion control iperf3 does not confirm, raises ``NotRunnable``: the runner records the run not runnable
with the reason. Into the run's directory go ``iperf3-flow<i>.json`` (each client's ``iperf3 -J`` report) and,
with ``ss_interval_s``, ``ss-flow<i>.jsonl`` (the ``ss -tin`` samples of sender i's sockets towards its server,
one JSON object a line; the iperf3 control connection among them). The run's record gets:

- capabilities: what the dumbbell probed (also when it was not runnable);
- metrics: "token" (the testbed run token), "emulation" (``Dumbbell.record()``: topology, link, congestion
  control settings, delay mode and delay-line calibration (measured in each arm's first run only; the later runs'
  records say so and keep their lines' own lateness), schedule as applied), "flows" (per flow: CCA asked and
  reported, throughput, mean RTT, retransmits, launch and exit times), "qdisc" (bottleneck statistics after the
  run), "started_unix_s", "started_monotonic_ns" (the run's clock's zero on the host's monotonic clock: a flow
  launched at ``launched_at_s`` was launched at ``started_monotonic_ns + launched_at_s * 1e9``), "files";
- statistics: per flow i ``flow<i>.receiver_bps``, ``flow<i>.mean_rtt_ms``, ``flow<i>.retransmits``, and
  ``bottleneck.drops`` (definitions in :func:`flow_statistics`), then whatever ``measures`` returns.

Two hooks keep a paper's own part in the paper's module: ``during(db, ctx)``, a context manager entered once the
dumbbell is up and left after the flows ended (start a capture or a probe there; it may write ``ctx.metrics``),
and ``measures(run)``, the paper's per-run statistics from a :class:`FlowsRun` after the dumbbell is gone.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchbook.atomic_write import atomic_path
from benchbook.experiment.repetitions import RunContext, RunFunction, Statistic
from benchbook.testbed.dumbbell import Dumbbell, FlowResult, FlowSpec, LinkSpec
from benchbook.testbed.link_schedule import LinkSchedule
from benchbook.tools.iperf3 import Iperf3Report, read_report


@dataclass(frozen=True)
class FlowsArm:
    """One arm: these flows together through this link for ``duration_s`` (iperf3 ``-t``), iperf3 reporting
    every ``interval_s``; ``ss -tin`` samples every ``ss_interval_s`` when given; the link following
    ``schedule`` when given."""

    link: LinkSpec
    flows: tuple[FlowSpec, ...]
    duration_s: int
    interval_s: float = 1.0
    ss_interval_s: float | None = None
    schedule: LinkSchedule | None = None
    start_gap_s: float = 0.0


@dataclass
class FlowsRun:
    """What one run of an arm produced, for a paper's ``measures``."""

    ctx: RunContext
    arm: FlowsArm
    flows: list[FlowResult]
    qdisc: list[dict[str, Any]]
    emulation: dict[str, Any]
    ss: dict[int, list[dict[str, Any]]]

    @property
    def directory(self) -> Path:
        return self.ctx.directory


During = Callable[[Dumbbell, RunContext], AbstractContextManager[Any]]
Measures = Callable[[FlowsRun], Sequence[Statistic]]


def report_file(flow: int) -> str:
    return f"iperf3-flow{flow}.json"


def ss_file(flow: int) -> str:
    return f"ss-flow{flow}.jsonl"


def read_flow_report(run_dir: Path | str, flow: int = 1) -> Iperf3Report:
    """Flow ``flow``'s iperf3 report of a run."""
    return read_report(Path(run_dir) / report_file(flow))


def read_ss_samples(run_dir: Path | str, flow: int = 1) -> list[dict[str, Any]]:
    """Sender ``flow``'s ss samples of a run (a clear error names the file and line that is not JSON)."""
    path = Path(run_dir) / ss_file(flow)
    rows = []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}: line {n} column {exc.colno}: expected one JSON object per line "
                                 f"({exc.msg})") from None
    return rows


def data_socket(samples: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The samples (with a cwnd) of the data connection among a sender's ss samples: the socket that acked the
    most bytes (iperf3's control connection acks a few hundred)."""
    rows = [r for r in samples if "cwnd" in r]
    acked: dict[int, int] = {}
    for r in rows:
        acked[r["local_port"]] = max(acked.get(r["local_port"], 0), r.get("bytes_acked", 0))
    if not acked:
        return []
    port = max(acked, key=lambda p: acked[p])
    return [r for r in rows if r["local_port"] == port]


def _bottleneck_fifos(qdisc: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [q for q in qdisc if q.get("kind") in ("pfifo", "bfifo")]


def flow_statistics(flows: list[FlowResult], qdisc: list[dict[str, Any]]) -> list[Statistic]:
    """The statistics every dumbbell run has: per flow its throughput, mean RTT and retransmissions, and the
    packets the bottleneck FIFOs dropped."""
    out = []
    for f in flows:
        rtts = [r["rtt_us"] for r in f.report.intervals if r.get("rtt_us")]
        out += [
            Statistic(f"flow{f.index}.receiver_bps", f.receiver_bps, None, "bit/s",
                      "bytes the receiver counted (iperf3 -J end totals) x 8 / the sender's test seconds"),
            Statistic(f"flow{f.index}.mean_rtt_ms", f.mean_rtt_ms, len(rtts), "ms",
                      "unweighted mean of iperf3's per-interval smoothed RTT (sender kernel's tcpi_rtt); n: the "
                      "intervals with an RTT"),
            Statistic(f"flow{f.index}.retransmits", f.report.total_retransmits(), None, "segments",
                      "segments the sender kernel retransmitted (iperf3 -J end total)"),
        ]
    fifos = _bottleneck_fifos(qdisc)
    if fifos:
        drops = [q.get("drops") for q in fifos]
        sent = [q.get("packets") for q in fifos]
        out.append(Statistic("bottleneck.drops", None if None in drops else sum(drops),
                             None if None in sent else sum(sent), "packets",
                             "packets the bottleneck's FIFO(s) dropped (tc -s qdisc after the run); n: the packets "
                             "they sent"))
    return out


def _write_text(path: Path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def flows_run(during: During | None = None, measures: Measures | None = None) -> RunFunction:
    """The run function for arms given as :class:`FlowsArm` (see the module docstring)."""

    def run(ctx: RunContext) -> list[Statistic]:
        arm = ctx.config
        if not isinstance(arm, FlowsArm):
            raise TypeError(f"arm {ctx.arm}: flows_run needs a FlowsArm configuration, got {type(arm).__name__}")
        # an arm's delay lines are calibrated in its first run only: the same line on the same host, and 1.7 s
        # per line and run was a sixth of make reproduce; every run still records its lines' own lateness
        first = ctx.repetition == 1
        db = Dumbbell(arm.link, list(arm.flows), log=ctx.log, schedule=arm.schedule, calibrate_delay_lines=first,
                      calibration_note="" if first else f"calibrated in this arm's first run "
                      f"(raw/{ctx.arm}/rep1, its record's emulation.delay.delay_lines); not measured again")
        try:
            with db, (during(db, ctx) if during is not None else contextlib.nullcontext()):
                res = db.run_flows(arm.duration_s, arm.interval_s, start_gap_s=arm.start_gap_s,
                                   ss_interval_s=arm.ss_interval_s)
        finally:
            ctx.capabilities[:] = [c.as_dict() for c in db.capabilities]
        files = []
        for f in res["flows"]:
            _write_text(ctx.directory / report_file(f.index), f.raw_json)
            files.append(report_file(f.index))
        for i, samples in sorted(res["ss"].items()):
            _write_text(ctx.directory / ss_file(i), "".join(json.dumps(s) + "\n" for s in samples))
            files.append(ss_file(i))
        ctx.metrics.update({"token": (res["record"].get("topology") or {}).get("token"),
                            "emulation": res["record"], "flows": [f.as_dict() for f in res["flows"]],
                            "qdisc": res["qdisc"], "started_unix_s": res["started_unix_s"],
                            "started_monotonic_ns": res["started_monotonic_ns"], "files": files})
        done = FlowsRun(ctx, arm, res["flows"], res["qdisc"], res["record"], res["ss"])
        return [*flow_statistics(res["flows"], res["qdisc"]), *(measures(done) if measures is not None else ())]

    return run


__all__ = ["FlowsArm", "FlowsRun", "data_socket", "flow_statistics", "flows_run", "read_flow_report", "read_ss_samples",
           "report_file", "ss_file"]
