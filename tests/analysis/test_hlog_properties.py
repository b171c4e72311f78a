"""Property-based tests of the .hlog reader (hypothesis, bounded): logs the writer writes read back
with the same counts, tags and times; mutated logs end in the intervals or an HlogFormatError
(a BenchbookError naming the line), never another exception."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchbook.analysis.hdr import HdrHistogram
from benchbook.analysis.hlog import HlogWriter, read_hlog
from benchbook.errors import BenchbookError

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

intervals = st.lists(
    st.tuples(st.lists(st.integers(1, 10**9), min_size=1, max_size=40), st.sampled_from([None, "a", "b-2"])),
    min_size=0, max_size=6)


@SETTINGS
@given(ivs=intervals, start=st.floats(0, 2e9, allow_nan=False))
def test_hlog_round_trip(ivs, start):
    written = []
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "x.hlog"
        with HlogWriter(p, start_time=start) as w:
            for i, (values, tag) in enumerate(ivs):
                h = HdrHistogram(1, 3_600_000_000_000, 3)
                h.record(np.array(values, np.int64))
                w.write_interval(float(i), 1.0, h, tag=tag)
                written.append((h, tag))
        log = read_hlog(p)
    assert len(log.intervals) == len(written)
    for iv, (h, tag) in zip(log.intervals, written, strict=True):
        assert iv.tag == tag
        got = iv.histogram
        assert got.total_count == h.total_count
        idx_a, c_a = got._nonzero()
        idx_b, c_b = h._nonzero()
        assert np.array_equal(got.layout.lowest_values(idx_a), h.layout.lowest_values(idx_b))
        assert np.array_equal(c_a, c_b)


def _seed() -> bytes:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "s.hlog"
        with HlogWriter(p, start_time=1.7e9, comments=["seed"]) as w:
            for i in range(3):
                h = HdrHistogram(1, 3_600_000_000_000, 3)
                h.record(np.arange(1, 200, dtype=np.int64) * (i + 1) * 1000)
                w.write_interval(float(i), 1.0, h, tag="t" if i == 2 else None)
        return p.read_bytes()


SEED = _seed()


@st.composite
def mutated(draw):
    data = bytearray(SEED)
    for _ in range(draw(st.integers(1, 5))):
        pos = draw(st.integers(0, len(data) - 1)) if data else 0
        kind = draw(st.sampled_from(["flip", "cut", "insert", "char"]))
        if kind == "flip" and data:
            data[pos] ^= draw(st.integers(1, 255))
        elif kind == "cut":
            del data[pos:]
        elif kind == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=8))
        elif data:
            data[pos] = ord(draw(st.sampled_from(list(",.-+eE0123456789 \n#/=AHISTF"))))
    return bytes(data)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=mutated())
def test_mutated_logs_never_raise_anything_else(data):
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "m.hlog"
        p.write_bytes(data)
        try:
            log = read_hlog(p)
            for iv in log.intervals:
                assert iv.histogram.total_count >= 0
        except BenchbookError as exc:
            assert str(p) in str(exc)
