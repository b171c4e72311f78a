"""Latency matching against an independent dict-based computation and the generator's truth."""

from __future__ import annotations

import struct
import warnings

import numpy as np
import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchbook.analysis import match_kernel as mk
from benchbook.analysis.latency import ContentKey, IdKey, match_captures
from benchbook.analysis.latency_table import read_latencies
from benchbook.capture import CaptureFormatError, write_pcap, write_pcapng
from benchbook.capture.synth import LatencyModel, make_capture_pair
from capture_reference import frames_with_ids, read_reference


def content_key(frame: bytes) -> bytes:
    """Bytes 12-64 with the IPv4 header checksum and UDP/TCP checksum zeroed (plain Python)."""
    f = bytearray(frame[:64])
    if len(f) >= 34 and f[12:14] == b"\x08\x00":
        f[24:26] = b"\0\0"
        ihl = (f[14] & 0xF) * 4
        cs = {17: 14 + ihl + 6, 6: 14 + ihl + 16}.get(f[23])
        if cs is not None:
            f[cs : cs + 2] = b"\0\0"
    return bytes(f[12:])


def reference_match(pre_path, post_path, mode: str, max_lat: int = 5_000_000_000, offset: int = 42):
    """Independent computation: pre keys occurring more than once dropped; join; 0 < lat < max;
    the first post copy (in capture order) matches, later copies within the latency window are
    duplicates, copies outside it unmatched."""
    pre = read_reference(pre_path)
    post = read_reference(post_path)

    def key(fr):
        if mode == "id":
            return struct.unpack("<Q", fr[offset : offset + 8])[0]
        if mode == "id-big":
            return struct.unpack(">Q", fr[offset : offset + 8])[0]
        return content_key(fr)

    seen: dict = {}
    for idx, (t, _c, _w, fr) in enumerate(pre):
        k = key(fr)
        seen.setdefault(k, []).append((t, idx))
    unique = {k: v[0] for k, v in seen.items() if len(v) == 1}
    pre_dups = sum(len(v) for v in seen.values() if len(v) > 1)
    matched_keys = set()
    rows = []
    dup = unmatched = reordered = 0
    max_idx = -1
    pre_t = np.array([r[0] for r in pre])
    depth = 0
    for t, _c, _w, fr in post:
        k = key(fr)
        if k not in unique:
            unmatched += 1
            continue
        tp, idx = unique[k]
        lat = t - tp
        if not 0 < lat < max_lat:  # copies outside the latency window match nothing
            unmatched += 1
            continue
        if k in matched_keys:
            dup += 1
            continue
        matched_keys.add(k)
        if idx < max_idx:
            reordered += 1
        max_idx = max(max_idx, idx)
        depth = max(depth, int(np.searchsorted(pre_t, t, "left")) - idx)
        rows.append((idx if mode == "content" else k, tp, t, lat))
    counts = dict(pre=len(pre), post=len(post), matched=len(rows), lost=len(pre) - pre_dups - len(rows),
                  duplicates=dup, unmatched_post=unmatched, reordered=reordered, pre_duplicates=pre_dups)
    return rows, counts, depth


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    d = tmp_path_factory.mktemp("pair")
    truth = make_capture_pair(
        d / "pre.pcap", d / "post.pcap", 20_000, rate_pps=2e6,
        latency=LatencyModel(base_ns=3000, tail_mean_ns=800, spike_prob=0.002, spike_ns=50_000),
        loss=0.02, duplicate=0.01, reorder=0.01, foreign_post=17, post_mac_rewrite=True, seed=7,
        chunk=3000,
    )
    return d, truth


COUNT_KEYS = ("pre", "post", "matched", "lost", "duplicates", "unmatched_post", "reordered")
KEYS = {"id": IdKey(offset=42), "id-big": IdKey(offset=42, byteorder="big"), "content": ContentKey()}


def bswap(ids: np.ndarray) -> np.ndarray:
    return ids.astype(np.uint64).byteswap()


@pytest.mark.parametrize("mode", ["id", "id-big", "content"])
def test_matching_equals_independent_computation_and_truth(pair, mode, tmp_path):
    """id: a little-endian counter; id-big: the same counter read big-endian, so only its high bytes
    vary (the byte-swapped ids of a big-endian counter read little-endian); content: the frame bytes."""
    d, truth = pair
    key = KEYS[mode]
    res = match_captures(d / "pre.pcap", d / "post.pcap", key, out_parquet=tmp_path / "l.parquet", chunk_packets=1500)
    rows, ref, depth = reference_match(d / "pre.pcap", d / "post.pcap", mode)
    assert {k: res.counts[k] for k in COUNT_KEYS} == {k: ref[k] for k in COUNT_KEYS}
    got = list(zip(res.id.tolist(), res.t_pre_ns.tolist(), res.t_post_ns.tolist(), res.latency_ns.tolist(),
                   strict=True))
    assert got == rows
    # the generator's truth
    assert {k: res.counts[k] for k in COUNT_KEYS} == truth.counts()
    assert truth.lost > 300 and truth.duplicates > 100 and truth.reordered > 100
    if mode != "content":
        delivered = truth.latency_ns >= 0
        ids = truth.id[delivered] if mode == "id" else bswap(truth.id[delivered])
        if mode == "id-big":
            assert np.all(ids & np.uint64(0xFFFFFFFF) == 0)  # the low bytes never vary
        want = dict(zip(ids.tolist(), truth.latency_ns[delivered].tolist(), strict=True))
        assert dict(zip(res.id.tolist(), res.latency_ns.tolist(), strict=True)) == want
    else:  # ids are pre indices
        assert np.array_equal(res.latency_ns, truth.latency_ns[res.id.astype(np.int64)])
    exact = np.sort(truth.latency_ns[truth.latency_ns >= 0])
    assert np.array_equal(np.sort(res.latency_ns), exact)
    assert res.counts["reorder_window"] == depth
    assert res.counts["window_evicted"] == 0
    assert res.counts["backwards_timestamps"] == 0
    table = read_latencies(tmp_path / "l.parquet")
    assert table["id"].dtype == np.uint64 and table["latency_ns"].dtype == np.int64
    assert np.array_equal(table["latency_ns"], res.latency_ns)
    assert np.array_equal(table["t_pre_ns"], res.t_pre_ns)


def test_max_latency_and_small_window(pair):
    d, truth = pair
    lat = truth.latency_ns[truth.latency_ns >= 0]
    cap = int(np.percentile(lat, 99.5))
    res = match_captures(d / "pre.pcap", d / "post.pcap", IdKey(42), max_latency_ns=cap)
    rows, ref, _ = reference_match(d / "pre.pcap", d / "post.pcap", "id", max_lat=cap)
    assert {k: res.counts[k] for k in COUNT_KEYS} == {k: ref[k] for k in COUNT_KEYS}
    assert res.latency_ns.max() < cap and res.counts["matched"] < truth.matched
    # a window smaller than the reordering depth loses matches, and says so
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        small = match_captures(d / "pre.pcap", d / "post.pcap", IdKey(42), window_packets=16)
    assert small.counts["window_evicted"] > 0
    assert small.counts["matched"] < truth.matched
    assert small.counts["matched"] + small.counts["lost"] + small.counts["pre_duplicates"] == small.counts["pre"]
    msg = next(str(x.message) for x in w if "raise window_packets" in str(x.message))
    assert f"{small.counts['window_evicted']} pre packets left the matching window (16 packets)" in msg
    assert f"and {small.counts['unmatched_post']} post packets found no match" in msg


def test_pre_duplicate_keys_are_dropped(tmp_path):
    rows = read_reference(make_pair_small(tmp_path))
    frames = [r[3] for r in rows]
    ts = np.array([r[0] for r in rows], np.int64)
    # pre: packet 5 sent twice (same content), post: every packet once, 10 us later
    pre_frames = frames[:6] + [frames[5]] + frames[6:]
    pre_ts = np.sort(np.concatenate([ts, [ts[5] + 1]]))
    write_pcap(tmp_path / "dpre.pcap", pre_ts, pre_frames)
    write_pcap(tmp_path / "dpost.pcap", ts + 10_000, frames)
    for mode, key in (("content", ContentKey()), ("id", IdKey(42))):
        with pytest.warns(UserWarning, match="share a key"):
            res = match_captures(tmp_path / "dpre.pcap", tmp_path / "dpost.pcap", key)
        _, ref, _ = reference_match(tmp_path / "dpre.pcap", tmp_path / "dpost.pcap", mode)
        assert res.counts["pre_duplicates"] == ref["pre_duplicates"] == 2
        assert {k: res.counts[k] for k in COUNT_KEYS} == {k: ref[k] for k in COUNT_KEYS}
        assert res.counts["matched"] == len(frames) - 1


def test_every_pre_duplicate_is_counted_also_in_the_tables_first_slot(tmp_path):
    """A key that waits already poisons the waiting packet: the first copy counts 2 (both dropped), each further
    copy 1. Id 0 lives in the table's first slot (slot 0 is a slot like any other)."""
    pre_ids = [0, 0, 0, 5, 5, 9]
    write_pcap(tmp_path / "pre.pcap", 1_000_000 + 1000 * np.arange(6, dtype=np.int64), frames_with_ids(pre_ids))
    write_pcap(tmp_path / "post.pcap", 1_100_000 + 1000 * np.arange(3, dtype=np.int64), frames_with_ids([0, 5, 9]))
    with pytest.warns(UserWarning, match="^5 pre packets share a key with another waiting pre packet"):
        res = match_captures(tmp_path / "pre.pcap", tmp_path / "post.pcap", IdKey(42))
    _, ref, _ = reference_match(tmp_path / "pre.pcap", tmp_path / "post.pcap", "id")
    assert (res.counts["pre_duplicates"], res.counts["matched"], res.counts["ambiguous_post"]) == (5, 1, 2)
    assert {k: res.counts[k] for k in COUNT_KEYS} == {k: ref[k] for k in COUNT_KEYS}
    assert res.id.tolist() == [9]


def make_pair_small(d):
    make_capture_pair(d / "spre.pcap", d / "spost.pcap", 50, rate_pps=1e5, seed=1)
    return d / "spre.pcap"


@pytest.mark.parametrize("side", ["pre", "post"])
def test_backwards_timestamps_counted(tmp_path, side):
    """Each step back counts once, in its own capture's counter: the second packet's (the first that can step
    back) and a later one's; a timestamp equal to the one before is no step back."""
    rows = read_reference(make_pair_small(tmp_path))
    frames = [r[3] for r in rows]
    stamps = {"pre": np.array([r[0] for r in rows], np.int64)}
    stamps["post"] = stamps["pre"] + 5_000
    stamps[side][[1, 30]] -= 30_000  # two timestamps step back
    stamps[side][20] = stamps[side][19]  # one repeats the one before
    for name, ts in stamps.items():
        write_pcap(tmp_path / f"b{name}.pcap", ts, frames)
    with pytest.warns(UserWarning, match=rf"b{side}\.pcap: timestamps go backwards 2 times in the {side} capture"):
        res = match_captures(tmp_path / "bpre.pcap", tmp_path / "bpost.pcap", IdKey(42))
    other = "post" if side == "pre" else "pre"
    assert res.counts[f"backwards_timestamps_{side}"] == 2
    assert res.counts["backwards_timestamps"] == 2
    assert res.counts[f"backwards_timestamps_{other}"] == 0


def test_snaplen_shorter_than_id_and_empty_capture(tmp_path):
    rows = read_reference(make_pair_small(tmp_path))
    frames = [r[3][:40] for r in rows]
    ts = np.array([r[0] for r in rows], np.int64)
    write_pcap(tmp_path / "short.pcap", ts, frames, snaplen=40)
    with pytest.raises(CaptureFormatError, match=r"short\.pcap: at byte offset 16: snap length 40 is shorter "
                                                r"than the packet id field \(bytes 42\.\.49\)"):
        match_captures(tmp_path / "short.pcap", tmp_path / "spost.pcap", IdKey(42))
    # snap length large enough in the header, but some packets cut short: counted, first one named
    mixed = [r[3] if i % 10 else r[3][:30] for i, r in enumerate(rows)]
    write_pcap(tmp_path / "mixed.pcap", ts, mixed)
    with pytest.warns(UserWarning,
                      match=r"mixed\.pcap: 5 pre packets are too short .* byte offset 24 with 30 captured bytes"):
        res = match_captures(tmp_path / "mixed.pcap", tmp_path / "spost.pcap", IdKey(42))
    assert res.counts["unkeyed_pre"] == 5 and res.counts["matched"] == 45
    write_pcap(tmp_path / "empty.pcap", np.zeros(0, np.int64), [])
    with pytest.warns(UserWarning, match=r"empty\.pcap: the pre capture holds no packets"):
        res = match_captures(tmp_path / "empty.pcap", tmp_path / "spost.pcap", IdKey(42))
    assert res.counts["matched"] == 0 and res.counts["unmatched_post"] == 50


def test_zstd_and_pcapng_inputs_match_like_plain_pcap(pair, tmp_path):
    d, truth = pair
    zpre = tmp_path / "pre.pcap.zst"
    zpre.write_bytes(zstandard.ZstdCompressor(level=1).compress((d / "pre.pcap").read_bytes()))
    rows = read_reference(d / "post.pcap")
    ng = write_pcapng(tmp_path / "post.pcapng", np.array([r[0] for r in rows]), [r[3] for r in rows])
    res = match_captures(zpre, ng, IdKey(42), chunk_packets=4096)
    assert {k: res.counts[k] for k in COUNT_KEYS} == truth.counts()
    short = write_pcapng(tmp_path / "short.pcapng", np.array([r[0] for r in rows[:5]]), [r[3][:40] for r in rows[:5]],
                         snaplen=40)
    with pytest.raises(CaptureFormatError,
                       match=r"short\.pcapng: at byte offset \d+: interface snap length 40 is shorter"):
        match_captures(short, ng, IdKey(42))


def test_batch_callback_sees_every_match_in_order_and_its_errors_surface(pair):
    d, truth = pair
    seen = []
    res = match_captures(d / "pre.pcap", d / "post.pcap", IdKey(42), chunk_packets=2000,
                         on_batch=lambda i, a, b, lat: seen.append(lat))
    assert np.array_equal(np.concatenate(seen), res.latency_ns)

    def boom(*batch):
        raise ValueError("sink failed")

    with pytest.raises(ValueError, match="sink failed"):
        match_captures(d / "pre.pcap", d / "post.pcap", IdKey(42), on_batch=boom, keep_arrays=False)


def test_zero_and_negative_latencies_are_never_matches(tmp_path):
    """Latency must be > 0: a post copy stamped at its pre packet's time (0) or before it (< 0, a step back
    in the post clock) is out of range; its pre packet is then lost. The smallest positive latency, 1 ns,
    and max_latency - 1 ns match; max_latency itself does not."""
    max_lat = 1_000_000
    pre_ids = [0, 1, 2, 3, 4, 5]
    pre_t = [1000, 2000, 3000, 4000, 5000, 6000]
    # post: 0 -> latency 0; 1 -> latency 1; 2 -> +10 us; 3 -> stamped 500 ns before its pre packet (after a
    # later packet, so the post clock steps back); 4 -> exactly max_lat; 5 -> max_lat - 1
    post = [(1000, 0), (2001, 1), (13_000, 2), (14_000, 2), (3500, 3), (5000 + max_lat, 4), (6000 + max_lat - 1, 5)]
    post.sort(key=lambda x: (x[0] if x[1] != 3 else 13_500))  # id 3 arrives between the copies of id 2
    write_pcap(tmp_path / "pre.pcap", np.array(pre_t, np.int64), frames_with_ids(pre_ids))
    write_pcap(tmp_path / "post.pcap", np.array([t for t, _ in post], np.int64), frames_with_ids([i for _, i in post]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the step back in the post clock is warned about; counted below
        res = match_captures(tmp_path / "pre.pcap", tmp_path / "post.pcap", IdKey(42), max_latency_ns=max_lat)
    got = dict(zip(res.id.tolist(), res.latency_ns.tolist(), strict=True))
    assert got == {1: 1, 2: 10_000, 5: max_lat - 1}
    assert res.latency_ns.min() > 0
    c = res.counts
    # ids 0 (latency 0) and 3 (latency -500); id 4 (latency = max) finds no partner: its pre packet has
    # left the window, as every pre packet max_latency or more before the post clock does
    assert c["out_of_range_post"] == 2
    assert c["duplicates"] == 1  # the second copy of id 2
    assert (c["matched"], c["lost"], c["unmatched_post"], c["pre"], c["post"]) == (3, 3, 3, 6, 7)
    assert c["backwards_timestamps_post"] == 1
    _, ref, _ = reference_match(tmp_path / "pre.pcap", tmp_path / "post.pcap", "id", max_lat=max_lat)
    assert {k: c[k] for k in COUNT_KEYS} == {k: ref[k] for k in COUNT_KEYS}


def test_equal_timestamps_alone_do_not_match(tmp_path):
    """Every post copy at exactly its pre packet's time: nothing matches, each is out of range."""
    ts = np.arange(1, 101, dtype=np.int64) * 1000
    frames = frames_with_ids(range(100))
    write_pcap(tmp_path / "pre.pcap", ts, frames)
    write_pcap(tmp_path / "post.pcap", ts, frames)
    res = match_captures(tmp_path / "pre.pcap", tmp_path / "post.pcap", IdKey(42))
    c = res.counts
    assert (c["matched"], c["lost"], c["out_of_range_post"], c["unmatched_post"]) == (0, 100, 100, 100)
    assert len(res.latency_ns) == 0


ID_PATTERNS = ("counter", "swapped", "high-bits", "random")


@st.composite
def capture_pairs(draw):
    """Pre ids (unique) in a pattern that matters to the hash table, pre/post times, and per packet: lost,
    delivered once or twice with a latency that may be <= 0 or beyond max latency; foreign post packets."""
    n = draw(st.integers(1, 160))
    pattern = draw(st.sampled_from(ID_PATTERNS))
    base = draw(st.integers(0, 1 << 20))
    k = np.arange(n, dtype=np.uint64) + np.uint64(base)
    if pattern == "swapped":  # a big-endian counter read little-endian
        ids = bswap(k)
    elif pattern == "high-bits":  # only bits above any table mask vary
        ids = k << np.uint64(40)
    elif pattern == "random":
        ids = np.array(sorted(set(draw(st.lists(st.integers(0, 2**64 - 1), min_size=n, max_size=n)))), np.uint64)
        ids = ids[np.array(draw(st.permutations(range(len(ids)))), np.int64)] if len(ids) > 1 else ids
    else:
        ids = k
    n = len(ids)
    gaps = draw(st.lists(st.integers(1, 3000), min_size=n, max_size=n))
    pre_t = 1_000_000 + np.cumsum(np.array(gaps, np.int64))
    max_lat = draw(st.integers(2, 40_000))
    fate = draw(st.lists(st.tuples(st.sampled_from(("lost", "once", "twice")), st.integers(-2000, 50_000),
                                   st.integers(0, 60_000)), min_size=n, max_size=n))
    post = []
    for i, (what, lat, extra) in enumerate(fate):
        if what != "lost":
            post.append((int(pre_t[i]) + lat, int(ids[i])))
        if what == "twice":
            post.append((int(pre_t[i]) + lat + extra, int(ids[i])))
    n_foreign = draw(st.integers(0, 5))
    for f in range(n_foreign):
        post.append((int(pre_t[f % n]) + 100, (int(ids.max()) + 1 + f) % 2**64 ^ 0x5A5A))
    post.sort(key=lambda x: x[0])
    # small windows: evictions leave tombstones that force table rebuilds (and may push packets out early)
    window = draw(st.sampled_from((4, 8, 16, max(2, 1 << (n - 1).bit_length()), 1 << 12)))
    return ids, pre_t, post, max_lat, window


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=capture_pairs())
def test_every_key_mode_matches_the_reference_whatever_the_ids(case, tmp_path_factory):
    """Counters, byte-swapped counters, ids varying only in high bits and random ids give the reference's
    matches in all three key modes, also with small windows (tombstones, table rebuilds). When the window
    was too small (packets evicted before their time), the matches are a subset of the reference's."""
    ids, pre_t, post, max_lat, window = case
    d = tmp_path_factory.mktemp("prop")
    write_pcap(d / "pre.pcap", pre_t, frames_with_ids(ids.tolist()))
    write_pcap(d / "post.pcap", np.array([t for t, _ in post], np.int64), frames_with_ids([i for _, i in post]))
    for mode, key in KEYS.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # steps back in the post clock are warned about
            res = match_captures(d / "pre.pcap", d / "post.pcap", key, max_latency_ns=max_lat, window_packets=window,
                                 chunk_packets=37)
        rows, ref, _ = reference_match(d / "pre.pcap", d / "post.pcap", mode, max_lat=max_lat)
        got = list(zip(res.id.tolist(), res.t_pre_ns.tolist(), res.t_post_ns.tolist(), res.latency_ns.tolist(),
                       strict=True))
        c = res.counts
        assert c["matched"] + c["lost"] + c["pre_duplicates"] == c["pre"] == ref["pre"], mode
        assert c["matched"] + c["duplicates"] + c["unmatched_post"] == c["post"] == ref["post"], mode
        if c["window_evicted"]:
            assert set(got) <= set(rows) and c["lost"] >= ref["lost"], mode
        else:
            assert {k: c[k] for k in COUNT_KEYS} == {k: ref[k] for k in COUNT_KEYS}, mode
            assert got == rows, mode


@pytest.mark.parametrize(("delay_ns", "max_latency_ns"), [(2500, 6000), (300_000, 600_000)])
@pytest.mark.parametrize("mode", list(KEYS))
def test_table_rebuilds_keep_every_waiting_key(tmp_path, mode, delay_ns, max_latency_ns):
    """Packets leaving by time leave tombstones; past a quarter of the table it is rebuilt from the ring
    (here several times), and every packet still waiting must be found again: a few at a time (2-5 wait
    unmatched), or some 600 in the window (their keys collide in the table, and the rebuild must place them where
    a lookup probes)."""
    n, window = 6000, 1024
    pre_t = 1_000_000 + 1000 * np.arange(n, dtype=np.int64)
    ids = np.arange(n, dtype=np.uint64) + np.uint64(7)
    post_t = pre_t + delay_ns + (np.arange(n) % 3) * 1000
    write_pcap(tmp_path / "pre.pcap", pre_t, frames_with_ids(ids.tolist()))
    order = np.argsort(post_t, kind="stable")  # delivered in time order: some overtake others
    write_pcap(tmp_path / "post.pcap", post_t[order], frames_with_ids(ids[order].tolist()))
    res = match_captures(tmp_path / "pre.pcap", tmp_path / "post.pcap", KEYS[mode], max_latency_ns=max_latency_ns,
                         window_packets=window)
    rows, ref, _ = reference_match(tmp_path / "pre.pcap", tmp_path / "post.pcap", mode, max_lat=max_latency_ns)
    assert res.counts["matched"] == n and res.counts["window_evicted"] == 0 and res.counts["reordered"] > 0
    assert {k: res.counts[k] for k in COUNT_KEYS} == {k: ref[k] for k in COUNT_KEYS}
    assert list(zip(res.id.tolist(), res.t_pre_ns.tolist(), res.t_post_ns.tolist(), res.latency_ns.tolist(),
                    strict=True)) == rows


def test_every_counter_has_its_own_slot_and_name():
    """The kernel's counters are slots of one array: two constants on one slot would add up two counts."""
    slots = {name: value for name, value in vars(mk).items() if name.startswith("C_")}
    assert sorted(slots.values()) == list(range(mk.N_COUNTERS))
    assert sorted(mk.COUNTER_NAMES) == sorted([
        "pre", "post", "matched", "lost", "unmatched_post", "duplicates", "reordered", "backwards_timestamps_pre",
        "backwards_timestamps_post", "pre_duplicates", "unkeyed_pre", "unkeyed_post", "window_evicted",
        "max_pending", "reorder_window", "ambiguous_post", "out_of_range_post"])
    assert len(set(mk.COUNTER_NAMES.values())) == len(mk.COUNTER_NAMES)
    assert len({mk.ST_PENDING, mk.ST_MATCHED, mk.ST_POISONED}) == 3


@pytest.mark.parametrize(("window", "spread", "error"), [
    (3, 2, "window must be a power of two >= 2"), (1, 2, "window must be a power of two >= 2"),
    (4, 3, "spread must be a power of two >= 2"), (4, 1, "spread must be a power of two >= 2"),
])
def test_new_state_refuses_sizes_that_are_not_powers_of_two(window, spread, error):
    with pytest.raises(ValueError, match=f"^{error}$"):
        mk.new_state(window, spread)


@pytest.mark.parametrize(("window", "spread"), [(2, 2), (16, 4), (1024, 2)])
def test_new_state_sizes_and_the_table_on_a_cache_line(window, spread):
    st_ = mk.new_state(window, spread)
    assert st_["tab"].size == 2 * window * spread and st_["tab"].ctypes.data % 64 == 0
    assert not st_["tab"].any() and st_["c"].size == mk.N_COUNTERS and not st_["c"].any()
    assert {k: v.size for k, v in st_.items() if k.startswith("r_")} == dict.fromkeys(
        ("r_hi", "r_lo", "r_t", "r_idx", "r_slot", "r_state"), window)


def test_match_step_returns_when_its_output_arrays_are_full_and_resumes():
    """match_step with room for 3 matches per call and 10 pairs: no call returns more than 3 (nor writes past
    them), and calling again from where it stopped gives all 10, in order, with their latencies."""
    n, cap = 10, 3
    s = mk.new_state(16, 2)
    pre_t = np.arange(n, dtype=np.int64) * 1_000 + 5_000
    post_t = pre_t + 300 + np.arange(n, dtype=np.int64)
    ids = np.arange(1, n + 1, dtype=np.uint64)
    hi, ok = np.zeros(n, np.uint64), np.ones(n, np.bool_)
    out = (np.empty(cap, np.uint64), np.empty(cap, np.int64), np.empty(cap, np.int64), np.empty(cap, np.int64))
    i = j = 0
    got: list[tuple[int, int]] = []
    for _ in range(20):
        i, j, k = mk.match_step(s["tab"], s["r_hi"], s["r_lo"], s["r_t"], s["r_idx"], s["r_slot"], s["r_state"],
                                s["c"], pre_t, hi, ids, ok, 0, i, True, post_t, hi, ids, ok, j, True, 1_000_000,
                                True, *out)
        assert 0 <= k <= cap
        got += list(zip(out[0][:k].tolist(), out[3][:k].tolist(), strict=True))
        if i == n and j == n:
            break
    assert got == [(int(x), 300 + x - 1) for x in ids]


def test_a_latency_of_exactly_max_latency_is_out_of_range_also_for_a_pre_packet_that_stepped_back(tmp_path):
    """A pre packet leaves the window once it is max_latency_ns older than the post packet at hand, and a match
    needs 0 < latency < max_latency_ns. A pre packet stamped earlier than the one before it (a step back) waits
    behind that one and does not leave with it: its copy exactly max_latency_ns later is out of range, one
    1 ns sooner is matched."""
    max_lat = 1_000_000
    frames = frames_with_ids([1, 2, 3])
    pre_ts = [10_000_000, 9_000_000, 9_200_000]  # packet 2 steps back; 1 waits ahead of 2 and 3
    post_ts = [10_000_500, 9_000_000 + max_lat, 9_200_000 + max_lat - 1]
    write_pcap(tmp_path / "pre.pcap", np.array(pre_ts, np.int64), frames)
    write_pcap(tmp_path / "post.pcap", np.array(sorted(post_ts), np.int64),
               [frames[k] for k in np.argsort(post_ts, kind="stable")])
    with pytest.warns(UserWarning, match="backwards"):
        res = match_captures(tmp_path / "pre.pcap", tmp_path / "post.pcap", IdKey(42), max_latency_ns=max_lat)
    assert res.counts["out_of_range_post"] == 1 and res.counts["matched"] == 2
    assert sorted(res.latency_ns.tolist()) == [500, max_lat - 1]


@pytest.mark.parametrize(("width", "big"), [(8, False), (8, True), (4, True), (2, False), (3, False)])
def test_id_keys_need_the_whole_id_in_the_captured_bytes(width, big):
    """id_keys reads `width` bytes at offset 42 (little- or big-endian): a frame captured one byte short of the
    id's end has no key (0, 0, not ok); one that ends exactly with it has, and the bytes after a frame (the
    next frame's) never enter its key; the high word of an id key is 0."""
    rng = np.random.default_rng(width + 10 * big)
    lengths = [42 + width - 1, 42 + width, 60, 42, 0, 42 + width + 1]
    frames = [rng.bytes(n) for n in lengths]
    buf = b"".join(f + b"\xff" * 3 for f in frames)
    offsets = np.cumsum([0] + [n + 3 for n in lengths[:-1]]).astype(np.int64)
    n = len(frames)
    hi, lo, ok = np.ones(n, np.uint64), np.ones(n, np.uint64), np.zeros(n, np.bool_)
    mk.id_keys(np.frombuffer(buf, np.uint8), offsets, np.array(lengths, np.uint32), 42, width, big, hi, lo, ok)
    want_ok = [n_ >= 42 + width for n_ in lengths]
    assert ok.tolist() == want_ok
    order = "big" if big else "little"
    assert lo.tolist() == [int.from_bytes(f[42 : 42 + width], order) if w else 0 for f, w in zip(frames, want_ok,
                                                                                                  strict=True)]
    assert not hi.any()


def test_window_evictions_and_an_unkeyed_post_packet_are_counted_exactly(tmp_path):
    """A window of 4 waiting pre packets and 10 pre packets of which only the last 4 arrive: each of the first 6
    is pushed out by the 5th to 10th (6 evictions, 6 lost, never more than 4 waiting); a post frame too short for
    its id between the copies counts once as unkeyed and unmatched, and the copies after it still match."""
    frames = frames_with_ids(range(1, 11))
    pre_ts = np.arange(1, 11, dtype=np.int64) * 1_000
    write_pcap(tmp_path / "pre.pcap", pre_ts, frames)
    post_frames = [frames[6], frames[6][:44], *frames[7:]]
    post_ts = np.array([7_500, 7_700, 8_500, 9_500, 10_500], np.int64)
    write_pcap(tmp_path / "post.pcap", post_ts, post_frames)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the evictions are warned about
        res = match_captures(tmp_path / "pre.pcap", tmp_path / "post.pcap", IdKey(42), window_packets=4)
    c = res.counts
    assert (c["window_evicted"], c["lost"], c["matched"], c["max_pending"]) == (6, 6, 4, 4)
    assert (c["unkeyed_post"], c["unmatched_post"], c["post"]) == (1, 1, 5)
    assert res.id.tolist() == [7, 8, 9, 10] and res.latency_ns.tolist() == [500] * 4
