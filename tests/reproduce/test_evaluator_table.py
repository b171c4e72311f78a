"""A second paper's table over the TUM pos evaluator format, added with a TOML and its dataset only
(no Python): a user paper folder in a temporary directory, with its own copy of the files it needs
from the shipped dataset (and their SHA256SUMS), reproduced by `benchbook reproduce --papers DIR`
through the reusable evaluator-table notebook. Cells other than Table III, each repeat rule, a cell
whose repeat was removed from the copy (not derivable, with the reason) and a value the paper
printed truncated (matches exactly, without a tolerance band)."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import zstandard

from benchbook.analysis import pos_evaluator_data as pe
from benchbook.paths import PUBLISHED_DIR
from benchbook.reproduce import evaluator_table
from benchbook.reproduce.datasets import verify_dataset, write_sums
from benchbook.reproduce.registry import RegistryError, load_entry_file

SHIPPED = PUBLISHED_DIR / "containerized-low-latency"
RUN = "latencies-pre-rate{rate}-repeat{rep}.pcap.zst"
SUFFIXES = ("trim_ms0.percentiles.csv.zst", "bucket_size100.trim_ms0.hist.csv.zst")

PAPER = '''id = "other-paper"
title = "Another paper over the same evaluator data"
citation = "A. Nother, Another paper, 2024"
unstated = "which repeat each cell reports, unless the cell says"

[datasets]
evaluator = "data"
'''

TABLE = '''id = "other-paper-table2"
title = "Table 2: latency statistics at several rates"
notebook = "benchbook:evaluator-table.ipynb"
mode = "published-data"
dataset = "evaluator"
claim = "VM rt-optimized stays below 110 us at 500 kpkt/s"
claim_rows = ["VM rt / max / 500k / best"]

[parameters]
repeats = 3

[[published]]
name = "VM rt / max / 500k / best"
folder = "vm/rt-optimized"
statistic = "max"
rate_pps = 500000
repeat = "best"
value = 106.25
unit = "us"
decimals = 2
rounding = "truncate"
note = "printed truncated"

[[published]]
name = "kernel vanilla / p50 / 100k / worst"
folder = "kernel/vanilla-non-optimized"
statistic = "p50"
rate_pps = 100000
repeat = "worst"
value = 51153
unit = "ns"
tolerance_abs = 0

[[published]]
name = "VM nohz / p99 / 50k / median"
folder = "vm/nohz-optimized"
statistic = "p99"
rate_pps = 50000
repeat = "median"
value = 114.83
unit = "us"
decimals = 2

[[published]]
name = "container rt / max / 200k / repeat 2"
folder = "container/rt/optimized"
statistic = "max"
rate_pps = 200000
repeat = 2
value = 113.88
unit = "us"
decimals = 2

[[published]]
name = "bare-metal rt / p99.9 / 10k / unstated"
folder = "bare-metal/rt-optimized"
statistic = "p99.9"
rate_pps = 10000
repeat = "unstated"
value = 82.98
unit = "us"
decimals = 2
'''

# (folder, rate, repeats copied): the copy leaves out repeat 2 of the container cell and repeat 0
# of the bare-metal cell
COPIED = [
    ("vm/rt-optimized", 500000, (0, 1, 2)),
    ("kernel/vanilla-non-optimized", 100000, (0, 1, 2)),
    ("vm/nohz-optimized", 50000, (0, 1, 2)),
    ("container/rt/optimized", 200000, (0, 1)),
    ("bare-metal/rt-optimized", 10000, (1, 2)),
]


def ladder_ns(folder: str, rate: int, rep: int, percentile: float | None) -> int:
    """Straight from the shipped CSV: the ladder value at `percentile` (None: the last, the maximum)."""
    path = SHIPPED / "measurements" / folder / f"{RUN.format(rate=rate, rep=rep)}.trim_ms0.percentiles.csv.zst"
    text = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(path.read_bytes())).read().decode()
    rows = list(csv.DictReader(io.StringIO(text)))
    if percentile is None:
        return int(rows[-1]["value"])
    return int(next(r["value"] for r in rows if abs(float(r["percentile"]) - percentile) < 1e-12))


@pytest.fixture(scope="module")
def paper(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("user") / "other-paper"
    data = root / "data"
    for folder, rate, reps in COPIED:
        dest = data / "measurements" / folder
        dest.mkdir(parents=True, exist_ok=True)
        for rep in reps:
            for suffix in SUFFIXES:
                name = f"{RUN.format(rate=rate, rep=rep)}.{suffix}"
                shutil.copyfile(SHIPPED / "measurements" / folder / name, dest / name)
    shutil.copyfile(SHIPPED / "SOURCES.md", data / "SOURCES.md")
    write_sums(data)
    (root / "paper.toml").write_text(PAPER)
    (root / "other-paper-table2.toml").write_text(TABLE)
    return root


def test_the_published_values_are_what_the_files_say():
    # the declared values, read without benchbook: best maximum truncated, worst median, median p99 ...
    best = min(ladder_ns("vm/rt-optimized", 500000, r, None) for r in range(3))
    assert best == 106258  # 106.258 µs: printed truncated 106.25, rounded it would be 106.26
    assert max(ladder_ns("kernel/vanilla-non-optimized", 100000, r, 0.5) for r in range(3)) == 51153
    p99 = sorted(ladder_ns("vm/nohz-optimized", 50000, r, 0.99) for r in range(3))
    assert p99[1] == 114829
    assert ladder_ns("container/rt/optimized", 200000, 2, None) == 113880
    assert ladder_ns("bare-metal/rt-optimized", 10000, 0, 0.999) == 82983
    assert {ladder_ns("bare-metal/rt-optimized", 10000, r, 0.999) for r in (1, 2)} == {82942, 82938}


def test_truncated_value_matches_exactly_rounded_would_not(paper, tmp_path):
    pv = load_entry_file(paper / "other-paper-table2.toml").published[0]
    assert pv.rounding == "truncate" and pv.tolerance_abs is None and pv.tolerance_rel is None
    assert pv.matches(106.258) and not pv.matches(106.26)
    half_up = load_entry_file(_rewrite(paper, tmp_path, 'rounding = "truncate"', 'rounding = "half-up"')).published[0]
    assert not half_up.matches(106.258)


def _rewrite(paper: Path, tmp_path: Path, old: str, new: str) -> Path:
    copy = tmp_path / "other-paper"
    copy.mkdir()
    (copy / "paper.toml").write_text(PAPER)
    (copy / "other-paper-table2.toml").write_text(TABLE.replace(old, new))
    return copy / "other-paper-table2.toml"


@pytest.mark.slow
def test_user_table_reproduces_from_its_own_folder(paper, tmp_path):
    assert sorted(p.name for p in paper.iterdir()) == ["data", "other-paper-table2.toml", "paper.toml"]
    assert not list(paper.rglob("*.py"))
    verify_dataset(paper / "data")
    env = dict(os.environ, BENCHBOOK_RUNS=str(tmp_path / "runs"), COLUMNS="300")
    env.pop("BENCHBOOK_PAPERS", None)
    proc = subprocess.run([sys.executable, "-m", "benchbook.cli", "reproduce", "other-paper-table2", "--papers",
                           str(paper)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 4, out  # partial: two values are not derivable from the copy
    run_dir = next((tmp_path / "runs" / "other-paper-table2").iterdir())
    verdict = json.loads((run_dir / "verdict.json").read_text())
    rows = {r["name"]: r for r in verdict["rows"]}
    assert verdict["outcome"] == "partial" and verdict["citation"] == "A. Nother, Another paper, 2024"
    assert verdict["claim"] == {"text": "VM rt-optimized stays below 110 us at 500 kpkt/s",
                                "rows": ["VM rt / max / 500k / best"], "status": "reproduced"}
    best = rows["VM rt / max / 500k / best"]
    assert best["status"] == "match" and best["computed"] == 106.258
    assert best["runs"] == "vm/rt-optimized rate 500000 repeat 2 (best of 3)"
    worst = rows["kernel vanilla / p50 / 100k / worst"]
    assert worst["status"] == "match" and worst["computed"] == 51153 and worst["runs"].endswith("repeat 1 (worst of 3)")
    med = rows["VM nohz / p99 / 50k / median"]
    assert med["status"] == "match" and med["computed"] == 114.829 and "repeat 2 (median of 3)" in med["runs"]
    gone = rows["container rt / max / 200k / repeat 2"]
    assert gone["status"] == "not derivable" and gone["computed"] is None
    assert ("repeat 2 of container/rt/optimized at 200000 pkt/s is not in the dataset (repeats there: 0, 1)"
            in gone["note"])
    unstated = rows["bare-metal rt / p99.9 / 10k / unstated"]
    assert unstated["status"] == "not derivable"
    assert "only repeats [1, 2] of 3" in unstated["note"] and "the missing one may" in unstated["note"]
    assert "principal claim: reproduced" in out


def test_unknown_statistic_or_repeat_rule_is_an_error_naming_the_file(paper, tmp_path):
    cat = pe.catalogue(paper / "data")
    bad = _rewrite(paper, tmp_path, 'repeat = "median"', 'repeat = "typical"')
    with pytest.raises(RegistryError, match="repeat 'typical' is not a repeat number or one of worst") as err:
        evaluator_table.compute_cells(load_entry_file(bad), cat)
    assert str(bad) in str(err.value)
    bad2 = tmp_path / "b" / "other-paper"
    bad2.mkdir(parents=True)
    (bad2 / "paper.toml").write_text(PAPER)
    (bad2 / "other-paper-table2.toml").write_text(TABLE.replace('statistic = "p99"', 'statistic = "p101"'))
    with pytest.raises(RegistryError, match="unknown statistic 'p101'"):
        evaluator_table.compute_cells(load_entry_file(bad2 / "other-paper-table2.toml"), cat)
