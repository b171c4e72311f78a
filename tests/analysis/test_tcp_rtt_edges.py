"""Edges of the RTT samples (benchbook.analysis.tcp_rtt): a full ring drops its oldest entry, the TSval ring holds
64 values and the segment ring 512 (the sample of a dropped entry is lost, never wrong), each RTT row column has
its own index, and on a real capture (Zeek's http-post-large.pcap) every sample's time is the time of a packet of
the capture, as is its time minus its RTT (the TSval's first use or the segment's send), under both kind names."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchbook.analysis import tcp_rtt as rt
from benchbook.analysis.tcp_report import analyze_tcp
from capture_reference import read_reference


def _rings(size: int) -> tuple[np.ndarray, np.ndarray]:
    """One flow's rings as tcp_flows allocates them (both directions), and their head/count words."""
    return np.zeros((1, 2, size, 2), np.int64), np.zeros((1, 2, 2), np.int64)


def _entries(ring: np.ndarray, meta: np.ndarray, size: int) -> list[tuple[int, int]]:
    head, count = int(meta[0, 0, 0]), int(meta[0, 0, 1])
    return [(int(ring[0, 0, (head + j) % size, 0]), int(ring[0, 0, (head + j) % size, 1])) for j in range(count)]


@pytest.mark.parametrize("pushed", [1, 3, 4, 5, 6, 9, 13])
def test_a_full_ring_drops_its_oldest_entry(pushed):
    ring, meta = _rings(4)
    for i in range(1, pushed + 1):
        rt._append(ring, meta, 0, 0, 0, 4, 100 * i, 1000 * i)
    kept = list(range(max(1, pushed - 3), pushed + 1))
    assert _entries(ring, meta, 4) == [(100 * i, 1000 * i) for i in kept]
    assert int(meta[0, 0, 0]) == max(0, pushed - 4) % 4
    assert meta[0, 1].tolist() == [0, 0]  # the other direction untouched


@pytest.mark.parametrize(("pushed", "first_rtt"), [(64, 99_000), (65, -1)])
def test_the_tsval_ring_holds_64_values(pushed, first_rtt):
    """TSvals 1..pushed first used at 1000 ns each; echoes at 100 us: the first TSval's echo is a sample only
    while the ring still holds it, the second's is one either way."""
    ring, meta = _rings(rt.TS_RING)
    for v in range(1, pushed + 1):
        rt.ts_push(ring, meta, 0, 0, 0, v, 1000 * v)
    assert rt.ts_echo(ring, meta, 0, 0, 0, 1, 100_000) == first_rtt
    assert rt.ts_echo(ring, meta, 0, 0, 0, 2, 100_000) == 98_000
    assert int(meta[0, 0, 1]) == pushed - 2


@pytest.mark.parametrize(("pushed", "kept"), [
    ([100, 100, 100], [100]),                          # one TSval on several segments: its first use only
    ([10, 20, 15], [10, 20]),                          # older than the newest remembered: not a new value
    ([10, 20, 20, 30], [10, 20, 30]),
    ([0xFFFFFFF0, 0x10], [0xFFFFFFF0, 0x10]),          # newer across the 32-bit wrap
    ([0x10, 0xFFFFFFF0], [0x10]),                      # older across the wrap
    ([5, 5 + 0x7FFFFFFF], [5, 5 + 0x7FFFFFFF]),        # 2^31 - 1 ahead is newer
    ([5, 5 + 0x80000000], [5]),                        # 2^31 ahead is not
])
def test_only_a_tsval_newer_than_the_newest_remembered_is_remembered(pushed, kept):
    ring, meta = _rings(rt.TS_RING)
    for i, v in enumerate(pushed):
        rt.ts_push(ring, meta, 0, 0, 0, v, 1000 * (i + 1))
    first_use = {}
    for i, v in enumerate(pushed):
        first_use.setdefault(v, 1000 * (i + 1))
    assert _entries(ring, meta, rt.TS_RING) == [(v, first_use[v]) for v in kept]
    assert meta[0, 1].tolist() == [0, 0]  # the other direction untouched


def test_a_tsval_echoed_twice_gives_one_sample_from_its_first_use():
    """Three segments carry TSval 100 (sent at 1, 2, 3 us); the peer's ACKs echo it at 10 and 12 us: one sample of
    9 us, and none for the second echo."""
    ring, meta = _rings(rt.TS_RING)
    for t_ns in (1000, 2000, 3000):
        rt.ts_push(ring, meta, 0, 0, 0, 100, t_ns)
    assert rt.ts_echo(ring, meta, 0, 0, 0, 100, 10_000) == 9_000
    assert rt.ts_echo(ring, meta, 0, 0, 0, 100, 12_000) == -1
    assert int(meta[0, 0, 1]) == 0


def test_echoes_consume_the_ring_in_order_and_each_samples_its_own_first_use():
    """TSvals 10, 20, 30, 40 first used at 1, 2, 3, 4 us. An echo of 10 at 5 us: 4 us. An echo of 30 at 6 us (20's
    was lost): 3 us from 30's own first use, 20 consumed unsampled. An echo of 20 afterwards (reordered): older than
    everything left, no sample, nothing consumed. 40 at 9 us: 5 us, and the ring is empty."""
    ring, meta = _rings(rt.TS_RING)
    for i, v in enumerate((10, 20, 30, 40)):
        rt.ts_push(ring, meta, 0, 0, 0, v, 1000 * (i + 1))
    assert rt.ts_echo(ring, meta, 0, 0, 0, 10, 5000) == 4000
    assert _entries(ring, meta, rt.TS_RING) == [(20, 2000), (30, 3000), (40, 4000)]
    assert rt.ts_echo(ring, meta, 0, 0, 0, 30, 6000) == 3000
    assert _entries(ring, meta, rt.TS_RING) == [(40, 4000)]
    assert rt.ts_echo(ring, meta, 0, 0, 0, 20, 7000) == -1
    assert _entries(ring, meta, rt.TS_RING) == [(40, 4000)]
    assert rt.ts_echo(ring, meta, 0, 0, 0, 40, 9000) == 5000
    assert _entries(ring, meta, rt.TS_RING) == [] and int(meta[0, 0, 1]) == 0
    assert rt.ts_echo(ring, meta, 0, 0, 0, 40, 9500) == -1 and int(meta[0, 0, 1]) == 0  # an empty ring: nothing


@pytest.mark.parametrize(("tsecr", "rtt", "left"), [
    (5, -1, 1),                                  # exactly 2^31 behind the remembered value: older, nothing consumed
    (4, -1, 0),                                  # 2^31 - 1 ahead of it (across the wrap): newer, consumed unsampled
    (0x80000005, 1000, 0),                       # the value itself
])
def test_an_echo_2_to_the_31_away_counts_as_older(tsecr, rtt, left):
    ring, meta = _rings(rt.TS_RING)
    rt.ts_push(ring, meta, 0, 0, 0, 0x80000005, 1000)
    assert rt.ts_echo(ring, meta, 0, 0, 0, tsecr, 2000) == rtt
    assert int(meta[0, 0, 1]) == left


@pytest.mark.parametrize(("pushed", "first_rtt"), [(512, 999_000), (513, -1)])
def test_the_segment_ring_holds_512_segments(pushed, first_rtt):
    """Segments ending at 100, 200, ... sent at 1000 ns each; an ACK of the first one's end at 1 ms: a sample only
    while the ring still holds that segment; the ACK of the next end is one either way."""
    ring, meta = _rings(rt.SEG_RING)
    for i in range(1, pushed + 1):
        rt.seg_push(ring, meta, 0, 0, 0, 100 * i, 1000 * i)
    assert rt.seg_ack(ring, meta, 0, 0, 0, 100, 1_000_000) == first_rtt
    assert rt.seg_ack(ring, meta, 0, 0, 0, 200, 1_000_000) == 998_000
    assert int(meta[0, 0, 1]) == pushed - 2


def test_each_rtt_row_column_has_its_own_index():
    columns = (rt.R_FLOW, rt.R_DIR, rt.R_TIME, rt.R_RTT, rt.R_KIND, rt.R_INFLIGHT)
    assert sorted(columns) == list(range(rt.N_R))
    assert rt.KIND_NAMES[rt.KIND_TS_ECHO] == "ts_echo" and rt.KIND_NAMES[rt.KIND_DATA_ACK] == "data_ack"


def test_samples_of_a_real_capture_start_and_end_on_its_packets(shared_datasets: Path, tmp_path: Path):
    trace = shared_datasets / "zeek-tcp-baselines" / "Traces" / "http" / "http-post-large.pcap"
    analyze_tcp([trace], tmp_path / "out", html=False)
    rtt = pd.read_parquet(tmp_path / "out" / "rtt.parquet")
    stamps = {ts for ts, *_ in read_reference(trace)}
    assert rtt["kind"].value_counts().to_dict() == {"ts_echo": 16, "data_ack": 12}
    assert (rtt["rtt_ns"] > 0).all()
    assert set(rtt["time_ns"]) <= stamps  # the ACK that gave the sample
    assert set(rtt["time_ns"] - rtt["rtt_ns"]) <= stamps  # the TSval's first use, the segment's send
    assert (rtt["bytes_in_flight"] >= 0).all() and (rtt.loc[rtt["kind"] == "data_ack", "bytes_in_flight"] > 0).all()


def test_karn_marks_every_remembered_segment_the_resent_range_overlaps():
    """As tcp_flows lays the words out (TS ring head and count, then the segment ring's): one TSval remembered,
    segments ending at 100, 200, 300, 400 (sent at 1..4 us). [150, 250) is sent again: the segments ending at 200
    and 300 overlap it and give no sample (Karn), the one ending at 100 and the one ending at 400 still do."""
    seg = np.zeros((1, 2, rt.SEG_RING, 2), np.int64)
    ts = np.zeros((1, 2, rt.TS_RING, 2), np.int64)
    meta = np.zeros((1, 2, 4), np.int64)
    rt.ts_push(ts, meta, 0, 0, 0, 7, 500)
    for i, end in enumerate((100, 200, 300, 400)):
        rt.seg_push(seg, meta, 0, 0, 2, end, 1000 * (i + 1))
    rt.seg_mark_resent(seg, meta, 0, 0, 2, 150, 250)
    assert [int(seg[0, 0, k, 1]) for k in range(4)] == [1000, -2000, -3000, 4000]
    assert rt.seg_ack(seg, meta, 0, 0, 2, 100, 9000) == 8000
    assert rt.seg_ack(seg, meta, 0, 0, 2, 200, 9000) == -1
    assert rt.seg_ack(seg, meta, 0, 0, 2, 300, 9000) == -1
    assert rt.seg_ack(seg, meta, 0, 0, 2, 400, 9000) == 5000
    assert meta[0, 0].tolist() == [0, 1, 4, 0] and meta[0, 1].tolist() == [0, 0, 0, 0]


@pytest.mark.parametrize(("resent", "samples"), [
    ((100, 200), [8999, -1, 6000]),   # the segment ending at its start and the one starting at its end: untouched
    ((50, 100), [-1, 7000, 6000]),    # only the first segment, sent at 1 ns (any send time >= 1 ns is flagged)
    ((250, 260), [8999, 7000, -1]),   # inside the last one
    # wholly below the oldest remembered segment (a flow seen mid-stream: its earlier bytes lie at positions below
    # 0): that segment's start is not remembered, and the ACK covering it may answer the resent bytes, so Karn
    # drops its sample; the later segments keep theirs
    ((-100, -50), [-1, 7000, 6000]),
    ((-100, 0), [-1, 7000, 6000]),
])
def test_karn_flags_exactly_the_segments_that_overlap_the_resent_range(resent, samples):
    """Segments (0, 100], (100, 200], (200, 300] sent at 1 ns, 2 us and 3 us; one range [start, end) sent again; ACKs
    of each end at 9 us: a sample for each segment the range does not overlap, none for those it does."""
    ring, meta = _rings(rt.SEG_RING)
    for end, t_ns in ((100, 1), (200, 2000), (300, 3000)):
        rt.seg_push(ring, meta, 0, 0, 0, end, t_ns)
    rt.seg_mark_resent(ring, meta, 0, 0, 0, *resent)
    assert [rt.seg_ack(ring, meta, 0, 0, 0, end, 9000) for end in (100, 200, 300)] == samples
