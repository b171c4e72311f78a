"""What a run page shows of a measured verdict (verdict.json /2, kind "measured"): per judged row its intervals
against the +-delta band around the published value, per claim its interval against its threshold, each drawn
(benchbook.publish.interval_svg) beside the same numbers as a table, with every per-run value; and what a
reader needs to redo the verdict (alpha, the plan's seed, runs per arm, order, exclusions, methods).

Levels: verdict.json's ``ci90`` / ``ci95`` are the intervals at 1 - 2 alpha and 1 - alpha (90 % and 95 % at
alpha = 0.05): equivalence reads the first (TOST), a difference the second; the labels follow the row's alpha.

Claims are drawn on the scale they read: a relation of rates as the difference of a from b in percent
(100 (e^Delta - 1), threshold 0 %; an "a ~ b" margin +-delta becomes [100 (e^-delta - 1), 100 (e^delta - 1)] %),
a difference as it is, "a / b within [x, y]" as the ratio a / b against [x, y], a share against q. Paired claims
(a and b of one arm) show each run's Delta as a point; two independent sets have no per-run Delta (their interval
is a bootstrap over runs), so their points are left out and the table lists both sets.

A percentile its runs cannot resolve (or an extreme; V2, V11) is not printed: its row shows the band, the reason
and each run's N, and leaves the values to verdict.json.
"""

from __future__ import annotations

import math
from typing import Any

from benchbook.publish.interval_svg import Drawing, render
from benchbook.reproduce.verdict_rows import JUDGED_STATUSES, fmt_value


def level_texts(alpha: float) -> tuple[str, str]:
    """The labels of ci90 and ci95 at ``alpha``: ("90 %", "95 %") at 0.05."""
    return f"{(1 - 2 * alpha) * 100:.4g} %", f"{(1 - alpha) * 100:.4g} %"


def _interval_text(pair: list[float] | None, unit: str = "", digits: int = 4) -> str:
    if pair is None:
        return "-"
    return f"[{pair[0]:.{digits}g}, {pair[1]:.{digits}g}] {_unit(unit)}".rstrip()


def _unit(unit: str) -> str:
    """The unit as the tables print it ("us" -> "µs")."""
    return fmt_value(0.0, unit).removeprefix("0").strip()


def _n_text(n_per_run: list[int | None]) -> str:
    known = [n for n in n_per_run if n is not None]
    if not known:
        return "N not recorded"
    lo, hi = min(known), max(known)
    return f"N = {lo:,}" if lo == hi else f"N = {lo:,} to {hi:,}"


def margin_band(published: float, margin: dict[str, Any]) -> tuple[float, float] | None:
    """The +-delta band around the published value in the value's unit: value e^-+delta (log ratio) or value -+
    delta (difference)."""
    if not margin or margin.get("delta") is None or published is None:
        return None
    d = float(margin["delta"])
    if margin.get("scale") == "log-ratio":
        return published * math.exp(-d), published * math.exp(d)
    return published - d, published + d


def _status_detail(row: dict[str, Any]) -> str:
    """What the status cell says beside the word: the runs a decision would need, or why there is none."""
    parts = []
    if row.get("status") == "inconclusive" and row.get("runs_needed") and \
            f"{row['runs_needed']} runs" not in (row.get("reason") or ""):
        parts.append(f"about {row['runs_needed']} runs would likely decide")
    if row.get("reason"):
        parts.append(row["reason"])
    return "; ".join(parts)


def not_resolvable(row: dict[str, Any]) -> bool:
    """The row's statistic is a within-run percentile its runs' N cannot resolve, or an extreme (V2, V11): the
    site prints none of its values (verdict.json keeps them, with each run's N)."""
    return str(row.get("method", "")).startswith("resolvability")


def row_drawing(row: dict[str, Any]) -> Drawing:
    """A measured row's drawing: the band of its margin around the published value, its intervals, the median
    and the runs (the value's unit); of a statistic the runs cannot resolve, only the band and the reason."""
    unit = _unit(row.get("unit", ""))
    l90, l95 = level_texts(float(row.get("alpha") or 0.05))
    band = margin_band(row.get("published"), row.get("margin") or {})
    hidden = not_resolvable(row)
    values = row.get("values") or []
    points = [] if hidden else [
        (float(v), f"run {r}: {fmt_value(v, row.get('unit', ''))}" + (f" (N = {n:,})" if n is not None else ""))
        for r, v, n in zip(row.get("run_ids") or range(1, len(values) + 1), values,
                           _pad(row.get("n_per_run"), len(values)), strict=True)
        if v is not None and math.isfinite(v)]
    ci90, ci95 = row.get("ci90_value"), row.get("ci95_value")
    label = [f"{row['name']}: {row['status']}.", f"Published {fmt_value(row.get('published'), row.get('unit', ''))}"]
    if band:
        margin = row["margin"]
        label[-1] += f" {margin.get('text', '')} (band {band[0]:.4g} to {band[1]:.4g})"
    if row.get("estimate") is not None and not hidden:
        label.append(f"median of {len(points)} runs {row['estimate']:.4g}")
    if ci90 and ci95:
        label.append(f"{l90} interval {ci90[0]:.4g} to {ci90[1]:.4g}, {l95} interval {ci95[0]:.4g} to {ci95[1]:.4g}")
    note = "" if ci95 else _no_interval_note(row, len(row.get("values") or []))
    if note:
        label.append(note)
    return Drawing(label="; ".join(label), status=row["status"], unit=unit, band=band, reference=row.get("published"),
                   ci90=_pair(ci90), ci95=_pair(ci95), estimate=None if hidden else row.get("estimate"),
                   points=points, level90=l90,
                   level95=l95, note=note)


def _no_interval_note(row: dict[str, Any], runs: int) -> str:
    if row.get("status") == "not comparable":
        return "not comparable: not judged"
    if row.get("status") == "not derivable":
        return "not derivable: no runs"
    if not_resolvable(row):
        return "not resolvable within a run: no value drawn"
    return f"no interval from {runs} run{'s' if runs != 1 else ''}"


def _pad(values: list[Any] | None, n: int) -> list[Any]:
    values = list(values or [])
    return (values + [None] * n)[:n]


def _pair(p: list[float] | None) -> tuple[float, float] | None:
    return None if p is None else (float(p[0]), float(p[1]))


def measured_rows(verdict: dict[str, Any]) -> list[dict[str, Any]]:
    """The judged and not-judged measured rows (kind "measured") of a verdict, each with its drawing (SVG) and
    the text of its table cells."""
    out = []
    for i, row in enumerate(verdict.get("rows") or [], start=1):
        if row.get("kind") != "measured":
            continue
        unit = row.get("unit", "")
        l90, l95 = level_texts(float(row.get("alpha") or verdict.get("alpha") or 0.05))
        margin = row.get("margin") or {}
        band = margin_band(row.get("published"), margin)
        values = row.get("values") or []
        runs = list(zip(row.get("run_ids") or range(1, len(values) + 1), values, _pad(row.get("n_per_run"),
                                                                                         len(values)), strict=True))
        out.append({
            "index": i, "row": row, "name": row["name"], "status": row["status"],
            "judged": row["status"] in JUDGED_STATUSES,
            "statistic": f"{row.get('arm')}:{row.get('run_statistic')}" if row.get("arm") else "",
            "definition": row.get("definition", ""),
            "published_text": fmt_value(row.get("published"), unit),
            "margin_text": margin.get("text", ""),
            "band_text": _interval_text(list(band), unit) if band else "",
            "sources": ", ".join(margin.get("sources") or []), "margin_note": margin.get("note", ""),
            "estimate_text": "median: not resolvable" if not_resolvable(row) else
            f"median {fmt_value(row.get('estimate'), unit)}",
            "level90": l90, "level95": l95,
            "ci90_text": _interval_text(row.get("ci90_value"), unit),
            "ci95_text": _interval_text(row.get("ci95_value"), unit),
            "delta_text": _delta_text(row),
            "method": row.get("method", ""),
            "runs": len(values), "n_text": _n_text(row.get("n_per_run") or []),
            "per_run": [{"run": r, "value": "not resolvable" if not_resolvable(row) else fmt_value(v, unit),
                         "n": "-" if n is None else f"{n:,}"}
                        for r, v, n in runs],
            "without_value": row.get("runs_without_value") or [],
            "detail": _status_detail(row),
            "note": row.get("note", ""),
            "svg": render(row_drawing(row), f"row-{i}-drawing"),
        })
    return out


def _delta_text(row: dict[str, Any]) -> str:
    """Delta on the margin's scale: "ln(median / published) = +0.012 (+1.2 %)" or "median - published = +0.004"."""
    d = row.get("delta")
    if d is None:
        return ""
    if (row.get("margin") or {}).get("scale") == "log-ratio":
        return f"Δ = ln(median / published) = {d:+.4g} ({math.expm1(d) * 100:+.2f} %)"
    return f"Δ = median − published = {d:+.4g}"


def other_rows(verdict: dict[str, Any]) -> list[dict[str, Any]]:
    """A measured verdict's rows that are not measured rows (info, figure redrawn)."""
    return [{"index": i, **r, "published_text": fmt_value(r.get("published"), r.get("unit", "")),
             "computed_text": fmt_value(r.get("computed"), r.get("unit", ""))}
            for i, r in enumerate(verdict.get("rows") or [], start=1) if r.get("kind") != "measured"]


# --- claims ---------------------------------------------------------------------------------------------------

def _claim_scale(claim: dict[str, Any]) -> tuple[str, Any]:
    """How a claim is drawn: ("percent" | "difference" | "ratio" | "share", value -> display value)."""
    test = claim.get("test")
    if test == "share >=":
        return "share", float
    if test == "a / b within":
        return "ratio", math.exp
    if claim.get("scale") == "log-ratio":
        return "percent", lambda d: math.expm1(d) * 100.0
    return "difference", float


def _claim_threshold(claim: dict[str, Any], to: Any) -> tuple[tuple[float | None, float | None] | None, float | None,
                                                                str]:
    """The band where the claim holds, the reference line, and the threshold in words (display scale)."""
    test = claim.get("test")
    if test == "share >=":
        q = float(claim["q"])
        return (q, None), q, f"share ≥ {q:g}"
    if test == "a / b within" and claim.get("within"):
        x, y = claim["within"]
        return (float(x), float(y)), None, f"a / b within [{x:g}, {y:g}]"
    if test == "a ~ b" and claim.get("margin"):
        d = float(claim["margin"]["delta"])
        return (to(-d), to(d)), to(0.0), f"a ≈ b within {claim['margin'].get('text', '')}"
    if test == "a > b":
        return (to(0.0), None), to(0.0), "a > b: Δ above 0"
    if test == "a < b":
        return (None, to(0.0)), to(0.0), "a < b: Δ below 0"
    return None, None, test or ""


_AXIS = {"percent": "% (a vs b)", "difference": "a − b", "ratio": "a / b", "share": "share"}


def claim_drawing(claim: dict[str, Any]) -> Drawing:
    kind, to = _claim_scale(claim)
    band, ref, threshold = _claim_threshold(claim, to)
    l90, l95 = level_texts(float(claim.get("alpha") or 0.05))
    points: list[tuple[float, str]] = []
    run_ids = claim.get("run_ids") or []
    va, vb = claim.get("values_a") or [], claim.get("values_b") or []
    if kind == "share":
        points = [(a / b, f"run {r}: {a:g} of {b:g}") for r, a, b in zip(run_ids, va, vb, strict=False) if b]
        estimate = claim.get("share")
    else:
        if claim.get("paired") and run_ids and len(va) == len(vb) == len(run_ids):
            for r, a, b in zip(run_ids, va, vb, strict=True):
                d = _claim_delta(claim, a, b)
                if d is not None:
                    points.append((to(d), f"run {r}: a = {a:.4g}, b = {b:.4g}"))
        estimate = None if claim.get("delta") is None else to(claim["delta"])
    ci90 = None if kind == "share" or not claim.get("ci90") else (to(claim["ci90"][0]), to(claim["ci90"][1]))
    ci95 = None if not claim.get("ci95") else (to(claim["ci95"][0]), to(claim["ci95"][1]))
    label = [f"claim {claim['id']}: {claim['verdict']}", f"threshold {threshold}"]
    if estimate is not None:
        label.append(f"estimate {estimate:.4g}")
    if ci95 is not None:
        label.append((f"{l90} interval {ci90[0]:.4g} to {ci90[1]:.4g}, " if ci90 else "")
                     + f"{l95} interval {ci95[0]:.4g} to {ci95[1]:.4g}")
    note = "" if ci95 else ("not derivable" if claim.get("verdict") == "not derivable" else "no interval yet")
    return Drawing(label="; ".join(label), status=claim["verdict"], unit=_AXIS[kind], band=band, reference=ref,
                   ci90=ci90, ci95=ci95, estimate=estimate, points=points, level90=l90, level95=l95, note=note)


def _claim_delta(claim: dict[str, Any], a: float, b: float) -> float | None:
    if claim.get("scale") == "log-ratio":
        return math.log(a / b) if a > 0 and b > 0 else None
    return a - b


def _claim_interval_text(claim: dict[str, Any], key: str) -> str:
    pair = claim.get(key)
    if not pair:
        return "-"
    kind, to = _claim_scale(claim)
    lo, hi = to(pair[0]), to(pair[1])
    if kind == "percent":
        return f"[{lo:+.2f} %, {hi:+.2f} %]"
    return f"[{lo:.4g}, {hi:.4g}]"


def _claim_estimate_text(claim: dict[str, Any]) -> str:
    kind, to = _claim_scale(claim)
    if kind == "share":
        counts = claim.get("counts")
        return "-" if claim.get("share") is None else (
            f"{counts[0]:,} of {counts[1]:,} = {claim['share']:.4g}" if counts else f"{claim['share']:.4g}")
    if claim.get("delta") is None:
        return "-"
    v = to(claim["delta"])
    return {"percent": f"a vs b: {v:+.2f} %", "ratio": f"a / b = {v:.4g}", "difference": f"a − b = {v:+.4g}"}[kind]


def claim_views(verdict: dict[str, Any]) -> list[dict[str, Any]]:
    """Each claim of a measured verdict with its drawing and the text of its table cells."""
    out = []
    for i, c in enumerate(verdict.get("claims") or [], start=1):
        l90, l95 = level_texts(float(c.get("alpha") or verdict.get("alpha") or 0.05))
        _, _, threshold = _claim_threshold(c, _claim_scale(c)[1])
        va, vb = c.get("values_a") or [], c.get("values_b") or []
        ids_a = c.get("run_ids_a") or c.get("run_ids") or list(range(1, len(va) + 1))
        ids_b = c.get("run_ids_b") or c.get("run_ids") or list(range(1, len(vb) + 1))
        runs = c.get("runs")
        out.append({
            "index": i, "claim": c, "id": c["id"], "text": c.get("text", ""), "principal": c.get("principal"),
            "verdict": c["verdict"], "relation": _relation(c), "threshold": threshold,
            "estimate_text": _claim_estimate_text(c), "level90": l90, "level95": l95,
            "ci90_text": "-" if c.get("test") == "share >=" else _claim_interval_text(c, "ci90"),
            "ci95_text": _claim_interval_text(c, "ci95"),
            "method": c.get("method", ""),
            "runs_text": (f"{runs[0]} of a, {runs[1]} of b" if isinstance(runs, list) else
                          f"{runs} (paired)" if c.get("paired") else str(runs if runs is not None else "-")),
            "names": _operand_names(c),
            "set_a": [{"run": r, "value": f"{v:.6g}"} for r, v in zip(ids_a, va, strict=False)],
            "set_b": [{"run": r, "value": f"{v:.6g}"} for r, v in zip(ids_b, vb, strict=False)],
            "definitions": _definitions(c),
            "detail": _status_detail({**c, "status": c["verdict"]}),
            "svg": render(claim_drawing(c), f"claim-{i}-drawing"),
        })
    return out


def _operand_names(c: dict[str, Any]) -> tuple[str, str]:
    """The headers of a claim's per-run tables: "a (Mbit/s)", "b (Mbit/s)"; "successes", "trials" for a share."""
    names = ("successes", "trials") if c.get("test") == "share >=" else ("a", "b")
    ua, ub = _unit(c.get("unit_a") or ""), _unit(c.get("unit_b") or "")
    return (f"{names[0]} ({ua})" if ua else names[0]), (f"{names[1]} ({ub})" if ub else names[1])


def _definitions(c: dict[str, Any]) -> list[tuple[str, str]]:
    """(operand, definition) of a claim's statistics; one line when both are defined alike."""
    names = ("successes", "trials") if c.get("test") == "share >=" else ("a", "b")
    da, db = c.get("definition_a", ""), c.get("definition_b", "")
    if da and da == db:
        return [(" and ".join(names), da)]
    return [(n, d) for n, d in zip(names, (da, db), strict=True) if d]


def _relation(c: dict[str, Any]) -> str:
    if c.get("test") == "share >=":
        return f"{c.get('successes')} / {c.get('trials')} ≥ {c.get('q'):g}"
    if c.get("test") == "a / b within" and c.get("within"):
        return f"{c.get('a')} / {c.get('b')} within [{c['within'][0]:g}, {c['within'][1]:g}]"
    op = {"a > b": ">", "a < b": "<", "a ~ b": "≈"}.get(c.get("test", ""), c.get("test", ""))
    margin = f" within {c['margin']['text']}" if c.get("margin") else ""
    return f"{c.get('a')} {op} {c.get('b')}{margin}"


# --- what it takes to redo the verdict ------------------------------------------------------------------------

def redo_facts(verdict: dict[str, Any]) -> dict[str, Any]:
    """alpha, the plan (arms and their configuration, runs per arm, seed, how the order was drawn, the order by
    round, the validity rules, counts and exclusions) and the noise floor file, for the page's "redo" panel."""
    plan_block = verdict.get("plan") or {}
    plan = plan_block.get("plan") or {}
    order = plan_block.get("order") or []
    rounds: dict[int, list[str]] = {}
    for slot in order:
        rounds.setdefault(int(slot.get("round", 0)), []).append(str(slot.get("arm")))
    counts = plan_block.get("counts") or {}
    return {
        "alpha": verdict.get("alpha"),
        "seed": plan.get("seed"),
        "repetitions": plan.get("repetitions"),
        "arms": plan.get("arms") or {},
        "order_method": plan.get("order_method", ""),
        "rounds": [(r, " → ".join(arms)) for r, arms in sorted(rounds.items())],
        "rules": plan.get("rules") or [],
        "counts": ", ".join(f"{v} {k}" for k, v in counts.items() if v) or "-",
        "excluded": plan_block.get("excluded") or [],
        "runs": plan_block.get("runs") or [],
        "noise_floor": verdict.get("noise_floor"),
        "has_plan": bool(plan),
    }


__all__ = ["claim_drawing", "claim_views", "level_texts", "margin_band", "measured_rows", "not_resolvable",
           "other_rows", "redo_facts", "row_drawing"]
