"""Plain-Python reference of benchbook's TCP flow analysis (the tests compare the numba kernels against it).

Reads pcap files with the standard library only (Ethernet/VLAN/IPv4/IPv6, no options beyond what the byte
counts need) and keeps, per flow direction, the seen byte ranges as a sorted list of intervals. Counts per
direction: packets, frame bytes, payload bytes, unique bytes, sequence span, Zeek-rule and tcptrace-rule
retransmissions and out-of-order segments, keep-alives, and per-bin (integer ns) payload and new bytes.
Direction 0 is the sender of a flow's first packet, or its receiver when that packet is a SYN-ACK.
"""

from __future__ import annotations

import struct
import subprocess
from collections import defaultdict
from pathlib import Path


def packets(path: str | Path):
    """(ts_ns, wirelen, frame bytes) of every record of a libpcap file (either byte order, µs or ns)."""
    data = Path(path).read_bytes()
    magic = struct.unpack("<I", data[:4])[0]
    e = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    magic = struct.unpack(e + "I", data[:4])[0]
    mult = 1 if magic == 0xA1B23C4D else 1000
    linktype = struct.unpack(e + "I", data[20:24])[0]
    p = 24
    while p + 16 <= len(data):
        sec, frac, incl, orig = struct.unpack(e + "IIII", data[p:p + 16])
        if p + 16 + incl > len(data):
            break
        yield sec * 1_000_000_000 + frac * mult, orig, data[p + 16:p + 16 + incl], linktype
        p += 16 + incl


def parse(frame: bytes, linktype: int):
    """(src, dst, sport, dport, seq, ack, flags, payload_len) of a TCP frame, else None."""
    if linktype != 1:
        raise ValueError("the reference reads Ethernet captures only")
    et = struct.unpack(">H", frame[12:14])[0]
    q = 14
    while et in (0x8100, 0x88A8):
        et = struct.unpack(">H", frame[q + 2:q + 4])[0]
        q += 4
    if et == 0x0800:
        ihl = (frame[q] & 15) * 4
        total = struct.unpack(">H", frame[q + 2:q + 4])[0]
        if frame[q + 9] != 6 or struct.unpack(">H", frame[q + 6:q + 8])[0] & 0x1FFF:
            return None
        src, dst = frame[q + 12:q + 16], frame[q + 16:q + 20]
        t = q + ihl
        ip_payload = total - ihl
    elif et == 0x86DD:
        if frame[q + 6] != 6:
            return None
        ip_payload = struct.unpack(">H", frame[q + 4:q + 6])[0]
        src, dst = frame[q + 8:q + 24], frame[q + 24:q + 40]
        t = q + 40
    else:
        return None
    sport, dport, seq, ack, off, flags = struct.unpack(">HHIIBB", frame[t:t + 14])
    return src, dst, sport, dport, seq, ack, flags, ip_payload - (off >> 4) * 4


class Direction:
    def __init__(self) -> None:
        self.packets = self.wire = self.payload = self.unique = 0
        self.rx_zeek = self.rx_tcptrace = self.ooo_tcptrace = self.keepalive = 0
        self.isn: int | None = None
        self.high = 0
        self.first = 0
        self.seen: list[list[int]] = []  # sorted disjoint [start, end) ranges
        self.bins: dict[int, list[int]] = defaultdict(lambda: [0, 0])  # bin -> [payload, new]

    def unwrap(self, seq: int) -> int:
        rel = (seq - self.isn) % 2**32
        d = (rel - self.high % 2**32) % 2**32
        if d >= 2**31:
            d -= 2**32
        return self.high + d

    def add(self, start: int, end: int) -> int:
        """Mark [start, end) seen; return the bytes seen for the first time."""
        new = end - start
        for s, e in self.seen:
            new -= max(0, min(e, end) - max(s, start))
        new -= max(0, min(end, self.first) - start)  # below the first sequence number: not new
        merged = sorted(self.seen + [[max(start, self.first), end]] if end > self.first else self.seen)
        out: list[list[int]] = []
        for s, e in merged:
            if s >= e:
                continue
            if out and s <= out[-1][1]:
                out[-1][1] = max(out[-1][1], e)
            else:
                out.append([s, e])
        self.seen = out
        return max(0, new)


def analyse(paths, bin_ns: int = 100_000_000) -> dict:
    """{(src, sport, dst, dport) of the originator: [Direction, Direction]} over the captures in order."""
    flows: dict[tuple, list[Direction]] = {}
    t0 = None
    for path in paths:
        for ts, wire, frame, lt in packets(path):
            if t0 is None:
                t0 = ts
            r = parse(frame, lt)
            if r is None:
                continue
            src, dst, sport, dport, seq, _ack, flags, plen = r
            if (src, sport, dst, dport) in flows:
                d = flows[(src, sport, dst, dport)][0]
            elif (dst, dport, src, sport) in flows:
                d = flows[(dst, dport, src, sport)][1]
            elif flags & 0x12 == 0x12:
                flows[(dst, dport, src, sport)] = [Direction(), Direction()]
                d = flows[(dst, dport, src, sport)][1]
            else:
                flows[(src, sport, dst, dport)] = [Direction(), Direction()]
                d = flows[(src, sport, dst, dport)][0]
            d.packets += 1
            d.wire += wire
            if d.isn is None:
                d.isn = seq
                d.high = d.first = 1 if flags & 0x02 else 0
            start = d.unwrap(seq) + (1 if flags & 0x02 else 0)
            if plen <= 0:
                continue
            d.payload += plen
            b = d.bins[(ts - t0) // bin_ns]
            b[0] += plen
            end = start + plen
            if plen <= 1 and start == d.high - 1 and not flags & 0x07:
                d.keepalive += 1
                continue
            new = d.add(start, end)
            d.unique += new
            b[1] += new
            if end <= d.high:
                d.rx_zeek += 1
            if new < plen:
                d.rx_tcptrace += 1
            elif start < d.high:
                d.ooo_tcptrace += 1
            d.high = max(d.high, end)
    return flows


def tshark_wireshark_rule(exe: str, path: Path) -> dict[int, tuple[int, int, int]]:
    """Per source port: (retransmissions, out-of-order segments, max bytes in flight) as tshark flags them on
    payload segments (retransmission covers fast and spurious ones too)."""
    out = subprocess.run(
        [exe, "-r", str(path), "-Y", "tcp.len > 0", "-T", "fields", "-E", "separator=,", "-e", "tcp.srcport",
         "-e", "tcp.analysis.retransmission", "-e", "tcp.analysis.fast_retransmission",
         "-e", "tcp.analysis.spurious_retransmission", "-e", "tcp.analysis.out_of_order",
         "-e", "tcp.analysis.bytes_in_flight"], capture_output=True, text=True, check=True).stdout
    res: dict[int, list[int]] = {}
    for line in out.splitlines():
        port, rx, fast, spurious, ooo, infl = line.split(",")
        r = res.setdefault(int(port), [0, 0, 0])
        r[0] += bool(rx or fast or spurious)
        r[1] += bool(ooo)
        r[2] = max(r[2], int(infl or 0))
    return {k: tuple(v) for k, v in res.items()}
