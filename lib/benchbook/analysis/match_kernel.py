"""numba kernels of the streaming pre/post matcher (see benchbook.analysis.latency).

Pre packets wait in a ring of ``window`` entries, indexed by a linear-probing hash table (with
tombstones, rebuilt from the ring when they pile up) on their 128-bit key; post packets look their key
up. Both captures are walked in merged time order, so a pre packet is only waiting while a post packet
could still match it (0 < t_post - t_pre < max latency), and the ring bounds memory whatever the capture
size. A latency of 0 or below is never a match: the two captures' clocks cannot order the packets then,
so the post copy counts as out of range.
"""

from __future__ import annotations

import numpy as np
from numba import njit

# counter slots
C_PRE, C_POST, C_MATCHED, C_LOST, C_UNMATCHED_POST, C_DUPLICATES, C_REORDERED = 0, 1, 2, 3, 4, 5, 6
C_BACK_PRE, C_BACK_POST, C_PRE_DUP, C_UNKEYED_PRE, C_UNKEYED_POST = 7, 8, 9, 10, 11
C_WINDOW_EVICTED, C_MAX_PENDING, C_REORDER_WINDOW, C_AMBIGUOUS, C_OUT_OF_RANGE = 12, 13, 14, 15, 16
C_LAST_PRE_T, C_LAST_POST_T, C_MAX_MATCHED_IDX, C_HEAD, C_TAIL, C_TOMB = 17, 18, 19, 20, 21, 22
N_COUNTERS = 23

COUNTER_NAMES = {
    "pre": C_PRE, "post": C_POST, "matched": C_MATCHED, "lost": C_LOST,
    "unmatched_post": C_UNMATCHED_POST, "duplicates": C_DUPLICATES, "reordered": C_REORDERED,
    "backwards_timestamps_pre": C_BACK_PRE, "backwards_timestamps_post": C_BACK_POST,
    "pre_duplicates": C_PRE_DUP, "unkeyed_pre": C_UNKEYED_PRE, "unkeyed_post": C_UNKEYED_POST,
    "window_evicted": C_WINDOW_EVICTED, "max_pending": C_MAX_PENDING,
    "reorder_window": C_REORDER_WINDOW, "ambiguous_post": C_AMBIGUOUS,
    "out_of_range_post": C_OUT_OF_RANGE,
}

ST_PENDING, ST_MATCHED, ST_POISONED = 0, 1, 2
GOLDEN = np.uint64(0x9E3779B97F4A7C15)
M2 = np.uint64(0xC2B2AE3D27D4EB4F)
M3 = np.uint64(0x165667B19E3779F9)


def new_state(window: int) -> dict[str, np.ndarray]:
    """Allocate the matcher state for a ring of ``window`` (power of two) entries."""
    if window & (window - 1) or window < 2:
        raise ValueError("window must be a power of two >= 2")
    tsize = window * 2
    return {
        "t_hi": np.zeros(tsize, np.uint64), "t_lo": np.zeros(tsize, np.uint64),
        "t_seq": np.full(tsize, -1, np.int64),
        "r_hi": np.zeros(window, np.uint64), "r_lo": np.zeros(window, np.uint64),
        "r_t": np.zeros(window, np.int64), "r_idx": np.zeros(window, np.int64),
        "r_state": np.zeros(window, np.int8),
        "c": np.zeros(N_COUNTERS, np.int64),
    }


@njit(cache=True, inline="always")
def _bswap64(x):
    x = ((x & np.uint64(0x00FF00FF00FF00FF)) << np.uint64(8)) | ((x >> np.uint64(8)) & np.uint64(0x00FF00FF00FF00FF))
    x = ((x & np.uint64(0x0000FFFF0000FFFF)) << np.uint64(16)) | ((x >> np.uint64(16)) & np.uint64(0x0000FFFF0000FFFF))
    return (x << np.uint64(32)) | (x >> np.uint64(32))


@njit(cache=True, inline="always")
def _home(hi, lo, tmask, ident):
    if ident:
        # explicit ids: mostly consecutive, so the slot follows the counter to keep neighbours together
        # in cache - whichever end of the id it counts at: a counter read in the other byte order
        # (its low bytes constant) is folded down by the byte-swapped copy.
        return np.int64((lo + _bswap64(lo)) & np.uint64(tmask))
    h = (lo ^ (hi * M2)) * GOLDEN
    h ^= h >> np.uint64(29)
    return np.int64(h & np.uint64(tmask))


EMPTY, TOMB = -1, -2


@njit(cache=True)
def _find(t_hi, t_lo, t_seq, hi, lo, tmask, ident):
    s = _home(hi, lo, tmask, ident)
    while True:
        q = t_seq[s]
        if q == EMPTY:
            return -1
        if q >= 0 and t_lo[s] == lo and t_hi[s] == hi:
            return s
        s = (s + 1) & tmask


@njit(cache=True)
def _insert(t_hi, t_lo, t_seq, hi, lo, q, tmask, ident, c):
    s = _home(hi, lo, tmask, ident)
    while t_seq[s] >= 0:
        s = (s + 1) & tmask
    if t_seq[s] == TOMB:
        c[C_TOMB] -= 1
    t_hi[s] = hi
    t_lo[s] = lo
    t_seq[s] = q


@njit(cache=True)
def _rebuild(t_hi, t_lo, t_seq, r_hi, r_lo, c, rmask, tmask, ident):
    """Drop all tombstones: re-insert the waiting pre packets (ring head..tail)."""
    t_seq[:] = EMPTY
    c[C_TOMB] = 0
    for q in range(c[C_HEAD], c[C_TAIL]):
        r = q & rmask
        hi = r_hi[r]
        lo = r_lo[r]
        s = _home(hi, lo, tmask, ident)
        while t_seq[s] >= 0:
            s = (s + 1) & tmask
        t_hi[s] = hi
        t_lo[s] = lo
        t_seq[s] = q


@njit(cache=True)
def _evict_head(t_hi, t_lo, t_seq, r_hi, r_lo, r_state, c, rmask, tmask, by_window, ident):
    h = c[C_HEAD]
    r = h & rmask
    s = _find(t_hi, t_lo, t_seq, r_hi[r], r_lo[r], tmask, ident)
    if s >= 0 and t_seq[s] == h:
        if t_seq[(s + 1) & tmask] == EMPTY:
            t_seq[s] = EMPTY
        else:
            t_seq[s] = TOMB
            c[C_TOMB] += 1
    if r_state[r] == ST_PENDING:
        c[C_LOST] += 1
        if by_window:
            c[C_WINDOW_EVICTED] += 1
    c[C_HEAD] = h + 1


@njit(cache=True, nogil=True)
def match_step(
    t_hi, t_lo, t_seq, r_hi, r_lo, r_t, r_idx, r_state, c,
    pre_t, pre_hi, pre_lo, pre_ok, pre_base, i, pre_done,
    post_t, post_hi, post_lo, post_ok, j, post_done,
    max_latency, id_from_key,
    out_id, out_tpre, out_tpost, out_lat,
):
    """Advance both streams in time order. Returns (i, j, n_out).

    Returns when a stream's chunk is used up (and the stream is not done), when the output arrays
    are full, or when both streams are finished. The table operations are written out inline:
    calling array-taking helpers costs tens of ns per call (reference counting).
    """
    window = r_hi.shape[0]
    rmask = window - 1
    tmask = t_seq.shape[0] - 1
    tomb_limit = (tmask + 1) >> 2
    npre = pre_t.shape[0]
    npost = post_t.shape[0]
    cap = out_id.shape[0]
    nout = 0
    head = c[C_HEAD]
    tail = c[C_TAIL]
    tomb = c[C_TOMB]
    n_pre = c[C_PRE]
    n_post = c[C_POST]
    last_pre = c[C_LAST_PRE_T]
    last_post = c[C_LAST_POST_T]
    max_idx = c[C_MAX_MATCHED_IDX]
    lost = c[C_LOST]
    matched = c[C_MATCHED]
    reordered = c[C_REORDERED]
    unmatched = c[C_UNMATCHED_POST]
    max_pending = c[C_MAX_PENDING]
    reorder_window = c[C_REORDER_WINDOW]
    while nout < cap:
        have_pre = i < npre
        have_post = j < npost
        if have_pre and have_post:
            # at equal timestamps the pre packet goes first, so a post copy stamped at the same
            # time finds it and is counted out of range (latency 0 is not > 0), not as unknown
            take_pre = pre_t[i] <= post_t[j]
        elif have_pre and post_done:
            take_pre = True
        elif have_post and pre_done:
            take_pre = False
        else:
            break
        if take_pre:
            t = pre_t[i]
            n_pre += 1
            if n_pre > 1 and t < last_pre:
                c[C_BACK_PRE] += 1
            last_pre = t
            if not pre_ok[i]:
                c[C_UNKEYED_PRE] += 1
                i += 1
                continue
            hi = pre_hi[i]
            lo = pre_lo[i]
            # is the key waiting already?
            s = _home(hi, lo, tmask, id_from_key)
            found = -1
            while True:
                q = t_seq[s]
                if q == EMPTY:
                    break
                if q >= 0 and t_lo[s] == lo and t_hi[s] == hi:
                    found = s
                    break
                s = (s + 1) & tmask
            if found >= 0:
                r = t_seq[found] & rmask
                if r_state[r] == ST_PENDING:
                    r_state[r] = ST_POISONED
                    c[C_PRE_DUP] += 2
                else:
                    c[C_PRE_DUP] += 1
                i += 1
                continue
            if tail - head >= window:
                # evict the oldest waiting pre packet to make room
                r = head & rmask
                ehi = r_hi[r]
                elo = r_lo[r]
                s = _home(ehi, elo, tmask, id_from_key)
                while True:
                    q = t_seq[s]
                    if q == EMPTY:
                        break
                    if q == head:
                        if t_seq[(s + 1) & tmask] == EMPTY:
                            t_seq[s] = EMPTY
                        else:
                            t_seq[s] = TOMB
                            tomb += 1
                        break
                    s = (s + 1) & tmask
                if r_state[r] == ST_PENDING:
                    lost += 1
                    c[C_WINDOW_EVICTED] += 1
                head += 1
            if tomb > tomb_limit:
                c[C_HEAD] = head
                c[C_TAIL] = tail
                _rebuild(t_hi, t_lo, t_seq, r_hi, r_lo, c, rmask, tmask, id_from_key)
                tomb = 0
            r = tail & rmask
            r_hi[r] = hi
            r_lo[r] = lo
            r_t[r] = t
            r_idx[r] = pre_base + i
            r_state[r] = ST_PENDING
            s = _home(hi, lo, tmask, id_from_key)
            while t_seq[s] >= 0:
                s = (s + 1) & tmask
            if t_seq[s] == TOMB:
                tomb -= 1
            t_hi[s] = hi
            t_lo[s] = lo
            t_seq[s] = tail
            tail += 1
            if tail - head > max_pending:
                max_pending = tail - head
            i += 1
        else:
            t = post_t[j]
            n_post += 1
            if n_post > 1 and t < last_post:
                c[C_BACK_POST] += 1
            last_post = t
            # pre packets too old to match anything from now on leave the window
            limit = t - max_latency
            while head < tail and r_t[head & rmask] <= limit:
                r = head & rmask
                ehi = r_hi[r]
                elo = r_lo[r]
                s = _home(ehi, elo, tmask, id_from_key)
                while True:
                    q = t_seq[s]
                    if q == EMPTY:
                        break
                    if q == head:
                        if t_seq[(s + 1) & tmask] == EMPTY:
                            t_seq[s] = EMPTY
                        else:
                            t_seq[s] = TOMB
                            tomb += 1
                        break
                    s = (s + 1) & tmask
                if r_state[r] == ST_PENDING:
                    lost += 1
                head += 1
            if not post_ok[j]:
                c[C_UNKEYED_POST] += 1
                unmatched += 1
                j += 1
                continue
            hi = post_hi[j]
            lo = post_lo[j]
            s = _home(hi, lo, tmask, id_from_key)
            found = -1
            while True:
                q = t_seq[s]
                if q == EMPTY:
                    break
                if q >= 0 and t_lo[s] == lo and t_hi[s] == hi:
                    found = s
                    break
                s = (s + 1) & tmask
            if found < 0:
                unmatched += 1
            else:
                q = t_seq[found]
                r = q & rmask
                st = r_state[r]
                if st == ST_MATCHED:
                    c[C_DUPLICATES] += 1
                elif st == ST_POISONED:
                    unmatched += 1
                    c[C_AMBIGUOUS] += 1
                else:
                    lat = t - r_t[r]
                    if lat <= 0 or lat >= max_latency:
                        unmatched += 1
                        c[C_OUT_OF_RANGE] += 1
                    else:
                        r_state[r] = ST_MATCHED
                        matched += 1
                        pidx = r_idx[r]
                        if pidx < max_idx:
                            reordered += 1
                        else:
                            max_idx = pidx
                        depth = tail - q
                        if depth > reorder_window:
                            reorder_window = depth
                        out_id[nout] = r_lo[r] if id_from_key else np.uint64(pidx)
                        out_tpre[nout] = r_t[r]
                        out_tpost[nout] = t
                        out_lat[nout] = lat
                        nout += 1
            j += 1
    c[C_HEAD] = head
    c[C_TAIL] = tail
    c[C_TOMB] = tomb
    c[C_PRE] = n_pre
    c[C_POST] = n_post
    c[C_LAST_PRE_T] = last_pre
    c[C_LAST_POST_T] = last_post
    c[C_MAX_MATCHED_IDX] = max_idx
    c[C_LOST] = lost
    c[C_MATCHED] = matched
    c[C_REORDERED] = reordered
    c[C_UNMATCHED_POST] = unmatched
    c[C_MAX_PENDING] = max_pending
    c[C_REORDER_WINDOW] = reorder_window
    return i, j, nout


@njit(cache=True, nogil=True)
def finish(t_hi, t_lo, t_seq, r_hi, r_lo, r_state, c, ident):
    """Both captures are done: every pre packet still waiting is lost."""
    rmask = r_hi.shape[0] - 1
    tmask = t_seq.shape[0] - 1
    while c[C_HEAD] < c[C_TAIL]:
        _evict_head(t_hi, t_lo, t_seq, r_hi, r_lo, r_state, c, rmask, tmask, False, ident)


@njit(cache=True, nogil=True)
def id_keys(data, offsets, caplen, offset, width, big, out_hi, out_lo, ok):
    """Key = the unsigned integer of ``width`` bytes at frame ``offset``."""
    for k in range(offsets.shape[0]):
        if caplen[k] < offset + width:
            ok[k] = False
            out_lo[k] = 0
            out_hi[k] = 0
            continue
        p = offsets[k] + offset
        v = np.uint64(0)
        if width == 8 and not big:  # the common case, unrolled
            v = (np.uint64(data[p]) | (np.uint64(data[p + 1]) << np.uint64(8))
                 | (np.uint64(data[p + 2]) << np.uint64(16)) | (np.uint64(data[p + 3]) << np.uint64(24))
                 | (np.uint64(data[p + 4]) << np.uint64(32)) | (np.uint64(data[p + 5]) << np.uint64(40))
                 | (np.uint64(data[p + 6]) << np.uint64(48)) | (np.uint64(data[p + 7]) << np.uint64(56)))
        elif big:
            for b in range(width):
                v = (v << np.uint64(8)) | np.uint64(data[p + b])
        else:
            for b in range(width):
                v |= np.uint64(data[p + b]) << np.uint64(8 * b)
        out_lo[k] = v
        out_hi[k] = 0
        ok[k] = True


@njit(cache=True, inline="always")
def _mix(h, w, m):
    h ^= w * m
    h = (h << np.uint64(31)) | (h >> np.uint64(33))
    return h * GOLDEN


@njit(cache=True, nogil=True)
def content_keys(data, offsets, caplen, start, end, out_hi, out_lo, ok):
    """MoonSniff/pos key: frame bytes [start, end) with IPv4 header and UDP/TCP checksums zeroed,
    hashed to 128 bits (two independent 64-bit hashes)."""
    n_bytes = end - start
    scratch = np.zeros(n_bytes + 8, np.uint8)
    for k in range(offsets.shape[0]):
        L = caplen[k]
        if L <= start:
            ok[k] = False
            out_hi[k] = 0
            out_lo[k] = 0
            continue
        p = offsets[k]
        m = min(L, end) - start
        for b in range(m):
            scratch[b] = data[p + start + b]
        for b in range(m, n_bytes + 8):
            scratch[b] = 0
        # zero checksums (frame positions relative to start)
        l3 = 14
        etype = (np.int64(data[p + 12]) << 8) | np.int64(data[p + 13]) if L >= 14 else 0
        if etype == 0x8100 and L >= 18:
            l3 = 18
            etype = (np.int64(data[p + 16]) << 8) | np.int64(data[p + 17])
        if etype == 0x0800 and L >= l3 + 20:
            ihl = (np.int64(data[p + l3]) & 0xF) * 4
            proto = data[p + l3 + 9]
            for q in (l3 + 10, l3 + 11):
                if start <= q < start + m:
                    scratch[q - start] = 0
            l4 = l3 + ihl
            cs = -1
            if proto == 17:
                cs = l4 + 6
            elif proto == 6:
                cs = l4 + 16
            if cs >= 0:
                for q in (cs, cs + 1):
                    if start <= q < start + m:
                        scratch[q - start] = 0
        h1 = np.uint64(m) * M3
        h2 = np.uint64(m) ^ np.uint64(0x27D4EB2F165667C5)
        for w in range(0, n_bytes, 8):
            v = np.uint64(0)
            for b in range(8):
                v |= np.uint64(scratch[w + b]) << np.uint64(8 * b)
            h1 = _mix(h1, v, M2)
            h2 = _mix(h2, v ^ np.uint64(0x9FB21C651E98DF25), M3)
        h1 ^= h1 >> np.uint64(32)
        h2 ^= h2 >> np.uint64(29)
        out_hi[k] = h2 * M2
        out_lo[k] = h1 * M3
        ok[k] = True
