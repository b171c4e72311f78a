"""numba kernels that walk pcap records and pcapng blocks in a byte buffer.

Each kernel fills caller-provided arrays and returns where it stopped and why, so the reader can
refill its buffer, handle a block in Python (pcapng section and interface headers) or report an
error naming the byte offset. The plain-Python reference implementation lives in the tests.
"""

from __future__ import annotations

import numpy as np

from benchbook.kernels import njit

# Return status of the kernels.
OK = 0  # stopped at the end of the buffer (or of a partial record) or after max_n packets
BAD_LENGTH = 1  # a record/block length is impossible; the offset is where the kernel stopped
NEEDS_PYTHON = 2  # pcapng: a section header or interface description block is next
BAD_INTERFACE = 3  # pcapng: a packet names an interface that was not described
BAD_TRAILER = 4  # pcapng: the block length at the end of a block differs from the one at its start

SHB_TYPE = 0x0A0D0D0A
IDB_TYPE = 0x00000001
PB_TYPE = 0x00000002  # obsolete Packet Block
SPB_TYPE = 0x00000003
EPB_TYPE = 0x00000006

# Timestamp conversion kinds per pcapng interface.
TS_MUL = 0  # ns = ticks * param           (power-of-10 resolution at most 1 ns)
TS_DIV = 1  # ns = ticks // param          (power-of-10 resolution finer than 1 ns)
TS_POW2 = 2  # ns = ticks * 1e9 / 2**param  (power-of-2 resolution)

MAX_RECORD = 1 << 28  # larger pcap records are treated as corruption


@njit(cache=True, inline="always")
def _u16(buf, p, big):
    if big:
        return (np.uint32(buf[p]) << 8) | np.uint32(buf[p + 1])
    return np.uint32(buf[p]) | (np.uint32(buf[p + 1]) << 8)


@njit(cache=True, inline="always")
def _u32(buf, p, big):
    if big:
        return (
            (np.uint32(buf[p]) << 24)
            | (np.uint32(buf[p + 1]) << 16)
            | (np.uint32(buf[p + 2]) << 8)
            | np.uint32(buf[p + 3])
        )
    return (
        np.uint32(buf[p])
        | (np.uint32(buf[p + 1]) << 8)
        | (np.uint32(buf[p + 2]) << 16)
        | (np.uint32(buf[p + 3]) << 24)
    )


@njit(cache=True, nogil=True)
def scan_pcap(buf, pos, end, big, ts_mult, max_caplen, max_n, ts, cap, wire, off, foff, base):
    """Walk libpcap records in buf[pos:end]. Returns (pos, n, status)."""
    n = 0
    while n < max_n:
        if pos + 16 > end:
            break
        sec = np.int64(_u32(buf, pos, big))
        frac = np.int64(_u32(buf, pos + 4, big))
        incl = np.int64(_u32(buf, pos + 8, big))
        orig = _u32(buf, pos + 12, big)
        if incl > max_caplen:
            return pos, n, BAD_LENGTH
        if pos + 16 + incl > end:
            break
        ts[n] = sec * 1_000_000_000 + frac * ts_mult
        cap[n] = incl
        wire[n] = orig
        off[n] = pos + 16
        foff[n] = base + pos
        pos += 16 + incl
        n += 1
    return pos, n, OK


@njit(cache=True, inline="always")
def _ticks_to_ns(t, kind, param, offset_ns):
    if kind == TS_MUL:
        return np.int64(t) * param + offset_ns
    if kind == TS_DIV:
        return np.int64(t // np.uint64(param)) + offset_ns
    # power of two: split into whole seconds and fraction so nothing overflows
    sh = np.uint64(param)
    secs = t >> sh
    frac = t - (secs << sh)
    if param <= 32:
        fns = (frac * np.uint64(1_000_000_000)) >> sh
    else:
        fns = ((frac >> np.uint64(param - 32)) * np.uint64(1_000_000_000)) >> np.uint64(32)
    return np.int64(secs) * 1_000_000_000 + np.int64(fns) + offset_ns


@njit(cache=True, nogil=True)
def scan_pcapng(
    buf, pos, end, big, if_kind, if_param, if_offset, if_snap, n_if,
    max_n, ts, cap, wire, off, foff, base, last_ts,
):
    """Walk pcapng blocks in buf[pos:end].

    Returns (pos, n, status, skipped_blocks, simple_packets, last_ts). Stops with NEEDS_PYTHON before
    a section header or interface description block.
    """
    n = 0
    skipped = 0
    simple = 0
    while n < max_n:
        if pos + 12 > end:
            break
        btype = _u32(buf, pos, big)
        blen = np.int64(_u32(buf, pos + 4, big))
        if btype == SHB_TYPE or btype == IDB_TYPE:
            return pos, n, NEEDS_PYTHON, skipped, simple, last_ts
        if blen < 12 or (blen & 3) != 0 or blen > MAX_RECORD:
            return pos, n, BAD_LENGTH, skipped, simple, last_ts
        if pos + blen > end:
            break
        if np.int64(_u32(buf, pos + blen - 4, big)) != blen:
            return pos, n, BAD_TRAILER, skipped, simple, last_ts
        if btype == EPB_TYPE or btype == PB_TYPE:
            if blen < 32:
                return pos, n, BAD_LENGTH, skipped, simple, last_ts
            if btype == EPB_TYPE:
                iface = np.int64(_u32(buf, pos + 8, big))
            else:
                iface = np.int64(_u16(buf, pos + 8, big))
            if iface >= n_if:
                return pos, n, BAD_INTERFACE, skipped, simple, last_ts
            hi = np.uint64(_u32(buf, pos + 12, big))
            lo = np.uint64(_u32(buf, pos + 16, big))
            incl = np.int64(_u32(buf, pos + 20, big))
            if incl > blen - 32:
                return pos, n, BAD_LENGTH, skipped, simple, last_ts
            t = (hi << np.uint64(32)) | lo
            last_ts = _ticks_to_ns(t, if_kind[iface], if_param[iface], if_offset[iface])
            ts[n] = last_ts
            cap[n] = incl
            wire[n] = _u32(buf, pos + 24, big)
            off[n] = pos + 28
            foff[n] = base + pos
            n += 1
        elif btype == SPB_TYPE:
            if blen < 16 or n_if < 1:
                return pos, n, BAD_LENGTH if blen < 16 else BAD_INTERFACE, skipped, simple, last_ts
            orig = np.int64(_u32(buf, pos + 8, big))
            incl = orig
            if if_snap[0] > 0 and incl > if_snap[0]:
                incl = if_snap[0]
            if incl > blen - 16:
                incl = blen - 16
            ts[n] = last_ts  # SPBs carry no timestamp: repeat the previous one
            cap[n] = incl
            wire[n] = orig
            off[n] = pos + 12
            foff[n] = base + pos
            n += 1
            simple += 1
        else:
            skipped += 1
        pos += blen
    return pos, n, OK, skipped, simple, last_ts
