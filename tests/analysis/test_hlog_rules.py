"""Interval logs, the rules the other hlog tests leave open: what a log without version, StartTime or BaseTime
line reads as (None, not ""), offsets when the start time is missing or 0, where an error points (the byte
offset of a bad byte on a later line, the first 40 characters of a bad field), the events iter_hlog names, the
memory budget at its boundary (explicit and the default 256 MiB), the writer's exact header and default
timestamp decimals, and where write_hlog keeps its temporary file while it writes."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from benchbook.analysis.hdr import HdrHistogram
from benchbook.analysis.hlog import (
    DEFAULT_MEMORY_BUDGET,
    LEGEND,
    HlogFile,
    HlogFormatError,
    HlogWriter,
    Interval,
    iter_hlog,
    read_hlog,
    write_hlog,
)

DATA = Path(__file__).resolve().parent.parent / "data" / "hlog"


def _hist(*values: int, **layout: int) -> HdrHistogram:
    h = HdrHistogram(**layout)
    h.record(list(values))
    return h


def _payload(*values: int) -> str:
    return _hist(*values).encode().decode("ascii")


def _write(tmp_path: Path, lines: list[str], name: str = "r.hlog") -> Path:
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return p


def test_interval_defaults_repr_payload_and_histogram_setter():
    h = _hist(5, 50)
    iv = Interval(0.5, 1.0, "A", None, histogram=h)
    assert iv.line_no == 0
    assert repr(iv) == "Interval(start_s=0.5, length_s=1.0, tag='A', max_s=None, line_no=0, lazy=False)"
    payload = _payload(7, 70)
    lazy = Interval(2.0, 1.5, None, 0.25, payload=payload, line_no=9)
    assert lazy.payload == payload and lazy.lazy and lazy.line_no == 9
    assert lazy.histogram.total_count == 2 and lazy.histogram.max == 70
    assert repr(lazy) == "Interval(start_s=2.0, length_s=1.5, tag=None, max_s=0.25, line_no=9, lazy=True)"
    lazy.histogram = h  # setting a histogram makes the interval eager again
    assert lazy.histogram is h and not lazy.lazy


def test_hlog_file_defaults():
    log = HlogFile([], None, 0.0)
    assert log.comments == [] and log.format_version is None and log.path is None
    iv = Interval(3.0, 1.0, None, None, _hist(1))
    # no start time: offsets are absolute times (start + base time)
    assert HlogFile([iv], None, 5.0).offset_s(iv) == 8.0
    assert HlogFile([iv], 0.0, 5.0).offset_s(iv) == 8.0
    assert HlogFile([iv], 2.0, 5.0).offset_s(iv) == 6.0


def test_a_log_without_header_lines_reads_none_and_first_timestamp_zero(tmp_path):
    p = _write(tmp_path, [LEGEND, f"0.000,1.000,0.000,{_payload(3)}", f"1.000,1.000,0.000,{_payload(4)}"])
    log = read_hlog(p)
    assert log.format_version is None and log.comments == [] and log.path == str(p)
    assert log.start_time == 0.0 and log.base_time == 0.0
    assert [log.offset_s(iv) for iv in log.intervals] == [0.0, 1.0]
    assert [log.absolute_start_s(iv) for iv in log.intervals] == [0.0, 1.0]
    empty = read_hlog(_write(tmp_path, ["#just a comment"], "empty.hlog"))
    assert empty.start_time is None and empty.base_time == 0.0 and empty.format_version is None
    assert empty.intervals == [] and empty.comments == ["just a comment"]


def test_python_hdrh_log_absolute_times_without_start_time_line():
    p = DATA / "python-hdrh.hlog"
    lines = p.read_text().splitlines()
    log = read_hlog(p)
    assert log.format_version == "1.2"
    first = log.intervals[0]
    # the first interval line is line 4 (comment, version, legend before it), its payload kept as written
    assert lines[3].startswith("1700000000.000000,") and first.line_no == 4
    assert first.payload == lines[3].split(",")[3]
    assert [iv.line_no for iv in log.intervals] == [i + 1 for i, x in enumerate(lines) if x[:1].isdigit()]
    assert log.start_time == 1_700_000_000.0 and log.base_time == 0.0
    assert [log.offset_s(iv) for iv in log.intervals[:3]] == [0.0, 1.0, 2.0]


def test_interval_line_numbers_count_comments_and_blank_lines(tmp_path):
    p = _write(tmp_path, ["#[Histogram log format version 1.3]", "", "#note", LEGEND, "",
                          f"0.000,1.000,0.000,{_payload(1)}", f"Tag=B,1.000,1.000,0.000,{_payload(2)}"])
    log = read_hlog(p)
    assert [(iv.line_no, iv.tag) for iv in log.intervals] == [(6, None), (7, "B")]
    assert log.comments == ["[Histogram log format version 1.3]", "note"]


def test_iter_hlog_names_each_kind_of_line(tmp_path):
    payload = _payload(9)
    p = _write(tmp_path, ["#[Histogram log format version 1.3]", "#[StartTime: 100.5 (seconds since epoch), x]",
                          "#[BaseTime: 0.000 (seconds since epoch)]", LEGEND, f"Tag=A,1.0,2.0,0.5,{payload}"])
    events = list(iter_hlog(p))
    assert [kind for kind, _ in events] == ["version", "comment", "start_time", "base_time", "legend", "interval"]
    assert events[0][1] == "1.3" and events[1][1] == "[Histogram log format version 1.3]"
    assert events[2][1] == 100.5 and events[3][1] == 0.0 and events[4][1] == LEGEND
    iv = events[5][1]
    assert (iv.start_s, iv.length_s, iv.tag, iv.max_s, iv.line_no, iv.payload) == (1.0, 2.0, "A", 0.5, 5, payload)


def test_not_utf8_on_a_later_line_reports_the_file_byte_offset(tmp_path):
    p = tmp_path / "bin.hlog"
    # line 1: 3 bytes, line 2: 9 bytes, the bad byte is the 4th of line 3: file offset 3 + 9 + 3 = 15
    p.write_bytes(b"#a\n#bcdefgh\n#ab\xff\n")
    with pytest.raises(HlogFormatError) as err:
        read_hlog(p)
    assert str(err.value) == f"{p}:3: byte offset 15: not UTF-8 text (is this an .hlog file?)"
    assert err.value.line_no == 3


def test_a_bad_first_field_is_quoted_to_40_characters(tmp_path):
    field = "abcdefghij" * 5
    p = _write(tmp_path, [LEGEND, f"{field},1.0,0.0,HISTF"])
    with pytest.raises(HlogFormatError) as err:
        read_hlog(p)
    assert str(err.value) == (f"{p}:2: expected 'Tag=<tag>,' or the interval start timestamp at the start of the "
                              f"line, got '{field[:40]}'")


@pytest.mark.parametrize("line, message", [
    (",0.0,1.0,0.0,HISTF", "expected 'Tag=<tag>,' or the interval start timestamp at the start of the line, got ''"),
    ("Tag=,0.0,1.0,0.0,HISTF", "invalid tag '' (a tag holds no commas or spaces)"),
])
def test_empty_first_field_and_empty_tag(tmp_path, line, message):
    p = _write(tmp_path, [LEGEND, line])
    with pytest.raises(HlogFormatError) as err:
        read_hlog(p)
    assert str(err.value) == f"{p}:2: {message}"


def test_merging_small_layouts_of_different_kinds_tracks_up_to_an_hour_of_nanoseconds():
    a = Interval(0.0, 1.0, None, None, _hist(7, highest_trackable_value=10**6, significant_figures=2))
    b = Interval(1.0, 1.0, None, None, _hist(900, highest_trackable_value=10**6, significant_figures=3))
    m = HlogFile([a, b], 0.0, 0.0).merged()
    assert m.highest_trackable_value == 3_600_000_000_000
    assert m.lowest_discernible_value == 1 and m.significant_figures == 3
    assert m.total_count == 2 and m.max == 900


def test_memory_budget_boundary_is_exclusive(tmp_path):
    ivs = [Interval(float(k), 1.0, None, None, _hist(10 + k)) for k in range(3)]
    p = write_hlog(tmp_path / "b.hlog", ivs, start_time=1000.0)
    held = sum(iv.histogram.counts.nbytes for iv in ivs)
    at = read_hlog(p, memory_budget=held)  # exactly at the budget: still kept decoded
    assert [iv.lazy for iv in at.intervals] == [False, False, False]
    over = read_hlog(p, memory_budget=held - 1)  # one byte over: every interval keeps only its payload
    assert [iv.lazy for iv in over.intervals] == [True, True, True]
    lines = p.read_text().splitlines()
    assert [iv.payload for iv in over.intervals] == [x.split(",")[3] for x in lines[-3:]]
    assert [iv.line_no for iv in over.intervals] == [5, 6, 7]
    assert [iv.histogram.max for iv in over.intervals] == [10, 11, 12]
    # the budget is crossed at the second interval: the first one turns lazy too, and every later one
    part = read_hlog(p, memory_budget=2 * ivs[0].histogram.counts.nbytes - 1)
    assert [iv.lazy for iv in part.intervals] == [True, True, True]


def test_default_memory_budget_is_256_mib(tmp_path):
    # 5 sig. figures: 2**17 counts per bucket; 2**62 takes 47 half-buckets, 2**36 takes 21: 5*47 + 21 = 256,
    # i.e. 256 * 2**17 * 8 bytes = exactly 256 MiB of counts
    big = [HdrHistogram(1, 2**62, 5)] * 5 + [HdrHistogram(1, 2**36, 5)]
    assert sum(h.counts.nbytes for h in big) == DEFAULT_MEMORY_BUDGET == 256 * 2**20
    ivs = [Interval(float(k), 1.0, None, 0.0, h) for k, h in enumerate(big)]
    p = write_hlog(tmp_path / "at.hlog", ivs, start_time=1000.0)
    assert not any(iv.lazy for iv in read_hlog(p).intervals)
    small = _hist(1)  # 264 KiB more
    q = write_hlog(tmp_path / "over.hlog", [*ivs, Interval(6.0, 1.0, None, None, small)], start_time=1000.0)
    over = read_hlog(q)
    assert len(over.intervals) == 7 and all(iv.lazy for iv in over.intervals)
    assert over.intervals[-1].histogram.total_count == 1


def test_writer_header_exact_text_and_default_decimals(tmp_path):
    h = _hist(2_500_000)
    p = tmp_path / "h.hlog"
    with HlogWriter(p, start_time=1441812279.474) as w:
        w.write_interval(1.23456, 0.5, h)
    lines = p.read_text().splitlines()
    assert lines[:4] == [
        "#[Histogram log format version 1.3]",
        "#[StartTime: 1441812279.474 (seconds since epoch), Wed Sep 09 15:24:39 UTC 2015]",
        "#[BaseTime: 1441812279.474 (seconds since epoch)]",
        LEGEND,
    ]
    assert lines[4] == f"1.235,0.500,{h.hdr_max() / 1e6:.3f},{h.encode().decode('ascii')}"
    assert HlogWriter(p).format_interval(2.0, 1.0, h, max_s=1.0).startswith("2.000,1.000,1.000,HISTF")
    q = write_hlog(tmp_path / "w.hlog", [Interval(0.0625, 1.0, "T", 3.0, h)])
    assert q.read_text().splitlines() == [
        "#[Histogram log format version 1.3]", LEGEND, f"Tag=T,0.062,1.000,3.000,{h.encode().decode('ascii')}"]


def test_writer_refuses_writes_after_close_and_closes_twice(tmp_path):
    h = _hist(1)
    w = HlogWriter(tmp_path / "c.hlog", start_time=5.0)
    w.open()
    w.write_interval(0.0, 1.0, h)
    w.close()
    w.close()
    with pytest.raises(RuntimeError, match="not open"):
        w.write_interval(1.0, 1.0, h)
    assert len(read_hlog(tmp_path / "c.hlog").intervals) == 1


def test_write_hlog_keeps_its_temporary_file_beside_the_log(tmp_path, monkeypatch):
    out, cwd = tmp_path / "out", tmp_path / "cwd"
    out.mkdir()
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    seen: list[tuple[list[str], list[str]]] = []

    def intervals():
        # runs while write_hlog writes: the partial log is a temporary file in the log's directory
        seen.append((sorted(x.name for x in out.iterdir()), sorted(x.name for x in cwd.iterdir())))
        yield Interval(0.0, 1.0, None, None, _hist(3))

    p = write_hlog(out / "x.hlog", intervals(), start_time=1.0)
    [(in_out, in_cwd)] = seen
    assert in_cwd == [] and len(in_out) == 1
    assert in_out == [f".x.hlog.{os.getpid()}.tmp"]  # benchbook.atomic_write's, beside the log
    assert sorted(x.name for x in out.iterdir()) == ["x.hlog"] and list(cwd.iterdir()) == []
    assert len(read_hlog(p).intervals) == 1
    # the permissions the umask gives, as HlogWriter's file has (mkstemp's 0600 hid the log from other users)
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(p.stat().st_mode) == 0o666 & ~umask
    with HlogWriter(out / "w.hlog", start_time=1.0):
        pass
    assert stat.S_IMODE((out / "w.hlog").stat().st_mode) == stat.S_IMODE(p.stat().st_mode)
