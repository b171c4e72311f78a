"""perf stat output in every format perf writes, read by tools.perf.parse_perf_output and
`benchbook perf`: real outputs made here (tests/data/perf/README.md says how), plus one written by
hand for what this machine cannot produce (hybrid PMUs, multiplexing)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchbook.tools.perf_reports import PerfError, parse_perf_output, parse_perf_reports, read_perf_file

DATA = Path(__file__).resolve().parent.parent / "data" / "perf"
BENCHBOOK = [sys.executable, "-m", "benchbook.cli"]
EVENTS = ["task-clock", "context-switches", "cpu-migrations", "page-faults", "instructions", "cycles"]

# name: (format, separator, decimal, runs, task-clock msec, page-faults, elapsed s)
EXPECTED = {
    "human.txt": ("human", None, ".", None, 196.99, 24081, 0.267917990),
    "human-r3.txt": ("human", None, ".", 3, 124.27, 24016, 0.2218),
    "human-en_US.txt": ("human", None, ".", None, 147.29, 23644, 0.191565163),
    "human-de_DE.txt": ("human", None, ",", None, 156.43, 23723, 0.204155900),
    "human-r3-de_DE.txt": ("human", None, ",", 3, 167.93, 23766, 0.2239),
    "csv-comma.txt": ("csv", ",", ".", None, 156.42, 24047, None),
    "csv-comma-r3.txt": ("csv", ",", ".", None, 139.17, 24016, None),
    "csv-semicolon-r3.txt": ("csv", ";", ".", None, 150.53, 24034, None),
    "csv-pipe.txt": ("csv", "|", ".", None, 157.87, 24057, None),
    "csv-semicolon-de_DE.txt": ("csv", ";", ",", None, 166.85, 23761, None),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_real_perf_outputs(name):
    fmt, sep, dec, runs, task_clock, faults, elapsed = EXPECTED[name]
    r = read_perf_file(DATA / name)
    assert (r.format, r.separator, r.decimal, r.runs) == (fmt, sep, dec, runs)
    c = {x.event: x for x in r.counters}
    assert list(c) == EVENTS
    assert c["task-clock"].value == pytest.approx(task_clock) and c["task-clock"].unit == "msec"
    assert c["page-faults"].value == faults
    for ev in ("instructions", "cycles"):  # no PMU here: missing, never zero
        assert c[ev].value is None and c[ev].status == "not supported" and c[ev].stddev_pct is None
    with_r = "r3" in name
    assert (c["page-faults"].stddev_pct is not None) == with_r
    assert c["task-clock"].metric_unit == "CPUs utilized" and c["task-clock"].metric_value is not None
    if fmt == "human":
        assert r.elapsed_s == pytest.approx(elapsed)
        assert (r.user_s is not None) == (not with_r)  # perf prints user/sys only without -r
    else:
        assert c["task-clock"].run_time_ns > 0 and c["task-clock"].enabled_pct == 100.0


def test_thousands_separators_per_locale():
    assert "1.533      context-switches" in (DATA / "human-de_DE.txt").read_text()
    de = {x.event: x.value for x in read_perf_file(DATA / "human-de_DE.txt").counters}
    assert de["context-switches"] == 1533 and de["page-faults"] == 23723
    assert "23,644      page-faults" in (DATA / "human-en_US.txt").read_text()


def test_hybrid_pmus_and_multiplexing():
    r = read_perf_file(DATA / "human-hybrid-multiplexed.txt")
    assert (r.command, r.runs, r.elapsed_s, r.elapsed_stddev_s) == ("system wide", 5, 2.00052, 0.00004)
    c = {x.event: x for x in r.counters}
    core = c["cpu_core/cycles/"]
    assert (core.value, core.stddev_pct, core.enabled_pct, core.metric_value, core.metric_unit) == (
        4205170531, 0.41, 62.47, 2.102, "GHz")
    assert c["cpu_core/instructions/"].metric_unit == "insn per cycle"
    atom = c["cpu_atom/instructions/"]
    assert (atom.value, atom.status, atom.enabled_pct) == (None, "not counted", 0.0)
    assert c["cpu-clock"].value == 2000.52 and c["cpu-clock"].unit == "msec"
    assert c["cpu_core/topdown-retiring/"].status == "not supported"


def test_decimal_comma_with_comma_separator_is_refused_naming_the_line():
    text = "166,85,msec,task-clock,166847979,100,00,0,CPUs utilized\n" * 2
    with pytest.raises(PerfError, match="line 1: 9 fields .* decimal comma"):
        parse_perf_output(text, "x.csv")


def test_fuzz_finding_infinite_run_time():
    path = DATA.parent / "malformed" / "perf-run-time-overflow.txt"
    with pytest.raises(PerfError, match="report 1: line 3: run time '166E847979' is not a number"):
        parse_perf_output(path.read_bytes().decode("utf-8", "replace"), "fuzz")


def test_perf_command(tmp_path):
    r = subprocess.run(BENCHBOOK + ["perf", "--json", str(DATA / "human-de_DE.txt")], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    [doc] = json.loads(r.stdout)  # a list of reports, here one
    assert (doc["report"], doc["of"]) == (1, 1)
    assert doc["decimal"] == "," and doc["counters"][3]["value"] == 23723
    assert doc["counters"][4]["value"] is None and doc["counters"][4]["status"] == "not supported"
    r = subprocess.run(BENCHBOOK + ["perf", str(DATA / "csv-pipe.txt"), str(DATA / "human-r3.txt")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "<not supported>" in r.stdout and "0.2218 +- 0.0263 seconds time elapsed" in r.stdout
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"hello\xff")
    r = subprocess.run(BENCHBOOK + ["perf", str(bad)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and r.stderr.strip() == f"benchbook perf: error: {bad}: byte offset 5: not UTF-8 text " \
        "(invalid start byte)"


counters = st.lists(st.tuples(
    st.sampled_from(["task-clock", "instructions", "cpu_core/cycles/", "branches:u"]),
    st.one_of(st.none(), st.integers(0, 10**12), st.floats(0, 1e9, allow_nan=False).map(lambda v: round(v, 2))),
    st.floats(0, 100, allow_nan=False).map(lambda v: round(v, 2)),
), min_size=1, max_size=8)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=counters, sep=st.sampled_from([",", ";", "|", "\t"]), with_r=st.booleans())
def test_csv_round_trip(rows, sep, with_r):
    lines = []
    for event, value, pct in rows:
        v = "<not counted>" if value is None else str(value)
        fields = [v, "msec" if event == "task-clock" else "", event] + ([f"{pct}%"] if with_r else []) + [
            "1000", "100.00", "", ""]
        lines.append(sep.join(fields))
    parsed = parse_perf_reports("\n".join(lines) + "\n", "gen")
    assert not parsed.errors and {r.separator for r in parsed.reports} == {sep}
    got = [(c.event, c.value, c.stddev_pct) for r in parsed.reports for c in r.counters]
    want = [(e, None if v is None else float(v), (p if with_r and v is not None else None)) for e, v, p in rows]
    assert got == want
    reports, seen = 1, set()  # an event that comes again starts the next report (appended runs)
    for event, _, _ in rows:
        if event in seen:
            reports, seen = reports + 1, set()
        seen.add(event)
    assert len(parsed.reports) == reports


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text(max_size=300), real=st.sampled_from(sorted(EXPECTED) + ["human-hybrid-multiplexed.txt"]),
       cut=st.integers(0, 2000))
def test_odd_text_ends_in_a_perf_error_or_counters(text, real, cut):
    base = (DATA / real).read_text()
    for doc in (text, base[:cut] + text + base[cut:]):
        try:
            r = parse_perf_output(doc, "fuzz")
        except PerfError as exc:
            assert str(exc).startswith("fuzz:")
        else:
            assert all((c.value is None) == (c.status != "counted") for c in r.counters)
