"""pos evaluator readers on the shipped Wiedner et al. ITC'23 data, and their bad-input errors."""

from __future__ import annotations

import re

import numpy as np
import pytest
import zstandard

from benchbook.analysis import pos_evaluator_data as pe
from benchbook.analysis.distribution import ExactDistribution
from benchbook.reproduce.datasets import dataset_path

DATA = dataset_path("containerized-low-latency")


@pytest.fixture(scope="module")
def cat():
    assert DATA.is_dir(), f"{DATA} missing: the dataset ships with the repository"
    return pe.catalogue(DATA)


def _run(cat, folder, rate, repeat):
    sel = cat[(cat.folder == folder) & (cat.rate_pps == rate) & (cat.repeat == repeat)]
    assert len(sel) == 1
    return sel.iloc[0]


def test_catalogue_lists_every_run(cat):
    # 14 variants x 12 rates x 3 repeats, each with the 8 per-run files
    assert len(cat) == 14 * 12 * 3
    assert cat.groupby(["technology", "variant"]).size().eq(36).all()
    assert set(cat.technology) == {"bare-metal", "vm", "container", "kernel"}
    for kind in ("hist", "percentiles", "stats", "transferrate", "packetratepre", "packetratepost",
                 "jitterpre", "jitterpost"):
        assert cat[f"{kind}_path"].notna().all(), kind
    # only two worst-5000 files are shipped
    assert cat.worst_path.notna().sum() == 2
    row = _run(cat, "container/rt/optimized", 1_000_000, 0)
    assert row.kernel == "rt" and bool(row.optimized) and row.technology_label == "Container user-space"
    row = _run(cat, "bare-metal/vanilla-non-optimized", 10_000, 2)
    assert row.kernel == "vanilla" and not bool(row.optimized)


@pytest.mark.parametrize("folder,repeat", [("vm/rt-optimized", 0), ("kernel/vanilla-non-optimized", 1),
                                           ("container/vanilla/non-optimized", 2)])
def test_histogram_agrees_with_percentile_ladder(cat, folder, repeat):
    """The 100 ns histogram read as an exact distribution gives, at every ladder percentile, the
    bucket that holds the evaluator's exact percentile_disc value."""
    row = _run(cat, folder, 1_000_000, repeat)
    dist = pe.hist_distribution(row.hist_path)
    assert isinstance(dist, ExactDistribution)
    ladder = pe.read_percentiles(row.percentiles_path)
    ps = ladder.percentile.to_numpy()
    # below ~1/n the ladder's last rows are all the maximum; test the rows resolved by the data
    keep = (1 - ps) * dist.count >= 1
    got = dist.percentiles(list(ps[keep] * 100))
    for p, v in zip(ps[keep], ladder.value.to_numpy()[keep], strict=True):
        assert got[p * 100] == (v // 100) * 100, (p, v)
    assert dist.max == (ladder.value.max() // 100) * 100
    stats = pe.read_stats(row.stats_path)
    assert 0 < dist.count <= stats["post_received"]
    h = pe.hist_hdr(row.hist_path)
    assert h.total_count == dist.count and h.max == dist.max and h.min == dist.min
    # within HdrHistogram's 3 significant digits of the exact bucket percentiles
    for p in (50.0, 99.0, 99.9, 99.99):
        assert h.value_at_percentile(p) == pytest.approx(dist.percentile(p), rel=1e-3)


def test_small_files(cat):
    row = _run(cat, "kernel/rt-optimized", 1_000_000, 0)
    stats = pe.read_stats(row.stats_path)
    assert stats == {"pre_received": 174036491, "post_received": 174032373,
                     "pre_received_trimmed": 174036491, "post_received_trimmed": 174032373}
    tr = pe.read_transferrate(row.transferrate_path)
    assert tr["pre_received"] == 174036491 and isinstance(tr["pre_received"], int)
    assert tr["transferrate"] == pytest.approx(174032373 / 174036491, rel=1e-12)
    pr = pe.read_packetrate(row.packetratepost_path)
    assert list(pr.columns) == ["ts", "count"] and pr["count"].sum() <= stats["post_received"]
    assert np.all(np.diff(pr.ts.to_numpy()) == 1_000_000_000)
    jit = pe.read_jitter(row.jitterpre_path)
    assert list(jit.columns) == ["bucket", "count"] and np.all(jit.bucket.to_numpy() % 100 == 0)


def test_worst5000(cat):
    row = cat[cat.worst_path.notna() & (cat.folder == "bare-metal/rt-optimized")].iloc[0]
    worst = pe.read_worst(row.worst_path)
    assert len(worst) == 5000
    assert (worst.postts - worst.prets == worst.latency).all()
    assert worst.latency.is_monotonic_decreasing
    assert worst.latency.iloc[0] == pe.read_percentiles(row.percentiles_path).value.max()
    assert worst.encode.str.fullmatch(r"[0-9a-f]+").all()


def test_run_without_matched_packets_reads_as_empty(cat):
    row = _run(cat, "bare-metal/nohz-optimized", 1_000_000, 1)
    ladder = pe.read_percentiles(row.percentiles_path)
    assert pe.ladder_is_empty(ladder) and len(ladder) == 275
    assert pe.read_hist(row.hist_path).empty
    # zero-byte files exist in the published data; only an explicit opt-in accepts them
    empty = _run(cat, "container/rt/optimized", 700_000, 1).transferrate_path
    with pytest.raises(pe.EvaluatorFormatError, match="empty file"):
        pe.read_transferrate(empty)
    assert pe.read_csv(empty, "transferrate", allow_empty_file=True).empty


def _zst(path, text: str):
    path.write_bytes(zstandard.ZstdCompressor().compress(text.encode()))
    return path


@pytest.mark.parametrize("text,error", [
    ("bucket,count\n100,1\n", ":1: expected header latency_bucket,count"),
    ("latency_bucket,count\n100,1\n200,x\n300,2\n", ":3: column 'count': expected a number"),
    ("latency_bucket,count\n100,1\n200,3,4\n", ":3: expected 2 fields"),
    ("latency_bucket,count\n100,1\n200,2.5\n", ":3: column 'count': expected an integer"),
    ("latency_bucket,count\n100,1\n200,-2\n", ":3: negative count"),
], ids=["header", "number", "fields", "integer", "negative"])
def test_bad_histogram_names_file_and_line(tmp_path, text, error):
    bad = _zst(tmp_path / "a.hist.csv.zst", text)
    with pytest.raises(pe.EvaluatorFormatError, match=r"a\.hist\.csv\.zst" + re.escape(error)):
        pe.read_hist(bad)


def test_bad_input_names_file_and_line(tmp_path):
    broken = tmp_path / "f.hist.csv.zst"
    broken.write_bytes(b"\x28\xb5\x2f\xfd garbage")
    with pytest.raises(pe.EvaluatorFormatError, match=r"f\.hist\.csv\.zst: byte 0: not a valid zstd stream"):
        pe.read_hist(broken)
    plain = tmp_path / "g.trim_ms0.stats.csv"
    plain.write_text("pre_received,post_received,pre_received_trimmed,post_received_trimmed\n1,2,3,4\n5,6,7,8\n")
    with pytest.raises(pe.EvaluatorFormatError, match="expected exactly one data row, found 2"):
        pe.read_stats(plain)
