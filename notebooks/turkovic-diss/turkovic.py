"""Turković (dissertation, ch. 5 and 6): the flow sets of Tables 5.1-5.3, Figs. 5.4-5.6 and 6.1, their info rows and
figures.

Imported by cca-competition.ipynb beside it. Published numbers come only from the entry TOMLs of this folder; the
measurement is benchbook's generic :mod:`benchbook.experiment.cca_pairs` over the dumbbell. Each run of a flow set
(a runner arm: "cubic-bbr", "cubic-rtt", "bbr-rtt200", ...) records per-run statistics (cca_pairs.pair_statistics:
``flow<i>_throughput_mbps``, ``flow<i>_share``, ``highest_flow_throughput_mbps``, ``lowest_flow_throughput_mbps``,
``jain_mean_of_intervals``, ...; ``flow<i>.mean_rtt_ms`` of every dumbbell run), which the entries' ``[[published]]``
values and ``[[claims]]`` name and ``verdict.judge_runs`` judges across runs. This module adds what is shown beside
them, never judged: the other Jain variant, the share of each flow before and after the first seconds, the RTT
fairness ratio, and the figures.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from benchbook.analysis.intervals import RATE
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
# Chapter 5 prints run-long averages of runs of at least this long (5.4.3: two Vegas flows do not converge "even
# after 60s"; Cubic flows need about 20 s): a table's rows are judged only on runs this long
THESIS_RUN_S = 60.0
SPLIT_S = 10.0   # the time-split info rows: before / after this many seconds of a run (half a shorter run)


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
    if part not in SETS_OF_PART:
        raise ValueError(f"part {part!r}: expected one of {', '.join([*SETS_OF_PART, 'fig6.1a', 'fig6.1b'])}")
    return SETS_OF_PART[part]


def flow_label(spec: str) -> str:
    """"cubic" -> "Cubic", "cubic@200" -> "Cubic(200ms)" (the thesis' row names)."""
    cca, at, delay = spec.partition("@")
    return LABEL.get(cca, cca) + (f"({float(delay):g}ms)" if at else "")


def pair_name(ccas: list[str]) -> str:
    return " vs ".join(flow_label(c) for c in ccas)


def summary_note(s: dict[str, Any] | None, unit: str = "", digits: int = 3) -> str:
    """A median summary (cca_pairs.median_summary) in words: the median over runs with its 95 % interval, or
    why there is none."""
    if not s:
        return "no run"
    head = f"median of {s['n']} run(s) {s['median']:.{digits}f} {unit}".rstrip()
    if s["low"] is None:
        return f"{head}; no interval: {s['reason']}"
    return (f"{head}, 95 % interval [{s['low']:.{digits}f}, {s['high']:.{digits}f}] {unit}".rstrip()
            + f" ({s['method']})")


def add_info_rows(verdict: Any, result: dict[str, Any], part: str, sets: dict[str, list[str]]) -> None:
    """Rows shown beside the judged ones, never judged: per set that ran, the Jain index of per-flow mean
    throughputs (the variant the thesis does not compare), for mixed pairs each flow's rate before and after
    SPLIT_S, for flows of different RTTs the throughput ratio short-RTT / long-RTT flow. Figure entries: one
    'figure redrawn' row per set drawn (or 'not derivable' with the reason)."""
    for name, ccas in sets.items():
        title = pair_name(ccas)
        if part.startswith("fig6.1"):
            title = fig61_row(part, name).removesuffix(": Jain index")
        s = cca_pairs.set_summary(result, name)
        if part.startswith("fig5."):
            if s is None:
                verdict.add(f"{title} over time", None, None, "", "", "not derivable",
                            f"not derivable here: {result['not_runnable'].get(name, 'no completed run')}")
            else:
                verdict.figure_redrawn(f"{title} over time", note="figure redrawn from one run; the thesis prints no "
                                       "numbers for it", runs=s["runs"])
            continue
        if s is None:
            continue
        means = s["jain_of_means"]
        verdict.add(f"{title}: Jain index of per-flow mean throughputs", None, means["median"] if means else None,
                    "", s["runs"], "info", "the other variant (the thesis compares the mean of per-300 ms indices); "
                    + summary_note(means))
        if part.startswith("table") and len(set(ccas)) > 1 and not any("@" in c for c in ccas):
            _add_time_split_rows(verdict, result, name, ccas, s["runs"],
                                 min(SPLIT_S, float(result["params"]["duration_s"]) / 2))
        delays = [cca_pairs.flow_spec(c).extra_delay_ms for c in ccas]
        if len(set(delays)) > 1:
            short, long_ = int(np.argmin(delays)), int(np.argmax(delays))
            ratios = [r["flows"][short]["receiver_bps"] / r["flows"][long_]["receiver_bps"]
                      for r in result["runs"] if r["set"] == name
                      and r["flows"][short]["receiver_bps"] and r["flows"][long_]["receiver_bps"]]
            ratio = cca_pairs.median_summary(ratios, RATE)
            verdict.add(f"{title}: throughput ratio short-RTT / long-RTT flow", None,
                        ratio["median"] if ratio else None, "", s["runs"], "info",
                        "1: RTT-fair; > 1: the short-RTT flow wins (AIMD), < 1: the long-RTT flow wins (BBR); "
                        + summary_note(ratio))


def _add_time_split_rows(verdict: Any, result: dict[str, Any], name: str, ccas: list[str], runs: str,
                         split_s: float = SPLIT_S) -> None:
    """Each flow's mean interval rate before and after ``split_s`` (median over runs): how the share moves
    during a run, which decides what a run-long average shows."""
    frames = [cca_pairs.interval_frame(result["output_dir"], r) for r in result["runs"] if r["set"] == name]
    for j, cca in enumerate(ccas):
        early, late = [], []
        for fr in frames:
            y = list(fr["mbps"].values())[j]
            before, after = fr["t_s"] < split_s, fr["t_s"] >= split_s
            if before.any() and np.isfinite(y[before]).any():
                early.append(float(np.nanmean(y[before])))
            if after.any() and np.isfinite(y[after]).any():
                late.append(float(np.nanmean(y[after])))
        for label, vals in ((f"first {split_s:g} s", early), (f"after {split_s:g} s", late)):
            s = cca_pairs.median_summary(vals, RATE)
            verdict.add(f"{pair_name(ccas)}: {flow_label(cca)} throughput, {label}", None,
                        s["median"] if s else None, "Mbit/s", runs, "info",
                        f"the sender's per-{result['params']['interval_s'] * 1000:g} ms rates averaged over that part "
                        "of each run; shows how the share moves during a run" + (f"; {summary_note(s, 'Mbit/s', 2)}"
                                                                                 if s else ": no run lasted so long"))


def short_runs_not_comparable(verdict: Any, part: str, duration_s: float) -> None:
    """Tables 5.1-5.3: with runs shorter than THESIS_RUN_S a judged row's estimate is an average over another part
    of a flow's life (slow start and convergence weigh more) than the thesis' run-long average, so the row becomes
    'not comparable' with the reason; its per-run values, interval, margin and the status it would have had stay
    in the row. Claims (directions, settled within seconds) stay judged; figures' rows (run length unstated) too."""
    if not part.startswith("table") or float(duration_s) >= THESIS_RUN_S:
        return
    for row in verdict.rows:
        if getattr(row, "kind", None) == "measured" and row.status in ("reproduced", "mismatch", "inconclusive"):
            row.reason = (f"runs of {float(duration_s):g} s average another quantity than the thesis' runs of at "
                          f"least {THESIS_RUN_S:g} s (5.4.3: Vegas flows not converged 'even after 60s', Cubic flows "
                          f"after about 20 s); -p duration_s={THESIS_RUN_S:g} judges this row. Against its margin "
                          f"as if comparable: {row.status}" + (f" ({row.reason})" if row.reason else ""))
            row.status = "not comparable"
            row.runs_needed = None


def name_rows_not_run(verdict: Any, rtt_deltas_ms: Any) -> None:
    """Fig. 6.1b: a row whose flow set this run did not include says which parameter adds it."""
    for row in verdict.rows:
        if row.status == "not derivable" and "is not in the plan" in (getattr(row, "reason", "") or ""):
            row.reason = (f"not run here: this run's rtt_deltas_ms is {rtt_deltas_ms!r} (the default keeps make "
                          f"reproduce short); -p rtt_deltas_ms=<list> adds this row ({row.reason})")


def fig61_row(part: str, name: str) -> str:
    """Fig. 6.1's cell name of a set: "Cubic vs New Reno: Jain index" (a), "+100 ms, BBR: Jain index" (b)."""
    if part == "fig6.1a":
        a, b = name.split("-")
        return f"{FIG61[a]} vs {FIG61[b]}: Jain index"
    cca, d = name.split("-rtt")
    return f"+{d} ms, {FIG61[cca]}: Jain index"


def fig61_cells(verdict: Any) -> list[dict[str, Any]]:
    """The judged Jain rows of Fig. 6.1 as the figure's cells: published value, the median over runs and its 95 %
    interval (None where not run or no interval)."""
    return [{"row": r.name, "published": r.published, "measured": getattr(r, "estimate", None),
             "ci95": getattr(r, "ci95_value", None), "status": r.status}
            for r in verdict.rows if r.name.endswith(": Jain index")]


def fig61_figure(cells: list[dict[str, Any]], part: str) -> Any:
    """(a) published and measured Jain's index per pair as two heatmaps; (b) Jain's index over the RTT
    difference per algorithm, published as lines, measured as markers with their 95 % interval across runs."""
    names = list(FIG61.values())
    if part == "fig6.1a":
        fig = make_subplots(rows=1, cols=2, subplot_titles=("published (thesis, Mininet)",
                                                            "measured here (median over runs)"))
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
        got = [(x, c) for x, c in zip(d, rows, strict=True) if c["measured"] is not None]
        if got:
            up = [c["ci95"][1] - c["measured"] if c["ci95"] else 0.0 for _, c in got]
            down = [c["measured"] - c["ci95"][0] if c["ci95"] else 0.0 for _, c in got]
            fig.add_trace(go.Scatter(x=[g[0] for g in got], y=[g[1]["measured"] for g in got], mode="markers",
                                     name=f"{cca} (measured)", marker={"size": 10, "color": color},
                                     error_y={"type": "data", "array": up, "arrayminus": down, "visible": True}))
    fig.update_layout(title="Fig. 6.1b: RTT fairness, Jain's index (mean of per-300 ms indices) of two flows of one "
                            "algorithm; markers: median over runs (bars: 95 % interval from 6 runs)",
                      xaxis_title="RTT difference [ms]", yaxis_title="Jain's index", yaxis_range=[0.45, 1.02])
    return fig


def series_for_figures(result: dict[str, Any], output_dir: Any, sets: dict[str, list[str]]) -> dict[str, Any]:
    """The first run's per-interval series of every set that ran (name -> cca_pairs.interval_frame)."""
    out = {}
    for name in sets:
        run = next((r for r in result["runs"] if r["set"] == name), None)
        if run is not None:
            out[name] = cca_pairs.interval_frame(output_dir, run)
    return out
