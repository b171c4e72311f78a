"""`benchbook hist` on histograms whose counts or values go beyond what 64-bit histograms hold: a
one-line error naming the limit (exit 1), never a wrapped total or a traceback; bad options exit 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from benchbook.analysis.hdr import HdrHistogram
from benchbook.analysis.hlog import HlogWriter

BENCHBOOK = [sys.executable, "-m", "benchbook.cli"]
MALFORMED = Path(__file__).resolve().parent.parent / "data" / "malformed"


def hist(*args) -> subprocess.CompletedProcess:
    return subprocess.run(BENCHBOOK + ["hist", *map(str, args)], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("name,text", [
    ("counts-wrap-int64.csv", "add up to 18446744073709551616, beyond the largest total"),
    ("counts-at-int64-max.csv", "beyond the largest total a histogram can hold (9223372036854775807"),
    ("count-beyond-int64.csv", "count 99999999999999999999 is beyond the signed 64-bit limit"),
    ("value-1e300.csv", "must stay below 9223372036854775808"),
    ("value-13-decimals.csv", "more than 12 decimal places"),
    ("value-exponent-overflow.csv", "exponent is far beyond what a histogram can hold"),
])
@pytest.mark.parametrize("mode", [[], ["--json"]])
def test_out_of_range_csv_refused_naming_the_limit(name, text, mode):
    r = hist(*mode, MALFORMED / name)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and text in lines[0] and name in lines[0], r.stderr


def test_merged_files_beyond_int64_refused(tmp_path):
    a = tmp_path / "a.csv"
    a.write_text(f"1000,{2**62}\n")
    b = tmp_path / "b.csv"
    b.write_text(f"2000,{2**62}\n")
    r = hist(a, b)
    assert r.returncode == 1 and "beyond the largest total" in r.stderr, r.stderr


def test_hlog_counts_beyond_int64_refused(tmp_path):
    h = HdrHistogram(1, 3_600_000_000_000, 3)
    h.record([1000, 2000], [2**62, 2**62 - 1])
    path = tmp_path / "big.hlog"
    w = HlogWriter(path, start_time=1.0)
    w.open()
    w.write_interval(0.0, 1.0, h)
    w.write_interval(1.0, 1.0, h)
    w.close()
    r = hist(path)
    assert r.returncode == 1 and "signed 64-bit limit" in r.stderr and "Traceback" not in r.stderr, r.stderr


@pytest.mark.parametrize("option,text", [(["--ticks-per-half", "0"], "--ticks-per-half 0: expected 1..1000"),
                                         (["--start", "nan"], "expected numbers with start <= end")])
def test_bad_options_exit_2(tmp_path, option, text):
    f = tmp_path / "ok.csv"
    f.write_text("1000,5\n")
    r = hist(*option, f)
    assert r.returncode == 2 and text in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_counts_near_int64_max_end_the_percentile_ladder(tmp_path):
    """Cumulative percentages that reach 100.0 in float64 before the last bin: the ladder used to
    step below 100 % forever (rows without end); it now ends with the last value at 100 %."""
    f = tmp_path / "near.csv"
    f.write_text(f"1000,{2**63 - 2}\n2000,1\n")
    r = hist("--unit", "ns", f)
    assert r.returncode == 0, r.stderr
    rows = [ln.split() for ln in r.stdout.splitlines() if ln and not ln.startswith("#") and ln.strip()[0].isdigit()]
    assert rows[-1][:3] == ["2000.000", "1.000000000000", str(2**63 - 1)]
    assert len(rows) < 2000
