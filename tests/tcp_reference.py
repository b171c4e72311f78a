"""Plain-Python reference of benchbook's TCP flow analysis (the tests compare the numba kernels against it).

Reads pcap and pcapng files with the standard library only (Ethernet with VLAN tags, Linux cooked v1/v2, raw
IP; IPv4/IPv6, no options beyond what the byte counts need) and keeps, per flow direction, the seen byte ranges
as a sorted list of intervals. Counts per direction: packets, frame bytes, payload bytes, unique bytes,
Zeek-, Wireshark- and tcptrace-rule retransmissions and out-of-order segments, SYN and FIN retransmissions,
keep-alives, zero-window probes, and per-bin (integer ns) payload and new bytes. Direction 0 is the sender of
a flow's first packet, or its receiver when that packet is a SYN-ACK. The rules are those of
benchbook.analysis.tcp_rules, written out again plainly.
"""

from __future__ import annotations

import struct
import subprocess
from collections import defaultdict
from pathlib import Path

SYN, FIN, RST, ACK = 0x02, 0x01, 0x04, 0x10


def packets(path: str | Path):
    """(ts_ns, wirelen, frame bytes, linktype) of every record of a pcap or pcapng file."""
    data = Path(path).read_bytes()
    if data[:4] == b"\x0a\x0d\x0d\x0a":
        yield from _pcapng(data)
        return
    magic = struct.unpack("<I", data[:4])[0]
    e = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    magic = struct.unpack(e + "I", data[:4])[0]
    mult = 1 if magic == 0xA1B23C4D else 1000
    linktype = struct.unpack(e + "I", data[20:24])[0] & 0xFFFF
    p = 24
    while p + 16 <= len(data):
        sec, frac, incl, orig = struct.unpack(e + "IIII", data[p:p + 16])
        if p + 16 + incl > len(data):
            break
        yield sec * 1_000_000_000 + frac * mult, orig, data[p + 16:p + 16 + incl], linktype
        p += 16 + incl


def _pcapng(data: bytes):
    p = 0
    e = "<"
    ifaces: list[tuple[int, int]] = []  # (linktype, ns per tick numerator as (base, exp))
    while p + 12 <= len(data):
        btype = struct.unpack(e + "I", data[p:p + 4])[0]
        if btype == 0x0A0D0D0A:
            e = "<" if data[p + 8:p + 12] == b"\x4d\x3c\x2b\x1a" else ">"
            ifaces = []
        blen = struct.unpack(e + "I", data[p + 4:p + 8])[0]
        body = data[p + 8:p + blen - 4]
        if btype == 1:
            lt = struct.unpack(e + "H", body[:2])[0]
            res = 6
            q = 8
            while q + 4 <= len(body):
                code, olen = struct.unpack(e + "HH", body[q:q + 4])
                if code == 0:
                    break
                if code == 9:
                    res = body[q + 4]
                q += 4 + (olen + 3) // 4 * 4
            ifaces.append((lt, res))
        elif btype == 6:
            iface, hi, lo, cap, orig = struct.unpack(e + "IIIII", body[:20])
            lt, res = ifaces[iface]
            ticks = (hi << 32) | lo
            ts = ticks * 10**9 // (2 ** (res & 0x7F)) if res & 0x80 else ticks * 10 ** (9 - res) if res <= 9 \
                else ticks // 10 ** (res - 9)
            yield ts, orig, body[20:20 + cap], lt
        elif btype == 3:
            orig = struct.unpack(e + "I", body[:4])[0]
            yield 0, orig, body[4:4 + min(orig, len(body) - 4)], ifaces[0][0]
        p += blen


def _ip_offset(frame: bytes, linktype: int) -> tuple[int, int] | None:
    """(offset of the IP header, ethertype-like protocol) for the link types the reference reads."""
    if linktype == 1:
        et, q = struct.unpack(">H", frame[12:14])[0], 14
        while et in (0x8100, 0x88A8):
            et = struct.unpack(">H", frame[q + 2:q + 4])[0]
            q += 4
        return q, et
    if linktype == 113:
        return 16, struct.unpack(">H", frame[14:16])[0]
    if linktype == 276:
        return 20, struct.unpack(">H", frame[0:2])[0]
    if linktype in (101, 12, 14, 228, 229):
        return 0, 0x0800 if frame[0] >> 4 == 4 else 0x86DD
    raise ValueError(f"the reference does not read link type {linktype}")


def parse(frame: bytes, linktype: int):
    """(src, dst, sport, dport, seq, ack, flags, payload_len, window) of a TCP frame, else None."""
    q, et = _ip_offset(frame, linktype)
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
    if len(frame) < t + 20:
        return None
    sport, dport, seq, ack, off, flags, win = struct.unpack(">HHIIBBH", frame[t:t + 16])
    return src, dst, sport, dport, seq, ack, flags, ip_payload - (off >> 4) * 4, win


class Direction:
    def __init__(self) -> None:
        self.packets = self.wire = self.payload = self.unique = 0
        self.rx_zeek = self.rx_tcptrace = self.ooo_tcptrace = self.rx_wireshark = self.ooo_wireshark = 0
        self.keepalive = self.zwp = self.syn_rx = self.fin_rx = 0
        self.isn: int | None = None
        self.start_seen = False
        self.high = 0  # end of the highest payload byte (or the SYN)
        self.recorded = False  # any byte (SYN or payload) recorded
        self.nxt: int | None = None  # Wireshark's nextseq
        self.nxt_ts = 0
        self.syn_pos: int | None = None
        self.fin_pos: int | None = None
        self.peer_ack: int | None = None  # the peer's last ACK number about this direction's data
        self.dupacks = 0  # the peer's duplicate ACKs since its ACK number last changed
        self.last_ts = 0
        self.win: int | None = None  # last raw window field sent
        self.seen: list[list[int]] = []  # sorted disjoint [start, end) ranges
        self.bins: dict[int, list[int]] = defaultdict(lambda: [0, 0])  # bin -> [payload, new]

    def unwrap(self, seq: int) -> int:
        rel = (seq - self.isn) % 2**32
        d = (rel - self.high % 2**32) % 2**32
        if d >= 2**31:
            d -= 2**32
        return self.high + d

    def add(self, start: int, end: int) -> int:
        """Mark [start, end) seen; return the bytes seen for the first time. A direction whose start was seen
        counts nothing below its SYN as new; otherwise coverage extends to the lowest byte seen."""
        lo = start if not self.start_seen else max(start, 0)
        new = max(0, end - lo)
        for s, e in self.seen:
            new -= max(0, min(e, end) - max(s, lo))
        out: list[list[int]] = []
        for s, e in sorted(self.seen + ([[lo, end]] if end > lo else [])):
            if out and s <= out[-1][1]:
                out[-1][1] = max(out[-1][1], e)
            else:
                out.append([s, e])
        self.seen = out
        return new


def counts(d: Direction) -> dict[str, int]:
    """One direction's counters under the flow-table column names (orig_/resp_ without the prefix)."""
    return {"packets": d.packets, "wire_bytes": d.wire, "payload_bytes": d.payload, "unique_bytes": d.unique,
            "retransmissions_zeek": d.rx_zeek, "retransmissions_wireshark": d.rx_wireshark,
            "out_of_order_wireshark": d.ooo_wireshark, "retransmissions_tcptrace": d.rx_tcptrace,
            "out_of_order_tcptrace": d.ooo_tcptrace, "syn_retransmissions": d.syn_rx,
            "fin_retransmissions": d.fin_rx, "keepalives": d.keepalive, "zero_window_probes": d.zwp}


def wireshark_class(d: Direction, peer: Direction, pos: int, plen: int, synfin: int, ts: int, thr: int) -> str:
    """"rx", "ooo" or "" as tcp_analyze_sequence_number flags the segment (keep-alives and probes excluded)."""
    not_adv = d.nxt is not None and pos < d.nxt and not (plen > 1 and pos == d.nxt - 1)
    if plen > 0 and d.peer_ack is not None and pos + plen <= d.peer_ack:
        return "rx"
    if not_adv and d.dupacks >= 2 and d.peer_ack == pos and ts - peer.last_ts < 20_000_000:
        return "rx"
    if not_adv and ts - d.nxt_ts < thr and d.nxt != pos + plen + synfin:
        return "ooo"
    return "rx" if not_adv else ""


def analyse(paths, bin_ns: int = 100_000_000) -> dict:
    """{(src, sport, dst, dport) of the originator: [Direction, Direction]} over the captures in order."""
    flows: dict[tuple, list[Direction]] = {}
    syn_times: dict[tuple, list[int | None]] = {}  # flow -> [most recent SYN, Wireshark's first RTT]
    t0 = None
    for path in paths:
        for ts, wire, frame, lt in packets(path):
            if t0 is None:
                t0 = ts
            r = parse(frame, lt)
            if r is None:
                continue
            src, dst, sport, dport, seq, ack, flags, plen, win = r
            if (src, sport, dst, dport) in flows:
                key, k = (src, sport, dst, dport), 0
            elif (dst, dport, src, sport) in flows:
                key, k = (dst, dport, src, sport), 1
            elif flags & 0x12 == 0x12:
                key, k = (dst, dport, src, sport), 1
                flows[key] = [Direction(), Direction()]
            else:
                key, k = (src, sport, dst, dport), 0
                flows[key] = [Direction(), Direction()]
            d, peer = flows[key][k], flows[key][1 - k]
            times = syn_times.setdefault(key, [None, None])
            if flags & SYN and not flags & ACK:
                times[0] = ts
            d.packets += 1
            d.wire += wire
            if d.isn is None:
                d.isn = seq
                d.start_seen = d.recorded = bool(flags & SYN)
                d.high = 1 if flags & SYN else 0
                d.seen = [[0, 1]] if flags & SYN else []
            pos = d.unwrap(seq)
            start = pos + (1 if flags & SYN else 0)
            end = start + plen
            synfin = 1 if flags & (SYN | FIN) else 0
            ctl = flags & (SYN | FIN | RST)
            keepalive = plen <= 1 and d.nxt is not None and pos == d.nxt - 1 and not ctl
            zwp = plen == 1 and d.nxt is not None and pos == d.nxt and peer.win == 0
            if plen > 0:
                d.payload += plen
                d.bins[(ts - t0) // bin_ns][0] += plen
            d.keepalive += keepalive
            if zwp:
                d.zwp += 1
            elif plen > 0 or synfin:
                thr = times[1] if times[1] and times[1] > 0 else 3_000_000
                ws = "" if keepalive else wireshark_class(d, peer, pos, plen, synfin, ts, thr)
                d.rx_wireshark += ws == "rx"
                d.ooo_wireshark += ws == "ooo"
                syn_rx = bool(flags & SYN) and d.syn_pos == pos
                fin_rx = bool(flags & FIN) and d.fin_pos is not None and end <= d.fin_pos
                d.syn_rx += syn_rx
                d.fin_rx += fin_rx
                overlap = 0
                if plen > 0:
                    new = d.add(start, end)
                    overlap = plen - new
                    d.unique += new
                    d.bins[(ts - t0) // bin_ns][1] += new
                    d.rx_zeek += end <= d.high
                    if not overlap and d.recorded and start < d.high:
                        d.ooo_tcptrace += 1
                    d.recorded = True
                d.rx_tcptrace += bool(overlap or syn_rx or fin_rx)
                if flags & SYN:
                    d.syn_pos = pos
                    d.recorded = True
                if flags & FIN:
                    d.fin_pos = end if d.fin_pos is None else max(d.fin_pos, end)
                d.high = max(d.high, end) if plen > 0 else d.high
            old_nxt = d.nxt
            if not zwp and (d.nxt is None or pos + plen + synfin > d.nxt):
                d.nxt, d.nxt_ts = pos + plen + synfin, ts
            if flags & (SYN | ACK) == ACK and times[0] is not None and not times[1]:
                times[1] = ts - times[0]
            if peer.isn is not None:
                a = peer.unwrap(ack) if flags & ACK else None
                if (plen == 0 and not ctl and a is not None and a == peer.peer_ack and win and win == d.win
                        and old_nxt is not None and pos == old_nxt):
                    peer.dupacks += 1
                elif a != peer.peer_ack:
                    peer.dupacks = 0
                peer.peer_ack = a
            d.win = win
            d.last_ts = ts
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
