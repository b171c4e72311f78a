"""Synthetic TCP captures of bulk flows with known truth (for tests and benchmarks).

Each flow is an Ethernet/IPv4 TCP connection: handshake (SYN with MSS, SACK-permitted, timestamps and window
scale; SYN-ACK; ACK), ``segments`` data segments of ``mss`` payload bytes from the originator at the flow's
rate, one cumulative ACK from the receiver every second segment received (and for every segment received
out of order), sent ``ack_delay_ns`` after that segment, then FIN, FIN-ACK and the last ACK. Every segment
carries TSval (the sender's clock in ms) and TSecr. The capture point is the sender's side: a "lost" segment
is captured once, then sent again ``retransmit_after`` segments later (the receiver's ACK waits at the hole);
a "reordered" segment is sent right after its successor. Sequence numbers start at a random ISN; flow 0
starts ``2**32 - wrap_before`` below the wrap, so its sequence numbers wrap. Frames are captured up to
``snaplen`` bytes (wire length stays the full frame).

Truth per flow (``TcpTruth.flows``): data segments (new and retransmitted), ACK segments, payload bytes,
unique bytes (= segments x mss), retransmissions, reordered segments, frame bytes per direction and the
ACK delay, which is the minimum data -> ACK RTT any analyser must find.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from benchbook.capture.writer import PcapWriter
from benchbook.kernels import njit

HDR = 14 + 20 + 32  # Ethernet + IPv4 + TCP with NOP NOP timestamps
SYN_HDR = 14 + 20 + 40

# event kinds
EV_SYN, EV_SYNACK, EV_ACK3, EV_DATA, EV_FIN, EV_FINACK, EV_LASTACK, EV_DONE = range(8)

# per-flow state columns
(F_NEXT_T, F_PHASE, F_SENT, F_SEQ0, F_RSEQ0, F_GAP, F_START, F_PEND_RX, F_PEND_RX_AT, F_HELD, F_RCV_HIGH,
 F_RCV_CNT, F_QHEAD, F_QCOUNT, F_DATA_PKTS, F_ACK_PKTS, F_PAY, F_RX, F_REORD, F_WIRE0, F_WIRE1, F_IPID0,
 F_IPID1, F_LAST_TSV, F_HOLE, F_SINCE_LOSS, F_OOO_PENDING) = range(27)
N_F = 27
QSIZE = 4096


@dataclass
class TcpTruth:
    """Per-flow truth of a generated capture and the parameters that made it."""

    packets: int
    flows: list[dict] = field(default_factory=list)
    params: dict = field(default_factory=dict)


@njit(cache=True, inline="always")
def _put16(b, p, v):
    b[p] = (v >> 8) & 0xFF
    b[p + 1] = v & 0xFF


@njit(cache=True, inline="always")
def _put32(b, p, v):
    b[p] = (v >> 24) & 0xFF
    b[p + 1] = (v >> 16) & 0xFF
    b[p + 2] = (v >> 8) & 0xFF
    b[p + 3] = v & 0xFF


@njit(cache=True)
def _frame_typed(out, p, t, snaplen, src, dst, sport, dport, seq, ack, flags, plen, tsval, tsecr, ipid, syn):
    """Write one pcap record (header + frame cut at snaplen) at out[p]; return (new p, wire length)."""
    hdr = SYN_HDR if syn else HDR
    wire = hdr + plen
    cap = min(wire, snaplen)
    sec = t // 1_000_000_000
    ns = t - sec * 1_000_000_000
    # pcap record header, little-endian, nanosecond file
    for k in range(4):
        out[p + k] = (sec >> (8 * k)) & 0xFF
        out[p + 4 + k] = (ns >> (8 * k)) & 0xFF
        out[p + 8 + k] = (cap >> (8 * k)) & 0xFF
        out[p + 12 + k] = (wire >> (8 * k)) & 0xFF
    q = p + 16
    f = np.zeros(hdr, np.uint8)
    f[0:6] = 0x02
    f[5] = 0x02
    f[6:12] = 0x02
    f[11] = 0x01
    _put16(f, 12, 0x0800)
    f[14] = 0x45
    _put16(f, 16, wire - 14)
    _put16(f, 18, ipid & 0xFFFF)
    _put16(f, 20, 0x4000)
    f[22] = 64
    f[23] = 6
    _put32(f, 26, src)
    _put32(f, 30, dst)
    _put16(f, 34, sport)
    _put16(f, 36, dport)
    _put32(f, 38, seq & 0xFFFFFFFF)
    _put32(f, 42, ack & 0xFFFFFFFF)
    f[46] = (10 if syn else 8) << 4
    f[47] = flags
    _put16(f, 48, 0xFFFF if syn else 1024)
    o = 54
    if syn:
        f[o], f[o + 1] = 2, 4
        _put16(f, o + 2, 1460)
        f[o + 4], f[o + 5] = 4, 2
        o += 6
    else:
        f[o], f[o + 1] = 1, 1
        o += 2
    f[o], f[o + 1] = 8, 10
    _put32(f, o + 2, tsval & 0xFFFFFFFF)
    _put32(f, o + 6, tsecr & 0xFFFFFFFF)
    o += 10
    if syn:
        f[o], f[o + 1], f[o + 2], f[o + 3] = 1, 3, 3, 7
    n = min(hdr, cap)
    out[q : q + n] = f[:n]
    if cap > hdr:
        out[q + hdr : q + cap] = 0
    return q + cap, wire


@njit(cache=True, inline="always")
def _frame(out, p, t, snaplen, src, dst, sport, dport, seq, ack, flags, plen, tsval, tsecr, ipid, syn):
    """_frame_typed with every scalar as int64: called with constants, numba compiled a version for each
    combination of literal arguments (24 of them: the generator's JIT took 18 s, now 8 s)."""
    i8 = np.int64
    return _frame_typed(out, i8(p), i8(t), i8(snaplen), i8(src), i8(dst), i8(sport), i8(dport), i8(seq), i8(ack),
                        i8(flags), i8(plen), i8(tsval), i8(tsecr), i8(ipid), np.bool_(syn))


@njit(cache=True)
def _generate(st, queue, rcv, n_flows, segments, mss, ack_delay_ns, hs_rtt_ns, loss_u, reorder_u, retransmit_after,
              snaplen, out, max_bytes):
    """Emit events in time order into out until it is nearly full or all flows are done.

    Returns (bytes used, packets written). Random choices come from the per-flow uniform draws loss_u and
    reorder_u (one per segment index)."""
    p = 0
    npk = 0
    while p + 16 + SYN_HDR + 64 < max_bytes:
        # the flow with the earliest next event (own sequence or pending ACK)
        best = -1
        best_t = np.int64(1) << 62
        for f in range(n_flows):
            t = st[f, F_NEXT_T] if st[f, F_PHASE] != EV_DONE else np.int64(1) << 62
            if st[f, F_QCOUNT] > 0:
                qt = queue[f, st[f, F_QHEAD], 0]
                if qt < t:
                    t = qt
            if t < best_t:
                best_t = t
                best = f
        if best < 0:
            break
        f = best
        t = best_t
        src = 0x0A000001 + f * 256
        dst = 0x0A0000FE
        sport = 40000 + f
        dport = 5201
        tsv = t // 1_000_000
        isn = st[f, F_SEQ0]
        risn = st[f, F_RSEQ0]
        if st[f, F_QCOUNT] > 0 and queue[f, st[f, F_QHEAD], 0] == t:
            h = st[f, F_QHEAD]
            ackno = queue[f, h, 1]
            echo = queue[f, h, 2]
            fl = queue[f, h, 3]
            st[f, F_QHEAD] = (h + 1) % QSIZE
            st[f, F_QCOUNT] -= 1
            p, w = _frame(out, p, t, snaplen, dst, src, dport, sport, risn + 1 + (1 if fl & 1 else 0),
                          isn + ackno, 0x10 | (fl & 1), 0, tsv, echo, st[f, F_IPID1], False)
            st[f, F_IPID1] += 1
            st[f, F_ACK_PKTS] += 1
            st[f, F_WIRE1] += w
            npk += 1
            continue
        ph = st[f, F_PHASE]
        if ph == EV_SYN:
            p, w = _frame(out, p, t, snaplen, src, dst, sport, dport, isn, 0, 0x02, 0, tsv, 0, st[f, F_IPID0], True)
            st[f, F_IPID0] += 1
            st[f, F_WIRE0] += w
            st[f, F_PHASE] = EV_SYNACK
            st[f, F_NEXT_T] = t + hs_rtt_ns // 2
        elif ph == EV_SYNACK:
            p, w = _frame(out, p, t, snaplen, dst, src, dport, sport, risn, isn + 1, 0x12, 0, tsv, tsv,
                          st[f, F_IPID1], True)
            st[f, F_IPID1] += 1
            st[f, F_WIRE1] += w
            st[f, F_PHASE] = EV_ACK3
            st[f, F_NEXT_T] = t + hs_rtt_ns - hs_rtt_ns // 2
        elif ph == EV_ACK3:
            p, w = _frame(out, p, t, snaplen, src, dst, sport, dport, isn + 1, risn + 1, 0x10, 0, tsv, tsv,
                          st[f, F_IPID0], False)
            st[f, F_IPID0] += 1
            st[f, F_WIRE0] += w
            st[f, F_PHASE] = EV_DATA
            st[f, F_NEXT_T] = t + st[f, F_GAP]
        elif ph == EV_DATA:
            k = -1
            rx = False
            fresh = False
            if st[f, F_HELD] >= 0:
                k = st[f, F_HELD]
                st[f, F_HELD] = -1
            elif st[f, F_PEND_RX] >= 0 and (st[f, F_SINCE_LOSS] >= retransmit_after or st[f, F_SENT] >= segments):
                k = st[f, F_PEND_RX]
                st[f, F_PEND_RX] = -1
                rx = True
            elif st[f, F_SENT] < segments:
                k = st[f, F_SENT]
                st[f, F_SENT] += 1
                fresh = True
                if st[f, F_PEND_RX] >= 0:
                    st[f, F_SINCE_LOSS] += 1
                if reorder_u[f, k] and st[f, F_SENT] < segments:
                    st[f, F_HELD] = k  # hold k back: send k + 1 first
                    st[f, F_REORD] += 1
                    k = st[f, F_SENT]
                    st[f, F_SENT] += 1
                    fresh = False
            if k < 0:
                if st[f, F_QCOUNT] > 0:  # wait for the last ACKs before the FIN
                    st[f, F_NEXT_T] = queue[f, (st[f, F_QHEAD] + st[f, F_QCOUNT] - 1) % QSIZE, 0] + 1
                    continue
                st[f, F_PHASE] = EV_FIN
                st[f, F_NEXT_T] = t + 1
                continue
            seq = isn + 1 + k * mss
            p, w = _frame(out, p, t, snaplen, src, dst, sport, dport, seq, risn + 1, 0x18, mss, tsv,
                          st[f, F_LAST_TSV], st[f, F_IPID0], False)
            st[f, F_IPID0] += 1
            st[f, F_WIRE0] += w
            st[f, F_DATA_PKTS] += 1
            st[f, F_PAY] += mss
            if rx:
                st[f, F_RX] += 1
            if fresh and loss_u[f, k] and st[f, F_PEND_RX] < 0:
                st[f, F_PEND_RX] = k  # captured here, lost after the capture point
                st[f, F_SINCE_LOSS] = 0
            else:
                rcv[f, k] = True
                if k + 1 > st[f, F_HOLE]:
                    st[f, F_HOLE] = k + 1  # highest segment received + 1
                while st[f, F_RCV_HIGH] < segments and rcv[f, st[f, F_RCV_HIGH]]:
                    st[f, F_RCV_HIGH] += 1
                st[f, F_RCV_CNT] += 1
                out_of_order = st[f, F_HOLE] > st[f, F_RCV_HIGH] or k + 1 != st[f, F_RCV_HIGH]
                if st[f, F_RCV_CNT] % 2 == 0 or out_of_order or rx:
                    qh = (st[f, F_QHEAD] + st[f, F_QCOUNT]) % QSIZE
                    queue[f, qh, 0] = t + ack_delay_ns
                    queue[f, qh, 1] = 1 + st[f, F_RCV_HIGH] * mss
                    queue[f, qh, 2] = tsv
                    queue[f, qh, 3] = 0
                    st[f, F_QCOUNT] += 1
            st[f, F_LAST_TSV] = tsv
            st[f, F_NEXT_T] = t + st[f, F_GAP]
        elif ph == EV_FIN:
            seq = isn + 1 + segments * mss
            p, w = _frame(out, p, t, snaplen, src, dst, sport, dport, seq, risn + 1, 0x11, 0, tsv,
                          st[f, F_LAST_TSV], st[f, F_IPID0], False)
            st[f, F_IPID0] += 1
            st[f, F_WIRE0] += w
            qh = (st[f, F_QHEAD] + st[f, F_QCOUNT]) % QSIZE
            queue[f, qh, 0] = t + ack_delay_ns
            queue[f, qh, 1] = 1 + segments * mss + 1
            queue[f, qh, 2] = tsv
            queue[f, qh, 3] = 1  # FIN-ACK
            st[f, F_QCOUNT] += 1
            st[f, F_PHASE] = EV_LASTACK
            st[f, F_NEXT_T] = t + ack_delay_ns + 1
        elif ph == EV_LASTACK:
            seq = isn + 1 + segments * mss + 1
            p, w = _frame(out, p, t, snaplen, src, dst, sport, dport, seq, risn + 2, 0x10, 0, tsv, tsv,
                          st[f, F_IPID0], False)
            st[f, F_IPID0] += 1
            st[f, F_WIRE0] += w
            st[f, F_PHASE] = EV_DONE
        npk += 1
    return p, npk


def make_tcp_capture(
    path: str | Path, flows: int = 8, segments: int = 10_000, mss: int = 1448, rate_bps: float = 100e6,
    ack_delay_ns: int = 200_000, handshake_rtt_ns: int = 400_000, loss: float = 0.001, reorder: float = 0.001,
    retransmit_after: int = 3, snaplen: int = 96, wrap_before: int = 100_000, stagger_ns: int = 1_000_000,
    seed: int = 0,
) -> TcpTruth:
    """Write a nanosecond pcap of ``flows`` bulk flows; return the truth. About 1.5 x flows x segments packets."""
    rng = np.random.default_rng(seed)
    loss_u = rng.random((flows, segments)) < loss
    reorder_u = rng.random((flows, segments)) < reorder
    st = np.zeros((flows, N_F), np.int64)
    queue = np.zeros((flows, QSIZE, 4), np.int64)
    rcv = np.zeros((flows, segments), np.bool_)
    wire = HDR + mss
    start_ns = 1_700_000_000_000_000_000
    for f in range(flows):
        st[f, F_START] = start_ns + f * stagger_ns
        st[f, F_NEXT_T] = st[f, F_START]
        st[f, F_PHASE] = EV_SYN
        st[f, F_SEQ0] = (2**32 - wrap_before) if f == 0 else int(rng.integers(0, 2**32))
        st[f, F_RSEQ0] = int(rng.integers(0, 2**32))
        st[f, F_GAP] = max(1, round(wire * 8 / rate_bps * 1e9))
        st[f, F_PEND_RX] = -1
        st[f, F_HELD] = -1
    buf_bytes = 32 << 20
    total = 0
    with PcapWriter(path, nanosecond=True, snaplen=snaplen) as w:
        while True:
            out = np.empty(buf_bytes, np.uint8)
            used, n = _generate(st, queue, rcv, flows, segments, mss, ack_delay_ns, handshake_rtt_ns, loss_u, reorder_u,
                                retransmit_after, snaplen, out, buf_bytes)
            if n == 0:
                break
            w.write_raw(out[:used], n)
            total += n
    truth = TcpTruth(packets=total, params={
        "flows": flows, "segments": segments, "mss": mss, "rate_bps": rate_bps, "ack_delay_ns": ack_delay_ns,
        "handshake_rtt_ns": handshake_rtt_ns, "loss": loss, "reorder": reorder, "retransmit_after": retransmit_after,
        "snaplen": snaplen, "wrap_before": wrap_before, "seed": seed})
    for f in range(flows):
        truth.flows.append({
            "src": f"10.0.{f}.1", "sport": 40000 + f, "dst": "10.0.0.254", "dport": 5201,
            "data_segments": int(st[f, F_DATA_PKTS]), "ack_segments": int(st[f, F_ACK_PKTS]),
            "payload_bytes": int(st[f, F_PAY]), "unique_bytes": segments * mss,
            "retransmissions": int(st[f, F_RX]), "reordered": int(st[f, F_REORD]),
            "orig_wire_bytes": int(st[f, F_WIRE0]), "resp_wire_bytes": int(st[f, F_WIRE1]),
            "isn": int(st[f, F_SEQ0]), "ack_delay_ns": ack_delay_ns,
        })
    return truth
