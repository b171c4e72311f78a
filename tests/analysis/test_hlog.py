"""Interval logs: the upstream interop files (V0..V3) against EXPECTED_from_upstream_tests.json,
malformed lines, and round trips with the `hdrhistogram` package's log reader and writer."""

from __future__ import annotations

import io
import json
import shutil

import numpy as np
import pytest
from hdrh.histogram import HdrHistogram as HdrhHistogram
from hdrh.log import HistogramLogReader, HistogramLogWriter

from benchbook.analysis.hdr import HdrHistogram
from benchbook.analysis.hlog import HlogFormatError, HlogWriter, Interval, read_hlog, write_hlog


@pytest.fixture(scope="module")
def interop(shared_datasets):
    return shared_datasets / "hdrhistogram-interop"


@pytest.fixture(scope="module")
def expected(interop):
    return json.loads((interop / "EXPECTED_from_upstream_tests.json").read_text())


def _accumulate(log, intervals):
    # the upstream tests add every interval into one Histogram(3 significant digits)
    return log.merged(intervals, into=HdrHistogram(1, 3_600_000_000_000, 3))


def test_every_interop_log_decodes_to_expected_values(interop, expected):
    checked = 0
    for name, exp in expected["logs"].items():
        if "*" in name:
            continue
        log = read_hlog(interop / name)
        for key, want in exp.items():
            if not isinstance(want, dict):
                continue
            if key == "all":
                ivs = log.intervals
            else:
                lo, hi = (float(x) for x in key.split("_")[1:])
                ivs = log.select(lo, hi)
            acc = _accumulate(log, ivs)
            assert len(ivs) == want["histogram_count"], (name, key)
            assert acc.total_count == want["total_count"], (name, key)
            if "p99.9" in want:
                assert acc.value_at_percentile(99.9) == want["p99.9"], (name, key)
            if "max" in want:
                assert acc.max == want["max"], (name, key)
            if "p50_overall_go_example" in want:
                assert acc.value_at_percentile(50) == want["p50_overall_go_example"]
            if "start_time_sec" in want:
                frac = want.get("start_time_nsec", 0) / 1e9
                assert log.start_time == pytest.approx(want["start_time_sec"] + frac, abs=1e-6)
            checked += 1
    assert checked == 14


def test_tagged_log_tag_a_equals_untagged(interop):
    log = read_hlog(interop / "tagged-Log.logV2.hlog")
    assert log.tags() == [None, "A"]
    untagged = log.merged(tag=None)
    tag_a = log.merged(tag="A")
    assert untagged.total_count == tag_a.total_count == 32290 // 2
    np.testing.assert_array_equal(untagged.counts, tag_a.counts)
    assert len(log.select(tag="A")) == 21


def test_v3_log_tags_and_legacy_log_format(interop):
    v3 = read_hlog(interop / "jHiccup-2.0.7S.logV3.hlog")
    assert v3.format_version == "1.3"
    assert "a1.134a" in v3.tags()
    legacy = read_hlog(interop / "hiccup.140623.1028.10646.hlog")
    assert legacy.format_version == "1.01"
    assert legacy.intervals[0].start_s == 0.042 and legacy.intervals[0].length_s == 5.004
    # timestamps are relative to StartTime (more than a year before it)
    assert legacy.base_time == legacy.start_time == pytest.approx(1403476110.183)
    assert legacy.intervals[0].histogram.significant_figures == 2
    # Java HdrHistogram 2.2.2's HistogramLogReader, every interval added into one Histogram: 11 intervals,
    # 51715 values, max 3129343, value at 99 % 81919
    merged = legacy.merged()
    assert len(legacy.intervals) == 11
    assert (merged.total_count, merged.min, merged.max) == (51715, 0, 3_129_343)
    assert merged.value_at_percentile(99) == 81919


@pytest.mark.parametrize(
    "name, pattern",
    [
        ("test_tagged_invalid_histogram.txt", r"invalid histogram payload: invalid base64"),
        ("test_tagged_invalid_tag_key.txt", r"expected 'Tag=<tag>,' or the interval start timestamp.*'Ta=a7.133a'"),
        ("test_tagged_invalid_timestamp.txt", r"expected the interval start timestamp.*'7.1a33'"),
        ("test_tagged_missing_histogram.txt", r"the histogram is missing"),
    ],
)
def test_malformed_lines_rejected_naming_file_and_line(interop, name, pattern):
    with pytest.raises(HlogFormatError, match=pattern) as info:
        read_hlog(interop / name)
    assert str(info.value).startswith(f"{interop / name}:1: ")
    assert info.value.line_no == 1


def test_error_reports_the_right_line(interop, tmp_path):
    good = (interop / "jHiccup-2.0.7S.logV2.hlog").read_text().splitlines(keepends=True)
    bad = good[:10] + ["0.5,1.0,abc,HISTFAAAAB94nJNpmSzMwMDABMSMQMzMAAGMUJoJxg9mAgA1TQGm\n"] + good[10:]
    p = tmp_path / "bad.hlog"
    p.write_text("".join(bad))
    with pytest.raises(HlogFormatError, match=r"bad\.hlog:11: expected a number for the interval max"):
        read_hlog(p)


def _make_intervals(seed: int = 0, n: int = 5):
    rng = np.random.default_rng(seed)
    ivs = []
    for k in range(n):
        h = HdrHistogram()
        h.record(rng.integers(1000, 10**7, 2000 + 100 * k))
        ivs.append(Interval(start_s=float(k), length_s=1.0, tag=None if k % 2 else "rx", max_s=None, histogram=h))
    return ivs


def test_written_log_reads_back_in_benchbook(tmp_path):
    ivs = _make_intervals()
    p = write_hlog(tmp_path / "x.hlog", ivs, start_time=1700000000.25, comments=["benchbook test"])
    text = p.read_text()
    assert "#[Histogram log format version 1.3]" in text
    assert "#[StartTime: 1700000000.250 (seconds since epoch)" in text
    assert "#[BaseTime: 1700000000.250 (seconds since epoch)]" in text
    log = read_hlog(p)
    assert log.start_time == 1700000000.25 and log.base_time == 1700000000.25
    assert log.comments[0] == "benchbook test"
    assert [iv.tag for iv in log.intervals] == [iv.tag for iv in ivs]
    for a, b in zip(ivs, log.intervals, strict=True):
        np.testing.assert_array_equal(a.histogram.counts, b.histogram.counts)
        assert b.max_s == pytest.approx(a.histogram.hdr_max() / 1e6, abs=5e-4)
        assert log.absolute_start_s(b) == pytest.approx(1700000000.25 + a.start_s)


def test_written_log_reads_in_hdrh(tmp_path):
    ivs = [iv for iv in _make_intervals(1) if iv.tag is None] + [
        iv for iv in _make_intervals(2) if iv.tag is not None]
    p = write_hlog(tmp_path / "y.hlog", ivs, start_time=1600000000.0)
    reader = HistogramLogReader(str(p), HdrhHistogram(1, 3_600_000_000_000, 3))
    got = []
    while True:
        h = reader.get_next_interval_histogram()
        if h is None:
            break
        got.append(h)
    reader.close()
    assert len(got) == len(ivs)
    ps = [50, 90, 99, 99.9, 100]
    for ours, theirs in zip(ivs, got, strict=True):
        assert theirs.get_total_count() == ours.histogram.total_count
        np.testing.assert_array_equal(np.asarray(theirs.counts[: theirs.counts_len]), ours.histogram.counts)
        assert theirs.get_percentile_to_value_dict(ps) == ours.histogram.percentiles(ps, rank="nearest")
        assert theirs.get_tag() == ours.tag
        # hdrh reports start times in ms, absolute (StartTime + relative timestamp)
        assert theirs.get_start_time_stamp() == pytest.approx((1600000000.0 + ours.start_s) * 1000.0)


def test_hdrh_written_log_reads_in_benchbook(tmp_path):
    rng = np.random.default_rng(8)
    buf = io.StringIO()
    w = HistogramLogWriter(buf)
    w.output_comment("[Logged by hdrh]")
    w.output_log_format_version()
    w.output_base_time(1_500_000_000_000)
    w.output_legend()
    hists = []
    for k in range(4):
        h = HdrhHistogram(1, 10**9, 3)
        for v in rng.integers(1, 10**8, 1000).tolist():
            h.record_value(v)
        h.set_start_time_stamp(1_500_000_000_000 + 1000 * k)
        h.set_end_time_stamp(1_500_000_000_000 + 1000 * (k + 1))
        w.base_time = 1_500_000_000_000
        w.output_interval_histogram(h)
        hists.append(h)
    p = tmp_path / "hdrh.hlog"
    p.write_text(buf.getvalue())
    log = read_hlog(p)
    assert log.format_version == "1.2" and log.base_time == 1_500_000_000.0
    assert len(log.intervals) == 4
    for k, (iv, h) in enumerate(zip(log.intervals, hists, strict=True)):
        assert iv.start_s == pytest.approx(k) and iv.length_s == pytest.approx(1.0)
        np.testing.assert_array_equal(iv.histogram.counts, np.asarray(h.counts[: h.counts_len]))
        assert iv.histogram.value_at_percentile(99, rank="nearest") == h.get_value_at_percentile(99)


def test_streaming_writer_and_atomic_write(tmp_path):
    p = tmp_path / "s.hlog"
    ivs = _make_intervals(3, 3)
    with HlogWriter(p, start_time=10.0, base_time=0.0) as w:
        for iv in ivs:
            w.write_interval(10.0 + iv.start_s, iv.length_s, iv.histogram, tag=iv.tag)
    log = read_hlog(p)
    assert log.base_time == 0.0 and [log.offset_s(iv) for iv in log.intervals] == [0.0, 1.0, 2.0]
    with pytest.raises(ValueError, match="invalid tag"):
        write_hlog(tmp_path / "t.hlog", [Interval(0.0, 1.0, "a b", None, ivs[0].histogram)])
    assert not (tmp_path / "t.hlog").exists()
    assert [q.name for q in tmp_path.iterdir() if q.name.startswith("t.hlog")] == []


def test_reading_a_copy_of_every_interop_file_is_repeatable(interop, tmp_path):
    # reading is pure: a copied file gives the same intervals (guards against state in the reader)
    src = interop / "jHiccup-2.0.6.logV1.hlog"
    dst = tmp_path / src.name
    shutil.copy(src, dst)
    a, b = read_hlog(src), read_hlog(dst)
    assert [iv.start_s for iv in a.intervals] == [iv.start_s for iv in b.intervals]
    assert a.merged().total_count == b.merged().total_count == 65964


def test_large_logs_read_lazily_within_the_memory_budget(interop):
    eager = read_hlog(interop / "jHiccup-2.0.6.logV1.hlog")
    lazy = read_hlog(interop / "jHiccup-2.0.6.logV1.hlog", memory_budget=100_000)
    assert not any(iv.lazy for iv in eager.intervals)
    assert all(iv.lazy for iv in lazy.intervals)
    for a, b in zip(eager.intervals, lazy.intervals, strict=True):
        np.testing.assert_array_equal(a.histogram.counts, b.histogram.counts)
    np.testing.assert_array_equal(eager.merged().counts, lazy.merged().counts)


def test_binary_file_rejected_with_line_and_byte_offset(tmp_path):
    p = tmp_path / "capture.pcap"
    p.write_bytes(b"#[Histogram log format version 1.3]\n\xd4\xc3\xb2\xa1\x02\x00\x04\x00")
    with pytest.raises(HlogFormatError, match=r"capture\.pcap:2: byte offset 36: not UTF-8"):
        read_hlog(p)
