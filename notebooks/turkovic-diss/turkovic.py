"""Turković (dissertation, ch. 5): the flow sets of Tables 5.1, 5.2 / Figs. 5.4-5.6 and their verdict rows.

Imported by cca-competition.ipynb beside it. Published numbers come only from the entry TOMLs of this
folder; the measurement is benchbook's generic :mod:`benchbook.testbed.cca_pairs` over the dumbbell.
"""

from __future__ import annotations

from typing import Any

from benchbook.analysis.fairness import rtt_fairness
from benchbook.testbed import cca_pairs

LABEL = {"cubic": "Cubic", "bbr": "BBR", "vegas": "Vegas", "reno": "Reno"}

# Table 5.1's rows: same-algorithm pairs (Fig. 5.4) and mixed pairs (Figs. 5.5, 5.6)
SAME = {"cubic-cubic": ["cubic", "cubic"], "vegas-vegas": ["vegas", "vegas"], "bbr-bbr": ["bbr", "bbr"]}
MIXED = {"cubic-bbr": ["cubic", "bbr"], "cubic-vegas": ["cubic", "vegas"], "vegas-bbr": ["vegas", "bbr"]}
# Table 5.2: two flows of one algorithm, 200 ms added to the second flow's path ("cca@ms")
RTT = {"cubic-rtt": ["cubic@0", "cubic@200"], "vegas-rtt": ["vegas@0", "vegas@200"], "bbr-rtt": ["bbr@0", "bbr@200"]}
SETS_OF_PART = {"table5.1": {**SAME, **MIXED}, "table5.2": RTT, "fig5.4": SAME, "fig5.5": MIXED, "fig5.6": MIXED}
# published RTT of Table 5.1 (ms), shown beside the measured one (info: the thesis measures send -> ACK in
# traces before and after the bottleneck, benchbook reports the senders' smoothed RTT)
SPLIT_S = 10.0   # the time-split info rows: before / after this many seconds of a run
PUBLISHED_RTT_MS = {"cubic-bbr": (70.37, 174.38), "cubic-cubic": (76.65, 78.32), "bbr-bbr": (3.21, 3.24),
                    "cubic-vegas": (67.16, 139.79), "vegas-vegas": (1.66, 1.68), "vegas-bbr": (4.55, 4.25),
                    "cubic-rtt": (233.09, 435.53), "vegas-rtt": (32.03, 228.96), "bbr-rtt": (50.08, 249.56)}


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
            pub_rtt = PUBLISHED_RTT_MS.get(name, (None, None))[i]
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
    import numpy as np

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
