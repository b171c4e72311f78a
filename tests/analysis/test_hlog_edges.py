"""Interval logs at their edges: range selection exactly at and one past its bounds (HdrHistogram's
HistogramLogReader stops at the first interval after the range), the one-year rule that tells relative from
absolute timestamps at its boundary, merging histograms of different layouts, and what the writer refuses.
Logs are written by benchbook's writer or by hand in the format HdrHistogram documents."""

from __future__ import annotations

import pytest

from benchbook.analysis.hdr import HdrHistogram
from benchbook.analysis.hlog import HlogFormatError, HlogWriter, Interval, read_hlog, write_hlog

T0 = 1_700_000_000.0
YEAR = 365 * 24 * 3600.0


def _hist(*values: int, **layout: int) -> HdrHistogram:
    h = HdrHistogram(**layout)
    h.record(list(values))
    return h


def _log(tmp_path, starts, tags=None, name="x.hlog", **kw):
    ivs = [Interval(s, 1.0, (tags or {}).get(i), None, _hist(1000 + i)) for i, s in enumerate(starts)]
    return read_hlog(write_hlog(tmp_path / name, ivs, start_time=T0, **kw))


def test_select_takes_both_bounds_and_stops_after_the_end(tmp_path):
    log = _log(tmp_path, [0.0, 1.0, 2.0, 3.0, 4.0])
    assert [iv.start_s for iv in log.select(1.0, 3.0)] == [1.0, 2.0, 3.0]
    assert [iv.start_s for iv in log.select(1.001, 2.999)] == [2.0]
    assert [iv.start_s for iv in log.select(4.0)] == [4.0] and log.select(4.001) == []
    assert [iv.start_s for iv in log.select(end_s=0.0)] == [0.0]
    assert [iv.start_s for iv in log.select(T0 + 1, T0 + 2, absolute=True)] == [1.0, 2.0]
    assert log.select(1.0, 2.0, absolute=True) == []
    # out of order: reading stops at the first interval after the end, as HistogramLogReader does
    log = _log(tmp_path, [0.0, 5.0, 2.0], name="unordered.hlog")
    assert [iv.start_s for iv in log.select(0.0, 3.0)] == [0.0]
    assert [iv.start_s for iv in log.select(1.0, 6.0)] == [5.0, 2.0]


def test_select_by_tag(tmp_path):
    log = _log(tmp_path, [0.0, 1.0, 2.0], tags={1: "A", 2: "B"})
    assert log.tags() == [None, "A", "B"]
    assert [iv.start_s for iv in log.select(tag=None)] == [0.0]
    assert [iv.start_s for iv in log.select(tag="A")] == [1.0]
    assert [iv.start_s for iv in log.select()] == [0.0, 1.0, 2.0]
    assert log.merged(tag="B").total_count == 1 and log.merged().total_count == 3


def _by_hand(tmp_path, first_start: float, start_line: bool = True) -> object:
    payload = _hist(5).encode().decode()
    lines = ["#[Histogram log format version 1.3]"]
    if start_line:
        lines.append(f"#[StartTime: {T0:.3f} (seconds since epoch), x]")
    lines += ['"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"',
              f"{first_start:.3f},1.000,0.000,{payload}", f"{first_start + 1:.3f},1.000,0.000,{payload}"]
    p = tmp_path / "hand.hlog"
    p.write_text("\n".join(lines) + "\n")
    return read_hlog(p)


def test_a_timestamp_more_than_a_year_before_the_start_time_is_relative(tmp_path):
    rel = _by_hand(tmp_path, 0.5)
    assert rel.base_time == T0 and rel.offset_s(rel.intervals[0]) == 0.5
    assert rel.absolute_start_s(rel.intervals[1]) == T0 + 1.5
    absolute = _by_hand(tmp_path, T0 + 2)
    assert absolute.base_time == 0.0 and absolute.offset_s(absolute.intervals[0]) == pytest.approx(2.0)
    at_year = _by_hand(tmp_path, T0 - YEAR)  # exactly a year before: still absolute
    assert at_year.base_time == 0.0
    past_year = _by_hand(tmp_path, T0 - YEAR - 0.001)
    assert past_year.base_time == T0
    no_start = _by_hand(tmp_path, 42.0, start_line=False)  # the first timestamp is the start time
    assert no_start.start_time == 42.0 and no_start.base_time == 0.0
    assert [no_start.offset_s(iv) for iv in no_start.intervals] == [0.0, 1.0]


def test_merging_intervals_of_different_layouts_holds_them_all(tmp_path):
    a = Interval(0.0, 1.0, None, None, _hist(7, lowest_discernible_value=1, highest_trackable_value=10**6,
                                             significant_figures=2))
    big = 10**13
    b = Interval(1.0, 1.0, None, None, _hist(big, lowest_discernible_value=1000, highest_trackable_value=2 * big,
                                             significant_figures=3))
    log = read_hlog(write_hlog(tmp_path / "mixed.hlog", [a, b], start_time=T0))
    m = log.merged()
    assert m.lowest_discernible_value == 1 and m.significant_figures == 3
    assert m.highest_trackable_value == 2 * big and m.total_count == 2
    assert m.value_at_percentile(0) == 7
    same = log.merged([log.intervals[0], log.intervals[0]])
    assert same.layout == log.intervals[0].histogram.layout and same.total_count == 2
    assert log.merged([]).total_count == 0 and log.merged([]).highest_trackable_value == 3_600_000_000_000


def test_writer_columns_comments_and_refusals(tmp_path):
    h = _hist(2_500_000)
    p = tmp_path / "w.hlog"
    with HlogWriter(p, start_time=T0, comments=["two\nlines", ""], timestamp_decimals=2) as w:
        w.write_interval(1.23456, 0.5, h, tag="T1")
        w.write_interval(2.0, 1.0, h, max_s=9.87654)
        with pytest.raises(ValueError, match=r"invalid tag 'a b': a tag must be non-empty without commas"):
            w.write_interval(3.0, 1.0, h, tag="a b")
    lines = p.read_text().splitlines()
    assert lines[:3] == ["#two", "#lines", "#"]
    assert lines[4].startswith(f"#[StartTime: {T0:.3f} (seconds since epoch), ")
    assert lines[5] == f"#[BaseTime: {T0:.3f} (seconds since epoch)]"
    hmax = h.hdr_max() / 1e6
    assert lines[7].startswith(f"Tag=T1,1.23,0.50,{hmax:.3f},HISTF")
    assert lines[8].startswith("2.00,1.00,9.877,HISTF")
    with pytest.raises(RuntimeError, match="not open"):
        HlogWriter(p).write_interval(0.0, 1.0, h)


def test_a_failed_write_leaves_the_old_log_and_no_temporary_file(tmp_path):
    p = tmp_path / "keep.hlog"
    p.write_text("old\n")
    bad = [Interval(0.0, 1.0, None, None, _hist(1)), Interval(1.0, 1.0, "no,commas", None, _hist(2))]
    with pytest.raises(ValueError, match="invalid tag"):
        write_hlog(p, bad)
    assert p.read_text() == "old\n" and sorted(x.name for x in tmp_path.iterdir()) == ["keep.hlog"]


def test_lazy_intervals_decode_the_same_histogram():
    h = _hist(3, 30, 300)
    iv = Interval(0.0, 1.0, None, None, h)
    assert not iv.lazy and iv.payload is None
    iv.make_lazy()
    assert iv.lazy and iv.payload == h.encode().decode("ascii")
    assert iv.histogram.counts.tolist() == h.counts.tolist()
    with pytest.raises(ValueError, match="needs a histogram or a payload"):
        Interval(0.0, 1.0, None, None)


@pytest.mark.parametrize("line,message", [
    ("Tag=A", r":4: expected 'Tag=<tag>,<start>,<length>,<max>,<histogram>'"),
    ("Tag=a b,0.0,1.0,0.0,HISTF", r":4: invalid tag 'a b' \(a tag holds no commas or spaces\)"),
    ("Tag=A,x,1.0,0.0,HISTF", r":4: expected the interval start timestamp at the start of the line, got 'x'"),
    ("x,1.0,0.0,HISTF", r":4: expected 'Tag=<tag>,' or the interval start timestamp at the start"),
    ("0.0,1.0,0.0", r":4: expected an interval line .* got 3 fields: the histogram is missing"),
    ("0.0,1.0,0.0,HISTF,5", r":4: expected an interval line .* got 5 fields$"),
    ("0.0,one,0.0,HISTF", r":4: expected a number for the interval length, got 'one'"),
    ("0.0,1.0,max,HISTF", r":4: expected a number for the interval max, got 'max'"),
    ("0.0,1.0,0.0, ", r":4: missing histogram \(empty 4th field\)"),
])
def test_malformed_interval_lines_name_line_and_what_was_expected(tmp_path, line, message):
    p = tmp_path / "bad.hlog"
    p.write_text(f"#[StartTime: {T0} (seconds since epoch)]\n\n\"StartTimestamp\",\"Interval_Length\"\n{line}\n")
    with pytest.raises(HlogFormatError, match=message) as err:
        read_hlog(p)
    assert err.value.line_no == 4 and err.value.path == str(p)
