"""iperf3: server and client command lines (congestion control per flow) and its ``-J`` report.

One iperf3 client is one flow set with one congestion control (``-C``); flows with different CCAs
are separate clients, each against its own server port. ``parse_report`` reads the JSON a client
prints with ``-J``: per interval and per stream the bytes, bits per second, the kernel's
retransmission counter (``retransmits``, tcpi_total_retrans deltas), cwnd and smoothed RTT, and the
end totals per stream. An ``error`` in the report raises `Iperf3Error` with iperf3's own message.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchbook.analysis.fairness import FlowSeries
from benchbook.errors import BenchbookError
from benchbook.tools.host import Host, RunningCommand

DEFAULT_PORT = 5201


class Iperf3Error(BenchbookError, RuntimeError):
    """iperf3 failed or its report is not what ``-J`` prints; the message names the source."""


def server_argv(port: int = DEFAULT_PORT, *, one_off: bool = True, bind: str | None = None) -> list[str]:
    argv = ["iperf3", "-s", "-p", str(port), "--forceflush"]   # "Server listening" unbuffered on a pipe
    if one_off:
        argv.append("-1")
    if bind:
        argv += ["-B", bind]
    return argv


def client_argv(server: str, *, port: int = DEFAULT_PORT, duration_s: int = 10, cca: str | None = None,
                parallel: int = 1, interval_s: float = 0.3, reverse: bool = False, bind: str | None = None,
                json_report: bool = True) -> list[str]:
    """A client command line; ``duration_s`` is whole seconds (iperf3 reads -t as an integer)."""
    if int(duration_s) != duration_s or duration_s <= 0:
        raise ValueError(f"iperf3 -t takes whole seconds > 0, got {duration_s!r}")
    if parallel < 1:
        raise ValueError(f"parallel streams must be >= 1, got {parallel}")
    argv = ["iperf3", "-c", server, "-p", str(port), "-t", str(int(duration_s)), "-i", f"{interval_s:g}"]
    if cca:
        argv += ["-C", cca]
    if parallel > 1:
        argv += ["-P", str(parallel)]
    if reverse:
        argv.append("-R")
    if bind:
        argv += ["-B", bind]
    if json_report:
        argv.append("-J")
    return argv


def udp_client_argv(server: str, *, port: int = DEFAULT_PORT, rate_bps: int, duration_s: int = 1,
                    length_bytes: int = 1400) -> list[str]:
    """A UDP client at ``rate_bps`` (for calibrating a path's rate ceiling), with the -J report."""
    if int(duration_s) != duration_s or duration_s <= 0:
        raise ValueError(f"iperf3 -t takes whole seconds > 0, got {duration_s!r}")
    return ["iperf3", "-c", server, "-p", str(port), "-u", "-b", str(int(rate_bps)), "-l", str(length_bytes),
            "-t", str(int(duration_s)), "-J"]


def parse_udp_summary(text: str, source: str = "<iperf3 -u -J>") -> dict[str, Any]:
    """Offered and received rate and loss of a UDP report (end.sum_sent / end.sum_received / end.sum)."""
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise Iperf3Error(f"{source}: not JSON ({exc})") from exc
    if doc.get("error"):
        raise Iperf3Error(f"{source}: iperf3 reported: {doc['error']}")
    try:
        end = doc["end"]
        return {"offered_bps": float(end["sum_sent"]["bits_per_second"]),
                "received_bps": float(end["sum_received"]["bits_per_second"]),
                "lost_percent": float(end["sum"]["lost_percent"]), "packets": int(end["sum"]["packets"])}
    except (KeyError, TypeError, ValueError) as exc:
        raise Iperf3Error(f"{source}: no UDP totals ({exc!r}); expected iperf3 -u -J output") from exc


@dataclass
class StreamTotal:
    socket: int
    bytes_sent: int
    bytes_received: int | None
    seconds: float
    sender_bps: float
    receiver_bps: float | None
    retransmits: int | None
    max_snd_cwnd_bytes: int | None
    mean_rtt_us: int | None


@dataclass
class Iperf3Report:
    """One client's ``-J`` report: rows per interval and stream, totals per stream."""

    source: str
    cca_sender: str | None
    cca_receiver: str | None
    reverse: bool
    num_streams: int
    start_unix_s: int | None
    intervals: list[dict[str, Any]] = field(default_factory=list)   # interval, socket, start_s, end_s, bytes, ...
    streams: list[StreamTotal] = field(default_factory=list)
    local: list[dict[str, Any]] = field(default_factory=list)       # connected: socket, local/remote host:port

    def total_retransmits(self) -> int | None:
        vals = [s.retransmits for s in self.streams]
        return None if any(v is None for v in vals) else sum(v for v in vals if v is not None)


def _need(obj: dict[str, Any], key: str, where: str) -> Any:
    if key not in obj:
        raise Iperf3Error(f"{where}: no {key!r} (expected iperf3 -J output)")
    return obj[key]


def parse_report(text: str, source: str = "<iperf3 -J>") -> Iperf3Report:
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise Iperf3Error(f"{source}: not JSON at line {exc.lineno if hasattr(exc, 'lineno') else '?'} "
                          f"({exc}); expected the report of iperf3 -J") from exc
    if not isinstance(doc, dict):
        raise Iperf3Error(f"{source}: top level is {type(doc).__name__}, expected an object with start/intervals/end")
    if doc.get("error"):
        raise Iperf3Error(f"{source}: iperf3 reported: {doc['error']}")
    start = _need(doc, "start", source)
    end = _need(doc, "end", source)
    test = _need(start, "test_start", f"{source}: start")
    if test.get("protocol") != "TCP":
        raise Iperf3Error(f"{source}: protocol {test.get('protocol')!r}; only TCP reports carry per-flow fairness")
    rep = Iperf3Report(source=source, cca_sender=end.get("sender_tcp_congestion"),
                       cca_receiver=end.get("receiver_tcp_congestion"), reverse=bool(test.get("reverse")),
                       num_streams=int(test.get("num_streams", 0)),
                       start_unix_s=start.get("timestamp", {}).get("timesecs"),
                       local=list(start.get("connected", [])))
    for n, iv in enumerate(_need(doc, "intervals", source)):
        for st in _need(iv, "streams", f"{source}: intervals[{n}]"):
            try:
                rep.intervals.append({
                    "interval": n, "socket": int(st["socket"]), "start_s": float(st["start"]),
                    "end_s": float(st["end"]), "bytes": int(st["bytes"]), "bps": float(st["bits_per_second"]),
                    "retransmits": st.get("retransmits"), "snd_cwnd_bytes": st.get("snd_cwnd"),
                    "rtt_us": st.get("rtt"), "omitted": bool(st.get("omitted", False)),
                    "sender": bool(st.get("sender", True)),
                })
            except (KeyError, TypeError, ValueError) as exc:
                raise Iperf3Error(f"{source}: intervals[{n}] stream {st!r:.80}: {exc!r}") from exc
    for n, st in enumerate(end.get("streams", [])):
        snd, rcv = st.get("sender", {}), st.get("receiver", {})
        if not snd:
            raise Iperf3Error(f"{source}: end.streams[{n}] has no sender totals")
        rep.streams.append(StreamTotal(
            socket=int(snd["socket"]), bytes_sent=int(snd["bytes"]),
            bytes_received=int(rcv["bytes"]) if "bytes" in rcv else None, seconds=float(snd["seconds"]),
            sender_bps=float(snd["bits_per_second"]),
            receiver_bps=float(rcv["bits_per_second"]) if "bits_per_second" in rcv else None,
            retransmits=snd.get("retransmits"), max_snd_cwnd_bytes=snd.get("max_snd_cwnd"),
            mean_rtt_us=snd.get("mean_rtt")))
    return rep


def flow_series(report: Iperf3Report, label: str | None = None, interval_s: float | None = None) -> FlowSeries:
    """One flow per stream (named ``<label or cca>#<socket>``) on a fixed grid of ``interval_s`` (default: the
    median interval length, to the millisecond: ``-i`` is at least 0.1 s and iperf3's timer fires up to a
    fraction of a millisecond late, so 0.30005 s is a 0.3 s grid) from the start of the test. iperf3's own
    intervals drift and can be a fraction of a millisecond long when its timer fires late, so each interval's
    bytes are spread evenly
    over its [start, end) and added into the grid bins it overlaps; only bins the stream covers completely
    are kept (a partial last bin would understate the rate); a stream shorter than one bin is named in
    ``left_out``."""
    rows = [r for r in report.intervals if not r["omitted"]]
    if not rows:
        raise Iperf3Error(f"{report.source}: no intervals (run with -i)")
    if interval_s is None:
        lengths = sorted(r["end_s"] - r["start_s"] for r in rows)
        interval_s = round(lengths[len(lengths) // 2] * 1e3) / 1e3
    if interval_s <= 0:
        raise Iperf3Error(f"{report.source}: intervals of zero length")
    interval_ns = int(round(interval_s * 1e9))
    name = label or report.cca_sender or "iperf3"
    flows, starts, values, left_out = [], [], [], []
    for sock in sorted({r["socket"] for r in rows}):
        mine = [r for r in rows if r["socket"] == sock]
        span_ns = max(int(round(r["end_s"] * 1e9)) for r in mine)
        n_bins = span_ns // interval_ns
        if n_bins == 0:
            left_out.append({"flow": f"{name}#{sock}", "reason": f"ends at {span_ns / 1e9:g} s, before its first "
                             f"complete interval of {interval_s:g} s"})
        acc = [0.0] * n_bins
        for r in mine:
            a_ns, b_ns = int(round(r["start_s"] * 1e9)), int(round(r["end_s"] * 1e9))
            if b_ns <= a_ns:
                continue
            for k in range(a_ns // interval_ns, min(n_bins, (b_ns - 1) // interval_ns + 1)):
                lo, hi = max(a_ns, k * interval_ns), min(b_ns, (k + 1) * interval_ns)
                if hi > lo:
                    acc[k] += r["bytes"] * (hi - lo) / (b_ns - a_ns)
        for k, byts in enumerate(acc):
            flows.append(f"{name}#{sock}")
            starts.append(k * interval_ns)
            values.append(byts * 8 / interval_s)
    if not flows:
        raise Iperf3Error(f"{report.source}: shorter than one interval of {interval_s:g} s")
    series = FlowSeries.from_columns(flows, starts, values, interval_ns=interval_ns, source=report.source)
    series.left_out = left_out
    return series


def read_report(path: Path | str) -> Iperf3Report:
    p = Path(path)
    return parse_report(p.read_text(), source=str(p))


@dataclass
class Client:
    """A running iperf3 client; ``wait()`` returns its parsed report."""

    argv: list[str]
    command: RunningCommand
    report: Iperf3Report | None = None

    def wait(self, timeout_s: float) -> Iperf3Report:
        code = self.command.wait(timeout_s=timeout_s)
        out = self.command.output("stdout")
        if not out.strip():
            raise Iperf3Error(f"iperf3 client (exit {code}) printed no report: "
                              f"{self.command.output('stderr').strip()[-400:]}")
        self.report = parse_report(out, source=" ".join(self.argv))
        return self.report


def start_server(host: Host, port: int = DEFAULT_PORT, *, bind: str | None = None) -> RunningCommand:
    """Start a one-off server on ``host``; returns once it listens."""
    cmd = host.start(server_argv(port, bind=bind), what=f"iperf3 server :{port}")
    if not cmd.wait_for("Server listening", "stdout", timeout_s=10.0):
        cmd.kill()
        raise Iperf3Error(f"iperf3 server on port {port} did not start: {cmd.output('stderr').strip()[-400:]}")
    return cmd


def start_client(host: Host, argv: list[str], what: str = "iperf3 client") -> Client:
    return Client(argv=list(argv), command=host.start(argv, what=what))


__all__ = ["Client", "Iperf3Error", "Iperf3Report", "StreamTotal", "client_argv", "flow_series", "parse_report",
           "parse_udp_summary", "read_report", "server_argv", "udp_client_argv", "start_client", "start_server"]
