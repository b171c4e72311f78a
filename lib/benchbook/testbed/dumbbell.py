"""The dumbbell: sender namespaces -> bottleneck router -> receiver namespace, with link emulation.

    s1:s1e ─┐                      198.18.<i>.1/24 on sender i, 198.18.<i>.254 on the router
    s2:s2e ─┼─ rtr ── rtr:rb ── rcv:rcv0      198.19.0.254/24 router, 198.19.0.1/24 receiver
    ...    ─┘        (bottleneck: egress of rtr:rb)

The bottleneck is the router's egress towards the receiver: htb (or tbf) at ``rate_bps`` with a pfifo of
``buffer_packets`` (with ``isolate_udp_dport``: two htb classes, each with its own pfifo, UDP to that
port in a class of its own with a guaranteed rate and priority). Every host interface has ``gso_max_segs
1`` so that the FIFO counts MTU-sized packets, not GSO super-packets. Each flow is one iperf3 client in
its own sender namespace with its congestion control set explicitly (``iperf3 -C``; the run checks the
CCA iperf3 reports). Loss is an nftables ``numgen random`` drop in the router's forward chain. Extra
per-flow delay (base RTT differences for RTT fairness) and link delay use netem on the sender's egress
where the kernel has it, else the native delay line ``bb-delayline`` in a namespace of its own on that
sender's link (constant delay on the sender -> router direction; its rate ceiling and lateness are
measured at start and kept in the run record); jitter needs netem. What cannot be emulated is
`NotRunnable`, recorded, never faked. Everything lives in namespaces named with the run token
(`benchbook.testbed.local`), removed on success, failure, Ctrl-C and SIGTERM.

Root chooses any available congestion control per socket (CAP_NET_ADMIN), so the host-wide
``net.ipv4.tcp_allowed_congestion_control`` is not changed; the run record keeps its value before
and after.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from benchbook.testbed.capabilities import (
    Capability,
    NotRunnable,
    congestion_controls,
    probe_congestion_control,
    probe_netem,
    probe_nft_random_drop,
    probe_program,
    probe_qdisc,
    probe_tracepoint,
)
from benchbook.testbed.link_schedule import LinkSchedule, Step
from benchbook.testbed.local import LocalBackend, LocalTestbed
from benchbook.testbed.topology import Topology, dumbbell
from benchbook.tools import delayline, iperf3, ss, tc
from benchbook.tools.host import CommandLog, LocalHost

BASE_PORT = 5201
CALIBRATION_PORT = 5301
RCV_ADDR = "198.19.0.1"
ALLOWED_CCA = Path("/proc/sys/net/ipv4/tcp_allowed_congestion_control")


@dataclass(frozen=True)
class FlowSpec:
    """One TCP flow: its congestion control and the delay added to its path (ms, needs netem)."""

    cca: str
    extra_delay_ms: float = 0.0


@dataclass(frozen=True)
class LinkSpec:
    """The bottleneck: rate, FIFO size in packets, shaper; delay/jitter (netem) and random loss (nft)."""

    rate_bps: int = 100_000_000
    buffer_packets: int = 1000
    shaper: str = "htb"            # "htb" | "tbf"
    delay_ms: float = 0.0
    jitter_ms: float = 0.0
    loss: float = 0.0              # fraction of forwarded packets dropped at random
    isolate_udp_dport: int | None = None   # htb only: UDP to this port gets a class and FIFO of its own
    isolated_rate_bps: int = 2_000_000     # that class's guaranteed rate (priority over the rest)

    def __post_init__(self) -> None:
        if self.shaper not in ("htb", "tbf"):
            raise ValueError(f"shaper must be htb or tbf, got {self.shaper!r}")
        if self.isolate_udp_dport is not None and self.shaper != "htb":
            raise ValueError("isolate_udp_dport needs the htb shaper")
        if not 0.0 <= self.loss < 1.0:
            raise ValueError(f"loss must be a fraction in [0, 1), got {self.loss}")


def dumbbell_topology(n_senders: int, delayed: tuple[int, ...] = ()) -> Topology:
    return dumbbell(n_senders, delayed)


def requirements(link: LinkSpec, flows: list[FlowSpec], tracepoint: bool = False) -> list[Capability]:
    """Every capability the experiment needs, probed on this host."""
    caps = [probe_program("iperf3"), probe_program("tc"), probe_program("ip")]
    caps.append(probe_qdisc("htb") if link.shaper == "htb" else
                probe_qdisc("tbf", ["rate", "1mbit", "burst", "32kbit", "latency", "400ms"]))
    caps.append(probe_qdisc("pfifo", ["limit", "10"]))
    caps += [probe_congestion_control(c) for c in sorted({f.cca for f in flows})]
    if link.delay_ms or link.jitter_ms or any(f.extra_delay_ms for f in flows):
        caps.append(probe_netem())
    if link.loss:
        caps.append(probe_nft_random_drop())
    if tracepoint:
        caps.append(probe_tracepoint("tcp:tcp_probe"))
    return caps


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


@dataclass
class FlowResult:
    index: int
    cca: str
    cca_reported: str | None
    extra_delay_ms: float
    report: iperf3.Iperf3Report
    raw_json: str = ""          # the report as iperf3 printed it
    # On the run's clock (seconds after run_flows took its start, the clock the link schedule's steps use): when
    # the client was launched, and a time by which it had exited.
    launched_at_s: float | None = None
    exited_at_s: float | None = None

    @property
    def test_start_bounds_s(self) -> tuple[float, float] | None:
        """Earliest and latest time, on the run's clock, of iperf3's interval 0: its test starts after it was
        launched and connected, and its sender ran for the seconds it reports before it exited."""
        if self.launched_at_s is None or self.exited_at_s is None or not self.report.streams:
            return None
        ran_s = max(s.seconds for s in self.report.streams)
        return self.launched_at_s, max(self.launched_at_s, self.exited_at_s - ran_s)

    @property
    def receiver_bps(self) -> float | None:
        rcv = [s.bytes_received for s in self.report.streams]
        secs = [s.seconds for s in self.report.streams]
        if not rcv or any(b is None for b in rcv) or not secs or max(secs) <= 0:
            return None
        return sum(b for b in rcv if b is not None) * 8 / max(secs)

    @property
    def mean_rtt_ms(self) -> float | None:
        vals = [r["rtt_us"] for r in self.report.intervals if r.get("rtt_us")]
        return sum(vals) / len(vals) / 1000.0 if vals else None

    def as_dict(self) -> dict[str, Any]:
        return {"flow": self.index, "cca": self.cca, "cca_reported": self.cca_reported,
                "extra_delay_ms": self.extra_delay_ms, "receiver_bps": self.receiver_bps,
                "mean_rtt_ms": self.mean_rtt_ms, "retransmits": self.report.total_retransmits(),
                "sender_bps": sum(s.sender_bps for s in self.report.streams),
                "launched_at_s": self.launched_at_s, "exited_at_s": self.exited_at_s}


@dataclass
class Dumbbell:
    """A dumbbell brought up on this host (context manager); ``run_flows`` runs one measurement."""

    link: LinkSpec
    flows: list[FlowSpec]
    log: CommandLog = field(default_factory=CommandLog)
    token: str | None = None
    tb: LocalTestbed | None = None
    capabilities: list[Capability] = field(default_factory=list)
    allowed_cca_before: str | None = None
    delay_mode: str = "none"                 # "none" | "netem" | "delay-line"
    delay_lines: dict[int, delayline.DelayLine] = field(default_factory=dict)
    delay_line_record: dict[int, dict[str, Any]] = field(default_factory=dict)
    schedule: LinkSchedule | None = None     # rate/delay steps applied during run_flows
    schedule_applied: list[dict[str, Any]] = field(default_factory=list)
    # False: the delay lines start without their 1 s overload calibration (the record says where it was measured,
    # ``calibration_note``); their own lateness during the run ("after_run") is recorded either way
    calibrate_delay_lines: bool = True
    calibration_note: str = ""

    def delays_ms(self) -> dict[int, float]:
        """Added one-way delay per sender (1-based), only those with a delay."""
        out = {i: self.link.delay_ms + f.extra_delay_ms for i, f in enumerate(self.flows, 1)}
        return {i: d for i, d in out.items() if d > 0}

    def choose_delay_mode(self) -> tuple[str, str]:
        """("none" | "netem" | "delay-line" | "", reason): how delay is emulated here ("" = it cannot be)."""
        if not self.delays_ms() and not self.link.jitter_ms:
            return "none", "no delay requested"
        netem = probe_netem()
        if netem.ok:
            return "netem", netem.detail
        if self.link.jitter_ms:
            return "", f"jitter needs netem ({netem.status}: {netem.detail}); the delay line adds constant delay only"
        try:
            delayline.ensure_binary()
        except delayline.DelayLineError as exc:
            return "", f"netem {netem.status} ({netem.detail}) and no delay line: {exc}"
        return "delay-line", f"netem {netem.status} ({netem.detail}): bb-delayline (AF_PACKET) instead"

    def __enter__(self) -> Dumbbell:
        self.capabilities = requirements(self.link, self.flows)
        mode, why = self.choose_delay_mode()
        status = {"": "missing", "delay-line": "substituted"}.get(mode, "present")
        self.capabilities.append(Capability("delay emulation", status, f"{mode or 'none possible'}: {why}"))
        missing = [c for c in self.capabilities if not c.ok and not (c.capability == "netem" and mode)
                   and c.status != "substituted"]
        if self.schedule is not None and self.link.isolate_udp_dport is not None:
            raise ValueError("a link schedule changes the one bottleneck class; it cannot drive the isolated classes")
        if self.schedule is not None and self.schedule.has_delay and mode != "netem":
            netem = probe_netem()
            missing.append(Capability("scheduled delay steps", "missing",
                                      f"delay steps need netem ({netem.status}: {netem.detail}); the delay line "
                                      "holds a constant delay"))
        if missing:
            raise NotRunnable("dumbbell: " + "; ".join(f"{c.capability} {c.status}: {c.detail}" for c in missing))
        self.delay_mode = mode
        self.allowed_cca_before = _read(ALLOWED_CCA)
        delayed = tuple(self.delays_ms()) if mode == "delay-line" else ()
        self.tb = LocalBackend(log=self.log).topology(dumbbell_topology(len(self.flows), delayed), token=self.token)
        self.tb.__enter__()
        try:
            self._configure()
            if mode == "delay-line":
                self._start_delay_lines()
        except BaseException:
            self.tb.__exit__(None, None, None)
            raise
        return self

    def _start_delay_lines(self) -> None:
        """One bb-delayline per delayed sender (the whole delay on the sender -> router direction), then its
        accuracy: a 1 s UDP stream offered at 1 Gbit/s from the sender to the router through it gives the
        rate ceiling, and the line's own counters the lateness of sends against their due time under that
        overload; the counters are then reset, so "after_run" holds the run's own lateness. Without
        ``calibrate_delay_lines`` the calibration is left out (1.7 s per line) and the record says why."""
        tb = self.tb
        assert tb is not None
        binary = delayline.ensure_binary()
        for i, delay_ms in self.delays_ms().items():
            argv = delayline.build_argv(self.ifname(f"d{i}a"), self.ifname(f"d{i}b"), int(round(delay_ms * 1000)), 0,
                                        binary=binary)
            self.delay_lines[i] = delayline.start(tb.host(f"d{i}"), argv, what=f"bb-delayline flow {i}")
            if not self.calibrate_delay_lines:
                self.delay_line_record[i] = {"configured_delay_ms": delay_ms, "argv": argv,
                                             "calibration_udp_1gbps_1s": None, "calibration_lateness": None,
                                             "calibration_note": self.calibration_note or "not calibrated"}
                continue
            port = CALIBRATION_PORT + i
            iperf3.start_server(tb.host("rtr"), port)
            r = tb.host(f"s{i}").run(iperf3.udp_client_argv(f"198.18.{i}.254", port=port, rate_bps=1_000_000_000),
                                     check=False, timeout_s=60, what=f"delay line {i} calibration")
            try:
                ceiling: dict[str, Any] = iperf3.parse_udp_summary(r.stdout, source="delay line calibration")
            except iperf3.Iperf3Error as exc:
                ceiling = {"error": str(exc)}
            lateness = self.delay_lines[i].stats()["a_to_b"]
            self.delay_lines[i].reset()
            self.delay_line_record[i] = {"configured_delay_ms": delay_ms, "argv": argv,
                                         "calibration_udp_1gbps_1s": ceiling, "calibration_lateness": lateness}

    def __exit__(self, *exc: object) -> None:
        if self.tb is not None:
            self.tb.__exit__(*exc)

    def ifname(self, short: str) -> str:
        assert self.tb is not None
        return self.tb.ifname(short)

    def configure_commands(self, ifname: Any = None) -> list[tuple[str, list[str]]]:
        """(role, argv) that set up routing, offloads, delay, the bottleneck and loss, in order."""
        name = ifname or self.ifname
        cmds: list[tuple[str, list[str]]] = [("rtr", ["sysctl", "-q", "-w", "net.ipv4.ip_forward=1"])]
        for i, flow in enumerate(self.flows, 1):
            cmds.append((f"s{i}", ["ip", "route", "add", "default", "via", f"198.18.{i}.254"]))
            cmds.append((f"s{i}", ["ip", "link", "set", "dev", name(f"s{i}e"), "gso_max_segs", "1"]))
            cmds.append(("rtr", ["ip", "link", "set", "dev", name(f"r{i}"), "gso_max_segs", "1"]))
            delay = self.link.delay_ms + flow.extra_delay_ms
            if self.delay_mode == "netem" and (delay or self.link.jitter_ms):
                cmds.append((f"s{i}", ["tc", "qdisc", "replace", "dev", name(f"s{i}e"), "root", "netem", "delay",
                                       f"{delay:g}ms", *([f"{self.link.jitter_ms:g}ms"] if self.link.jitter_ms else []),
                                       "limit", "100000"]))
        cmds.append(("rcv", ["ip", "route", "add", "198.18.0.0/16", "via", "198.19.0.254"]))
        cmds.append(("rcv", ["ip", "link", "set", "dev", name("rcv0"), "gso_max_segs", "1"]))
        dev = name("rb")
        cmds.append(("rtr", ["ip", "link", "set", "dev", dev, "gso_max_segs", "1"]))
        if self.link.shaper == "htb" and self.link.isolate_udp_dport is not None:
            cmds += [("rtr", argv) for argv in tc.htb_isolated_bottleneck(
                dev, self.link.rate_bps, self.link.buffer_packets, self.link.isolate_udp_dport,
                self.link.isolated_rate_bps)]
        elif self.link.shaper == "htb":
            cmds += [("rtr", argv) for argv in tc.htb_bottleneck(dev, self.link.rate_bps, self.link.buffer_packets)]
        else:
            cmds.append(("rtr", tc.tbf(dev, self.link.rate_bps, limit_bytes=self.link.buffer_packets * 1514,
                                       handle="1:")))
            cmds.append(("rtr", tc.pfifo(dev, self.link.buffer_packets, parent="1:1", handle="10:")))
        if self.link.loss:
            thresh = int(round(self.link.loss * 1_000_000))
            cmds.append(("rtr", ["nft", f"add table inet bb ; add chain inet bb fwd {{ type filter hook forward "
                                        f"priority 0 ; }} ; add rule inet bb fwd numgen random mod 1000000 < {thresh} "
                                        "drop"]))
        return cmds

    def step_commands(self, step: Step, ifname: Any = None) -> list[tuple[str, list[str]]]:
        """(role, argv) that put one schedule step into force: the bottleneck rate, the senders' netem delay."""
        name = ifname or self.ifname
        cmds: list[tuple[str, list[str]]] = []
        if step.rate_bps is not None and self.link.shaper == "htb":
            cmds.append(("rtr", tc.htb_class(name("rb"), step.rate_bps)))
        elif step.rate_bps is not None:
            # tbf refills its bucket on a change and sets its child's limit to its own byte limit: the bucket
            # holds 2.5 ms at the new rate (at least one frame, at most the 32 KiB of the set-up), and the
            # pfifo's packet limit is put back
            dev = name("rb")
            burst = max(1514, min(32768, int(step.rate_bps / 8 * 0.0025)))
            cmds.append(("rtr", tc.tbf(dev, step.rate_bps, burst_bytes=burst,
                                       limit_bytes=self.link.buffer_packets * 1514, handle="1:")))
            cmds.append(("rtr", tc.pfifo(dev, self.link.buffer_packets, parent="1:1", handle="10:")))
        if step.delay_ms is not None:
            for i, flow in enumerate(self.flows, 1):
                cmds.append((f"s{i}", ["tc", "qdisc", "replace", "dev", name(f"s{i}e"), "root", "netem", "delay",
                                       f"{step.delay_ms + flow.extra_delay_ms:g}ms", "limit", "100000"]))
        return cmds

    def step_batches(self, step: Step, ifname: Any = None) -> list[tuple[str, list[list[str]]]]:
        """``step_commands`` grouped per role, in order: each group runs as one ``tc -batch -`` process."""
        groups: dict[str, list[list[str]]] = {}
        for role, argv in self.step_commands(step, ifname):
            groups.setdefault(role, []).append(argv)
        return list(groups.items())

    def _apply_schedule(self, t0: float, stop: threading.Event) -> None:
        """Each step at ``t0`` + its time (monotonic clock) until ``stop``, one tc process per role; records when
        each was applied and done. Lateness never accumulates: a step whose successor is already due when its
        turn comes is skipped (recorded with "skipped" and the reason), and what it changed that its successor
        leaves unchanged (rate or delay) is applied with the successor."""
        tb = self.tb
        assert tb is not None and self.schedule is not None
        steps = self.schedule.steps
        carried_rate: int | None = None
        carried_delay: float | None = None
        for k, step in enumerate(steps):
            while (wait_s := t0 + step.t_s - time.monotonic()) > 0:   # an early wake-up waits again
                if stop.wait(wait_s):
                    return
            if stop.is_set():
                return
            # decided on the recorded value (rounded up to the µs, so never before the step's time), so that the
            # record never contradicts the decision: a step applied at 2.0001998 s, before its successor at
            # 2.0002 s, was once recorded (rounded to nearest) as applied at 2.0002 s
            now = round(math.ceil((time.monotonic() - t0) * 1e6) / 1e6, 6)
            if k + 1 < len(steps) and now >= steps[k + 1].t_s:
                carried_rate = step.rate_bps if step.rate_bps is not None else carried_rate
                carried_delay = step.delay_ms if step.delay_ms is not None else carried_delay
                self.schedule_applied.append({
                    "t_s": step.t_s, "applied_at_s": None, "done_at_s": None, "checked_at_s": now,
                    "rate_bps": step.rate_bps, "delay_ms": step.delay_ms, "skipped": True,
                    "reason": f"the next step ({steps[k + 1].t_s:g} s) was already due when this one's turn came "
                              f"({now:.3f} s)"})
                continue
            effective = Step(step.t_s, step.rate_bps if step.rate_bps is not None else carried_rate,
                             step.delay_ms if step.delay_ms is not None else carried_delay)
            carried_rate = carried_delay = None
            for role, commands in self.step_batches(effective):
                tc.run_batch(tb.host(role), commands, what=f"schedule step at {step.t_s:g} s")
            done = time.monotonic() - t0
            self.schedule_applied.append({"t_s": step.t_s, "applied_at_s": now, "done_at_s": round(done, 6),
                                          "late_s": round(done - step.t_s, 6), "rate_bps": effective.rate_bps,
                                          "delay_ms": effective.delay_ms})

    def flow_commands(self, duration_s: int, interval_s: float = 0.3) -> list[tuple[str, list[str]]]:
        """(role, argv) of the iperf3 servers and clients of one run."""
        cmds = [("rcv", iperf3.server_argv(BASE_PORT + i)) for i in range(1, len(self.flows) + 1)]
        cmds += [(f"s{i}", iperf3.client_argv(RCV_ADDR, port=BASE_PORT + i, duration_s=duration_s, cca=f.cca,
                                              interval_s=interval_s)) for i, f in enumerate(self.flows, 1)]
        return cmds

    def dry_run(self, duration_s: int, interval_s: float = 0.3, token: str = "000000") -> list[str]:
        """Every command a run would execute, per host (namespace), without running anything."""
        mode, _why = self.choose_delay_mode()
        self.delay_mode = mode
        delayed = tuple(self.delays_ms()) if mode == "delay-line" else ()
        tb = LocalTestbed(dumbbell_topology(len(self.flows), delayed), token=token, log=CommandLog())
        lines = [f"[{role or 'local'}] {' '.join(argv)}" for role, argv, _ in tb.setup_commands()]
        lines += [f"[{role}] {' '.join(argv)}" for role, argv in self.configure_commands(tb.ifname)]
        for i in delayed:
            argv = delayline.build_argv(tb.ifname(f"d{i}a"), tb.ifname(f"d{i}b"),
                                        int(round(self.delays_ms()[i] * 1000)), 0)
            lines.append(f"[d{i}] {' '.join(argv)}")
        if mode == "":
            lines.append(f"# not runnable here: {_why}")
        lines += [f"[{role}] {' '.join(argv)}" for role, argv in self.flow_commands(duration_s, interval_s)]
        for step in self.schedule.steps if self.schedule else ():
            lines += [f"[{role}] {tc.batch_shell(commands)}   (at {step.t_s:g} s after the flows start)"
                      for role, commands in self.step_batches(step, tb.ifname)]
        lines.append(f"[rtr] {' '.join(tc.show_argv(tb.ifname('rb')))}")
        return lines

    def _configure(self) -> None:
        tb = self.tb
        assert tb is not None
        for role, argv in self.configure_commands():
            tb.host(role).run(argv)

    def run_flows(self, duration_s: int, interval_s: float = 0.3, start_gap_s: float = 0.0,
                  ss_interval_s: float | None = None) -> dict[str, Any]:
        """Start one server per flow on the receiver, then every client (``start_gap_s`` apart); wait for
        all; returns per-flow results, bottleneck qdisc statistics and the settings the run depended on.
        With ``ss_interval_s``, ``ss -tin`` samples every sender's sockets towards its server port at that
        interval while the flows run (result "ss": flow index -> samples; the iperf3 control connection
        is among them, told apart by its few bytes)."""
        tb = self.tb
        assert tb is not None
        rcv = tb.host("rcv")
        for i in range(1, len(self.flows) + 1):
            iperf3.start_server(rcv, BASE_PORT + i)
        samplers = {}
        if ss_interval_s:
            samplers = {i: ss.Sampler(LocalHost(name=f"s{i}", netns=tb.netns(f"s{i}")), ss_interval_s,
                                      f"dport = :{BASE_PORT + i}").start() for i in range(1, len(self.flows) + 1)}
        stop_schedule = threading.Event()
        scheduler = None
        try:
            clients, launched = [], []
            t0 = time.time()
            t0_ns = time.monotonic_ns()
            t0_mono = t0_ns / 1e9
            if self.schedule is not None:
                scheduler = threading.Thread(target=self._apply_schedule, args=(t0_mono, stop_schedule),
                                             daemon=True)
                scheduler.start()
            for i, flow in enumerate(self.flows, 1):
                argv = iperf3.client_argv(RCV_ADDR, port=BASE_PORT + i, duration_s=duration_s, cca=flow.cca,
                                          interval_s=interval_s)
                launched.append(time.monotonic() - t0_mono)
                clients.append(iperf3.start_client(tb.host(f"s{i}"), argv, what=f"iperf3 flow {i} ({flow.cca})"))
                if start_gap_s:
                    time.sleep(start_gap_s)
            results = []
            for i, (flow, cl) in enumerate(zip(self.flows, clients, strict=True), 1):
                rep = cl.wait(timeout_s=duration_s + 60 + start_gap_s * len(self.flows))
                if rep.cca_sender != flow.cca:
                    raise NotRunnable(f"flow {i}: asked for {flow.cca}, iperf3 reports {rep.cca_sender}")
                results.append(FlowResult(i, flow.cca, rep.cca_sender, flow.extra_delay_ms, rep,
                                          cl.command.output("stdout"), launched_at_s=round(launched[i - 1], 6),
                                          exited_at_s=round(time.monotonic() - t0_mono, 6)))
        finally:
            stop_schedule.set()
            if scheduler is not None:
                scheduler.join(timeout=30)
            ss_samples = {i: s.stop() for i, s in samplers.items()}
        stats = tc.qdisc_stats(tb.host("rtr"), self.ifname("rb"))
        for i, dl in self.delay_lines.items():
            self.delay_line_record[i]["after_run"] = dl.stats()
        return {"flows": results, "qdisc": [q.as_dict() for q in stats], "started_unix_s": t0,
                "started_monotonic_ns": t0_ns,
                "record": self.record(), "ss": ss_samples}

    def record(self) -> dict[str, Any]:
        """What the run record keeps about the emulation."""
        avail, default = congestion_controls()
        return {"topology": self.tb.describe() if self.tb else None, "link": asdict(self.link),
                "flows": [asdict(f) for f in self.flows],
                "capabilities": [c.as_dict() for c in self.capabilities],
                "congestion_control": {"available": avail, "host_default": default,
                                       "allowed_before": self.allowed_cca_before, "allowed_after": _read(ALLOWED_CCA),
                                       "how": "iperf3 -C per flow, as root (CAP_NET_ADMIN); the allowed list is "
                                              "not changed"},
                "offloads": "gso_max_segs 1 on every interface (the FIFO counts MTU-sized packets)",
                "delay": {"mode": self.delay_mode, "per_flow_ms": self.delays_ms(),
                          "delay_lines": {str(i): r for i, r in self.delay_line_record.items()}},
                "schedule": None if self.schedule is None else {
                    "source": self.schedule.source, "steps": [asdict(st) for st in self.schedule.steps],
                    "applied": list(self.schedule_applied),
                    "how": "each step's tc commands for a host in one `tc -batch -` process at its time; applied_at_s "
                           "and done_at_s on the flows' clock, late_s = done_at_s - t_s; a step whose successor "
                           "was already due when its turn came (checked_at_s) is skipped (skipped: true, with the "
                           "reason) and what it changed that the successor leaves unchanged goes with the "
                           "successor; applied_at_s and checked_at_s are rounded up to the µs, the value the skip "
                           "was decided on"}}


__all__ = ["Dumbbell", "FlowResult", "FlowSpec", "LinkSpec", "dumbbell_topology", "requirements"]
