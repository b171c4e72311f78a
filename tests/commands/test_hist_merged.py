"""`benchbook hist LOG... --merged-dir DIR --pair-name NAME...`: merged.hlog and merged.json byte for byte as
`benchbook latency --pairs` writes them; on logs of known values, the counts and the one interval they hold."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from benchbook.analysis import hlog_merge
from benchbook.analysis.hdr import HdrHistogram
from benchbook.analysis.hlog import HlogWriter, read_hlog
from benchbook.analysis.latency import DEFAULT_MAX_LATENCY_NS
from benchbook.capture.synth import LatencyModel, make_capture_pair
from benchbook.commands import hist as hist_cmd

BENCHBOOK = [sys.executable, "-m", "benchbook.cli"]


def run(*args: str) -> tuple[int, str, str]:
    app = typer.Typer()

    @app.callback()
    def _root() -> None:  # keep `hist` a sub-command, as in the real hub
        pass

    hist_cmd.register(app)
    res = CliRunner().invoke(app, ["hist", *map(str, args)])
    return res.exit_code, res.stdout, res.stderr


def write_log(path: Path, intervals: list[tuple[float, list[int]]], start_time_s: float) -> None:
    """An interval log with one 1 s interval of the given values per (start_s, values)."""
    with HlogWriter(path, start_time=start_time_s, comments=["test"]) as w:
        for start_s, values in intervals:
            h = HdrHistogram(1, 5 * 10**9, 3)
            h.record(values)
            w.write_interval(start_s, 1.0, h)


A = [(0.0, [5000 + 7 * i for i in range(800)]), (1.0, [9000 + 3 * i for i in range(400)])]
B = [(0.0, [7000 + 11 * i for i in range(500)] + [250_000])]


@pytest.fixture
def logs(tmp_path: Path) -> tuple[Path, Path]:
    write_log(tmp_path / "a.hlog", A, 1_700_000_000.0)
    write_log(tmp_path / "b.hlog", B, 1_700_000_000.5)
    return tmp_path / "a.hlog", tmp_path / "b.hlog"


def test_merged_dir_writes_what_latency_pairs_writes(tmp_path):
    for i in range(2):
        make_capture_pair(tmp_path / f"pre{i}.pcap", tmp_path / f"post{i}.pcap", 1000, rate_pps=1000,
                          latency=LatencyModel(base_ns=8000 + 2000 * i, tail_mean_ns=2000, spike_prob=0.003,
                                               spike_ns=300_000), loss=0.01, seed=70 + i)
    (tmp_path / "pairs.csv").write_text("pre,post,name\n" + "".join(
        f"pre{i}.pcap,post{i}.pcap,p.{i}\n" for i in range(2)))
    done = subprocess.run(BENCHBOOK + ["latency", "--pairs", "pairs.csv", "--id-offset", "42", "--no-html",
                                       "--max-latency-ms", "20", "-o", "cli"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=280)
    assert done.returncode == 0, done.stderr
    cli = tmp_path / "cli"

    code, out, err = run(cli / "p.0" / "latency.hlog", cli / "p.1" / "latency.hlog", "--merged-dir",
                         tmp_path / "hist", "--pair-name", "p.0", "--pair-name", "p.1", "--max-latency-ms", "20")
    assert code == 0, err
    for f in ("merged.hlog", "merged.json"):
        assert (tmp_path / "hist" / f).read_bytes() == (cli / f).read_bytes(), f
    assert sorted(p.name for p in (tmp_path / "hist").iterdir()) == ["merged.hlog", "merged.json"]
    merged = json.loads((cli / "merged.json").read_text())
    matched = {n: json.loads((cli / n / "summary.json").read_text())["matched"] for n in ("p.0", "p.1")}
    assert merged["pairs"] == matched
    assert out.splitlines()[0] == next(line for line in done.stdout.splitlines() if line.startswith("merged:"))

    # the pairs' layout ends at --max-latency-ms: with the default 5000 ms the histogram differs
    code, _out, err = run(cli / "p.0" / "latency.hlog", cli / "p.1" / "latency.hlog", "--merged-dir",
                          tmp_path / "default", "--pair-name", "p.0", "--pair-name", "p.1")
    assert code == 0, err
    assert (tmp_path / "default" / "merged.hlog").read_bytes() != (cli / "merged.hlog").read_bytes()
    assert json.loads((tmp_path / "default" / "merged.json").read_text())["count"] == merged["count"]


def test_merged_histogram_holds_every_value_in_one_interval(tmp_path, logs):
    code, out, err = run(*logs, "--merged-dir", tmp_path / "m", "--pair-name", "a", "--pair-name", "b")
    assert code == 0, err
    assert "merged: 1701 latencies of 2 pairs" in out
    doc = json.loads((tmp_path / "m" / "merged.json").read_text())
    assert doc["pairs"] == {"a": 1200, "b": 501} and doc["count"] == 1701

    every = HdrHistogram(1, 5 * 10**9, 3)
    every.record([v for _s, vs in A + B for v in vs])
    assert doc["min_ns"] == every.hdr_min() and 5000 <= doc["min_ns"] < 5000 * 1.001  # 3 significant digits
    assert doc["max_ns"] == every.hdr_max() and 250_000 <= doc["max_ns"] < 250_000 * 1.001
    pct = every.percentiles([float(p) for p in doc["percentiles_ns"]])
    # 1701 latencies resolve p50 .. p99 (p99 needs 368); p99.9 needs 3,688: null, with the reason
    assert doc["percentiles_ns"] == {p: int(pct[float(p)]) if p in ("50", "90", "99") else None
                                     for p in doc["percentiles_ns"]}
    assert doc["unresolved_percentiles"]["99.9"] == ("not resolvable at N = 1701: p99.9 needs N >= 3688 for a "
                                                     "95 % interval")
    assert set(doc["unresolved_percentiles"]) == {"99.9", "99.99", "99.999"}

    log = read_hlog(tmp_path / "m" / "merged.hlog")
    assert log.start_time == 1_700_000_000.0
    assert log.comments[:2] == ["benchbook latency --pairs: every interval of 2 pairs added: a b", "values in ns"]
    (iv,) = log.intervals
    assert (iv.start_s, iv.length_s) == (0.0, 2.0)  # a's second interval ends last, 2 s after a's start
    assert (iv.histogram.counts == every.counts).all()


@pytest.mark.parametrize("args, message", [
    (["--pair-name", "a"], "2 file(s) but 1 pair name(s): expected one name per file, in order"),
    (["--pair-name", "a", "--pair-name", "a"], "pair name 2: name 'a' given twice"),
    (["--pair-name", "a", "--pair-name", "../b"], "pair name 2: name '../b': expected one folder name"),
    (["--pair-name", "a", "--pair-name", "merged.json"], "pair name 2: name 'merged.json': expected one folder name"),
    (["--pair-name", "a", "--pair-name", "b", "--max-latency-ms", "0"], "--max-latency-ms 0.0: expected a number > 0"),
    (["--pair-name", "a", "--pair-name", "b", "--json", "--tag", "x"],
     "--merged-dir adds every interval of each log; it takes no --json, --tag"),
])
def test_usage_errors_exit_2_and_write_nothing(tmp_path, logs, args, message):
    code, _out, err = run(*logs, "--merged-dir", tmp_path / "m", *args)
    assert code == 2
    assert f"benchbook hist: error: {message}" in err
    assert not (tmp_path / "m").exists()


def test_pair_names_need_merged_dir(tmp_path, logs):
    code, _out, err = run(*logs, "--pair-name", "a", "--pair-name", "b")
    assert code == 2
    assert "--pair-name and --max-latency-ms apply to --merged-dir DIR" in err


def test_a_bad_log_leaves_the_merged_files_as_they_were(tmp_path, logs):
    assert run(*logs, "--merged-dir", tmp_path / "m", "--pair-name", "a", "--pair-name", "b")[0] == 0
    before = {f: (tmp_path / "m" / f).read_bytes() for f in ("merged.hlog", "merged.json")}
    bad = tmp_path / "bad.hlog"
    bad.write_text("#[StartTime: 1700000000.000 (seconds since epoch)]\n0.000,1.000,0.0,notbase64!\n")
    code, _out, err = run(logs[0], bad, "--merged-dir", tmp_path / "m", "--pair-name", "a", "--pair-name", "b")
    assert code == 1
    assert f"{bad}:2: invalid histogram payload" in err and "(nothing written)" in err
    assert {f.name: f.read_bytes() for f in (tmp_path / "m").iterdir()} == before

    # values beyond the layout of --max-latency-ms are refused, naming the log and line
    code, _out, err = run(*logs, "--merged-dir", tmp_path / "m", "--pair-name", "a", "--pair-name", "b",
                          "--max-latency-ms", "0.1")
    assert code == 1
    assert f"{logs[1]}:" in err and "above this histogram's highest trackable value" in err
    assert {f.name: f.read_bytes() for f in (tmp_path / "m").iterdir()} == before


def test_defaults_are_those_of_benchbook_latency():
    assert round(hlog_merge.DEFAULT_MAX_LATENCY_MS * 1e6) == DEFAULT_MAX_LATENCY_NS
