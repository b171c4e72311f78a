"""The verdict rows of Daichendt, Wiedner, Andre (IITM SS23) Figs. 3-5 and Table 1.

Imported by cgroups-v1-v2-latency.ipynb beside it. Published numbers come only from the entry
TOMLs of this folder (``entry.published``); the measurement itself is benchbook's generic
:mod:`benchbook.experiment.cgroup_latency`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchbook.experiment import cgroup_latency as lp

PAPER_RATES_PPS = (1.52e6, 6.24e6)           # the paper's two packet rates (Figs. 3 and 4)
TABLE1_EVENTS = ("instructions", "branches", "cpu-migrations")


def rate_note(params: lp.ExperimentParams) -> dict[str, str]:
    """The capability line saying how the rates relate to the paper's."""
    paper = params.backend != "local" and sorted(params.rates_pps) == sorted(PAPER_RATES_PPS)
    return {"capability": "packet rates", "status": "present" if paper else "substituted",
            "detail": f"paper {' and '.join(f'{r / 1e6:g}' for r in PAPER_RATES_PPS)} Mpkt/s -> "
                      f"{', '.join(f'{r:g}' for r in params.rates_pps)} pkt/s"}


def _ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return a / b


def add_verdict_rows(verdict: Any, result: dict[str, Any], output_dir: Path | str, part: str,
                     relation_tolerance: float = 0.10) -> None:
    """Rows for fig3 / fig4 (HDR at the low / high rate), fig5 (worst 5000), table1 (perf).

    The v1/v2 relations the paper states are checked when both arms ran: "identical up to p99" holds when the
    v1/v2 ratio of the worst repetitions' p99 is within ±relation_tolerance of 1, "v1 slightly higher around
    p99.9" when the p99.9 ratio exceeds 1."""
    arms = result["arms"]
    modes = result["params"]["cgroup_modes"]
    rates = result["params"]["rates_pps"]
    both = "v1" in arms and "v2" in arms and arms["v1"]["runnable"] and arms["v2"]["runnable"]
    missing = "; ".join(f"{m}: {a['reason']}" for m, a in arms.items() if not a["runnable"]) \
        or "the v1 and v2 arms were not both run"
    worst_by = result["params"].get("worst_by", "max")

    if part in ("fig3", "fig4", "fig5"):
        rate = min(rates) if part in ("fig3", "fig5") else max(rates)
        for mode in modes:
            p = lp.worst_repetition(lp.complete_points(result, mode, rate), worst_by)
            if p is None:
                continue
            an = p["analysis"]
            for q in ("99", "99.9", "99.99"):
                verdict.add(f"{mode} p{q} latency at {rate:g} pkt/s (worst of {result['params']['repetitions']})",
                            None, (an["percentiles_ns"].get(q) or 0) / 1000.0, "us", p["dir"], "info",
                            "measured here; the paper prints no absolute latencies")
        same = float(relation_tolerance)
        relations = {"99": (f"1 (identical up to p99: within ±{same:.0%})", lambda r: abs(r - 1.0) <= same),
                     "99.9": ("> 1 (v1 slightly higher around p99.9)", lambda r: r > 1.0)}
        for q, (pub, holds) in relations.items():
            name = f"p{q} latency ratio v1/v2"
            if both:
                v1 = lp.worst_repetition(lp.complete_points(result, "v1", rate), worst_by)
                v2 = lp.worst_repetition(lp.complete_points(result, "v2", rate), worst_by)
                r = _ratio(v1 and v1["analysis"]["percentiles_ns"].get(q),
                           v2 and v2["analysis"]["percentiles_ns"].get(q))
                if r is None:
                    verdict.add(name, pub, None, "", "", "not derivable",
                                "not derivable: no completed v1 and v2 points")
                else:
                    verdict.add(name, pub, r, "", f"{v1['dir']} / {v2['dir']}", "match" if holds(r) else "mismatch",
                                f"worst of each arm at {rate:g} pkt/s on this backend; the paper states the relation, "
                                f"not a number")
            else:
                verdict.add(name, pub, None, "", "", "not derivable",
                            f"not derivable here: the v1/v2 comparison did not run ({missing})")
    if part == "fig5":
        verdict.figure_only("Fig. 5: 5000 worst-case latencies over time",
                            note="scatter produced from the worst repetition per mode")
        name = "outliers v1 vs v2"
        if both:
            verdict.add(name, "slightly more for v1, extreme ones more for v2", None, "", "", "info",
                        "compare the scatter of the two arms")
        else:
            verdict.add(name, "slightly more for v1, extreme ones more for v2", None, "", "", "not derivable",
                        f"not derivable here: the v1/v2 comparison did not run ({missing})")
    if part == "table1":
        _table1_rows(verdict, result, both, missing)


def _table1_rows(verdict: Any, result: dict[str, Any], both: bool, missing: str) -> None:
    rate = min(result["params"]["rates_pps"])
    pt = lp.perf_table(result, rate, events_expected=TABLE1_EVENTS)
    published = {pv.name: pv for pv in verdict.entry.published} if verdict.entry is not None else {}
    for ev in TABLE1_EVENTS:
        for mode in ("v1", "v2"):
            pub_name = f"{ev} {mode}"
            measured = lp.mean_of(pt, mode, ev)
            row = pt[(pt["mode"] == mode) & (pt["event"] == ev)] if len(pt) else pt
            why = (f"not derivable here: the paper counts 60 s at 1.52 Mpkt/s on an EPYC 7551P DuT incl. container "
                   f"start/stop; this run: {result['params']['duration_s']:g} s at {rate:g} pkt/s, so absolute counts "
                   f"are not comparable")
            if measured is not None:
                why += f"; measured here: {measured:g}"
            elif len(row):
                why += f"; measured here: {row.iloc[0]['status']} {row.iloc[0]['note'] or ''}".rstrip()
            if pub_name in published:
                verdict.not_derivable(pub_name, why)
        pv1, pv2 = published.get(f"{ev} v1"), published.get(f"{ev} v2")
        paper_ratio = pv1.value / pv2.value if pv1 is not None and pv2 is not None else None
        rname = f"{ev} ratio v1/v2"
        m1, m2 = lp.mean_of(pt, "v1", ev), lp.mean_of(pt, "v2", ev)
        r = _ratio(m1, m2)
        if r is not None:
            verdict.add(rname, paper_ratio, r, "", "", "info", "measured relation (scaled-down run)")
        else:
            reasons = []
            if not both:
                reasons.append(missing)
            if (m1 is None and m2 is None) or (m1 is None and both):
                reasons.append(f"{ev}: no counted value (perf: not supported / not counted here)")
            verdict.add(rname, paper_ratio, None, "", "", "not derivable",
                        "not derivable here: " + "; ".join(reasons or ["no data"]))
    for ev in ("task-clock", "context-switches", "cpu-migrations"):
        for mode in result["params"]["cgroup_modes"]:
            m = lp.mean_of(pt, mode, ev)
            if m is not None:
                verdict.add(f"measured {ev} ({mode}, {rate:g} pkt/s, mean of repetitions)", None, m,
                            "msec" if ev == "task-clock" else "", "", "info", "")
