"""The streaming TCP flow kernel: one pass over capture chunks, a flow table holding both directions.

A flow is keyed by its two (address, port) endpoints (IPv4 addresses as IPv4-mapped IPv6). Direction 0 is
the originator: the sender of the first packet seen, or the receiver when that packet is a SYN-ACK. Per
direction the kernel keeps packet and byte counters, the unwrapped 64-bit sequence state (first sequence
number seen as base, so a 32-bit wrap is just more bytes), the byte ranges not yet seen between the lowest
and the highest sequence seen (``MAX_HOLES`` holes; a full list forgets its lowest hole, whose bytes then stay
missing), the state of the retransmission rules (:mod:`benchbook.analysis.tcp_rules`), the per-interval
accumulators and the RTT rings (:mod:`benchbook.analysis.tcp_rtt`).

A direction whose first packet is a SYN has its start seen: its coverage starts at the SYN. Otherwise
(``S_START_SEEN`` 0, the capture began mid-connection) coverage starts at the first packet's sequence number
and extends downwards when payload below the lowest byte seen arrives: those bytes are new, and the gap
between them and the bytes seen before becomes a hole (tcptrace's byte ranges start wherever the first segment
is, too).

The kernel stops before a packet when the flow table or an output buffer needs room; the driver grows or
drains them (or evicts finished flows, see ``evictable``) and calls it again from that packet. Interval rows
are flushed when a direction's packet falls into a new bin; rows of one (flow, direction, bin) can appear
twice only if timestamps go backwards, and the driver sums them. Bins are ``(t - t0) // bin_ns`` on integer
nanoseconds, t0 = first packet of the run.
"""

from __future__ import annotations

import numpy as np

from benchbook.analysis import tcp_parse as tp
from benchbook.analysis import tcp_rtt as rt
from benchbook.analysis import tcp_rules as tr
from benchbook.kernels import njit

MAX_HOLES = 16

# kernel return status
DONE, GROW_FLOWS, FLUSH_IV, FLUSH_RTT = 0, 1, 2, 3

# flow slots (fl[f, ...])
(FL_OA_HI, FL_OA_LO, FL_RA_HI, FL_RA_LO, FL_OPORT, FL_RPORT, FL_IPV, FL_FIRST_TS, FL_LAST_TS, FL_SYN_TS,
 FL_SYNACK_TS, FL_ACK3_TS, FL_HS, FL_FIRST_OFF, FL_FIRST_FILE, FL_SYNACK_SEQ, FL_GID, FL_MRU_SYN_TS,
 FL_WS_RTT) = range(19)
N_FL = 19

# direction slots (st[f, d, ...])
(S_PKTS, S_WIRE, S_PAY, S_PSEGS, S_ISN, S_HIGH, S_INIT, S_SYNS, S_FINS, S_RSTS, S_NEW, S_RX_Z, S_RX_WS, S_OOO_WS,
 S_RX_TT, S_OOO_TT, S_RXB_TT, S_NXT, S_ACKED, S_ACKED_OK, S_DUPACKS, S_NXT_TS, S_NXT_OK, S_WSCALE, S_MSS,
 S_SACKOK, S_SACKS, S_TSOPTS, S_KEEPALIVE, S_ZWP, S_NHOLES, S_FIRST_TS, S_LAST_TS, S_CUR_BIN,
 B_PKTS, B_WIRE, B_PAY, B_NEW, B_RXS, B_RXB, B_OOO, B_ACKS, B_IATSUM, B_IATN, B_INFL_MAX,
 S_ADV_ACK_TS, S_TS_HEAD, S_TS_COUNT, S_SEG_HEAD, S_SEG_COUNT, S_FIRST_DATA, S_LOST_HOLE_BYTES,
 S_RXB_Z, S_RXB_WS, S_WIN_OK, S_LAST_WIN_RAW, S_IPBYTES, S_UNCAPTURED, S_BIN_START, S_BIN_END,
 S_LOW, S_RECORDED, S_START_SEEN, S_PACK, S_PACK_OK, S_SYN_SEEN, S_SYN_POS, S_FIN_SEEN, S_FIN_POS, S_SYN_RX,
 S_FIN_RX) = range(71)
N_ST = 71
B_FIRST, B_LAST = B_PKTS, B_INFL_MAX

# interval row columns: flow, dir, bin, then the B_* accumulators in order
IV_FLOW, IV_DIR, IV_BIN = 0, 1, 2
N_IV = 3 + (B_LAST - B_FIRST + 1)
IV_NAMES = ("packets", "wire_bytes", "payload_bytes", "goodput_bytes", "retransmitted_segments",
            "retransmitted_bytes", "out_of_order_segments", "advancing_acks", "ack_interarrival_sum_ns",
            "ack_interarrival_count", "bytes_in_flight_max")

# run counters
(C_PKTS, C_TCP, C_NOT_TCP, C_MALFORMED, C_MAL_OFF, C_MAL_FILE, C_NFLOWS, C_NIV, C_NRTT, C_T0, C_BACKWARDS,
 C_LAST_TS, C_HOLE_OVERFLOW, C_NEXT_GID) = range(14)
N_C = 14

HASH_M1 = np.uint64(0x9E3779B97F4A7C15)
HASH_M2 = np.uint64(0xC2B2AE3D27D4EB4F)


def new_state(flows: int = 64, iv_rows: int = 1 << 14, rtt_rows: int = 1 << 16) -> dict[str, np.ndarray]:
    """Empty flow table (room for ``flows`` flows) and output buffers."""
    c = np.zeros(N_C, np.int64)
    c[C_MAL_OFF] = -1
    c[C_T0] = np.iinfo(np.int64).min
    return {
        "fl": np.zeros((flows, N_FL), np.int64),
        "st": np.zeros((flows, 2, N_ST), np.int64),
        "holes": np.zeros((flows, 2, MAX_HOLES + 1, 2), np.int64),  # a spare slot for a split
        "tsr": np.zeros((flows, 2, rt.TS_RING, 2), np.int64),
        "sgr": np.zeros((flows, 2, rt.SEG_RING, 2), np.int64),
        "slots": np.full(4 * flows, -1, np.int64),
        "iv": np.zeros((iv_rows, N_IV), np.int64),
        "rtt": np.zeros((rtt_rows, rt.N_R), np.int64),
        "c": c,
    }


def grow_flows(state: dict[str, np.ndarray]) -> None:
    """Double the flow table and rehash."""
    n = state["fl"].shape[0]
    for k in ("fl", "st", "holes", "tsr", "sgr"):
        old = state[k]
        new = np.zeros((2 * n, *old.shape[1:]), old.dtype)
        new[:n] = old
        state[k] = new
    slots = np.full(8 * n, -1, np.int64)
    _rehash(state["fl"], int(state["c"][C_NFLOWS]), slots)
    state["slots"] = slots


CLOSE_TIMEOUT_NS = 5_000_000_000
IDLE_TIMEOUT_NS = 300_000_000_000


def evictable(state: dict[str, np.ndarray], close_timeout_ns: int = CLOSE_TIMEOUT_NS,
              idle_timeout_ns: int = IDLE_TIMEOUT_NS) -> np.ndarray:
    """Table slots of finished flows: RST seen or FIN seen both ways, and nothing for ``close_timeout_ns``; or
    nothing at all for ``idle_timeout_ns`` (a later packet of the same endpoints then starts a new flow)."""
    c = state["c"]
    n = int(c[C_NFLOWS])
    fl, st = state["fl"][:n], state["st"][:n]
    idle = c[C_LAST_TS] - fl[:, FL_LAST_TS]
    closed = (st[:, :, S_RSTS].sum(axis=1) > 0) | ((st[:, 0, S_FINS] > 0) & (st[:, 1, S_FINS] > 0))
    return np.flatnonzero((closed & (idle > close_timeout_ns)) | (idle > idle_timeout_ns))


def evict(state: dict[str, np.ndarray], slots_out: np.ndarray) -> dict[str, np.ndarray]:
    """Take the given slots out of the table (their open bins must be flushed already); returns their rows of
    fl, st and holes (the small per-flow state the report needs) and compacts the table."""
    c = state["c"]
    n = int(c[C_NFLOWS])
    keep = np.ones(n, bool)
    keep[slots_out] = False
    gone = {k: state[k][slots_out].copy() for k in ("fl", "st", "holes")}
    live = np.flatnonzero(keep)
    for k in ("fl", "st", "holes", "tsr", "sgr"):
        arr = state[k]
        arr[: live.size] = arr[live]
        arr[live.size : n] = 0
    c[C_NFLOWS] = live.size
    state["slots"].fill(-1)
    _rehash(state["fl"], live.size, state["slots"])
    return gone


@njit(cache=True, inline="always")
def _hash(a_hi, a_lo, b_hi, b_lo, pa, pb):
    # symmetric in the two endpoints: combine the hashes of both with xor-free commutative arithmetic
    ha = (np.uint64(a_hi) * HASH_M1) ^ (np.uint64(a_lo) * HASH_M2) ^ (np.uint64(pa) * HASH_M1 * HASH_M2)
    hb = (np.uint64(b_hi) * HASH_M1) ^ (np.uint64(b_lo) * HASH_M2) ^ (np.uint64(pb) * HASH_M1 * HASH_M2)
    h = (ha + hb) * HASH_M2
    h ^= h >> np.uint64(29)
    return h


@njit(cache=True, nogil=True)
def _rehash(fl, nflows, slots):
    mask = np.uint64(slots.shape[0] - 1)
    for f in range(nflows):
        h = _hash(fl[f, FL_OA_HI], fl[f, FL_OA_LO], fl[f, FL_RA_HI], fl[f, FL_RA_LO], fl[f, FL_OPORT],
                  fl[f, FL_RPORT]) & mask
        while slots[h] != -1:
            h = (h + np.uint64(1)) & mask
        slots[h] = f


@njit(cache=True, inline="always")
def _is_flow(fl, g, o_hi, o_lo, o_port, r_hi, r_lo, r_port):
    """Whether flow g was opened by (o_hi, o_lo):o_port towards (r_hi, r_lo):r_port."""
    return (fl[g, FL_OPORT] == o_port and fl[g, FL_RPORT] == r_port and fl[g, FL_OA_LO] == o_lo
            and fl[g, FL_RA_LO] == r_lo and fl[g, FL_OA_HI] == o_hi and fl[g, FL_RA_HI] == r_hi)


@njit(cache=True, inline="always")
def _unwrap(v32, isn, ref):
    """64-bit position of 32-bit sequence number v32 relative to isn, nearest to ref."""
    rel = (v32 - isn) & 0xFFFFFFFF
    d = (rel - (ref & 0xFFFFFFFF)) & 0xFFFFFFFF
    if d >= 0x80000000:
        d -= 0x100000000
    return ref + d


@njit(cache=True, inline="always")
def _remove_hole(holes, f, d, n, j):
    """Remove hole j of the n holes of direction d of flow f (the later ones move up); return n - 1."""
    for k in range(j, n - 1):
        holes[f, d, k, 0] = holes[f, d, k + 1, 0]
        holes[f, d, k, 1] = holes[f, d, k + 1, 1]
    return n - 1


@njit(cache=True, inline="always")
def _give_up_oldest_hole(holes, st, f, d, n, c):
    """The hole list is full: count the oldest hole's bytes as lost for good, drop it and return n - 1."""
    st[f, d, S_LOST_HOLE_BYTES] += holes[f, d, 0, 1] - holes[f, d, 0, 0]
    c[C_HOLE_OVERFLOW] += 1
    return _remove_hole(holes, f, d, n, 0)


@njit(cache=True, inline="always")
def _cover(holes, st, f, d, start, end, c):
    """Mark [start, end) seen in direction d of flow f; return how many of its bytes are new."""
    high = st[f, d, S_HIGH]
    new = np.int64(0)
    n = st[f, d, S_NHOLES]
    top = min(end, high)
    if start < top and n > 0:
        j = 0
        while j < n:
            hs = holes[f, d, j, 0]
            he = holes[f, d, j, 1]
            if he <= start:
                j += 1
                continue
            if hs >= top:
                break
            a = max(hs, start)
            b = min(he, top)
            new += b - a
            if a == hs and b == he:  # hole filled
                n = _remove_hole(holes, f, d, n, j)
                continue
            if a == hs:
                holes[f, d, j, 0] = b
            elif b == he:
                holes[f, d, j, 1] = a
            else:  # split (into the list's spare slot when full), then a full list forgets its lowest hole
                for k in range(n, j + 1, -1):
                    holes[f, d, k, 0] = holes[f, d, k - 1, 0]
                    holes[f, d, k, 1] = holes[f, d, k - 1, 1]
                holes[f, d, j + 1, 0] = b
                holes[f, d, j + 1, 1] = he
                holes[f, d, j, 1] = a
                n += 1
                j += 1
                if n > MAX_HOLES:  # the lowest may be the split one's lower part: it goes, its upper part stays
                    n = _give_up_oldest_hole(holes, st, f, d, n, c)
                    j -= 1
            j += 1
    if end > high:
        lo = max(start, high)
        new += end - lo
        if start > high:
            if n == MAX_HOLES:
                n = _give_up_oldest_hole(holes, st, f, d, n, c)
            holes[f, d, n, 0] = high
            holes[f, d, n, 1] = start
            n += 1
    st[f, d, S_NHOLES] = n
    return new


@njit(cache=True, inline="always")
def _cover_below(holes, st, f, d, start, end, c):
    """Extend the coverage of direction d (start not captured) down to ``start`` < its lowest byte seen: the
    bytes below that lowest byte are new; a gap between ``end`` and it becomes the lowest hole (with a full hole
    list it is forgotten at once, as a full list forgets its lowest hole). Returns the new bytes."""
    low = st[f, d, S_LOW]
    top = min(end, low)
    if top < low:
        n = st[f, d, S_NHOLES]
        if n == MAX_HOLES:
            st[f, d, S_LOST_HOLE_BYTES] += low - top
            c[C_HOLE_OVERFLOW] += 1
        else:
            for k in range(n, 0, -1):
                holes[f, d, k, 0] = holes[f, d, k - 1, 0]
                holes[f, d, k, 1] = holes[f, d, k - 1, 1]
            holes[f, d, 0, 0] = top
            holes[f, d, 0, 1] = low
            st[f, d, S_NHOLES] = n + 1
    st[f, d, S_LOW] = start
    return top - start


@njit(cache=True, inline="always")
def _flush_bin(f, d, fl, st, iv, c):
    if st[f, d, B_PKTS] > 0 or st[f, d, B_ACKS] > 0:
        r = c[C_NIV]
        iv[r, IV_FLOW] = fl[f, FL_GID]
        iv[r, IV_DIR] = d
        iv[r, IV_BIN] = st[f, d, S_CUR_BIN]
        for k in range(B_FIRST, B_LAST + 1):
            iv[r, 3 + k - B_FIRST] = st[f, d, k]
            st[f, d, k] = 0
        c[C_NIV] = r + 1


@njit(cache=True, inline="always")
def _rtt_row(rtt, c, gid, d, ts, v, kind, infl):
    r = c[C_NRTT]
    rtt[r, rt.R_FLOW] = gid
    rtt[r, rt.R_DIR] = d
    rtt[r, rt.R_TIME] = ts
    rtt[r, rt.R_RTT] = v
    rtt[r, rt.R_KIND] = kind
    rtt[r, rt.R_INFLIGHT] = infl
    c[C_NRTT] = r + 1


@njit(cache=True, nogil=True)
def process(ts_ns, caplen, wirelen, offsets, foffs, data, linktype, file_index, start, bin_ns, rule,
            fl, st, holes, tsr, sgr, slots, iv, rtt, c):
    """Walk packets start.. of one chunk. Returns (next packet, status)."""
    p = np.zeros(tp.N_P, np.int64)
    n = ts_ns.shape[0]
    mask = np.uint64(slots.shape[0] - 1)
    cap_flows = fl.shape[0]
    for i in range(start, n):
        if c[C_NFLOWS] + 1 >= cap_flows or 2 * (c[C_NFLOWS] + 1) > slots.shape[0] // 2:
            return i, GROW_FLOWS
        if c[C_NIV] + 2 >= iv.shape[0]:
            return i, FLUSH_IV
        if c[C_NRTT] + 2 >= rtt.shape[0]:
            return i, FLUSH_RTT
        t = ts_ns[i]
        c[C_PKTS] += 1
        if c[C_T0] == np.iinfo(np.int64).min:
            c[C_T0] = t
        if t < c[C_LAST_TS]:
            c[C_BACKWARDS] += 1
        c[C_LAST_TS] = t
        status = tp.parse_frame(data, offsets[i], np.int64(caplen[i]), linktype, p)
        if status != tp.TCP_OK:
            if status == tp.MALFORMED:
                c[C_MALFORMED] += 1
                if c[C_MAL_OFF] < 0:
                    c[C_MAL_OFF] = foffs[i]
                    c[C_MAL_FILE] = file_index
            else:
                c[C_NOT_TCP] += 1
            continue
        c[C_TCP] += 1
        # ---- flow lookup -------------------------------------------------------------------------
        h = _hash(p[tp.P_A_HI], p[tp.P_A_LO], p[tp.P_B_HI], p[tp.P_B_LO], p[tp.P_SPORT], p[tp.P_DPORT]) & mask
        f = -1
        d = 0
        while True:
            g = slots[h]
            if g == -1:
                break
            if _is_flow(fl, g, p[tp.P_A_HI], p[tp.P_A_LO], p[tp.P_SPORT], p[tp.P_B_HI], p[tp.P_B_LO], p[tp.P_DPORT]):
                f = g
                d = 0
                break
            if _is_flow(fl, g, p[tp.P_B_HI], p[tp.P_B_LO], p[tp.P_DPORT], p[tp.P_A_HI], p[tp.P_A_LO], p[tp.P_SPORT]):
                f = g
                d = 1
                break
            h = (h + np.uint64(1)) & mask
        flags = p[tp.P_FLAGS]
        if f == -1:
            f = c[C_NFLOWS]
            c[C_NFLOWS] = f + 1
            fl[f, FL_GID] = c[C_NEXT_GID]
            c[C_NEXT_GID] += 1
            slots[h] = f
            rev = (flags & tp.SYN) != 0 and (flags & tp.ACK) != 0
            if rev:
                fl[f, FL_OA_HI], fl[f, FL_OA_LO] = p[tp.P_B_HI], p[tp.P_B_LO]
                fl[f, FL_RA_HI], fl[f, FL_RA_LO] = p[tp.P_A_HI], p[tp.P_A_LO]
                fl[f, FL_OPORT], fl[f, FL_RPORT] = p[tp.P_DPORT], p[tp.P_SPORT]
                d = 1
            else:
                fl[f, FL_OA_HI], fl[f, FL_OA_LO] = p[tp.P_A_HI], p[tp.P_A_LO]
                fl[f, FL_RA_HI], fl[f, FL_RA_LO] = p[tp.P_B_HI], p[tp.P_B_LO]
                fl[f, FL_OPORT], fl[f, FL_RPORT] = p[tp.P_SPORT], p[tp.P_DPORT]
                d = 0
            fl[f, FL_IPV] = p[tp.P_IPV]
            fl[f, FL_FIRST_TS] = t
            fl[f, FL_FIRST_OFF] = foffs[i]
            fl[f, FL_FIRST_FILE] = file_index
            fl[f, FL_SYN_TS] = -1
            fl[f, FL_SYNACK_TS] = -1
            fl[f, FL_ACK3_TS] = -1
            fl[f, FL_MRU_SYN_TS] = -1
            fl[f, FL_WS_RTT] = -1
            for dd in range(2):
                st[f, dd, S_WSCALE] = -1
                st[f, dd, S_MSS] = -1
                st[f, dd, S_CUR_BIN] = np.iinfo(np.int64).min
                st[f, dd, S_ADV_ACK_TS] = -1
        fl[f, FL_LAST_TS] = t
        od = 1 - d
        wire = np.int64(wirelen[i])
        plen = p[tp.P_LEN]
        # ---- handshake ---------------------------------------------------------------------------
        if flags & tp.SYN:
            st[f, d, S_SYNS] += 1
            if p[tp.P_MSS] >= 0:
                st[f, d, S_MSS] = p[tp.P_MSS]
            if p[tp.P_WSCALE] >= 0:
                st[f, d, S_WSCALE] = p[tp.P_WSCALE]
            if p[tp.P_SACKOK]:
                st[f, d, S_SACKOK] = 1
            if flags & tp.ACK:
                if d == 1 and fl[f, FL_SYNACK_TS] < 0:
                    fl[f, FL_SYNACK_TS] = t
                    fl[f, FL_SYNACK_SEQ] = p[tp.P_SEQ]
            else:
                fl[f, FL_MRU_SYN_TS] = t
                if d == 0 and fl[f, FL_SYN_TS] < 0:
                    fl[f, FL_SYN_TS] = t
        elif (d == 0 and fl[f, FL_ACK3_TS] < 0 and fl[f, FL_SYNACK_TS] >= 0 and (flags & tp.ACK)
              and p[tp.P_ACK] == ((fl[f, FL_SYNACK_SEQ] + 1) & 0xFFFFFFFF)):
            fl[f, FL_ACK3_TS] = t
        if flags & tp.FIN:
            st[f, d, S_FINS] += 1
        if flags & tp.RST:
            st[f, d, S_RSTS] += 1
        if p[tp.P_SACKN] > 0:
            st[f, d, S_SACKS] += 1
        # ---- counters and bin --------------------------------------------------------------------
        if st[f, d, S_PKTS] == 0:
            st[f, d, S_FIRST_TS] = t
        st[f, d, S_LAST_TS] = t
        st[f, d, S_PKTS] += 1
        st[f, d, S_WIRE] += wire
        st[f, d, S_IPBYTES] += p[tp.P_IPLEN]
        if t >= st[f, d, S_BIN_END] or t < st[f, d, S_BIN_START]:  # another bin: one division per bin, not packet
            b = (t - c[C_T0]) // bin_ns
            if b != st[f, d, S_CUR_BIN]:
                _flush_bin(f, d, fl, st, iv, c)
                st[f, d, S_CUR_BIN] = b
            st[f, d, S_BIN_START] = c[C_T0] + b * bin_ns
            st[f, d, S_BIN_END] = st[f, d, S_BIN_START] + bin_ns
        st[f, d, B_PKTS] += 1
        st[f, d, B_WIRE] += wire
        # ---- sequence space ----------------------------------------------------------------------
        seq = p[tp.P_SEQ]
        if st[f, d, S_INIT] == 0:
            st[f, d, S_INIT] = 1
            st[f, d, S_ISN] = seq
            syn0 = 1 if (flags & tp.SYN) else 0
            st[f, d, S_START_SEEN] = syn0
            st[f, d, S_RECORDED] = syn0
            st[f, d, S_HIGH] = syn0
            st[f, d, S_LOW] = 0
            st[f, d, S_FIRST_DATA] = syn0
        pos = _unwrap(seq, st[f, d, S_ISN], st[f, d, S_HIGH])  # position of the sequence number itself
        synfin = 1 if (flags & (tp.SYN | tp.FIN)) else 0
        seg_start = pos + 1 if (flags & tp.SYN) else pos  # first payload byte
        seg_end = seg_start + plen
        nxt = st[f, d, S_NXT]
        nxt_ok = st[f, d, S_NXT_OK] != 0
        ctl = (flags & (tp.SYN | tp.FIN | tp.RST)) != 0
        keepalive = plen <= 1 and nxt_ok and pos == nxt - 1 and not ctl
        zwp = (plen == 1 and nxt_ok and pos == nxt and st[f, od, S_WIN_OK] != 0 and st[f, od, S_LAST_WIN_RAW] == 0)
        if plen > 0:
            st[f, d, S_PAY] += plen
            st[f, d, S_PSEGS] += 1
            st[f, d, B_PAY] += plen
        if keepalive:
            st[f, d, S_KEEPALIVE] += 1
        if zwp:
            st[f, d, S_ZWP] += 1
        elif plen > 0 or synfin:
            high = st[f, d, S_HIGH]
            thr = tr.DEFAULT_OOO_THRESHOLD_NS if fl[f, FL_WS_RTT] <= 0 else fl[f, FL_WS_RTT]
            # S_PACK, S_DUPACKS of direction d: what the peer's ACKs said about d's data; Wireshark does not
            # classify a keep-alive (Zeek and tcptrace go by its byte)
            ws = 0 if keepalive else tr.wireshark_bits(
                pos, plen, synfin, nxt, nxt_ok, st[f, d, S_NXT_TS], t, st[f, d, S_PACK], st[f, d, S_PACK_OK] != 0,
                st[f, d, S_DUPACKS], st[f, od, S_LAST_TS], thr)
            syn_rx = (flags & tp.SYN) != 0 and st[f, d, S_SYN_SEEN] != 0 and pos == st[f, d, S_SYN_POS]
            fin_rx = (flags & tp.FIN) != 0 and st[f, d, S_FIN_SEEN] != 0 and seg_end <= st[f, d, S_FIN_POS]
            bits = 0
            overlap = np.int64(0)
            if plen > 0:
                low = st[f, d, S_LOW]
                if st[f, d, S_START_SEEN] == 0 and seg_start < low:
                    new = _cover_below(holes, st, f, d, seg_start, seg_end, c)
                    if seg_end > low:
                        new += _cover(holes, st, f, d, low, seg_end, c)
                else:
                    new = _cover(holes, st, f, d, seg_start, seg_end, c)
                overlap = plen - new
                if p[tp.P_CAPPAY] < plen:
                    st[f, d, S_UNCAPTURED] += min(new, plen - p[tp.P_CAPPAY])
                st[f, d, S_NEW] += new
                st[f, d, B_NEW] += new
                bits = tr.payload_bits(seg_start, seg_end, high, overlap, st[f, d, S_RECORDED] != 0)
                st[f, d, S_RECORDED] = 1
            if syn_rx:
                st[f, d, S_SYN_RX] += 1
            if fin_rx:
                st[f, d, S_FIN_RX] += 1
            if syn_rx or fin_rx:
                bits |= tr.RX_TT
            bits |= ws
            if bits & tr.RX_ZEEK:
                st[f, d, S_RX_Z] += 1
                st[f, d, S_RXB_Z] += plen
            if bits & tr.RX_WS:
                st[f, d, S_RX_WS] += 1
                st[f, d, S_RXB_WS] += plen
            if bits & tr.OOO_WS:
                st[f, d, S_OOO_WS] += 1
            if bits & tr.RX_TT:
                st[f, d, S_RX_TT] += 1
                st[f, d, S_RXB_TT] += overlap
            if bits & tr.OOO_TT:
                st[f, d, S_OOO_TT] += 1
            if rule == tr.RULE_ZEEK:
                if bits & tr.RX_ZEEK:
                    st[f, d, B_RXS] += 1
                    st[f, d, B_RXB] += plen
            elif rule == tr.RULE_WIRESHARK:
                if bits & tr.RX_WS:
                    st[f, d, B_RXS] += 1
                    st[f, d, B_RXB] += plen
                if bits & tr.OOO_WS:
                    st[f, d, B_OOO] += 1
            else:
                if bits & tr.RX_TT:
                    st[f, d, B_RXS] += 1
                    st[f, d, B_RXB] += overlap
                if bits & tr.OOO_TT:
                    st[f, d, B_OOO] += 1
            if flags & tp.SYN:
                st[f, d, S_SYN_SEEN] = 1
                st[f, d, S_SYN_POS] = pos
                st[f, d, S_RECORDED] = 1
            if flags & tp.FIN:
                if st[f, d, S_FIN_SEEN] == 0 or seg_end > st[f, d, S_FIN_POS]:
                    st[f, d, S_FIN_POS] = seg_end
                st[f, d, S_FIN_SEEN] = 1
            if plen > 0:
                if seg_start < high:
                    rt.seg_mark_resent(sgr, st, f, d, S_SEG_HEAD, seg_start, seg_end)
                if seg_end > high:
                    st[f, d, S_HIGH] = seg_end
                    rt.seg_push(sgr, st, f, d, S_SEG_HEAD, seg_end, t)
                if st[f, d, S_ACKED_OK]:
                    infl = st[f, d, S_HIGH] - st[f, d, S_ACKED]
                    if infl > st[f, d, B_INFL_MAX]:
                        st[f, d, B_INFL_MAX] = infl
        if not zwp and (not nxt_ok or pos + plen + synfin > nxt):  # Wireshark's nextseq: any segment advances it
            st[f, d, S_NXT] = pos + plen + synfin
            st[f, d, S_NXT_TS] = t
            st[f, d, S_NXT_OK] = 1
        if p[tp.P_HAS_TS] and (plen > 0 or (flags & tp.SYN)):
            rt.ts_push(tsr, st, f, d, S_TS_HEAD, p[tp.P_TSVAL], t)
        if p[tp.P_HAS_TS]:
            st[f, d, S_TSOPTS] += 1
        if (flags & (tp.SYN | tp.ACK)) == tp.ACK and fl[f, FL_MRU_SYN_TS] >= 0 and fl[f, FL_WS_RTT] <= 0:
            # Wireshark's first RTT (the out-of-order threshold; a zero one is taken again from the next ACK)
            fl[f, FL_WS_RTT] = t - fl[f, FL_MRU_SYN_TS]
        # ---- duplicate ACKs (Wireshark's definition), then the window --------------------------------
        if st[f, od, S_INIT]:
            ack_pos = _unwrap(p[tp.P_ACK], st[f, od, S_ISN], st[f, od, S_HIGH]) if (flags & tp.ACK) else 0
            ack_ok = 1 if (flags & tp.ACK) else 0
            if (plen == 0 and not ctl and ack_ok and st[f, od, S_PACK_OK] and ack_pos == st[f, od, S_PACK]
                    and p[tp.P_WIN] != 0 and st[f, d, S_WIN_OK] and p[tp.P_WIN] == st[f, d, S_LAST_WIN_RAW]
                    and nxt_ok and pos == nxt):
                st[f, od, S_DUPACKS] += 1
            elif ack_ok != st[f, od, S_PACK_OK] or ack_pos != st[f, od, S_PACK]:
                st[f, od, S_DUPACKS] = 0
            st[f, od, S_PACK] = ack_pos
            st[f, od, S_PACK_OK] = ack_ok
        st[f, d, S_LAST_WIN_RAW] = p[tp.P_WIN]
        st[f, d, S_WIN_OK] = 1
        # ---- the ACK acknowledges the other direction ---------------------------------------------
        if (flags & tp.ACK) and st[f, od, S_INIT]:
            ack = _unwrap(p[tp.P_ACK], st[f, od, S_ISN], st[f, od, S_HIGH])
            if st[f, od, S_ACKED_OK] == 0 or ack > st[f, od, S_ACKED]:
                if st[f, d, S_ADV_ACK_TS] >= 0:
                    st[f, d, B_IATSUM] += t - st[f, d, S_ADV_ACK_TS]
                    st[f, d, B_IATN] += 1
                st[f, d, S_ADV_ACK_TS] = t
                st[f, d, B_ACKS] += 1
                infl = st[f, od, S_HIGH] - (st[f, od, S_ACKED] if st[f, od, S_ACKED_OK] else ack)
                st[f, od, S_ACKED] = ack
                st[f, od, S_ACKED_OK] = 1
                r = rt.seg_ack(sgr, st, f, od, S_SEG_HEAD, ack, t)
                if r >= 0:
                    _rtt_row(rtt, c, fl[f, FL_GID], 1 - d, t, r, rt.KIND_DATA_ACK, infl)
            if p[tp.P_HAS_TS] and st[f, od, S_TS_COUNT] > 0:
                r = rt.ts_echo(tsr, st, f, od, S_TS_HEAD, p[tp.P_TSECR], t)
                if r >= 0:
                    _rtt_row(rtt, c, fl[f, FL_GID], 1 - d, t, r, rt.KIND_TS_ECHO,
                             st[f, od, S_HIGH] - st[f, od, S_ACKED])
    return n, DONE


@njit(cache=True, nogil=True)
def flush_flows(fl, st, flows, iv, c):
    """Flush the open bins of the given table slots (room for 2 * len(flows) rows must exist)."""
    for f in flows:
        for d in range(2):
            _flush_bin(f, d, fl, st, iv, c)
            st[f, d, S_CUR_BIN] = np.iinfo(np.int64).min

