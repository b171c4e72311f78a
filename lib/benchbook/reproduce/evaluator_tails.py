"""Tail models of TUM pos evaluator runs: a GPD fitted to each run's histogram tail, its return
level of the run maximum compared with the maxima the other repeats observed, and how the worst-N
packets of a run cluster in time (extremal index). Rows are "info": benchbook's own analysis.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from benchbook.analysis import evt
from benchbook.analysis import pos_evaluator_data as pe


def run_return_levels(cat, cells, rate_pps: int, tail_quantile: float, alpha: float = 0.05):
    """cells: (name, folder) pairs. For every cell and every repeat r of its runs at `rate_pps`: fit a
    GPD to r's tail, compute the n-observation
    return level (n = r's packet count: the level exceeded about once per run) with a delta-method
    interval, and compare the observed maxima of the other repeats with it."""
    rows = []
    for name, folder in cells:
        runs = cat[(cat["folder"] == folder) & (cat["rate_pps"] == rate_pps)].sort_values("repeat")
        maxima = {int(r.repeat): pe.run_max_ns(r) for r in runs.itertuples()}
        for r in runs.itertuples():
            sample, u, n = pe.hist_tail_sample(pe.read_hist(r.hist_path), tail_quantile)
            rec: dict[str, Any] = {"name": name, "folder": folder, "fit_repeat": int(r.repeat),
                                   "threshold_us": u / 1000, "n_total": n, "n_exceed": int(sample.size),
                                   "observed_max_us": maxima[int(r.repeat)] / 1000}
            try:
                model = evt.fit_gpd(sample, u, n_total=n)
            except ValueError as exc:
                rec.update(error=str(exc))
                rows.append(rec)
                continue
            rl = model.return_level_delta(n, alpha)
            rec.update(sigma_us=model.sigma / 1000, xi=model.xi, return_level_us=rl.level / 1000,
                       ci_low_us=rl.low / 1000, ci_high_us=rl.high / 1000,
                       upper_endpoint_us=model.upper_endpoint / 1000)
            try:
                prof = evt.return_level_profile_ci(sample, u, n, n_total=n, alpha=alpha)
                rec.update(profile_low_us=prof.low / 1000, profile_high_us=prof.high / 1000)
            except (ValueError, RuntimeError) as exc:
                rec.update(profile_low_us=np.nan, profile_high_us=np.nan, profile_error=str(exc))
            others = {k: v / 1000 for k, v in maxima.items() if k != int(r.repeat)}
            rec["others_max_us"] = others
            rec["others_inside"] = sum(rl.low / 1000 <= v <= rl.high / 1000 for v in others.values())
            rec["others_above"] = sum(v > rl.high / 1000 for v in others.values())
            rec["others_below"] = sum(v < rl.low / 1000 for v in others.values())
            rec["others_inside_profile"] = sum(rec["profile_low_us"] <= v <= rec["profile_high_us"]
                                               for v in others.values())
            rows.append(rec)
    return pd.DataFrame(rows)


def return_level_rows(verdict, table) -> dict[str, int]:
    """One "info" row per cell and fitted repeat; returns how many other-repeat maxima fell inside,
    above and below the intervals."""
    totals = {"inside": 0, "above": 0, "below": 0, "inside_profile": 0}
    for rec in table.itertuples():
        if isinstance(getattr(rec, "error", None), str):
            verdict.add(f"{rec.name}, fit on repeat {rec.fit_repeat}", None, None, "us",
                        f"{rec.folder} repeat {rec.fit_repeat}", "not derivable", rec.error)
            continue
        others = ", ".join(f"r{k}={v:.2f}" for k, v in rec.others_max_us.items())
        caveat = ""
        if rec.xi < -1:
            caveat = "; xi < -1: the likelihood is unbounded at the support's end (Smith 1985): no delta interval"
        elif rec.xi <= -0.5:
            caveat = ("; xi <= -0.5: the GPD likelihood is not regular there (Smith 1985), so the interval "
                      "is not reliable" if np.isfinite(rec.ci_low_us) else
                      "; xi <= -0.5: no delta-method interval (the information matrix is not positive definite)")
        verdict.add(
            f"{rec.name}, fit on repeat {rec.fit_repeat}",
            None,
            round(rec.return_level_us, 2),
            "us",
            f"{rec.folder} repeat {rec.fit_repeat} (u={rec.threshold_us:.1f} µs, k={rec.n_exceed})",
            "info",
            f"benchbook extension: n-observation return level (n={rec.n_total}) 95% CI "
            f"[{rec.ci_low_us:.2f}, {rec.ci_high_us:.2f}] µs (delta), [{rec.profile_low_us:.2f}, "
            f"{rec.profile_high_us:.2f}] µs (profile likelihood), xi={rec.xi:.3f}; own max "
            f"{rec.observed_max_us:.2f}; other repeats' maxima {others}: delta CI {rec.others_inside} inside, "
            f"{rec.others_above} above, {rec.others_below} below; profile CI {rec.others_inside_profile} "
            f"inside{caveat}",
        )
        totals["inside"] += rec.others_inside
        totals["above"] += rec.others_above
        totals["below"] += rec.others_below
        totals["inside_profile"] += rec.others_inside_profile
    return totals


def worst_clusters(cat, gap_s: float = 1e-3):
    """Clusters among the shipped worst-5000 packets of a run (time gap `gap_s`): how dependent the
    extremes are. Returns one row per run with the cluster count, the extremal-index estimate
    (clusters / exceedances) and the largest cluster."""
    rows = []
    for r in cat[cat["worst_path"].notna()].itertuples():
        w = pe.read_worst(r.worst_path)
        u = float(w["latency"].min()) - 1.0  # every listed packet is an exceedance
        cl = evt.decluster_by_gap(w["prets"].to_numpy() / 1e9, w["latency"].to_numpy(), u, gap_s)
        big = cl.loc[cl["size"].idxmax()]
        top = cl.loc[cl["max"].idxmax()]
        rows.append({"run": pe.run_label(r), "threshold_us": (u + 1) / 1000, "n_exceed": len(w),
                     "n_clusters": len(cl), "extremal_index": len(cl) / len(w),
                     "largest_cluster_size": int(big["size"]),
                     "largest_cluster_duration_ms": (big["end"] - big["start"]) * 1e3,
                     "largest_cluster_max_us": big["max"] / 1000, "largest_cluster_t_s": big["start"],
                     "max_cluster_size": int(top["size"]), "max_cluster_duration_ms": (top["end"] - top["start"]) * 1e3,
                     "max_us": top["max"] / 1000, "max_cluster_t_s": top["start"]})
    return pd.DataFrame(rows)


def cluster_rows(verdict, clusters, gap_s: float = 1e-3) -> None:
    """One "info" row per run with a worst-N file: how its extremes cluster in time."""
    for rec in clusters.itertuples():
        verdict.add(
            f"clusters among the 5000 worst packets: {rec.run}", None, round(rec.extremal_index, 4), "",
            rec.run, "info",
            f"benchbook extension: {rec.n_clusters} clusters (gap {gap_s * 1e3:g} ms) among {rec.n_exceed} "
            f"packets above {rec.threshold_us:.2f} µs, extremal index estimate {rec.extremal_index:.3f} "
            f"(1 = independent extremes); largest cluster {rec.largest_cluster_size} packets over "
            f"{rec.largest_cluster_duration_ms:.2f} ms at t = {rec.largest_cluster_t_s:.1f} s, max "
            f"{rec.largest_cluster_max_us:.2f} µs; the run's maximum {rec.max_us:.2f} µs lies in a cluster of "
            f"{rec.max_cluster_size} packets over {rec.max_cluster_duration_ms:.2f} ms at "
            f"t = {rec.max_cluster_t_s:.1f} s",
        )
