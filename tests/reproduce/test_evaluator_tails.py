"""benchbook's EVT extension on the Wiedner et al. data: tail samples from 100 ns histograms,
GPD return levels per repeat, and clusters among the worst-5000 packets."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.stats import genpareto

from benchbook.analysis import evt
from benchbook.analysis import pos_evaluator_data as pe
from benchbook.reproduce import evaluator_tails
from benchbook.reproduce.registry import load_entry
from benchbook.reproduce.verdict import Verdict


@pytest.fixture(scope="module")
def cat():
    return pe.catalogue(load_entry("wiedner-itc23-table3").dataset_dir)


def test_hist_tail_sample_plain():
    hist = pd.DataFrame({"latency_bucket": [300, 100, 200, 400, 500], "count": [5, 90, 3, 1, 1]})
    sample, u, n = pe.hist_tail_sample(hist, 0.95)
    # sorted cumulative counts: 90 (100), 93 (200), 98 (300), 99 (400), 100 (500): the 95 % quantile
    # lies in bucket 300, the threshold is its upper edge, the tail is the buckets above (midpoints)
    assert n == 100
    assert u == 400.0
    assert sample.tolist() == [450.0, 550.0]


def test_return_levels_for_one_cell(cat):
    cell = next((pv.name, pv.folder) for pv in load_entry("wiedner-itc23-table3").published
                if pv.folder == "vm/rt-optimized")
    tab = evaluator_tails.run_return_levels(cat, [cell], 1_000_000, tail_quantile=0.999999)
    assert list(tab.fit_repeat) == [0, 1, 2]
    assert (tab.n_exceed.between(150, 180)).all()  # ~1e-6 of 1.7e8 packets
    maxima = {0: 124.12, 1: 112.91, 2: 130.738}
    for rec in tab.itertuples():
        assert rec.observed_max_us == pytest.approx(maxima[rec.fit_repeat], abs=0.001)
        assert rec.ci_low_us < rec.return_level_us < rec.ci_high_us
        assert rec.profile_low_us < rec.return_level_us < rec.profile_high_us
        # a heavy tail (xi > 0) gives a profile interval longer upwards than the delta interval
        if rec.xi > 0:
            assert rec.profile_high_us - rec.return_level_us > rec.return_level_us - rec.profile_low_us
        assert rec.others_inside + rec.others_above + rec.others_below == 2
    # the return level of a run of n packets lies near the quantile 1 - 1/n, i.e. within the tail
    assert (tab.return_level_us > tab.threshold_us).all()
    assert (tab.return_level_us < 2 * tab.observed_max_us).all()


def test_worst_clusters(cat):
    cl = evaluator_tails.worst_clusters(cat)
    assert len(cl) == 2
    kv = cl[cl.run.str.startswith("kernel/vanilla-non-optimized")].iloc[0]
    # the 9.97 ms maximum is one burst of hundreds of delayed packets: strongly dependent extremes
    assert kv.max_us == pytest.approx(9969.078)
    assert kv.max_cluster_size > 100 and kv.extremal_index < 0.05
    bm = cl[cl.run.str.startswith("bare-metal/rt-optimized")].iloc[0]
    assert bm.n_exceed == 5000 and bm.n_clusters > kv.n_clusters
    w = pe.read_worst(cat[cat.worst_path.notna()].iloc[0].worst_path)
    assert np.isclose(w.latency.min() / 1000, cl.threshold_us.min()) or np.isclose(
        w.latency.min() / 1000, cl.threshold_us.max())


def test_return_level_rows_name_why_a_bounded_tail_has_no_interval():
    """The row's caveat follows the fitted shape: below -1 (uniform exceedances, a fit at -1.03) the likelihood is
    unbounded and there is no delta interval; between -1 and -0.5 (a fit at -0.83) the expected information is not
    positive definite, so no interval either, for that reason; above -0.5 nothing is added."""
    samples = {"uniform": np.linspace(0.0, 1.0, 401)[1:],
               "gpd-0.8": genpareto.rvs(-0.8, scale=1.0, size=1000, random_state=np.random.default_rng(0)),
               "gpd+0.1": genpareto.rvs(0.1, scale=1.0, size=1000, random_state=np.random.default_rng(0))}
    recs = []
    for name, y in samples.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # the fit below -1 warns (tested in test_evt_edges)
            m = evt.fit_gpd(y, 0.0)
        rl = m.return_level_delta(10_000)
        recs.append({"name": name, "folder": "f", "fit_repeat": 0, "threshold_us": 0.0, "n_exceed": m.n_exceed,
                     "n_total": m.n_total, "observed_max_us": float(y.max()), "xi": m.xi,
                     "return_level_us": rl.level, "ci_low_us": rl.low, "ci_high_us": rl.high,
                     "profile_low_us": np.nan, "profile_high_us": np.nan, "others_max_us": {1: 0.5},
                     "others_inside": 0, "others_above": 0, "others_below": 0, "others_inside_profile": 0})
    v = Verdict("x")
    evaluator_tails.return_level_rows(v, pd.DataFrame(recs))
    notes = {r.name.split(",")[0]: r.note for r in v.rows}
    assert notes["uniform"].endswith("xi < -1: the likelihood is unbounded at the support's end (Smith 1985): no "
                                     "delta interval")
    assert notes["gpd-0.8"].endswith("xi <= -0.5: no delta-method interval (the information matrix is not "
                                     "positive definite)")
    assert "Smith" not in notes["gpd+0.1"]
