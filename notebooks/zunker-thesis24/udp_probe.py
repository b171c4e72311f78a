"""A UDP latency probe: ``send`` paces numbered packets, ``recv`` records each one's one-way latency.

    python udp_probe.py send HOST PORT RATE_PPS DURATION_S SIZE_BYTES
    python udp_probe.py recv PORT DURATION_S OUT_FILE

Each packet carries its sequence number and the sender's CLOCK_MONOTONIC time in nanoseconds; sender and
receiver run in network namespaces of one host, which share that clock, so the receiver's difference is the
one-way latency (as in the thesis, where generator and measurer are namespaces of one machine). ``recv``
writes one line per packet received, "seq send_ns recv_ns", to OUT_FILE when DURATION_S has passed.
"""

from __future__ import annotations

import socket
import struct
import sys
import time

HEADER = struct.Struct("!Qq")


def send(host: str, port: int, rate_pps: float, duration_s: float, size: int) -> int:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    pad = b"\0" * max(0, size - HEADER.size)
    n = int(rate_pps * duration_s)
    t0 = time.monotonic_ns()
    for seq in range(n):
        due = t0 + int(seq * 1e9 / rate_pps)
        wait = due - time.monotonic_ns()
        if wait > 0:
            time.sleep(wait / 1e9)
        sock.sendto(HEADER.pack(seq, time.monotonic_ns()) + pad, (host, port))
    return n


def recv(port: int, duration_s: float, out: str) -> int:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("0.0.0.0", port))
    end = time.monotonic() + duration_s
    rows = []
    while (left := end - time.monotonic()) > 0:
        sock.settimeout(left)
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


if __name__ == "__main__":
    if len(sys.argv) == 7 and sys.argv[1] == "send":
        print(send(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])))
    elif len(sys.argv) == 5 and sys.argv[1] == "recv":
        print(recv(int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]))
    else:
        sys.exit(__doc__)
