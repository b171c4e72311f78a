"""Declarative tables over TUM pos evaluator data: each [[published]] value of an entry names its
data folder, statistic, rate and repeat; this module computes it and adds the verdict row.

Per [[published]] value (each falls back to the entry's [parameters] of the same name)::

    folder = "vm/rt-optimized"     # measurement folder inside the dataset (measurements/<folder>)
    statistic = "max"              # max | min | mean | p<percent> (p50, p99, p99.9 ...)
    rate_pps = 1000000             # offered rate of the run
    repeat = "unstated"            # how the paper chose among the repeats:
                                   #   0, 1, 2 ...  that repeat
                                   #   "worst"      the repeat with the largest value
                                   #   "median"     the median over the repeats
                                   #   "best"       the repeat with the smallest value
                                   #   "unstated"   the paper does not say: find the repeat that
                                   #                matches and name it, relating it to the median
                                   #                and the worst

and in [parameters]: ``repeats = 3`` (how many repeats the experiment ran; when fewer are in the
dataset, "worst", "median", "best" and an unmatched "unstated" cannot be decided: not derivable).

A value whose run(s) are absent from the dataset is "not derivable" with the reason, never a
mismatch. Values are converted from ns to the published unit (ns, us, ms, s).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from benchbook.analysis import pos_evaluator_data as pe
from benchbook.reproduce.registry import PublishedValue, RegistryError

REPEAT_CHOICES = ("worst", "median", "best", "unstated")
UNIT_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
KEYS = ("folder", "statistic", "rate_pps", "repeat")


@dataclass
class Cell:
    """One declared value and what the dataset gives for it."""

    published: PublishedValue
    folder: str
    statistic: str
    rate_pps: int
    repeat: str | int
    values: dict[int, float] = field(default_factory=dict)  # repeat -> value in the published unit
    sources: dict[int, str] = field(default_factory=dict)
    errors: dict[int, str] = field(default_factory=dict)  # repeat -> why it has no value
    computed: float | None = None
    status: str = "not derivable"
    runs: str = ""
    note: str = ""
    chosen: list[int] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.published.name


def _spec(entry, pv: PublishedValue, defaults: dict[str, Any]) -> dict[str, Any]:
    spec = {k: getattr(pv, k) if getattr(pv, k) is not None else defaults.get(k) for k in KEYS}
    for k in KEYS:
        if spec[k] is None:
            raise RegistryError(f"{entry.source}: [[published]] {pv.name!r}: no {k!r} (give it in the value "
                                "or in [parameters])")
    try:
        pe.parse_statistic(spec["statistic"])
    except ValueError as exc:
        raise RegistryError(f"{entry.source}: [[published]] {pv.name!r}: {exc}") from exc
    rep = spec["repeat"]
    if isinstance(rep, str) and rep not in REPEAT_CHOICES and not rep.isdigit():
        raise RegistryError(f"{entry.source}: [[published]] {pv.name!r}: repeat {rep!r} is not a repeat number "
                            f"or one of {', '.join(REPEAT_CHOICES)}")
    if isinstance(rep, str) and rep.isdigit():
        spec["repeat"] = int(rep)
    if pv.unit not in UNIT_NS:
        raise RegistryError(f"{entry.source}: [[published]] {pv.name!r}: unit {pv.unit!r} is not a time unit "
                            f"({', '.join(UNIT_NS)})")
    return spec


def _fmt(v: float) -> str:
    return f"{v:.2f}"


def relation_note(published: float, values: dict[int, float], matched: list[int]) -> str:
    """How the published value relates to the median and the worst of the repeats."""
    vals = np.array(sorted(values.values()), dtype=float)
    med, worst, best = np.median(vals), vals.max(), vals.min()
    listing = ", ".join(f"r{k}={_fmt(v)}" for k, v in sorted(values.items()))
    if matched:
        v = values[matched[0]]
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
    return (f"{where} (by repeat: {listing}; median {_fmt(med)}, worst {_fmt(worst)}; "
            f"published/median = {published / med:.3f}, published/worst = {published / worst:.3f})")


def compute_cells(entry, catalogue, defaults: dict[str, Any] | None = None) -> list[Cell]:
    """Every [[published]] value of `entry` computed from the evaluator runs in `catalogue`."""
    defaults = dict(entry.parameters if defaults is None else defaults)
    expected = defaults.get("repeats")
    cells = []
    for pv in entry.published:
        spec = _spec(entry, pv, defaults)
        cell = Cell(pv, spec["folder"], spec["statistic"], int(spec["rate_pps"]), spec["repeat"])
        _fill(cell, catalogue, pv.unit)
        _decide(cell, expected)
        cells.append(cell)
    return cells


def _fill(cell: Cell, catalogue, unit: str) -> None:
    runs = catalogue[(catalogue["folder"] == cell.folder) & (catalogue["rate_pps"] == cell.rate_pps)]
    for r in runs.sort_values("repeat").itertuples():
        try:
            ns, source = pe.run_statistic_ns(r, cell.statistic)
        except ValueError as exc:
            cell.errors[int(r.repeat)] = str(exc)
            continue
        cell.values[int(r.repeat)] = ns / UNIT_NS[unit]
        cell.sources[int(r.repeat)] = source


def _where(cell: Cell, repeat: int | None = None) -> str:
    base = f"{cell.folder} rate {cell.rate_pps}"
    return base if repeat is None else f"{base} repeat {repeat}"


def _decide(cell: Cell, expected: int | None) -> None:
    pv = cell.published
    present = sorted(cell.values)
    if not present and not cell.errors:
        cell.note = f"no run of {cell.folder} at {cell.rate_pps} pkt/s in the dataset"
        cell.runs = _where(cell)
        return
    rep = cell.repeat
    if isinstance(rep, int):
        cell.runs = _where(cell, rep)
        if rep in cell.values:
            cell.computed, cell.chosen = cell.values[rep], [rep]
            cell.note = f"{cell.statistic} of repeat {rep} ({cell.sources[rep]})"
        elif rep in cell.errors:
            cell.note = cell.errors[rep]
        else:
            have = ", ".join(map(str, present)) or "none"
            cell.note = (f"repeat {rep} of {cell.folder} at {cell.rate_pps} pkt/s is not in the dataset "
                         f"(repeats there: {have})")
        _status(cell)
        return
    missing = ""
    if cell.errors:
        missing = "; ".join(cell.errors.values())
    elif expected is not None and len(present) < int(expected):
        missing = (f"only repeats {present} of {int(expected)} of {cell.folder} at {cell.rate_pps} pkt/s are in "
                   "the dataset")
    if rep == "unstated":
        matched = [k for k in present if pv.matches(cell.values[k])]
        if matched:
            cell.chosen = matched
            cell.computed = cell.values[matched[0]]
            cell.runs = _where(cell, matched[0])
            cell.note = relation_note(pv.value, cell.values, matched)
            if len(matched) > 1:
                cell.note += f"; repeats {matched} all match within the tolerance"
        elif missing or not present:
            cell.runs = _where(cell)
            cell.note = (f"the paper does not say which repeat; no repeat in the dataset matches and the missing one "
                         f"may: {missing or 'no repeat has a value'}")
        else:
            worst = max(present, key=lambda k: cell.values[k])
            cell.computed = cell.values[worst]
            cell.runs = f"{_where(cell, worst)} (worst; no repeat matches)"
            cell.note = relation_note(pv.value, cell.values, [])
        _status(cell)
        return
    if missing or not present:
        cell.runs = _where(cell)
        cell.note = f"the {rep} of the repeats cannot be decided: {missing or 'no repeat has a value'}"
        _status(cell)
        return
    vals = {k: cell.values[k] for k in present}
    if rep == "worst":
        k = max(vals, key=vals.get)
        cell.computed, cell.chosen, cell.runs = vals[k], [k], f"{_where(cell, k)} (worst of {len(vals)})"
    elif rep == "best":
        k = min(vals, key=vals.get)
        cell.computed, cell.chosen, cell.runs = vals[k], [k], f"{_where(cell, k)} (best of {len(vals)})"
    else:
        order = sorted(vals, key=vals.get)
        if len(order) % 2:
            k = order[len(order) // 2]
            cell.computed, cell.chosen, cell.runs = vals[k], [k], f"{_where(cell, k)} (median of {len(vals)})"
        else:
            a, b = order[len(order) // 2 - 1], order[len(order) // 2]
            cell.computed, cell.chosen = (vals[a] + vals[b]) / 2, [a, b]
            cell.runs = f"{_where(cell)} repeats {a} and {b} (median of {len(vals)}: their mean)"
    listing = ", ".join(f"r{k}={_fmt(v)}" for k, v in sorted(vals.items()))
    cell.note = f"{cell.statistic}, {rep} of the repeats ({listing}; {cell.sources[cell.chosen[0]]})"
    _status(cell)


def _status(cell: Cell) -> None:
    if cell.computed is None or not np.isfinite(cell.computed):
        cell.computed, cell.status = None, "not derivable"
    else:
        cell.status = "match" if cell.published.matches(cell.computed) else "mismatch"


def add_to_verdict(verdict, cells: list[Cell]) -> None:
    """One verdict row per cell (status decided by compute_cells)."""
    for c in cells:
        pv = c.published
        note = "; ".join(x for x in (c.note, pv.note) if x)
        verdict.add(pv.name, pv.value, c.computed, pv.unit, c.runs, c.status, note, pv.tolerance_text())


def cells_frame(cells: list[Cell]):
    """The table as computed: one row per cell (name, folder, statistic, rate, repeat rule, value per
    repeat, chosen repeat(s), computed, published, status)."""
    return pd.DataFrame([
        {"name": c.name, "folder": c.folder, "statistic": c.statistic, "rate_pps": c.rate_pps,
         "repeat": c.repeat, "by_repeat": {k: round(v, 3) for k, v in c.values.items()}, "chosen": c.chosen,
         "computed": c.computed, "published": c.published.value, "unit": c.published.unit, "status": c.status}
        for c in cells
    ])


def pivot(cells: list[Cell], sep: str = " / "):
    """The table laid out as printed when value names are '<row><sep><column>': each cell shows the
    computed value and the repeat it came from."""
    rows = []
    for c in cells:
        row, _, col = c.name.partition(sep)
        if c.computed is None:
            text = f"not derivable ({c.published.value:g})"
        else:
            which = ", ".join(map(str, c.chosen)) or "-"
            text = f"{c.computed:.2f} {c.published.unit} (repeat {which})"
        rows.append({"row": row, "column": col or c.statistic, "cell": text})
    df = pd.DataFrame(rows)
    order = list(dict.fromkeys(df["row"]))
    cols = list(dict.fromkeys(df["column"]))
    return df.pivot(index="row", columns="column", values="cell").reindex(index=order, columns=cols)
