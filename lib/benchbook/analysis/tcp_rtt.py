"""RTT samples of the TCP analysis: TSval/TSecr echo and data -> ACK with Karn's rule; per-flow summaries.

TS echo: each direction remembers, in a ring of ``TS_RING`` entries, every new TSval it sent on a payload or
SYN segment with the time of its first use. An ACK of the peer whose TSecr equals a remembered TSval yields
one sample (ACK time - first use) and consumes that entry and every older one, so each TSval gives at most
one sample (the first echo).

Data -> ACK: each direction keeps, in a ring of ``SEG_RING`` entries, the segments that advanced its highest
sequence number (their end and send time). A cumulative ACK of the peer consumes every entry it covers; the
last consumed entry yields a sample only when the ACK equals its end exactly (tcptrace's rule) and none of its
bytes was sent again (Karn's rule). Full rings drop their oldest entry (that sample is then lost, never wrong).

Each sample row also carries the bytes in flight of the data direction when the ACK arrived (highest
sequence sent - highest cumulative ACK before this one).
"""

from __future__ import annotations

import numpy as np

from benchbook.kernels import njit

TS_RING = 64
SEG_RING = 512

KIND_TS_ECHO, KIND_DATA_ACK = 0, 1
KIND_NAMES = ("ts_echo", "data_ack")

# rtt row columns
R_FLOW, R_DIR, R_TIME, R_RTT, R_KIND, R_INFLIGHT = 0, 1, 2, 3, 4, 5
N_R = 6


@njit(cache=True, inline="always")
def _append(ring, meta, f, d, hi, size, value, ts_ns):
    """Append (value, ts_ns) to the ring of ``size`` entries (meta[f, d, hi] = head, meta[f, d, hi+1] = count);
    a full ring drops its oldest entry first."""
    head = meta[f, d, hi]
    count = meta[f, d, hi + 1]
    if count == size:
        head = (head + 1) % size
        count -= 1
    k = (head + count) % size
    ring[f, d, k, 0] = value
    ring[f, d, k, 1] = ts_ns
    meta[f, d, hi] = head
    meta[f, d, hi + 1] = count + 1


@njit(cache=True, inline="always")
def ts_push(ring, meta, f, d, hi, tsval, ts_ns):
    """Remember a TSval (meta[f, d, hi] = head, meta[f, d, hi+1] = count); only values newer than the last one."""
    head = meta[f, d, hi]
    count = meta[f, d, hi + 1]
    if count > 0:
        last = ring[f, d, (head + count - 1) % TS_RING, 0]
        delta = (tsval - last) & 0xFFFFFFFF
        if delta == 0 or delta >= 0x80000000:
            return
    _append(ring, meta, f, d, hi, TS_RING, tsval, ts_ns)


@njit(cache=True, inline="always")
def ts_echo(ring, meta, f, d, hi, tsecr, ts_ns):
    """RTT in ns of the first echo of a remembered TSval, else -1."""
    head = meta[f, d, hi]
    count = meta[f, d, hi + 1]
    rtt = np.int64(-1)
    while count > 0:
        v = ring[f, d, head, 0]
        delta = (tsecr - v) & 0xFFFFFFFF
        if delta >= 0x80000000:  # tsecr older than every remembered value
            break
        if delta == 0:
            rtt = ts_ns - ring[f, d, head, 1]
            head = (head + 1) % TS_RING
            count -= 1
            break
        head = (head + 1) % TS_RING
        count -= 1
    meta[f, d, hi] = head
    meta[f, d, hi + 1] = count
    return rtt


@njit(cache=True, inline="always")
def seg_push(ring, meta, f, d, hi, end, ts_ns):
    """Remember a segment that advanced the highest sequence number: its end and send time."""
    _append(ring, meta, f, d, hi, SEG_RING, end, ts_ns)


@njit(cache=True, inline="always")
def seg_mark_resent(ring, meta, f, d, hi, start, end):
    """Karn: flag every remembered segment overlapping [start, end) as sent again."""
    head = meta[f, d, hi]
    count = meta[f, d, hi + 1]
    prev_end = np.int64(-(1 << 62))
    for j in range(count):
        k = (head + j) % SEG_RING
        e = ring[f, d, k, 0]
        if prev_end >= end:
            break
        if e > start and ring[f, d, k, 1] > 0:
            ring[f, d, k, 1] = -ring[f, d, k, 1]
        prev_end = e


@njit(cache=True, inline="always")
def seg_ack(ring, meta, f, d, hi, ack, ts_ns):
    """Consume the segments a cumulative ACK covers; the RTT of the last one if Karn allows, else -1."""
    head = meta[f, d, hi]
    count = meta[f, d, hi + 1]
    rtt = np.int64(-1)
    while count > 0 and ring[f, d, head, 0] <= ack:
        if ring[f, d, head, 0] == ack and ring[f, d, head, 1] > 0:
            rtt = ts_ns - ring[f, d, head, 1]
        else:
            rtt = -1
        head = (head + 1) % SEG_RING
        count -= 1
    meta[f, d, hi] = head
    meta[f, d, hi + 1] = count
    return rtt


@njit(cache=True, nogil=True)
def group_samples(rows):
    """The RTT rows grouped by (flow, direction) for the histograms: (keys, bounds, values) with keys the distinct
    flow * 2 + direction in ascending order, values the RTTs in ns (at least 1) in row order within each key, and
    values[bounds[j]:bounds[j + 1]] those of keys[j]. One counting pass when the keys of the block lie close
    together (the usual case), else a stable sort."""
    n = rows.shape[0]
    key = np.empty(n, np.int64)
    kmin = np.int64(0)
    kmax = np.int64(0)
    for i in range(n):
        k = rows[i, R_FLOW] * 2 + rows[i, R_DIR]
        key[i] = k
        if i == 0 or k < kmin:
            kmin = k
        if i == 0 or k > kmax:
            kmax = k
    values = np.empty(n, np.int64)
    if n > 0 and kmax - kmin <= 4 * n + 4096:
        span = kmax - kmin + 1
        slot = np.zeros(span + 1, np.int64)
        for i in range(n):
            slot[key[i] - kmin + 1] += 1
        m = 0
        for j in range(span):
            if slot[j + 1] > 0:
                m += 1
        keys = np.empty(m, np.int64)
        bounds = np.zeros(m + 1, np.int64)
        m = 0
        for j in range(span):
            c = slot[j + 1]
            if c > 0:
                keys[m] = kmin + j
                bounds[m + 1] = bounds[m] + c
                slot[j + 1] = bounds[m]  # next free position of this key
                m += 1
        for i in range(n):
            j = key[i] - kmin + 1
            v = rows[i, R_RTT]
            values[slot[j]] = v if v > 1 else 1
            slot[j] += 1
        return keys, bounds, values
    order = np.argsort(key, kind="mergesort")
    m = 0
    for i in range(n):
        if i == 0 or key[order[i]] != key[order[i - 1]]:
            m += 1
    keys = np.empty(m, np.int64)
    bounds = np.zeros(m + 1, np.int64)
    m = 0
    for i in range(n):
        k = key[order[i]]
        if i == 0 or k != key[order[i - 1]]:
            keys[m] = k
            m += 1
        bounds[m] = i + 1
        v = rows[order[i], R_RTT]
        values[i] = v if v > 1 else 1
    return keys, bounds, values


def rtt_summary_ms(hist) -> dict[str, float | None]:
    """{"min", "mean", "p99"} in ms of an HdrHistogram of RTT samples in ns (None when it holds none).

    min and mean are exact; p99 is HdrHistogram's value at the 99th percentile (the discrete percentile's
    bucket, at most 0.1 % above the exact value with 3 significant figures)."""
    if hist is None or hist.total_count == 0:
        return {"min": None, "mean": None, "p99": None}
    return {"min": hist.min / 1e6, "mean": hist.mean / 1e6, "p99": hist.value_at_percentile(99.0) / 1e6}
