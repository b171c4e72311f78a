"""numba kernels of the streaming pre/post matcher (see benchbook.analysis.latency).

Pre packets wait in a ring of ``window`` entries, indexed by a linear-probing hash table (with
tombstones, rebuilt from the ring when they pile up) on their 128-bit key; post packets look their key
up. Both captures are walked in merged time order, so a pre packet is only waiting while a post packet
could still match it (0 < t_post - t_pre < max latency), and the ring bounds memory whatever the capture
size. A latency of 0 or below is never a match: the two captures' clocks cannot order the packets then,
so the post copy counts as out of range.

The table holds 16-byte slots (ring sequence number + 2, low key word: 0 = empty, 1 = tombstone) in
one cache-aligned array, so a probe touches one cache line; the high key word is checked in the ring,
and each ring entry remembers its slot, so leaving the window needs no probe. Keys that do not follow
a counter (content keys) land anywhere in the table: the kernel prefetches the slots of the packets a
few steps ahead, so those cache misses overlap instead of following one another.
"""

from __future__ import annotations

import numpy as np

from benchbook.kernels import njit, numba_global

# LLVM intrinsics (benchbook.analysis.match_intrinsics needs numba: resolved when the JIT path is taken)
_prefetch = numba_global("benchbook.analysis.match_intrinsics", "prefetch")
_load8 = numba_global("benchbook.analysis.match_intrinsics", "load8")

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
F1 = np.uint64(0xFF51AFD7ED558CCD)
F2 = np.uint64(0xC4CEB9FE1A85EC53)
# table slot words: sequence number + SEQ0 (EMPTY and TOMB below it), low key word
EMPTY, TOMB, SEQ0 = np.uint64(0), np.uint64(1), np.uint64(2)
AHEAD = 12  # packets between a slot's prefetch and its use


def new_state(window: int, spread: int) -> dict[str, np.ndarray]:
    """Allocate the matcher state for a ring of ``window`` (power of two) entries and a table of
    ``spread`` (power of two) slots per entry: keys hashed all over the table probe less in a sparser one."""
    if window & (window - 1) or window < 2:
        raise ValueError("window must be a power of two >= 2")
    if spread & (spread - 1) or spread < 2:
        raise ValueError("spread must be a power of two >= 2")
    tsize = window * spread
    raw = np.zeros(2 * tsize + 8, np.uint64)
    skip = (-raw.ctypes.data % 64) // 8  # slots start on a cache line
    return {
        "tab": raw[skip : skip + 2 * tsize],
        "r_hi": np.zeros(window, np.uint64), "r_lo": np.zeros(window, np.uint64),
        "r_t": np.zeros(window, np.int64), "r_idx": np.zeros(window, np.int64),
        "r_slot": np.zeros(window, np.int64), "r_state": np.zeros(window, np.int8),
        "c": np.zeros(N_COUNTERS, np.int64),
    }


@njit(cache=True, inline="always")
def _bswap64(x):
    x = ((x & np.uint64(0x00FF00FF00FF00FF)) << np.uint64(8)) | ((x >> np.uint64(8)) & np.uint64(0x00FF00FF00FF00FF))
    x = ((x & np.uint64(0x0000FFFF0000FFFF)) << np.uint64(16)) | ((x >> np.uint64(16)) & np.uint64(0x0000FFFF0000FFFF))
    return (x << np.uint64(32)) | (x >> np.uint64(32))


@njit(cache=True, inline="always")
def _home(lo, tmask, ident):
    if ident:
        # explicit ids: mostly consecutive, so the slot follows the counter to keep neighbours together
        # in cache - whichever end of the id it counts at: a counter read in the other byte order
        # (its low bytes constant) is folded down by the byte-swapped copy.
        return np.int64((lo + _bswap64(lo)) & np.uint64(tmask))
    # content keys: the low word is a finished hash already
    return np.int64(lo & np.uint64(tmask))


@njit(cache=True)
def _rebuild(tab, r_lo, r_slot, c, rmask, tmask, ident):
    """Drop all tombstones: re-insert the waiting pre packets (ring head..tail)."""
    tab[:] = EMPTY
    c[C_TOMB] = 0
    for q in range(c[C_HEAD], c[C_TAIL]):
        r = q & rmask
        lo = r_lo[r]
        if q + AHEAD < c[C_TAIL]:
            _prefetch(tab, 2 * _home(r_lo[(q + AHEAD) & rmask], tmask, ident))
        s = _home(lo, tmask, ident)
        while tab[2 * s] != EMPTY:
            s = (s + 1) & tmask
        tab[2 * s] = np.uint64(q) + SEQ0
        tab[2 * s + 1] = lo
        r_slot[r] = s


@njit(cache=True, inline="always")
def _leave(tab, s, tmask):
    """Free slot s; returns 1 if it became a tombstone (its successor is taken), else 0."""
    if tab[2 * ((s + 1) & tmask)] == EMPTY:
        tab[2 * s] = EMPTY
        return 0
    tab[2 * s] = TOMB
    return 1


@njit(cache=True, inline="always")
def _find(tab, r_hi, hi, lo, tmask, rmask, ident):
    """The slot of the waiting pre packet with key (hi, lo), or -1 when none waits."""
    s = _home(lo, tmask, ident)
    while True:
        q = tab[2 * s]
        if q == EMPTY:
            return -1
        if q >= SEQ0 and tab[2 * s + 1] == lo and r_hi[np.int64(q - SEQ0) & rmask] == hi:
            return s
        s = (s + 1) & tmask


@njit(cache=True, nogil=True)
def match_step(
    tab, r_hi, r_lo, r_t, r_idx, r_slot, r_state, c,
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
    tmask = (tab.shape[0] >> 1) - 1
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
    # slots the coming packets will probe, and the slots of the ring entries next to leave
    for k in range(i, min(npre, i + AHEAD)):
        _prefetch(tab, 2 * _home(pre_lo[k], tmask, id_from_key))
    for k in range(j, min(npost, j + AHEAD)):
        _prefetch(tab, 2 * _home(post_lo[k], tmask, id_from_key))
    for q in range(head, min(tail, head + AHEAD)):
        _prefetch(tab, 2 * r_slot[q & rmask])
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
            if i + AHEAD < npre:
                _prefetch(tab, 2 * _home(pre_lo[i + AHEAD], tmask, id_from_key))
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
            found = _find(tab, r_hi, hi, lo, tmask, rmask, id_from_key)
            if found >= 0:
                r = np.int64(tab[2 * found] - SEQ0) & rmask
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
                tomb += _leave(tab, r_slot[r], tmask)
                if r_state[r] == ST_PENDING:
                    lost += 1
                    c[C_WINDOW_EVICTED] += 1
                head += 1
                if head + AHEAD < tail:
                    _prefetch(tab, 2 * r_slot[(head + AHEAD) & rmask])
            if tomb > tomb_limit:
                c[C_HEAD] = head
                c[C_TAIL] = tail
                _rebuild(tab, r_lo, r_slot, c, rmask, tmask, id_from_key)
                tomb = 0
            r = tail & rmask
            r_hi[r] = hi
            r_lo[r] = lo
            r_t[r] = t
            r_idx[r] = pre_base + i
            r_state[r] = ST_PENDING
            s = _home(lo, tmask, id_from_key)
            while tab[2 * s] >= SEQ0:
                s = (s + 1) & tmask
            if tab[2 * s] == TOMB:
                tomb -= 1
            tab[2 * s] = np.uint64(tail) + SEQ0
            tab[2 * s + 1] = lo
            r_slot[r] = s
            tail += 1
            if tail - head > max_pending:
                max_pending = tail - head
            i += 1
        else:
            if j + AHEAD < npost:
                _prefetch(tab, 2 * _home(post_lo[j + AHEAD], tmask, id_from_key))
            t = post_t[j]
            n_post += 1
            if n_post > 1 and t < last_post:
                c[C_BACK_POST] += 1
            last_post = t
            # pre packets too old to match anything from now on leave the window
            limit = t - max_latency
            while head < tail and r_t[head & rmask] <= limit:
                r = head & rmask
                tomb += _leave(tab, r_slot[r], tmask)
                if r_state[r] == ST_PENDING:
                    lost += 1
                head += 1
                if head + AHEAD < tail:
                    _prefetch(tab, 2 * r_slot[(head + AHEAD) & rmask])
            if not post_ok[j]:
                c[C_UNKEYED_POST] += 1
                unmatched += 1
                j += 1
                continue
            hi = post_hi[j]
            lo = post_lo[j]
            found = _find(tab, r_hi, hi, lo, tmask, rmask, id_from_key)
            if found < 0:
                unmatched += 1
            else:
                q = np.int64(tab[2 * found] - SEQ0)
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
def finish(tab, r_slot, r_state, c):
    """Both captures are done: every pre packet still waiting is lost."""
    rmask = r_state.shape[0] - 1
    tmask = (tab.shape[0] >> 1) - 1
    for q in range(c[C_HEAD], c[C_TAIL]):
        r = q & rmask
        c[C_TOMB] += _leave(tab, r_slot[r], tmask)
        if r_state[r] == ST_PENDING:
            c[C_LOST] += 1
    c[C_HEAD] = c[C_TAIL]


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
            v = _load8(data, p)
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


@njit(cache=True, inline="always")
def _fmix(h):
    """MurmurHash3's 64-bit finaliser: every input bit reaches every output bit."""
    h ^= h >> np.uint64(33)
    h *= F1
    h ^= h >> np.uint64(33)
    h *= F2
    return h ^ (h >> np.uint64(33))


@njit(cache=True, inline="always")
def _clear_byte(words, q):
    """Zero key byte q (0-based within the key) in the little-endian words."""
    words[q >> 3] &= ~(np.uint64(0xFF) << np.uint64(8 * (q & 7)))


@njit(cache=True, nogil=True)
def content_keys(data, offsets, caplen, start, end, out_hi, out_lo, ok):
    """MoonSniff/pos key: frame bytes [start, end) with the IPv4 header checksum and the UDP/TCP checksum (over
    IPv4, or IPv6 without extension headers; after one 802.1Q tag too) zeroed,
    hashed to 128 bits (two independent 64-bit hashes; the low one finished so its low bits spread)."""
    n_bytes = end - start
    n_words = (n_bytes + 7) >> 3
    words = np.zeros(n_words, np.uint64)
    for k in range(offsets.shape[0]):
        L = caplen[k]
        if L <= start:
            ok[k] = False
            out_hi[k] = 0
            out_lo[k] = 0
            continue
        p = offsets[k]
        m = min(L, end) - start  # key bytes present
        full = m >> 3
        for w in range(full):
            words[w] = _load8(data, p + start + 8 * w)
        w0 = full
        r = m - 8 * full  # bytes of a last, partial word
        if r > 0 and p + start + 8 * full + 8 <= data.shape[0]:
            # one load past the packet's end, within the buffer: keep its r low (first) bytes
            words[full] = _load8(data, p + start + 8 * full) & ((np.uint64(1) << np.uint64(8 * r)) - np.uint64(1))
            w0 = full + 1
        for w in range(w0, n_words):
            v = np.uint64(0)
            for b in range(max(0, m - 8 * w)):
                v |= np.uint64(data[p + start + 8 * w + b]) << np.uint64(8 * b)
            words[w] = v
        # zero checksums (frame positions relative to start)
        l3 = 14
        etype = (np.int64(data[p + 12]) << 8) | np.int64(data[p + 13]) if L >= 14 else 0
        if etype == 0x8100 and L >= 18:
            l3 = 18
            etype = (np.int64(data[p + 16]) << 8) | np.int64(data[p + 17])
        l4 = -1
        proto = 0
        if etype == 0x0800 and L >= l3 + 20:
            ihl = (np.int64(data[p + l3]) & 0xF) * 4
            proto = data[p + l3 + 9]
            for q in (l3 + 10, l3 + 11):
                if start <= q < start + m:
                    _clear_byte(words, q - start)
            l4 = l3 + ihl
        elif etype == 0x86DD and L >= l3 + 40:
            proto = data[p + l3 + 6]  # next header: UDP or TCP right after the fixed header
            l4 = l3 + 40
        if l4 >= 0:
            cs = -1
            if proto == 17:
                cs = l4 + 6
            elif proto == 6:
                cs = l4 + 16
            if cs >= 0:
                for q in (cs, cs + 1):
                    if start <= q < start + m:
                        _clear_byte(words, q - start)
        h1 = np.uint64(m) * M3
        h2 = np.uint64(m) ^ np.uint64(0x27D4EB2F165667C5)
        for w in range(n_words):
            v = words[w]
            h1 = _mix(h1, v, M2)
            h2 = _mix(h2, v ^ np.uint64(0x9FB21C651E98DF25), M3)
        out_hi[k] = h2 ^ (h2 >> np.uint64(29))
        out_lo[k] = _fmix(h1)
        ok[k] = True
