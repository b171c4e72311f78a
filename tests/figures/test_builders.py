"""Figure builders on real data: the Wiedner et al. (ITC'23) evaluator outputs."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import zstandard

from benchbook.analysis.distribution import ExactDistribution
from benchbook.analysis.hdr import HdrHistogram
from benchbook.analysis.jitter import worst_n
from benchbook.figures import (
    bar_plot,
    cdf_plot,
    ecdf,
    fairness_bars,
    hdr_percentile_plot,
    histogram_plot,
    ladder_series,
    line_plot,
    percentile_ticks,
    percentile_to_x,
    time_series_plot,
    worst_latency_scatter,
    worst_n_indices,
)
from benchbook.figures.distribution import _step_outline

RUN = "latencies-pre-rate1000000-repeat1.pcap.zst"


def read_zst_csv(path: Path) -> pd.DataFrame:
    with open(path, "rb") as fh:
        data = zstandard.ZstdDecompressor().stream_reader(fh).read()
    return pd.read_csv(io.BytesIO(data))


@pytest.fixture(scope="module")
def wiedner(shared_datasets: Path) -> Path:
    root = shared_datasets / "containerized-low-latency" / "measurements"
    if not root.is_dir():
        pytest.skip(f"{root} missing")
    return root


def ladder(wiedner: Path, tech: str) -> pd.DataFrame:
    return read_zst_csv(wiedner / tech / f"{RUN}.trim_ms0.percentiles.csv.zst")


def test_hdr_plot_from_real_ladders(wiedner: Path) -> None:
    techs = ["bare-metal/rt-optimized", "vm/rt-optimized"]
    dfs = {t: ladder(wiedner, t) for t in techs}
    fig = hdr_percentile_plot({t: ladder_series(df) for t, df in dfs.items()})
    assert fig.layout.xaxis.type == "log"
    assert fig.layout.yaxis.type == "log"
    assert fig.layout.yaxis.title.text == "Latency [µs]"
    assert [tr.name for tr in fig.data] == techs
    text = list(fig.layout.xaxis.ticktext)
    # The TUM ladder reaches p = 0.99999999897 -> x ~ 9.7e8: ticks up to 99.9999999 %.
    assert text[:6] == ["0 %", "50 %", "90 %", "99 %", "99.9 %", "99.99 %"]
    assert text[-1] == "99.9999999 %"
    assert list(fig.layout.xaxis.tickvals)[:4] == [1.0, 2.0, 10.0, 100.0]
    for tr, df in zip(fig.data, dfs.values(), strict=True):
        p = df["percentile"].to_numpy()
        # x is 1/(1-p): the evaluator's own onefraconeminuspercentile column agrees.
        np.testing.assert_allclose(tr.x, df["onefraconeminuspercentile"].to_numpy(), rtol=1e-6)
        np.testing.assert_allclose(tr.y, df["value"].to_numpy() / 1000.0)
        assert tr.x[0] == pytest.approx(1.0 / (1.0 - p[0]))
    assert fig.layout.meta["max_ns"]["bare-metal/rt-optimized"] == dfs[techs[0]]["value"].max()
    assert fig.layout.template.layout.colorway[0] == "#0072B2"  # house style applied


def test_hdr_plot_drops_100_percent_and_units() -> None:
    pct = np.array([0.0, 50.0, 90.0, 99.0, 100.0])
    vals = np.array([1000, 2000, 3000, 5000, 9000])
    fig = hdr_percentile_plot({"a": (pct, vals)}, unit="ns", log_y=False)
    tr = fig.data[0]
    np.testing.assert_allclose(tr.x, [1.0, 2.0, 10.0, 100.0])
    np.testing.assert_allclose(tr.y, [1000, 2000, 3000, 5000])
    assert fig.layout.meta["max_ns"]["a"] == 9000
    assert fig.layout.yaxis.type == "linear"
    assert fig.layout.xaxis.ticktext[-1] == "99.99 %"  # min_nines=4 default
    with pytest.raises(ValueError, match="0..100"):
        hdr_percentile_plot({"bad": (np.array([0.5, 101.0]), np.array([1, 2]))})


def test_percentile_axis_helpers() -> None:
    np.testing.assert_allclose(percentile_to_x(np.array([0, 50, 90, 99.9])), [1, 2, 10, 1000])
    vals, text = percentile_ticks(2.5e5, min_nines=1)
    assert text == ["0 %", "50 %", "90 %", "99 %", "99.9 %", "99.99 %", "99.999 %", "99.9999 %"]
    assert vals[-1] == 1e6


def test_ladder_series_units() -> None:
    frac = pd.DataFrame({"percentile": [0.0, 0.5, 0.99], "value": [1, 2, 3],
                         "onefraconeminuspercentile": [1.0, 2.0, 100.0]})
    np.testing.assert_allclose(ladder_series(frac)[0], [0, 50, 99])
    pct = pd.DataFrame({"percentile": [0.0, 50.0, 99.0], "value": [1, 2, 3],
                        "inv_one_minus_p": [1.0, 2.0, 100.0]})
    np.testing.assert_allclose(ladder_series(pct)[0], [0, 50, 99])
    with pytest.raises(ValueError, match="percentile"):
        ladder_series(pd.DataFrame({"p": [1]}))


def _ecdf_reference(values, counts):
    total = sum(counts)
    acc: dict[float, int] = {}
    for v, c in zip(values, counts, strict=True):
        acc[v] = acc.get(v, 0) + c
    xs = sorted(k for k, c in acc.items() if c > 0)
    out, run = [], 0
    for x in xs:
        run += acc[x]
        out.append(run / total)
    return xs, out


def test_cdf_and_ccdf_from_real_histogram(wiedner: Path) -> None:
    hist = read_zst_csv(wiedner / "bare-metal/rt-optimized" / f"{RUN}.bucket_size100.trim_ms0.hist.csv.zst")
    v = hist["latency_bucket"].to_numpy()
    c = hist["count"].to_numpy()
    x, f = ecdf(v, c)
    rx, rf = _ecdf_reference(v.tolist(), c.tolist())
    np.testing.assert_array_equal(x, rx)
    np.testing.assert_allclose(f, rf, rtol=1e-12)
    fig = cdf_plot({"bm": (v, c)})
    assert fig.data[0].y[-1] == pytest.approx(1.0)
    assert fig.layout.yaxis.type == "linear"
    assert fig.data[0].line.shape == "hv"
    figc = cdf_plot({"bm": (v, c)}, ccdf=True, log_x=True)
    assert figc.layout.yaxis.type == "log" and figc.layout.xaxis.type == "log"
    yc = np.asarray(figc.data[0].y)
    assert (yc > 0).all() and len(yc) == len(rx) - 1  # the final P(X > max) = 0 is left off
    np.testing.assert_allclose(yc, 1.0 - np.asarray(rf[:-1]), rtol=1e-9, atol=1e-15)


def test_histogram_plot_from_real_buckets(wiedner: Path) -> None:
    hist = read_zst_csv(wiedner / "vm/rt-optimized" / f"{RUN}.bucket_size100.trim_ms0.hist.csv.zst")
    v = hist["latency_bucket"].to_numpy()
    c = hist["count"].to_numpy()
    fig = histogram_plot({"vm": (v, c)}, unit="us", bin_width_ns=100)
    tr = fig.data[0]
    # Every bucket's height appears at its lower edge (in µs).
    ys = dict(zip(np.round(np.asarray(tr.x) * 1000).astype(int).tolist(), tr.y, strict=True))
    for b, n in zip(v[:50], c[:50], strict=True):
        assert ys[int(b)] == n
    assert fig.layout.yaxis.type == "log"
    assert fig.layout.meta["bin_width_ns"] == 100
    # Raw samples are binned into buckets of the given width.
    raw = np.array([101, 150, 199, 250, 999])
    fr = histogram_plot({"raw": (raw, None)}, unit="ns", bin_width_ns=100, log_y=False)
    pts = dict(zip(fr.data[0].x, fr.data[0].y, strict=True))
    assert pts[100.0] == 3 and pts[200.0] == 1 and pts[900.0] == 1


def test_step_outline_matches_reference() -> None:
    x = np.array([0.0, 100.0, 300.0, 400.0, 800.0])
    y = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    xs, ys = _step_outline(x, y, 100.0)
    ref_x, ref_y = [], []
    for i in range(len(x)):
        ref_x.append(x[i])
        ref_y.append(y[i])
        if i == len(x) - 1 or x[i + 1] != x[i] + 100.0:
            ref_x.append(x[i] + 100.0)
            ref_y.append(0.0)
    np.testing.assert_array_equal(xs, ref_x)
    np.testing.assert_array_equal(ys, ref_y)


def test_worst_scatter_from_real_worst_file(wiedner: Path) -> None:
    worst = read_zst_csv(wiedner / "bare-metal/rt-optimized" / f"{RUN}.trim_ms0.num_worst5000.worst.csv.zst")
    t_s = worst["prets"].to_numpy() / 1e9
    lat = worst["latency"].to_numpy()
    fig = worst_latency_scatter({"bm": (t_s, lat)}, n=100, relative_time=True)
    tr = fig.data[0]
    assert len(tr.x) == 100
    top = np.sort(lat)[::-1][:100]
    np.testing.assert_allclose(np.sort(np.asarray(tr.y))[::-1], top / 1000.0)
    assert min(tr.x) == 0.0
    assert fig.layout.xaxis.title.text == "Time [s]"


def test_worst_n_indices_reference() -> None:
    rng = np.random.default_rng(7)
    lat = rng.integers(0, 50, size=2000)
    idx = worst_n_indices(lat, 37)
    ref = sorted(sorted(range(len(lat)), key=lambda i: (-lat[i], i))[:37])
    assert idx.tolist() == ref


def test_time_series_and_bars() -> None:
    t = np.arange(10.0)
    fig = time_series_plot({"rx": (t, t * 2)}, y_title="Mpps", step=True, relative_time=True)
    assert fig.data[0].line.shape == "hv" and fig.layout.yaxis.title.text == "Mpps"
    fb = fairness_bars({"reno": {"2 flows": 0.99, "4 flows": 0.97}, "cubic": {"2 flows": 0.95}})
    assert [tr.name for tr in fb.data] == ["reno", "cubic"]
    assert list(fb.layout.yaxis.range) == [0.0, 1.05]
    with pytest.raises(ValueError, match="outside 0..1"):
        fairness_bars({"x": 1.5})
    bp = bar_plot({"a": 1.0, "b": 2.0}, errors={"a": 0.1, "b": 0.2}, y_title="Gbit/s")
    assert list(bp.data[0].error_y.array) == [0.1, 0.2]


def test_hdr_plot_from_distribution_objects(wiedner: Path) -> None:
    hist = read_zst_csv(wiedner / "bare-metal/rt-optimized" / f"{RUN}.bucket_size100.trim_ms0.hist.csv.zst")
    exact = ExactDistribution(hist["latency_bucket"].to_numpy(), hist["count"].to_numpy())
    hdr = HdrHistogram()
    hdr.record(hist["latency_bucket"].to_numpy(), hist["count"].to_numpy())
    fig = hdr_percentile_plot({"exact": exact, "hdr": hdr}, unit="ns")
    for tr, d in zip(fig.data, (exact, hdr), strict=True):
        lad = d.percentile_ladder()
        keep = lad["percentile"].to_numpy() < 100.0
        np.testing.assert_allclose(tr.x, lad["inv_one_minus_p"].to_numpy()[keep], rtol=1e-9)
        np.testing.assert_allclose(tr.y, lad["value"].to_numpy()[keep])
    assert fig.layout.meta["max_ns"]["exact"] == hist["latency_bucket"].max()


def test_worst_scatter_from_worst_n_table() -> None:
    rng = np.random.default_rng(3)
    lat = rng.integers(1000, 100000, size=50_000)
    t_ns = np.arange(lat.size, dtype=np.int64) * 1000 + 5_000_000_000
    table = worst_n(lat, t_ns, n=500)
    fig = worst_latency_scatter({"run": table})
    tr = fig.data[0]
    assert len(tr.x) == 500
    assert sorted(np.asarray(tr.y) * 1000) == sorted(np.sort(lat)[-500:].astype(float))
    assert min(tr.x) >= 5.0
    # The same selection from the raw arrays with n=500.
    fig2 = worst_latency_scatter({"run": (t_ns / 1e9, lat)}, n=500)
    assert sorted(fig2.data[0].x) == sorted(tr.x)


def test_line_plot_latency_against_rate(wiedner: Path) -> None:
    rates, p999 = [], []
    for rate in (10000, 100000, 1000000, 50000):
        name = f"latencies-pre-rate{rate}-repeat0.pcap.zst.trim_ms0.percentiles.csv.zst"
        df = read_zst_csv(wiedner / "vm/rt-optimized" / name)
        pct, val = ladder_series(df)
        rates.append(rate)
        p999.append(val[np.searchsorted(pct, 99.9)] / 1000)
    fig = line_plot({"VM p99.9": (np.array(rates), np.array(p999))}, "Packet rate [pkt/s]", "Latency [µs]",
                    log_x=True, errors={"VM p99.9": np.ones(4)})
    tr = fig.data[0]
    assert list(tr.x) == [10000, 50000, 100000, 1000000]  # sorted by x
    order = np.argsort(rates)
    np.testing.assert_allclose(tr.y, np.array(p999)[order])
    assert fig.layout.xaxis.type == "log" and tr.mode == "lines+markers"
    with pytest.raises(ValueError, match="shape"):
        line_plot({"bad": (np.arange(3), np.arange(4))}, "x", "y")
