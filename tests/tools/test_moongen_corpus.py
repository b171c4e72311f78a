"""Differential corpus, MoonGen histograms (issue 22): one run of every one of the 14 setups of Wiedner et al. ITC'23
(../shared/datasets/containerized-low-latency, MIT; rate 100,000 pps, repeat 0), its 100 ns latency histogram as
MoonGen's hist:save() would write it, through `benchbook hist`. References: the pos evaluator's exact
percentile_disc ladder and packet counts shipped beside it (benchbook agrees to the 100 ns bucket, the
resolution of the histogram: a documented difference), and libmoon's histogram.lua summary transcribed in
tests/moongen_reference.py (exact)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from benchbook.analysis import pos_evaluator_data as pe
from benchbook.cli import app
from benchbook.reproduce.datasets import dataset_path
from moongen_reference import lua_print

DATA = dataset_path("containerized-low-latency")
runner = CliRunner()


@pytest.fixture(scope="module")
def runs():
    if not DATA.is_dir():
        pytest.skip(f"{DATA} missing")
    cat = pe.catalogue(DATA)
    sel = cat[(cat.rate_pps == 100_000) & (cat.repeat == 0)]
    assert len(sel) == 14
    return {row.folder: row for row in sel.itertuples()}


FOLDERS = ["bare-metal/nohz-optimized", "bare-metal/rt-optimized", "bare-metal/vanilla-non-optimized",
           "container/nohz/non-optimized", "container/nohz/optimized", "container/rt/non-optimized",
           "container/rt/optimized", "container/vanilla/non-optimized", "container/vanilla/optimized",
           "kernel/rt-optimized", "kernel/vanilla-non-optimized", "vm/nohz-optimized", "vm/rt-optimized",
           "vm/vanilla-non-optimized"]


FAST = {"bare-metal/rt-optimized", "container/rt/optimized"}  # the rest (about 8 s each here) run with the slow ones


@pytest.mark.parametrize("folder", [f if f in FAST else pytest.param(f, marks=pytest.mark.slow) for f in FOLDERS])
def test_wiedner_histogram_against_evaluator_and_histogram_lua(folder, runs, tmp_path):
    row = runs[folder]
    dist = pe.hist_distribution(row.hist_path)
    buckets, counts = dist.values, dist.counts
    p = tmp_path / "histogram.csv"  # as hist:save() writes it: value,count per bucket, no header
    p.write_text("".join(f"{b},{c}\n" for b, c in zip(buckets.tolist(), counts.tolist(), strict=True)))
    r = runner.invoke(app, ["hist", str(p), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    stats = pe.read_stats(row.stats_path)
    assert doc["exact"] is True and doc["count"] == int(counts.sum())
    assert 0 < doc["count"] <= stats["post_received"]
    ladder = pe.read_percentiles(row.percentiles_path)
    exact = {round(p * 1e6): v for p, v in zip(ladder.percentile.to_numpy().tolist(), ladder.value.to_numpy().tolist(),
                                                 strict=True)}
    for key in ("50", "90", "99", "99.9"):
        want = exact[round(float(key) * 1e4)]  # the evaluator's exact value; the histogram holds its 100 ns bucket
        assert doc["percentiles_ns"][key] == (want // 100) * 100, key
    assert doc["max_ns"] == (int(ladder.value.max()) // 100) * 100
    r = runner.invoke(app, ["hist", str(p), "--moongen-summary"])
    assert r.exit_code == 0 and r.stdout.strip() == lua_print(buckets.astype(float).tolist(), counts.tolist())
    assert np.all(np.diff(buckets) > 0)
