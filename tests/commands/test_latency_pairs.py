"""`benchbook latency --pairs FILE`: one report per pair, each what the two-capture command writes, and a
merged histogram that adds every pair's counts."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from benchbook.analysis.hdr import HdrHistogram
from benchbook.analysis.hlog import read_hlog
from benchbook.analysis.latency_table import read_latencies
from benchbook.capture.synth import LatencyModel, make_capture_pair

BENCHBOOK = [sys.executable, "-m", "benchbook.cli"]


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    d = tmp_path_factory.mktemp("pairs")
    (d / "caps").mkdir()
    for i in range(3):
        make_capture_pair(d / "caps" / f"pre{i}.pcap", d / "caps" / f"post{i}.pcap", 2000, rate_pps=1000,
                          latency=LatencyModel(base_ns=8000 + 1500 * i, tail_mean_ns=3000, spike_prob=0.002,
                                               spike_ns=300_000), loss=0.01, seed=40 + i)
    csv = d / "pairs.csv"
    csv.write_text("pre,post,name\n" + "".join(f"caps/pre{i}.pcap,caps/post{i}.pcap,run{i}\n" for i in range(3)))
    return d, csv


def tree_bytes(root: Path) -> dict[str, bytes]:
    """Every file under root by relative path, as bytes."""
    out = {}
    for f in sorted(root.rglob("*")):
        if f.is_file():
            out[str(f.relative_to(root))] = f.read_bytes()
    return out


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(BENCHBOOK + list(args), capture_output=True, text=True, cwd=cwd)


def test_each_pair_is_what_the_single_command_writes_and_merged_adds_the_counts(pairs, tmp_path):
    d, csv = pairs
    out = tmp_path / "out"
    r = run("latency", str(d / "caps" / "pre1.pcap"), str(d / "caps" / "post1.pcap"), "-o", str(out / "run1"),
            "--id-offset", "42")
    assert r.returncode == 0, r.stderr
    single = tree_bytes(out / "run1")
    shutil.rmtree(out)
    r = run("latency", "--pairs", str(csv), "-o", str(out), "--id-offset", "42")
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in out.iterdir()) == ["merged.hlog", "merged.json", "run0", "run1", "run2"]
    assert tree_bytes(out / "run1") == single
    # merged: the histogram of every latency of every pair, recorded at once
    lat = np.concatenate([read_latencies(out / f"run{i}" / "latencies.parquet")["latency_ns"]
                          for i in range(3)])
    want = HdrHistogram(1, 5_000_000_000, 3)
    want.record(lat)
    log = read_hlog(out / "merged.hlog")
    assert len(log.intervals) == 1
    got = log.intervals[0].histogram
    assert got.total_count == len(lat) == sum(json.loads((out / f"run{i}" / "summary.json").read_text())["matched"]
                                              for i in range(3))
    assert np.array_equal(got.counts, want.counts)
    doc = json.loads((out / "merged.json").read_text())
    assert doc["count"] == len(lat)
    assert doc["percentiles_ns"]["99"] == want.percentiles([99.0])[99.0]
    assert "merged" in r.stdout and "run2" in r.stdout


@pytest.mark.parametrize("text, message", [
    ("a,b,c\nx,y,z\n", "line 1: expected the header pre,post,name"),
    ("pre,post,name\ncaps/pre0.pcap,caps/post0.pcap,x\ncaps/pre1.pcap,caps/post1.pcap,x\n",
     "line 3: name 'x' already used on line 2"),
    ("pre,post,name\ncaps/pre0.pcap,caps/nope.pcap,x\n", "line 2: post:"),
    ("pre,post,name\ncaps/pre0.pcap,caps/post0.pcap,../x\n", "line 2: name '../x'"),
    ("pre,post,name\ncaps/pre0.pcap,caps/post0.pcap\n", "line 2: expected 3 fields"),
])
def test_bad_pairs_file_is_a_usage_error_naming_the_line(pairs, tmp_path, text, message):
    d, _ = pairs
    bad = d / f"bad-{abs(hash(text))}.csv"
    bad.write_text(text)
    r = run("latency", "--pairs", str(bad), "-o", str(tmp_path / "o"), "--id-offset", "42")
    assert r.returncode == 2
    assert str(bad) in r.stderr and message in r.stderr
    assert not (tmp_path / "o").exists()


def test_pairs_and_captures_exclude_each_other(pairs, tmp_path):
    d, csv = pairs
    r = run("latency", str(d / "caps" / "pre0.pcap"), str(d / "caps" / "post0.pcap"), "--pairs", str(csv),
            "-o", str(tmp_path / "o"), "--id-offset", "42")
    assert r.returncode == 2 and "not both" in r.stderr
    r = run("latency", str(d / "caps" / "pre0.pcap"), str(d / "caps" / "post0.pcap"), "--engine", "dask",
            "-o", str(tmp_path / "o"), "--id-offset", "42")
    assert r.returncode == 2 and "apply to --pairs" in r.stderr


def test_a_failing_pair_leaves_the_others_and_no_merged_histogram(pairs, tmp_path):
    d, _ = pairs
    good = (d / "caps" / "pre0.pcap").read_bytes()
    bad = tmp_path / "bad.pcap"  # a valid file header, then a record claiming 2 GiB
    bad.write_bytes(good[:24] + b"\0" * 8 + b"\xff\xff\xff\x7f" * 2 + b"x" * 100)
    csv = tmp_path / "p.csv"
    csv.write_text(f"pre,post,name\n{d}/caps/pre0.pcap,{d}/caps/post0.pcap,good\n{bad},{d}/caps/post1.pcap,bad\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "merged.json").write_text("from an earlier run")
    r = run("latency", "--pairs", str(csv), "-o", str(out), "--id-offset", "42")
    assert r.returncode == 1
    assert f"pair bad: CaptureFormatError: {bad}: at byte offset 24: packet record 0 claims 2147483647" in r.stderr
    assert sorted(p.name for p in out.iterdir()) == ["good"]  # no partial 'bad', no stale merge, no attempt
    assert (out / "good" / "summary.json").is_file()
