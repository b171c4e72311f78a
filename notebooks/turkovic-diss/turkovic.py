"""Turković (dissertation, ch. 5 and 6): the flow sets of Tables 5.1-5.3, Figs. 5.4-5.6 and 6.1, and their verdict
rows.

Imported by cca-competition.ipynb beside it. Published numbers come only from the entry TOMLs of this
folder; the measurement is benchbook's generic :mod:`benchbook.experiment.cca_pairs` over the dumbbell.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from benchbook.analysis.fairness import rtt_fairness
from benchbook.experiment import cca_pairs

LABEL = {"cubic": "Cubic", "bbr": "BBR", "vegas": "Vegas", "reno": "Reno"}

# Table 5.1's rows: same-algorithm pairs (Fig. 5.4) and mixed pairs (Figs. 5.5, 5.6)
SAME = {"cubic-cubic": ["cubic", "cubic"], "vegas-vegas": ["vegas", "vegas"], "bbr-bbr": ["bbr", "bbr"]}
MIXED = {"cubic-bbr": ["cubic", "bbr"], "cubic-vegas": ["cubic", "vegas"], "vegas-bbr": ["vegas", "bbr"]}
# Table 5.2: two flows of one algorithm, 200 ms added to the second flow's path ("cca@ms")
RTT = {"cubic-rtt": ["cubic@0", "cubic@200"], "vegas-rtt": ["vegas@0", "vegas@200"], "bbr-rtt": ["bbr@0", "bbr@200"]}
# Table 5.3: four flows of one algorithm, 50 / 100 / 150 / 200 ms added to the four senders' paths
RTT4 = {f"{c}-rtt4": [f"{c}@{d}" for d in (50, 100, 150, 200)] for c in ("cubic", "vegas", "bbr")}
SETS_OF_PART = {"table5.1": {**SAME, **MIXED}, "table5.2": RTT, "table5.3": RTT4, "fig5.4": SAME, "fig5.5": MIXED,
                "fig5.6": MIXED}
# Fig. 6.1: the algorithms of the figure this kernel may have, in the figure's column order and naming
FIG61 = {"cubic": "Cubic", "reno": "New Reno", "bbr": "BBR", "vegas": "Vegas"}
# published RTT of Table 5.1 (ms), shown beside the measured one (info: the thesis measures send -> ACK in
# traces before and after the bottleneck, benchbook reports the senders' smoothed RTT)
SPLIT_S = 10.0   # the time-split info rows: before / after this many seconds of a run
PUBLISHED_RTT_MS = {"cubic-bbr": (70.37, 174.38), "cubic-cubic": (76.65, 78.32), "bbr-bbr": (3.21, 3.24),
                    "cubic-vegas": (67.16, 139.79), "vegas-vegas": (1.66, 1.68), "vegas-bbr": (4.55, 4.25),
                    "cubic-rtt": (233.09, 435.53), "vegas-rtt": (32.03, 228.96), "bbr-rtt": (50.08, 249.56)}


def _deltas(rtt_deltas_ms: Any) -> list[float]:
    if isinstance(rtt_deltas_ms, (int, float)):
        return [float(rtt_deltas_ms)]
    items = rtt_deltas_ms.split(",") if isinstance(rtt_deltas_ms, str) else list(rtt_deltas_ms)
    try:
        return [float(x) for x in items if str(x).strip()]
    except ValueError as exc:
        raise ValueError(f"rtt_deltas_ms: expected comma-separated milliseconds, got {rtt_deltas_ms!r}") from exc


def sets_for(part: str, rtt_deltas_ms: Any = "0", base_delay_ms: float = 0.0) -> dict[str, list[str]]:
    """The flow sets of a part. fig6.1a: every pair of FIG61's algorithms, ``base_delay_ms`` added to both
    flows' paths; fig6.1b: per algorithm and RTT difference d, one flow with ``base_delay_ms`` added and one
    with ``base_delay_ms`` + d."""
    if part == "fig6.1a":
        ccas = list(FIG61)
        spec = (lambda c: f"{c}@{base_delay_ms:g}") if base_delay_ms else (lambda c: c)
        return {f"{a}-{b}": [spec(a), spec(b)] for i, a in enumerate(ccas) for b in ccas[i:]}
    if part == "fig6.1b":
        return {f"{c}-rtt{d:g}": [f"{c}@{base_delay_ms:g}", f"{c}@{base_delay_ms + d:g}"] for c in FIG61
                for d in _deltas(rtt_deltas_ms)}
    return SETS_OF_PART[part]


def fig61_row(part: str, name: str) -> str:
    """Fig. 6.1's cell name of a set: "Cubic vs New Reno: Jain index" (a), "+100 ms, BBR: Jain index" (b)."""
    if part == "fig6.1a":
        a, b = name.split("-")
        return f"{FIG61[a]} vs {FIG61[b]}: Jain index"
    cca, d = name.split("-rtt")
    return f"+{d} ms, {FIG61[cca]}: Jain index"


def add_fig61_rows(verdict: Any, result: dict[str, Any], part: str, sets: dict[str, list[str]],
                   rtt_deltas_ms: Any = "") -> list[dict[str, Any]]:
    """One row per published cell: the measured mean of per-interval Jain's indices, not derivable where the
    pair cannot run here or was not in this run's selection; the index of means (and in (b) the throughput
    ratio) as info. Returns the cells (row, set, published, measured) for the figure."""
    by_row = {fig61_row(part, n): n for n in sets}
    cells = []
    for pv in verdict.entry.published:
        name = by_row.get(pv.name)
        s = cca_pairs.set_summary(result, name) if name else None
        measured = s["jain_mean_of_intervals"]["mean"] if s and s["jain_mean_of_intervals"] else None
        cells.append({"row": pv.name, "set": name, "published": pv.value, "measured": measured})
        if name is None:
            verdict.not_derivable(pv, f"not run here: this run's rtt_deltas_ms is {rtt_deltas_ms!r} (the default "
                                      "keeps make reproduce short); -p rtt_deltas_ms=<list> adds this row")
            continue
        if s is None:
            verdict.not_derivable(pv, f"not derivable here: {result['not_runnable'].get(name, 'no completed run')}")
            continue
        verdict.check(pv, measured, s["runs"], "variant: mean of per-300 ms Jain's indices; "
                      + _ci_note(s["jain_mean_of_intervals"], "", 3))
        label = pv.name.removesuffix(": Jain index")
        means = s["jain_of_means"]
        verdict.add(f"{label}: Jain index of per-flow mean throughputs", None, means["mean"] if means else None, "",
                    s["runs"], "info", "the other variant, for comparison; " + _ci_note(means, "", 3))
        ccas = sets[name]
        if part == "fig6.1b" and ccas[0] != ccas[1] and all(f["throughput_mbps"] for f in s["flows"]):
            fair = rtt_fairness({c: f["throughput_mbps"]["mean"] for c, f in zip(ccas, s["flows"], strict=True)},
                                {c: cca_pairs.flow_spec(c).extra_delay_ms for c in ccas})
            verdict.add(f"{label}: throughput ratio short-RTT / long-RTT flow", None, fair["ratio_short_over_long"],
                        "", s["runs"], "info", "1: fair; > 1: the short-RTT flow wins (AIMD), < 1: the long-RTT "
                        "flow wins (BBR)")
    return cells


def fig61_figure(cells: list[dict[str, Any]], part: str) -> Any:
    """(a) published and measured Jain's index per pair as two heatmaps; (b) Jain's index over the RTT
    difference per algorithm, published as lines, measured as markers."""
    names = list(FIG61.values())
    if part == "fig6.1a":
        fig = make_subplots(rows=1, cols=2, subplot_titles=("published (thesis, Mininet)", "measured here"))
        for col, key in ((1, "published"), (2, "measured")):
            z = [[None] * len(names) for _ in names]
            for c in cells:
                a, b = c["row"].removesuffix(": Jain index").split(" vs ")
                z[names.index(a)][names.index(b)] = z[names.index(b)][names.index(a)] = c[key]
            text = [["" if v is None else f"{v:.2f}" for v in row] for row in z]
            fig.add_trace(go.Heatmap(z=z, x=names, y=names, zmin=0.5, zmax=1.0, colorscale="RdYlGn", text=text,
                                     texttemplate="%{text}", showscale=col == 2), row=1, col=col)
        fig.update_yaxes(autorange="reversed")
        fig.update_layout(title="Fig. 6.1a: Jain's index (mean of per-300 ms indices) of two flows, same RTT; "
                                "blank: not derivable here")
        return fig
    fig = go.Figure()
    for i, cca in enumerate(names):
        rows = [c for c in cells if c["row"].endswith(f", {cca}: Jain index")]
        d = [float(c["row"].split(" ms,")[0].lstrip("+")) for c in rows]
        color = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd"][i]
        fig.add_trace(go.Scatter(x=d, y=[c["published"] for c in rows], mode="lines", name=f"{cca} (thesis)",
                                 line={"dash": "dash", "color": color}))
        got = [(x, c["measured"]) for x, c in zip(d, rows, strict=True) if c["measured"] is not None]
        if got:
            fig.add_trace(go.Scatter(x=[g[0] for g in got], y=[g[1] for g in got], mode="markers",
                                     name=f"{cca} (measured)", marker={"size": 10, "color": color}))
    fig.update_layout(title="Fig. 6.1b: RTT fairness, Jain's index (mean of per-300 ms indices) of two flows of one "
                            "algorithm", xaxis_title="RTT difference [ms]", yaxis_title="Jain's index",
                      yaxis_range=[0.45, 1.02])
    return fig


def flow_label(spec: str) -> str:
    """"cubic" -> "Cubic", "cubic@200" -> "Cubic(200ms)" (the thesis' row names)."""
    cca, at, delay = spec.partition("@")
    return LABEL.get(cca, cca) + (f"({float(delay):g}ms)" if at else "")


def pair_name(ccas: list[str]) -> str:
    return " vs ".join(flow_label(c) for c in ccas)


def _ci_note(ci: dict[str, Any] | None, unit: str, digits: int) -> str:
    if not ci:
        return ""
    if ci.get("low") is None:
        return f"one repetition (no interval); n={ci['n']}"
    return (f"mean of {ci['n']} repetitions, {int(ci['level'] * 100)} % CI "
            f"[{ci['low']:.{digits}f}, {ci['high']:.{digits}f}] {unit}").strip()


def add_verdict_rows(verdict: Any, result: dict[str, Any], part: str) -> None:
    sets = SETS_OF_PART[part]
    if not part.startswith("table"):
        for name, ccas in sets.items():
            if name in result["not_runnable"]:
                verdict.add(f"{pair_name(ccas)} over time", None, None, "", "", "not derivable",
                            f"not derivable here: {result['not_runnable'][name]}")
            else:
                verdict.figure_only(f"{pair_name(ccas)} over time",
                                    note="figure produced (one repetition); the thesis prints no numbers for it",
                                    runs=cca_pairs.set_summary(result, name)["runs"])
        return
    published = {pv.name for pv in verdict.entry.published} if verdict.entry is not None else set()
    for name, ccas in sets.items():
        title = pair_name(ccas)
        jain_name = f"{title}: average Jain index"
        s = cca_pairs.set_summary(result, name)
        if s is None:
            reason = result["not_runnable"].get(name, "no completed run")
            for pv in verdict.entry.published:
                if pv.name.startswith(f"{title}:"):
                    verdict.not_derivable(pv, f"not derivable here: {reason}")
            continue
        mixed = ccas[0] != ccas[1]
        for i, f in enumerate(s["flows"]):
            row = f"{title}: {flow_label(f['cca'])} average throughput"
            value = f["throughput_mbps"]["mean"] if f["throughput_mbps"] else None
            note = _ci_note(f["throughput_mbps"], "Mbit/s", 2)
            if mixed and row in published:
                verdict.check(row, value, s["runs"], note)
            else:
                verdict.add(f"{title}: flow {i + 1} ({flow_label(f['cca'])}) average throughput", None,
                            value, "Mbit/s", s["runs"], "info",
                            note + "; the thesis prints 46.59 / 46.59 (Cubic) and 46.70 / 44.36 (BBR): which "
                            "flow gets more varies from run to run")
            pub_rtt = dict(enumerate(PUBLISHED_RTT_MS.get(name, ()))).get(i)
            verdict.add(f"{title}: flow {i + 1} ({flow_label(f['cca'])}) average RTT", pub_rtt,
                        f["rtt_ms"]["mean"] if f["rtt_ms"] else None, "ms", s["runs"], "info",
                        "senders' smoothed RTT (iperf3, per 300 ms interval) with the 1000-packet FIFO in the "
                        "path; the thesis measures send -> ACK from traces; " + _ci_note(f["rtt_ms"], "ms", 2))
        if mixed:
            _add_time_split_rows(verdict, result, name, ccas, s["runs"])
        if any("@" in c for c in ccas) and all(f["throughput_mbps"] for f in s["flows"]):
            fair = rtt_fairness({c: f["throughput_mbps"]["mean"] for c, f in zip(ccas, s["flows"], strict=True)},
                                {c: cca_pairs.flow_spec(c).extra_delay_ms for c in ccas})
            verdict.add(f"{title}: throughput ratio short-RTT / long-RTT flow", None, fair["ratio_short_over_long"],
                        "", s["runs"], "info", "RTT fairness (1: fair; > 1: the short-RTT flow wins)")
        ci = s["jain_mean_of_intervals"]
        verdict.check(jain_name, ci["mean"] if ci else None, s["runs"],
                      "variant: mean of per-300 ms Jain's indices; " + _ci_note(ci, "", 3))
        means = s["jain_of_means"]
        verdict.add(f"{title}: Jain index of per-flow mean throughputs", None, means["mean"] if means else None,
                    "", s["runs"], "info", "the other variant, for comparison; " + _ci_note(means, "", 3))


def _add_time_split_rows(verdict: Any, result: dict[str, Any], name: str, ccas: list[str], runs: str,
                         split_s: float = SPLIT_S) -> None:
    """Each flow's mean interval rate before and after ``split_s`` (over all repetitions): how the share
    moves during a run, which decides what a run-long average shows."""
    frames = [cca_pairs.interval_frame(result["output_dir"], r) for r in result["runs"] if r["set"] == name]
    if not frames:
        return
    for j, cca in enumerate(ccas):
        early, late = [], []
        for fr in frames:
            y = list(fr["mbps"].values())[j]
            early.append(float(np.nanmean(y[fr["t_s"] < split_s])) if (fr["t_s"] < split_s).any() else np.nan)
            late.append(float(np.nanmean(y[fr["t_s"] >= split_s])) if (fr["t_s"] >= split_s).any() else np.nan)
        for label, vals in ((f"first {split_s:g} s", early), (f"after {split_s:g} s", late)):
            ok = [v for v in vals if np.isfinite(v)]
            verdict.add(f"{pair_name(ccas)}: {flow_label(cca)} throughput, {label}", None,
                        float(np.mean(ok)) if ok else None, "Mbit/s", runs, "info",
                        f"mean of the senders' per-{result['params']['interval_s'] * 1000:g} ms rates over "
                        f"{len(ok)} repetition(s); shows how the share moves during a run")


def series_for_figures(result: dict[str, Any], output_dir: Any, sets: dict[str, list[str]]) -> dict[str, Any]:
    """The first repetition's per-interval series of every set that ran (name -> cca_pairs.interval_frame)."""
    out = {}
    for name in sets:
        run = next((r for r in result["runs"] if r["set"] == name), None)
        if run is not None:
            out[name] = cca_pairs.interval_frame(output_dir, run)
    return out
