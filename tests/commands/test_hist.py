"""`benchbook hist` on real inputs: the HdrHistogram interop logs (values asserted by the upstream
HdrHistogram tests) and MoonGen histogram CSVs (checked against independent computations)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from benchbook.commands import hist as hist_cmd
from java_oracle import histogram_log_processor

DATA = Path(__file__).resolve().parents[1] / "data" / "moongen"


def make_app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def _root() -> None:  # keep `hist` a sub-command, as in the real hub
        pass

    hist_cmd.register(app)
    return app


runner = CliRunner()


def run(*args: str) -> tuple[int, str, str]:
    res = runner.invoke(make_app(), ["hist", *args])
    return res.exit_code, res.stdout, res.stderr


@pytest.fixture(scope="module")
def interop(shared_datasets: Path) -> tuple[Path, dict]:
    d = shared_datasets / "hdrhistogram-interop"
    if not d.is_dir():
        pytest.skip(f"{d} missing")
    return d, json.loads((d / "EXPECTED_from_upstream_tests.json").read_text())["logs"]


@pytest.mark.parametrize("name", ["jHiccup-2.0.7S.logV2.hlog", "jHiccup-2.0.7S.logV3.hlog",
                                  "jHiccup-2.0.6.logV1.hlog", "jHiccup-2.0.1.logV0.hlog", "ycsb.logV1.hlog"])
def test_hlog_json_matches_upstream_expectations(interop, name: str) -> None:
    d, expected = interop
    # The upstream tests read every interval (the V3 file has tagged lines too; the C reader that
    # asserted its numbers reads them all) and accumulate into a 3-significant-digit histogram.
    extra = ["--all-tags"] if name.endswith("logV3.hlog") else []
    code, out, err = run(str(d / name), "--json", "--significant-digits", "3", "--start=-inf", *extra)
    assert code == 0, err
    doc = json.loads(out)
    exp = expected[name]["all"]
    assert doc["count"] == exp["total_count"]
    assert doc["percentiles_ns"]["99.9"] == exp["p99.9"]
    assert doc["max_ns"] == exp["max"]
    assert doc["exact"] is False
    assert set(doc["percentiles_ns"]) == {"50", "90", "99", "99.9", "99.99", "99.999"}
    assert doc["inputs"][0]["intervals"] == exp["histogram_count"]


def test_hlog_time_ranges_match_java_reader(interop) -> None:
    d, expected = interop
    for name, key, (a, b) in [("ycsb.logV1.hlog", "range_0_180", (0, 180)),
                              ("ycsb.logV1.hlog", "range_180_700", (180, 700)),
                              ("jHiccup-2.0.7S.logV2.hlog", "range_5_20", (5, 20))]:
        code, out, err = run(str(d / name), "--json", "--significant-digits", "3",
                             "--start", str(a), "--end", str(b))
        assert code == 0, err
        doc = json.loads(out)
        exp = expected[name][key]
        assert (doc["count"], doc["percentiles_ns"]["99.9"], doc["max_ns"]) == (
            exp["total_count"], exp["p99.9"], exp["max"]), key


def test_tags(interop) -> None:
    d, _ = interop
    # Default, as HistogramLogProcessor: untagged intervals only, and the skipped tags are named.
    code, out, err = run(str(d / "jHiccup-2.0.7S.logV3.hlog"), "--json")
    assert code == 0 and json.loads(out)["inputs"][0]["intervals"] == 58
    assert "a1.134a" in err
    f = str(d / "tagged-Log.logV2.hlog")
    code, out, err = run(f, "--json")
    untagged = json.loads(out)
    assert "tagged A not included" in err
    _, out_a, _ = run(f, "--json", "--tag", "A")
    _, out_all, _ = run(f, "--json", "--all-tags", "--significant-digits", "3")
    tag_a, every = json.loads(out_a), json.loads(out_all)
    # The file duplicates every line with Tag=A: tag A equals the untagged data.
    assert tag_a["count"] == untagged["count"] == 16145
    assert tag_a["percentiles_ns"] == untagged["percentiles_ns"]
    assert every["count"] == 32290
    assert every["percentiles_ns"]["50"] == 344319  # the Go example's overall p50
    code, out, err = run(f, "--tag", "B")  # nothing selected: the empty distribution and why (issue 22)
    assert code == 0 and "Total count    =            0" in out
    assert "none has tag 'B' (tags present: (untagged), A;" in err


def test_hlog_text_is_histogramlogprocessor_style(interop) -> None:
    d, expected = interop
    code, out, _ = run(str(d / "jHiccup-2.0.7S.logV2.hlog"), "--unit", "ns", "--significant-digits", "3")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "#[StartTime: 1441812279.474 (seconds since epoch), Wed Sep 09 15:24:39 UTC 2015]"
    lines = lines[1:]
    assert lines[0].split() == ["Value", "Percentile", "TotalCount", "1/(1-Percentile)"]
    assert lines[1] == ""
    rows = [ln.split() for ln in lines[2:] if ln and not ln.startswith("#")]
    assert float(rows[0][1]) == 0.0 and float(rows[-1][1]) == 1.0 and len(rows[-1]) == 3
    assert int(rows[-1][2]) == 48761
    assert all(len(r) == 4 for r in rows[:-1])
    counts = [int(r[2]) for r in rows]
    assert counts == sorted(counts)
    footer = [ln for ln in lines if ln.startswith("#[")]
    assert footer[1].startswith("#[Max     =")
    assert float(footer[1].split("=")[1].split(",")[0]) == expected["jHiccup-2.0.7S.logV2.hlog"]["all"]["max"]
    assert footer[2].startswith("#[Buckets =")


def test_moongen_csv_exact_json_and_summary(tmp_path: Path) -> None:
    code, out, err = run(str(DATA / "histogram.csv"), "--json")
    assert code == 0, err
    doc = json.loads(out)
    vals = np.array([1984, 2080, 2086.4, 2227.2, 2233.6, 2425.6, 2432, 3200, 12800])
    cnts = np.array([2, 310, 1, 305, 1, 300, 290, 4, 1])
    samples = np.repeat(vals, cnts)  # independent: every sample, sorted
    assert doc["count"] == samples.size and doc["exact"] is True
    assert doc["min_ns"] == 1984 and doc["max_ns"] == 12800
    assert doc["mean_ns"] == pytest.approx(samples.mean(), rel=1e-12)
    assert doc["stddev_ns"] == pytest.approx(samples.std(), rel=1e-12)  # population
    for key, val in doc["percentiles_ns"].items():
        need = math.ceil(math.log(0.025) / math.log(float(key) / 100))  # V2: 1214 samples resolve up to p99
        if samples.size >= need:
            rank = max(1, math.ceil(float(key) / 100 * samples.size))
            assert val == pytest.approx(samples[rank - 1]), key
        else:
            assert val is None and doc["unresolved_percentiles"][key].endswith(f"needs N >= {need} for a 95 % interval")
    assert [k for k, v in doc["percentiles_ns"].items() if v is None] == ["99.9", "99.99", "99.999"]
    assert doc["percentiles_ns"]["50"] == 2227.2
    code, out, _ = run(str(DATA / "histogram.csv"), "--moongen-summary")
    assert code == 0
    logged = [ln for ln in (DATA / "l2-load-latency.stdout").read_text().splitlines() if ln.startswith("Samples:")]
    assert out.strip() == logged[0]
    # Two files merge exactly: the same file twice doubles every count.
    code, out, _ = run(str(DATA / "histogram.csv"), str(DATA / "histogram.csv"), "--json")
    twice = json.loads(out)
    assert twice["count"] == 2 * samples.size
    assert twice["percentiles_ns"] == doc["percentiles_ns"]
    # Text output shows the exact values (6.4 ns steps need 4 decimals in µs).
    code, out, _ = run(str(DATA / "histogram.csv"), "--unit", "us")
    assert "      2.2272 " in out and "#[Max     =      12.8000, Total count    =         1214]" in out


def test_bad_inputs(tmp_path: Path, interop) -> None:
    d, _ = interop
    bad = tmp_path / "bad.csv"
    bad.write_text("100,1\n200;2\n")
    code, _, err = run(str(bad))
    assert code == 1 and str(bad) in err and "line 2" in err and "byte offset 6" in err
    code, _, err = run(str(d / "test_tagged_invalid_histogram.txt"))
    assert code == 1 and "test_tagged_invalid_histogram.txt" in err
    code, _, err = run(str(tmp_path / "missing.csv"))
    assert code == 1 and "no such file" in err
    code, _, err = run(str(d / "jHiccup-2.0.7S.logV2.hlog"), "--moongen-summary")
    assert code == 1 and "MoonGen histogram CSVs only" in err
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    code, out, _ = run(str(empty), "--moongen-summary")
    assert out.strip() == "Samples: 0, Average: nan ns, StdDev: 0.0 ns, Quartiles: nan/nan/nan ns"
    code, out, _ = run(str(empty), "--json")
    assert json.loads(out)["count"] == 0 and json.loads(out)["max_ns"] is None


def test_mixed_inputs_merge_into_hdr(interop) -> None:
    d, expected = interop
    code, out, err = run(str(d / "jHiccup-2.0.7S.logV2.hlog"), str(DATA / "histogram.csv"), "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["count"] == expected["jHiccup-2.0.7S.logV2.hlog"]["all"]["total_count"] + 1214
    assert doc["exact"] is False
    assert "rounded to whole ns" in err


ALL = "--all-percentiles"  # HistogramLogProcessor prints every row; benchbook only resolvable ones by default
JAVA_CASES = [
    ("jHiccup-2.0.7S.logV2.hlog", [], [ALL]),
    ("jHiccup-2.0.7S.logV3.hlog", [], [ALL]),
    ("jHiccup-2.0.6.logV1.hlog", [], [ALL]),
    ("jHiccup-2.0.1.logV0.hlog", [], [ALL]),
    ("ycsb.logV1.hlog", [], [ALL]),
    ("ycsb.logV1.hlog", ["-csv"], ["--csv", ALL]),
    ("jHiccup-2.0.7S.logV2.hlog", ["-start", "5", "-end", "20", "-outputValueUnitRatio", "1000"],
     ["--start", "5", "--end", "20", "--unit", "us", ALL]),
    ("tagged-Log.logV2.hlog", ["-tag", "A", "-outputValueUnitRatio", "1"], ["--tag", "A", "--unit", "ns", ALL]),
]


@pytest.mark.parametrize("name,java_args,our_args", JAVA_CASES)
def test_text_identical_to_java_histogramlogprocessor(interop, name, java_args, our_args) -> None:
    """The real HistogramLogProcessor (HdrHistogram's Java jar) is the oracle."""
    d, _ = interop
    java = histogram_log_processor("-i", str(d / name), *java_args)
    code, out, err = run(str(d / name), *our_args)
    assert code == 0, err
    assert out == java


@pytest.mark.parametrize("name,csv", [("ycsb.logV1.hlog", False), ("ycsb.logV1.hlog", True)])
def test_default_ladder_leaves_out_what_the_count_cannot_resolve(interop, name: str, csv: bool) -> None:
    """The documented difference from HistogramLogProcessor: rows strictly between 0 % and 100 % whose percentile
    needs more samples than the total count (N >= ln(0.025)/ln(p)) are left out, each gap named in one comment
    line (none in CSV); every other line is the Java tool's (the --all-percentiles output, equal to it above)."""
    d, _ = interop
    fmt = ["--csv"] if csv else []
    code, full, _ = run(str(d / name), *fmt, ALL)
    assert code == 0
    code, out, _ = run(str(d / name), *fmt)
    assert code == 0
    total = int(next(ln for ln in full.splitlines() if "Total count" in ln).split("=")[-1].strip().rstrip("]")) \
        if not csv else int(full.splitlines()[-1].split(",")[2])
    want: list[str] = []
    gap: list[str] = []
    for line in full.splitlines():
        parts = line.replace(",", " ").split()
        try:
            level = float(parts[1]) if len(parts) >= 3 and not line.startswith(("#", '"')) else None
        except ValueError:  # the header line
            level = None
        if level is not None and 0 < level < 1 and total < math.ceil(math.log(0.025) / math.log(level)):
            gap.append(line)
            continue
        if gap and not csv:
            want.append(f"#[{len(gap)} percentile(s) ")
        gap = []
        want.append(line)
    got = out.splitlines()
    assert len(got) == len(want) and len(got) < len(full.splitlines())  # (the jHiccup logs resolve every row)
    for g, w in zip(got, want, strict=True):
        assert g.startswith(w) if w.startswith("#[") and "percentile(s)" in w else g == w
    if not csv:
        assert any(f"not resolvable at N = {total}" in ln for ln in got)


def test_real_cli_entry_point() -> None:
    # The installed hub, as a user runs it.
    exe = Path(sys.executable).with_name("benchbook")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "benchbook.cli"]
    res = subprocess.run([*cmd, "hist", str(DATA / "histogram.csv"), "--moongen-summary"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("Samples: 1214, Average: 2299.0 ns")
