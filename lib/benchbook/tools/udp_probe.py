"""benchbook's UDP latency probe: ``send`` paces numbered packets, ``recv`` records each one's one-way latency;
and its wrapper (argv, start on a Host, the log reader).

    python -m benchbook.tools.udp_probe send HOST PORT RATE_PPS DURATION_S SIZE_BYTES
    python -m benchbook.tools.udp_probe recv PORT DURATION_S OUT_FILE [IDLE_S]

Each packet carries its sequence number and the sender's CLOCK_MONOTONIC time in nanoseconds; sender and receiver
run in network namespaces of one host, which share that clock, so the receiver's difference is the one-way latency.
``recv`` prints ``listening on port PORT`` once its socket is bound (``start_receiver`` waits for it); ``send``
prints ``start_ns T``, the CLOCK_MONOTONIC time packet 0 is due, 20 ms later (``start_sender`` waits for it and
returns T: packet k is due at T + k / RATE_PPS). ``recv`` writes one line per packet received, "seq send_ns
recv_ns", to OUT_FILE when DURATION_S has passed, or with IDLE_S as soon as no packet has come for IDLE_S after
the first one (the sender is done: a run need not wait out a grace chosen for the slowest start); both print the
number of packets sent or received at the end.
``read_log`` reads OUT_FILE back.
"""

from __future__ import annotations

import os
import socket
import struct
import sys
import time
from typing import TYPE_CHECKING, NamedTuple

from benchbook.errors import BenchbookError

if TYPE_CHECKING:  # the probe program starts inside the measured window: it imports only what it runs
    from collections.abc import Sequence

    import numpy as np

    from benchbook.tools.host import Host, RunningCommand

HEADER = struct.Struct("!Qq")
READY = "listening on port"
STARTED = "start_ns"
START_AHEAD_NS = 20_000_000
USAGE = __doc__.split("\n\n")[1]


class ProbeError(BenchbookError, RuntimeError):
    """The probe's receiver did not come up, or its log is not what it writes (the message says where)."""


def send_argv(host: str, port: int, rate_pps: float, duration_s: float, size_bytes: int,
              python: str = sys.executable) -> list[str]:
    return [python, "-m", __name__, "send", host, str(port), f"{rate_pps:g}", f"{duration_s:g}", str(size_bytes)]


def recv_argv(port: int, duration_s: float, out: str | os.PathLike, python: str = sys.executable,
              idle_s: float | None = None) -> list[str]:
    idle = [] if idle_s is None else [f"{idle_s:g}"]
    return [python, "-m", __name__, "recv", str(port), f"{duration_s:g}", str(out), *idle]


def start_receiver(host: Host, argv: list[str], timeout_s: float = 15.0) -> RunningCommand:
    """Start the receiver on ``host`` and wait until its socket is bound."""
    rc = host.start(argv, what="udp probe receiver")
    if not rc.wait_for(READY, timeout_s=timeout_s):
        code = rc.kill()
        raise ProbeError(
            f"udp probe receiver on {host.name}: not listening after {timeout_s:g} s (exit code {code}; stderr: "
            f"{rc.output('stderr').strip()[-300:]!r})")
    return rc


def start_sender(host: Host, argv: list[str], timeout_s: float = 15.0) -> tuple[RunningCommand, int]:
    """Start the sender on ``host``; returns it and the CLOCK_MONOTONIC time (ns) its packet 0 is due."""
    rc = host.start(argv, what="udp probe sender")
    if not rc.wait_for(STARTED, timeout_s=timeout_s):
        code = rc.kill()
        raise ProbeError(f"udp probe sender on {host.name}: did not start within {timeout_s:g} s (exit code "
                         f"{code}; stderr: {rc.output('stderr').strip()[-300:]!r})")
    first = rc.output().split("\n", 1)[0].split()
    try:
        return rc, int(first[1])
    except (IndexError, ValueError):
        rc.kill()
        raise ProbeError(f"udp probe sender on {host.name}: line 1: expected '{STARTED} <ns>', got "
                         f"{' '.join(first)!r}") from None


class ProbeLog(NamedTuple):
    """What the receiver logged: per received packet its sequence number, send and receive time (ns)."""

    seq: np.ndarray
    send_ns: np.ndarray
    recv_ns: np.ndarray

    @property
    def latency_ns(self) -> np.ndarray:
        return self.recv_ns - self.send_ns


def read_log(path: str | os.PathLike) -> ProbeLog:
    """The receiver's OUT_FILE; a line that is not three integers is an error naming the file and line."""
    import numpy as np  # noqa: PLC0415  (numpy only for the reader: the probe program starts without it)

    rows = []
    with open(path, encoding="ascii", errors="replace") as fh:
        for n, line in enumerate(fh, 1):
            parts = line.split()
            try:
                if len(parts) != 3:
                    raise ValueError
                rows.append([int(p) for p in parts])
            except ValueError:
                raise ProbeError(f"{path}: line {n}: expected 'seq send_ns recv_ns' (three integers), got "
                                 f"{line.rstrip()[:80]!r}") from None
    a = np.array(rows, dtype=np.int64).reshape(-1, 3)
    return ProbeLog(a[:, 0], a[:, 1], a[:, 2])


def send(host: str, port: int, rate_pps: float, duration_s: float, size: int) -> int:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    pad = b"\0" * max(0, size - HEADER.size)
    n = int(rate_pps * duration_s)
    t0 = time.monotonic_ns() + START_AHEAD_NS       # announced before packet 0 is due, so it is not late for it
    print(f"{STARTED} {t0}", flush=True)
    for seq in range(n):
        due = t0 + int(seq * 1e9 / rate_pps)
        wait = due - time.monotonic_ns()
        if wait > 0:
            time.sleep(wait / 1e9)
        sock.sendto(HEADER.pack(seq, time.monotonic_ns()) + pad, (host, port))
    return n


def recv(port: int, duration_s: float, out: str, idle_s: float | None = None) -> int:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("0.0.0.0", port))
    print(f"{READY} {port}", flush=True)
    end = time.monotonic() + duration_s
    rows: list[str] = []
    while (left := end - time.monotonic()) > 0:
        sock.settimeout(left if idle_s is None or not rows else min(left, idle_s))
        try:
            data = sock.recv(65535)
        except TimeoutError:
            break
        now = time.monotonic_ns()
        if len(data) >= HEADER.size:
            seq, sent = HEADER.unpack_from(data)
            rows.append(f"{seq} {sent} {now}\n")
    with open(out, "w") as fh:
        fh.writelines(rows)
    return len(rows)


def main(argv: Sequence[str]) -> int:
    if len(argv) == 6 and argv[0] == "send":
        print(send(argv[1], int(argv[2]), float(argv[3]), float(argv[4]), int(argv[5])))
    elif len(argv) in (4, 5) and argv[0] == "recv":
        print(recv(int(argv[1]), float(argv[2]), argv[3], float(argv[4]) if len(argv) == 5 else None))
    else:
        print(f"usage:\n{USAGE}", file=sys.stderr)
        return 2
    return 0


__all__ = ["ProbeError", "ProbeLog", "read_log", "recv_argv", "send_argv", "start_receiver", "start_sender"]

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
