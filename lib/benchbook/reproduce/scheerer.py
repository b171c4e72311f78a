"""Scheerer, Helm, Jaeger, "Prediction of Rare Latency Events" (IITM seminar SS 2023), §4, and
benchbook's extension of the same peaks-over-threshold analysis to the Wiedner et al. ITC'23 tails.

The paper prints its parameters but not its data (1264 latencies of one HVNet flow): the return
level and its delta-method interval can be recomputed from the printed (u, k, n, sigma, xi) and the
printed Wald intervals of sigma and xi; the MLE itself, the observed-information covariance and a
profile-likelihood interval need the 42 exceedances and are reported as not derivable.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from benchbook.analysis import evt

# The numbers printed in §4 (the defaults of the notebook's parameters).
PAPER = {
    "u_us": 370.0,
    "n_exceed": 42,
    "n_total": 1264,
    "sigma_us": 27.813,
    "xi": -0.064,
    "ci_sigma": (16.141, 39.485),
    "ci_xi": (-0.356, 0.227),
    "m": 10_000,
    "rate_pps": 7.7,
}


def paper_models(p: dict[str, Any]) -> tuple[evt.PotModel, evt.PotModel]:
    """(model with the paper's printed Wald SEs, model with expected-information covariance)."""
    printed = evt.from_printed(p["u_us"], p["sigma_us"], p["xi"], p["n_exceed"], p["n_total"],
                               ci_sigma=tuple(p["ci_sigma"]), ci_xi=tuple(p["ci_xi"]))
    expected = evt.from_printed(p["u_us"], p["sigma_us"], p["xi"], p["n_exceed"], p["n_total"])
    return printed, expected


def paper_verdict(verdict, p: dict[str, Any]) -> dict[str, Any]:
    """Add the §4 rows to the verdict; return the computed numbers."""
    printed, expected = paper_models(p)
    m = p["m"]
    rl = printed.return_level_delta(m)
    rl_exp = expected.return_level_delta(m)
    wald = expected.wald_ci()
    src = "§4 printed parameters"
    verdict.notes.append(f"inputs (printed in §4): u={p['u_us']} µs, k={p['n_exceed']}, n={p['n_total']}, "
                         f"sigma={p['sigma_us']} µs, xi={p['xi']}, Wald 95 % CIs sigma {list(p['ci_sigma'])}, "
                         f"xi {list(p['ci_xi'])}, m={p['m']}, {p['rate_pps']} packets/s")
    verdict.check("threshold exceedance proportion", 100.0 * p["n_exceed"] / p["n_total"], runs=src,
                  note="zeta_u = k/n")
    verdict.check("10000-observation return level", rl.level, runs=src,
                  note="x_m = u + sigma/xi ((m zeta_u)^xi - 1), zeta_u = k/n (Coles eq. 4.13)")
    verdict.check("return level 95% CI lower (delta method)", rl.low, runs=src,
                  note=f"delta method over (zeta_u, sigma, xi): SEs backed out of the printed Wald intervals "
                       f"(SE sigma {printed.se_sigma:.3f}, SE xi {printed.se_xi:.4f}), their correlation "
                       f"(not printed) from the expected information; with the pure expected-information "
                       f"covariance the interval is [{rl_exp.low:.1f}, {rl_exp.high:.1f}] µs")
    verdict.check("return level 95% CI upper (delta method)", rl.high, runs=src,
                  note="as the lower end")
    verdict.check("return period of 10000 observations", m / p["rate_pps"] / 60.0, runs=src,
                  note=f"m / {p['rate_pps']} pkt/s, in minutes")
    verdict.check("sigma 95% CI lower", wald["sigma"][0], runs=src,
                  note="Wald interval from the expected information at the printed estimates; the paper's "
                       "interval comes from the observed information of its data, hence the tolerance")
    verdict.check("sigma 95% CI upper", wald["sigma"][1], runs=src, note="as above")
    verdict.check("xi 95% CI lower", wald["xi"][0], runs=src, note="as above")
    verdict.check("xi 95% CI upper", wald["xi"][1], runs=src, note="as above")
    no_data = ("needs the 1264 observations (github.com/leonardscheerer/rare-latency-events), which are "
               "not in benchbook's datasets")
    verdict.not_derivable("GPD scale sigma (MLE)", "the MLE " + no_data + "; the printed value is the input above")
    verdict.not_derivable("GPD shape xi (MLE)", "the MLE " + no_data + "; the printed value is the input above")
    verdict.add("return level 95% CI (profile likelihood)", None, None, "us", src, "not derivable",
                "the paper prints no profile-likelihood interval, and computing one " + no_data +
                "; benchbook.analysis.evt.return_level_profile_ci does it given the data")
    verdict.add("upper end point of the fitted tail (xi < 0)", None, round(printed.upper_endpoint, 1), "us",
                src, "info", "u - sigma/xi: the fitted GPD puts no mass above it (not printed in the paper)")
    return {"return_level": rl, "return_level_expected_info": rl_exp, "wald": wald,
            "upper_endpoint": printed.upper_endpoint}


def return_level_figure(model: evt.PotModel, m_max: float = 1e6, mark_m: float | None = None,
                        mark_ci: tuple[float, float] | None = None, title: str | None = None,
                        mark_level: float | None = None):
    """Return level against return period m (log axis) with the delta-method 95 % band; optionally
    the published level (mark_level, default: the model's) and interval at m = mark_m."""
    import plotly.graph_objects as go

    ms = np.logspace(np.log10(max(1.0 / model.zeta, 1.0) * 1.01), np.log10(m_max), 200)
    lv = [model.return_level_delta(m) for m in ms]
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=ms, y=[r.high for r in lv], mode="lines", line=dict(width=0), showlegend=False,
                             hoverinfo="skip"))
    fig.add_trace(go.Scatter(x=ms, y=[r.low for r in lv], mode="lines", line=dict(width=0), fill="tonexty",
                             fillcolor="rgba(0, 114, 178, 0.18)", name="95 % CI (delta method)"))
    fig.add_trace(go.Scatter(x=ms, y=[r.level for r in lv], mode="lines", name="return level"))
    if mark_m is not None:
        lvl = model.return_level(mark_m) if mark_level is None else mark_level
        err = None
        label = f"published: m = {mark_m:g}, {lvl:g} µs"
        if mark_ci is not None:
            err = dict(type="data", symmetric=False, array=[mark_ci[1] - lvl], arrayminus=[lvl - mark_ci[0]])
            label += f", CI [{mark_ci[0]:g}, {mark_ci[1]:g}]"
        fig.add_trace(go.Scatter(x=[mark_m], y=[lvl], mode="markers", error_y=err,
                                 marker=dict(symbol="diamond", size=10), name=label))
    if model.xi < 0:
        fig.add_hline(y=model.upper_endpoint, line_dash="dot",
                      annotation_text=f"upper end point {model.upper_endpoint:.0f} µs")
    fig.update_layout(title=title or "Return level against return period", xaxis_type="log",
                      xaxis_title="return period m [observations]", yaxis_title="return level [µs]")
    _style(fig)
    return fig


def _style(fig) -> None:
    try:
        from benchbook.figures.style import apply_style

        apply_style(fig)
    except ImportError:
        pass


# -- benchbook's extension: the same analysis on the Wiedner et al. tails ---------------------------

def hist_tail_sample(hist_df, tail_quantile: float) -> tuple[np.ndarray, float, int]:
    """Tail of a 100 ns histogram as a sample: (bucket midpoints >= threshold, expanded by count,
    threshold u [ns], n_total). u is the upper edge of the bucket holding the tail_quantile."""
    values = hist_df["latency_bucket"].to_numpy(dtype=np.int64)
    counts = hist_df["count"].to_numpy(dtype=np.int64)
    order = np.argsort(values)
    values, counts = values[order], counts[order]
    n = int(counts.sum())
    cum = np.cumsum(counts)
    idx = int(np.searchsorted(cum, tail_quantile * n, side="left"))
    u = float(values[idx] + 100)
    tail = values >= u
    sample = np.repeat(values[tail].astype(np.float64) + 50.0, counts[tail])
    return sample, u, n


def wiedner_tail_table(cat, cells, rate_pps: int, tail_quantile: float = 0.999999, alpha: float = 0.05):
    """For every Table III cell and every repeat r: fit a GPD to r's tail, compute the n-observation
    return level (n = r's packet count: the level exceeded about once per run) with a delta-method
    interval, and compare the observed maxima of the other repeats with it."""
    import pandas as pd

    from benchbook.reproduce.wiedner import run_max_ns
    from benchbook.tools import pos_evaluator as pe

    rows = []
    for cell in cells:
        runs = cat[(cat["folder"] == cell.folder) & (cat["rate_pps"] == rate_pps)].sort_values("repeat")
        maxima = {int(r.repeat): run_max_ns(r) for r in runs.itertuples()}
        for r in runs.itertuples():
            sample, u, n = hist_tail_sample(pe.read_hist(r.hist_path), tail_quantile)
            rec: dict[str, Any] = {"name": cell.name, "folder": cell.folder, "fit_repeat": int(r.repeat),
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


def wiedner_extension_verdict(verdict, table) -> dict[str, int]:
    totals = {"inside": 0, "above": 0, "below": 0, "inside_profile": 0}
    for rec in table.itertuples():
        if isinstance(getattr(rec, "error", None), str):
            verdict.add(f"{rec.name}, fit on repeat {rec.fit_repeat}", None, None, "us",
                        f"{rec.folder} repeat {rec.fit_repeat}", "not derivable", rec.error)
            continue
        others = ", ".join(f"r{k}={v:.2f}" for k, v in rec.others_max_us.items())
        caveat = ""
        if rec.xi <= -0.5:
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


def extension_figure(table, title: str | None = None):
    """One panel per Table III cell: the n-observation return level fitted on each repeat (95 %
    delta interval) next to the maximum each repeat observed."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    names = list(dict.fromkeys(table["name"]))
    cols = 4
    rows = (len(names) + cols - 1) // cols
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=[n.replace(" / ", "<br>") for n in names],
                        horizontal_spacing=0.06, vertical_spacing=0.18)
    for i, name in enumerate(names):
        d = table[table["name"] == name].sort_values("fit_repeat")
        r, c = i // cols + 1, i % cols + 1
        x = [f"r{k}" for k in d["fit_repeat"]]
        lvl = d["return_level_us"].to_numpy(dtype=float)
        hi = np.nan_to_num(d["ci_high_us"].to_numpy(dtype=float) - lvl, nan=0.0)
        lo = np.nan_to_num(lvl - d["ci_low_us"].to_numpy(dtype=float), nan=0.0)
        fig.add_trace(go.Scatter(x=x, y=lvl, mode="markers", name="return level fitted on the repeat (95 % CI)",
                                 legendgroup="rl", showlegend=i == 0, marker=dict(size=9, color="#0072B2"),
                                 error_y=dict(type="data", symmetric=False, array=hi, arrayminus=lo)),
                      row=r, col=c)
        fig.add_trace(go.Scatter(x=x, y=d["observed_max_us"], mode="markers", name="maximum observed in the repeat",
                                 legendgroup="max", showlegend=i == 0,
                                 marker=dict(symbol="x", size=10, color="#D55E00")),
                      row=r, col=c)
        fig.update_yaxes(type="log", row=r, col=c, title_text="latency [µs]" if c == 1 else None)
    fig.update_layout(title=title or "benchbook extension: GPD return level of the run maximum vs observed maxima",
                      height=700, legend=dict(orientation="h", yanchor="top", y=-0.08, x=0))
    _style(fig)
    fig.update_layout(height=700, margin=dict(t=130),
                      legend=dict(orientation="h", yanchor="top", y=-0.08, x=0))
    return fig


def worst_clusters(cat, gap_s: float = 1e-3):
    """Clusters among the shipped worst-5000 packets of a run (time gap `gap_s`): how dependent the
    extremes are. Returns one row per run with the cluster count, the extremal-index estimate
    (clusters / exceedances) and the largest cluster."""
    import pandas as pd

    from benchbook.reproduce.wiedner import run_label
    from benchbook.tools import pos_evaluator as pe

    rows = []
    for r in cat[cat["worst_path"].notna()].itertuples():
        w = pe.read_worst(r.worst_path)
        u = float(w["latency"].min()) - 1.0  # every listed packet is an exceedance
        cl = evt.decluster_by_gap(w["prets"].to_numpy() / 1e9, w["latency"].to_numpy(), u, gap_s)
        big = cl.loc[cl["size"].idxmax()]
        top = cl.loc[cl["max"].idxmax()]
        rows.append({"run": run_label(r), "threshold_us": (u + 1) / 1000, "n_exceed": len(w),
                     "n_clusters": len(cl), "extremal_index": len(cl) / len(w),
                     "largest_cluster_size": int(big["size"]),
                     "largest_cluster_duration_ms": (big["end"] - big["start"]) * 1e3,
                     "largest_cluster_max_us": big["max"] / 1000, "largest_cluster_t_s": big["start"],
                     "max_cluster_size": int(top["size"]), "max_cluster_duration_ms": (top["end"] - top["start"]) * 1e3,
                     "max_us": top["max"] / 1000, "max_cluster_t_s": top["start"]})
    return pd.DataFrame(rows)


def worst_clusters_verdict(verdict, clusters, gap_s: float = 1e-3) -> None:
    for rec in clusters.itertuples():
        verdict.add(
            f"clusters among the 5000 worst packets: {rec.run}", None, round(rec.extremal_index, 4), "",
            rec.run, "info",
            f"benchbook extension: {rec.n_clusters} clusters (gap {gap_s * 1e3:g} ms) among {rec.n_exceed} "
            f"packets above {rec.threshold_us:.2f} µs, extremal index estimate {rec.extremal_index:.3f} "
            f"(1 = independent extremes); largest cluster {rec.largest_cluster_size} packets over "
            f"{rec.largest_cluster_duration_ms:.2f} ms at t = {rec.largest_cluster_t_s:.1f} s, max "
            f"{rec.largest_cluster_max_us:.2f} µs; the run's maximum {rec.max_us:.2f} µs lies in a cluster of "
            f"{rec.max_cluster_size} packets over {rec.max_cluster_duration_ms:.2f} ms at t = {rec.max_cluster_t_s:.1f} s",
        )
