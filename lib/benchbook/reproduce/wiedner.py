"""Wiedner et al., "Containing Low Tail-Latencies in Packet Processing Using Lightweight
Virtualization" (ITC 2023): Table III and the figures, from the pos evaluator outputs.

Data: data/published/containerized-low-latency (verified against SHA256SUMS before use). Every
number here comes from the evaluator's percentile ladders (exact ns, percentile_disc) and is
cross-checked against the 100 ns histograms of the same run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchbook.reproduce.datasets import dataset_path, verify_dataset
from benchbook.tools import pos_evaluator as pe

DATASET = "containerized-low-latency"
TABLE3_RATE_PPS = 1_000_000


@dataclass(frozen=True)
class Table3Cell:
    row: str  # technology as printed in Table III
    column: str  # configuration as printed in Table III
    folder: str  # measurements/<folder>

    @property
    def name(self) -> str:
        """The registry's [[published]] name for this cell."""
        return f"{self.row} / {self.column}"


TABLE3_CELLS: tuple[Table3Cell, ...] = (
    Table3Cell("Container kernel-space", "non-optimized vanilla", "kernel/vanilla-non-optimized"),
    Table3Cell("Container kernel-space", "optimized RT", "kernel/rt-optimized"),
    Table3Cell("Container user-space", "non-optimized vanilla", "container/vanilla/non-optimized"),
    Table3Cell("Container user-space", "optimized RT", "container/rt/optimized"),
    Table3Cell("VM", "non-optimized vanilla", "vm/vanilla-non-optimized"),
    Table3Cell("VM", "optimized RT", "vm/rt-optimized"),
    Table3Cell("Bare-metal", "non-optimized vanilla", "bare-metal/vanilla-non-optimized"),
    Table3Cell("Bare-metal", "optimized RT", "bare-metal/rt-optimized"),
)

# The paper's figures of user-space/kernel-space processing per technology (gh-pages table_details).
PAPER_FIGURES = {
    "container": "Figure 4 (container, user-space processing)",
    "vm": "Figure 8 (VM, user-space processing)",
    "bare-metal": "Figure 9 (bare metal, user-space processing)",
    "kernel": "Figure 10 (container, kernel-space processing)",
}


def load_catalogue(dataset_dir: Path | str | None = None, verify: bool = True):
    """Verify the dataset's SHA256SUMS (unless verify=False) and list its runs."""
    folder = Path(dataset_dir) if dataset_dir else dataset_path(DATASET)
    if verify:
        verify_dataset(folder)
    return pe.catalogue(folder)


def _field(row: Any, name: str) -> Any:
    """A catalogue field from an itertuples() row or a pandas Series (where .repeat is a method)."""
    import pandas as pd

    return row[name] if isinstance(row, pd.Series) else getattr(row, name)


def run_label(row: Any) -> str:
    return f"{_field(row, 'folder')} rate {_field(row, 'rate_pps')} repeat {_field(row, 'repeat')}"


def run_max_ns(row: Any) -> int:
    """Maximum latency of one run: last value of its percentile ladder (exact ns), checked against
    the 100 ns histogram (whose last non-empty bucket must hold it)."""
    ladder = pe.read_percentiles(row.percentiles_path)
    if pe.ladder_is_empty(ladder):
        raise ValueError(f"{row.percentiles_path}: the evaluator matched no packets in this run (empty ladder)")
    mx = int(ladder["value"].max())
    if isinstance(row.hist_path, str):
        hist = pe.read_hist(row.hist_path)
        nz = hist[hist["count"] > 0]
        top = int(nz["latency_bucket"].max())
        if not (top <= mx < top + pe.HIST_BUCKET_NS):
            raise ValueError(
                f"{row.percentiles_path}: maximum {mx} ns disagrees with the 100 ns histogram "
                f"{row.hist_path} (last bucket {top} ns)"
            )
    return mx


def _runs(cat, folder: str, rate_pps: int):
    sel = cat[(cat["folder"] == folder) & (cat["rate_pps"] == rate_pps)].sort_values("repeat")
    if sel.empty:
        raise ValueError(f"no runs for {folder} at {rate_pps} pps in the dataset")
    return sel


def table3(cat, rate_pps: int = TABLE3_RATE_PPS):
    """Max latency of every repeat for each Table III cell: one row per cell."""
    import pandas as pd

    rows = []
    for cell in TABLE3_CELLS:
        runs = _runs(cat, cell.folder, rate_pps)
        maxima = {int(r.repeat): run_max_ns(r) for r in runs.itertuples()}
        vals = np.array(list(maxima.values()), dtype=np.int64)
        rows.append(
            {
                "name": cell.name,
                "technology": cell.row,
                "configuration": cell.column,
                "folder": cell.folder,
                "rate_pps": rate_pps,
                "max_ns_by_repeat": maxima,
                "worst_ns": int(vals.max()),
                "median_ns": float(np.median(vals)),
                "best_ns": int(vals.min()),
            }
        )
    return pd.DataFrame(rows)


def _us(ns: float) -> float:
    return float(ns) / 1000.0


def relation_note(published_us: float, maxima_ns: dict[int, int], matched: list[int]) -> str:
    """How the published value relates to the median and the worst of the repeats."""
    vals = np.array(sorted(maxima_ns.values()), dtype=float)
    med, worst, best = np.median(vals), vals.max(), vals.min()
    listing = ", ".join(f"r{k}={_us(v):.2f}" for k, v in sorted(maxima_ns.items()))
    if matched:
        v = maxima_ns[matched[0]]
        n = len(vals)
        if v == worst and v == med:
            rel = "the worst and the median"
        elif v == worst:
            rel = "the worst"
        elif v == best and n > 2:
            rel = "the best"
        elif v == med:
            rel = "the median"
        else:
            rel = "neither the median nor the worst"
        where = f"published value = repeat {matched[0]}, {rel} of {n}"
    else:
        where = "published value equals no repeat"
    return (f"{where} (max µs by repeat: {listing}; median {_us(med):.2f}, worst {_us(worst):.2f}; "
            f"published/median = {published_us / _us(med):.3f}, published/worst = {published_us / _us(worst):.3f})")


def table3_verdict(verdict, table) -> list[dict[str, Any]]:
    """Add one verdict row per Table III cell: find the repeat whose maximum matches the published
    value (the paper does not say which of the 3 repeats it reports), name it, and relate the
    published value to the median and the worst repeat. Returns the per-cell findings."""
    findings = []
    for rec in table.itertuples():
        pv = verdict.entry.published_value(rec.name)
        maxima = dict(rec.max_ns_by_repeat)
        matched = [k for k, v in sorted(maxima.items()) if pv.matches(_us(v))]
        if matched:
            computed = _us(maxima[matched[0]])
            runs = f"{rec.folder} rate {rec.rate_pps} repeat {matched[0]}"
        else:
            computed = _us(rec.worst_ns)
            worst_rep = max(maxima, key=maxima.get)
            runs = f"{rec.folder} rate {rec.rate_pps} repeat {worst_rep} (worst; no repeat matches)"
        note = relation_note(pv.value, maxima, matched)
        if len(matched) > 1:
            note += f"; repeats {matched} all match within the tolerance"
        verdict.check(pv, computed, runs=runs, note=note)
        findings.append({"name": rec.name, "matched_repeats": matched, "computed_us": computed,
                         "published_us": pv.value})
    return findings


# -- figures -------------------------------------------------------------------------------------

def ladder_series(path: str) -> tuple[np.ndarray, np.ndarray]:
    """Percentile ladder as (percent 0..100, value ns), the input of hdr_percentile_plot."""
    df = pe.read_percentiles(path)
    return df["percentile"].to_numpy(dtype=float) * 100.0, df["value"].to_numpy(dtype=np.int64)


def variant_label(row: Any) -> str:
    opt = "optimized" if _field(row, "optimized") else "non-optimized"
    return f"{_field(row, 'kernel')} {opt}"


def hdr_series_by_technology(cat, technology: str, rate_pps: int = TABLE3_RATE_PPS,
                             repeat_policy: str = "worst") -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], list[str]]:
    """HDR series (one per kernel/optimisation variant) of one technology at one rate.

    repeat_policy "worst" takes the repeat with the highest maximum (the TUM group's "worst of
    three"); an integer string ("0", "1", "2") takes that repeat. Returns (series, run labels).
    """
    sub = cat[(cat["technology"] == technology) & (cat["rate_pps"] == rate_pps)]
    series: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    runs: list[str] = []
    for variant, grp in sub.groupby("variant", sort=True):
        grp = grp.sort_values("repeat")
        ladders = [pe.read_percentiles(p) for p in grp["percentiles_path"]]
        empty = [run_label(r) for r, lad in zip(grp.itertuples(), ladders) if pe.ladder_is_empty(lad)]
        runs.extend(f"{e} (no matched packets: skipped)" for e in empty)
        if repeat_policy == "worst":
            maxima = [-1.0 if pe.ladder_is_empty(lad) else float(lad["value"].max()) for lad in ladders]
            if max(maxima) < 0:
                continue
            pick = grp.iloc[int(np.argmax(maxima))]
        else:
            pick = grp[grp["repeat"] == int(repeat_policy)].iloc[0]
            if run_label(pick) in empty:
                continue
        series[variant_label(pick)] = ladder_series(pick.percentiles_path)
        runs.append(run_label(pick))
    return series, runs


def ladder_value(df, p: float) -> int:
    """Discrete percentile from a ladder: the value at the smallest ladder percentile >= p."""
    pct = df["percentile"].to_numpy(dtype=float)
    idx = int(np.searchsorted(pct, p - 1e-12, side="left"))
    idx = min(idx, len(pct) - 1)
    return int(df["value"].iloc[idx])


RATE_PERCENTILES = {"p50": 0.5, "p99": 0.99, "p99.9": 0.999, "p99.99": 0.9999}


def rate_table(cat):
    """Latency against packet rate: one row per run with p50, p99, p99.9, p99.99, max (ns) and the
    achieved post-DuT rate and transfer rate (received/sent)."""
    import pandas as pd

    rows = []
    for r in cat.itertuples():
        ladder = pe.read_percentiles(r.percentiles_path)
        rec = {"technology": r.technology, "technology_label": r.technology_label, "variant": r.variant,
               "kernel": r.kernel, "optimized": r.optimized, "rate_pps": r.rate_pps, "repeat": r.repeat}
        empty = pe.ladder_is_empty(ladder)
        rec["no_matched_packets"] = empty
        for key, p in RATE_PERCENTILES.items():
            rec[f"{key}_ns"] = np.nan if empty else ladder_value(ladder, p)
        rec["max_ns"] = np.nan if empty else float(ladder["value"].max())
        if isinstance(r.transferrate_path, str):
            tr = pe.read_csv(r.transferrate_path, "transferrate", allow_empty_file=True)
            ok = len(tr) == 1
            rec["post_pps"] = float(tr["post_pkts_per_second"].iloc[0]) if ok else np.nan
            rec["transferrate"] = float(tr["transferrate"].iloc[0]) if ok else np.nan
        rows.append(rec)
    return pd.DataFrame(rows)


def rate_figure(rates, metric: str = "p99_ns", title: str | None = None):
    """Latency (median over repeats of `metric`) against offered packet rate: one panel per
    technology, one line per kernel/optimisation variant; error bars span the repeats' range."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    ok = rates[~rates["no_matched_packets"]].copy()
    # one name (and colour) per kernel/optimisation across technologies
    ok["variant"] = ok["kernel"] + np.where(ok["optimized"], " optimized", " non-optimized")
    agg = (ok.groupby(["technology_label", "variant", "rate_pps"])[metric]
           .agg(["median", "min", "max"]).reset_index())
    techs = sorted(agg["technology_label"].unique())
    fig = make_subplots(rows=2, cols=2, subplot_titles=techs, shared_xaxes=True,
                        horizontal_spacing=0.08, vertical_spacing=0.12)
    variants = sorted(agg["variant"].unique())
    palette = _palette(len(variants))
    shown: set[str] = set()
    for i, tech in enumerate(techs):
        r, c = i // 2 + 1, i % 2 + 1
        for variant, d in agg[agg["technology_label"] == tech].groupby("variant", sort=True):
            d = d.sort_values("rate_pps")
            color = palette[variants.index(variant)]
            fig.add_trace(
                go.Scatter(
                    x=d["rate_pps"] / 1e6, y=d["median"] / 1000.0, mode="lines+markers", name=variant,
                    legendgroup=variant, showlegend=variant not in shown, line=dict(color=color),
                    error_y=dict(type="data", symmetric=False, array=(d["max"] - d["median"]) / 1000.0,
                                 arrayminus=(d["median"] - d["min"]) / 1000.0, thickness=1),
                ),
                row=r, col=c,
            )
            shown.add(variant)
        fig.update_yaxes(type="log", title_text="latency [µs]" if c == 1 else None, row=r, col=c)
        fig.update_xaxes(title_text="offered rate [Mpkt/s]" if r == 2 else None, row=r, col=c)
    fig.update_layout(
        title=title or f"Latency ({metric.removesuffix('_ns')}) against packet rate, median of 3 repeats",
        height=800, legend=dict(orientation="h", yanchor="top", y=-0.12, xanchor="left", x=0),
    )
    try:  # the house style, when benchbook.figures provides it
        from benchbook.figures.style import apply_style

        apply_style(fig)
        fig.update_layout(height=800, legend=dict(orientation="h", yanchor="top", y=-0.12, xanchor="left", x=0))
    except ImportError:
        pass
    return fig


def _palette(n: int) -> list[str]:
    try:
        from benchbook.figures.style import color

        return [color(i) for i in range(n)]
    except ImportError:
        import plotly.colors

        base = plotly.colors.qualitative.Dark24
        return [base[i % len(base)] for i in range(n)]


def table3_figure(table, verdict=None):
    """Maximum latency of each repeat per Table III cell (log scale), with the published value."""
    import plotly.graph_objects as go

    fig = go.Figure()
    names = list(table["name"])
    for rep in (0, 1, 2):
        fig.add_trace(
            go.Bar(
                x=names,
                y=[_us(m.get(rep, np.nan)) for m in table["max_ns_by_repeat"]],
                name=f"repeat {rep}",
            )
        )
    if verdict is not None and verdict.entry is not None:
        fig.add_trace(
            go.Scatter(
                x=names,
                y=[verdict.entry.published_value(n).value for n in names],
                mode="markers",
                marker=dict(symbol="diamond-open", size=14, line=dict(width=2)),
                name="published (Table III)",
            )
        )
    fig.update_layout(
        title=f"Table III: maximum latency at {int(table['rate_pps'].iloc[0]) / 1e6:g} Mpkt/s, per repeat",
        yaxis_title="maximum latency [µs]",
        yaxis_type="log",
        barmode="group",
    )
    try:
        from benchbook.figures.style import apply_style

        apply_style(fig)
    except ImportError:
        pass
    return fig


def worst_series(cat) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The shipped worst-5000 files as worst_latency_scatter series: run label -> (t_s, latency_ns),
    t = pre-DuT timestamp in seconds (the evaluator's capture-relative ns clock)."""
    out = {}
    for r in cat[cat["worst_path"].notna()].itertuples():
        w = pe.read_worst(r.worst_path)
        out[run_label(r)] = (w["prets"].to_numpy(dtype=np.float64) / 1e9, w["latency"].to_numpy(dtype=np.int64))
    return out


def table3_pivot(table, findings):
    """Table III laid out as printed (technology x configuration), with the matched repeat's
    maximum in µs and the repeat, from table3() and table3_verdict()'s findings."""
    import pandas as pd

    found = {f["name"]: f for f in findings}
    rows = []
    for rec in table.itertuples():
        f = found[rec.name]
        rep = f["matched_repeats"][0] if f["matched_repeats"] else None
        cell = f"{f['computed_us']:.2f} µs (repeat {rep})" if rep is not None else f"no repeat matches ({f['published_us']} µs)"
        rows.append({"Technology": rec.technology, "configuration": rec.configuration, "cell": cell})
    df = pd.DataFrame(rows)
    order = list(dict.fromkeys(df["Technology"]))
    return df.pivot(index="Technology", columns="configuration", values="cell").reindex(order)
