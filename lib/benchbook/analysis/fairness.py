"""Fairness between flows: Jain's index (two variants), RTT fairness, convergence time, confidence intervals.

The input is a `FlowSeries`: one throughput value per flow and interval, on one grid of interval
starts (``start_ns``; a flow has NaN where it has no value: before it started, after it ended, or
where the source has a gap).

Jain's index of x_1..x_n is (sum x)^2 / (n * sum x^2): 1 when all flows get the same, 1/n when one
flow gets everything. Two variants are in use and differ on the same data; every table and figure
names the one it shows:

- ``jain_of_means``: the index of the per-flow mean throughputs (each flow's mean over the intervals
  where it has a value). Flent's ``FairnessMeanReducer`` ("fairness of means").
- ``jain_mean_of_intervals``: the mean over intervals of the index of that interval's throughputs
  (``jain_min_interval``: their minimum). Flent's per-step ``FairnessRunner`` series averaged in its
  bar plots; tables in the congestion-control literature often report this variant.

Interval rule: an interval counts for the per-interval variants when every flow has a value there
and at least one flow sent something (an all-zero interval has no defined index and is skipped).

Every series a reader does not count as a competing flow is named in ``FlowSeries.left_out`` with the
reason (below the bulk share of intervals.parquet, a Flent aggregate, not a bit rate, ...), and the
summary lists them.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from benchbook.analysis.flent_data import FlentFormatError, load_flent
from benchbook.errors import BenchbookError

VARIANT_OF_MEANS = "jain_of_means"
VARIANT_MEAN_OF_INTERVALS = "jain_mean_of_intervals"
VARIANT_LABELS = {
    VARIANT_OF_MEANS: "Jain's index of per-flow mean throughputs",
    VARIANT_MEAN_OF_INTERVALS: "mean of per-interval Jain's indices",
    "jain_min_interval": "minimum of per-interval Jain's indices",
}


class FairnessError(BenchbookError, ValueError):
    """Input that has no fairness index (no flows, negative throughput, mismatched lengths)."""


def jain_index(values: Sequence[float] | np.ndarray) -> float:
    """(sum x)^2 / (n sum x^2) of non-negative values; NaN when all are zero (no index defined)."""
    x = np.asarray(values, dtype=float)
    if x.ndim != 1 or x.size == 0:
        raise FairnessError("Jain's index needs a non-empty list of throughputs")
    if np.isnan(x).any():
        raise FairnessError("Jain's index of a list with missing values (NaN)")
    if (x < 0).any():
        raise FairnessError(f"Jain's index of negative throughputs: {x[x < 0].tolist()}")
    sq = float(np.sum(x * x))
    if sq == 0.0:
        return math.nan
    return float(np.sum(x)) ** 2 / (x.size * sq)


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """np.unique of a 1-d numeric array, without np.unique's import of numpy.ma (20 ms of a command's start-up)."""
    s = np.sort(values)
    if s.size < 2:
        return s
    keep = np.empty(s.size, bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


@dataclass
class FlowSeries:
    """Per-flow throughput on one interval grid: ``bps[i, j]`` is flow j in the interval starting at
    ``start_ns[i]`` (NaN: no value). ``source`` says where it came from."""

    flows: list[str]
    start_ns: np.ndarray
    bps: np.ndarray
    interval_ns: int | None = None
    source: str = ""
    meta: dict[str, Any] = field(default_factory=dict)
    left_out: list[dict[str, str]] = field(default_factory=list)  # {"flow", "reason"} of series not counted

    def __post_init__(self) -> None:
        self.start_ns = np.asarray(self.start_ns, dtype=np.int64)
        self.bps = np.asarray(self.bps, dtype=float)
        if self.bps.ndim != 2 or self.bps.shape != (self.start_ns.size, len(self.flows)):
            raise FairnessError(f"{self.source or 'flow series'}: throughput matrix of shape {self.bps.shape}, "
                                f"expected ({self.start_ns.size} intervals, {len(self.flows)} flows)")
        if not self.flows:
            raise FairnessError(f"{self.source or 'flow series'}: no flows")
        finite = self.bps[np.isfinite(self.bps)]
        if (finite < 0).any():
            raise FairnessError(f"{self.source or 'flow series'}: negative throughput")

    @classmethod
    def from_columns(cls, flow: Sequence[Any], start_ns: Sequence[int], bps: Sequence[float], *,
                     interval_ns: int | None = None, source: str = "") -> FlowSeries:
        """From long-format rows (flow, interval start, throughput). Within a flow's span (its first to
        last interval) an interval without a row is 0 (nothing sent); outside it, no value."""
        flow_arr = np.asarray([str(f) for f in flow], dtype=object)
        start = np.asarray(start_ns, dtype=np.int64)
        vals = np.asarray(bps, dtype=float)
        if not (flow_arr.size == start.size == vals.size):
            raise FairnessError(f"{source or 'flow series'}: columns of different lengths")
        if start.size == 0:
            raise FairnessError(f"{source or 'flow series'}: no rows")
        flows = sorted(set(flow_arr.tolist()), key=_natural_key)
        grid = sorted_unique(start)
        if interval_ns is None:
            steps = np.diff(grid)
            interval_ns = int(steps.min()) if steps.size else None
        if interval_ns:
            grid = np.arange(grid[0], grid[-1] + 1, interval_ns, dtype=np.int64)
        idx = np.searchsorted(grid, start)
        if not np.array_equal(grid[np.minimum(idx, grid.size - 1)], start):
            raise FairnessError(f"{source or 'flow series'}: interval starts are not on one grid of "
                                f"{interval_ns} ns")
        mat = np.full((grid.size, len(flows)), np.nan)
        col = {f: j for j, f in enumerate(flows)}
        for j, f in enumerate(flows):
            rows = idx[flow_arr == f]
            mat[rows.min():rows.max() + 1, j] = 0.0
        np.add.at(mat, (idx, np.array([col[f] for f in flow_arr], dtype=np.int64)), vals)
        return cls(flows=flows, start_ns=grid, bps=mat, interval_ns=interval_ns, source=source)

    def common(self) -> np.ndarray:
        """Boolean mask of the intervals where every flow has a value."""
        return np.isfinite(self.bps).all(axis=1)

    def flow_means_bps(self) -> np.ndarray:
        """Each flow's mean throughput over the intervals where it has a value."""
        with np.errstate(invalid="ignore"):
            return np.array([np.nanmean(c) if np.isfinite(c).any() else math.nan for c in self.bps.T])


def _natural_key(text: str) -> tuple:
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", text))


def per_interval_jain(series: FlowSeries) -> np.ndarray:
    """Jain's index of every interval (NaN where it does not count: a flow without a value, or all zero)."""
    out = np.full(series.start_ns.size, np.nan)
    for i in np.nonzero(series.common())[0]:
        out[i] = jain_index(series.bps[i])
    return out


def jain_of_means(series: FlowSeries) -> float:
    means = series.flow_means_bps()
    if np.isnan(means).any():
        raise FairnessError(f"{series.source or 'flow series'}: a flow has no values")
    return jain_index(means)


def summarize(series: FlowSeries) -> dict[str, Any]:
    """Both variants, the per-interval series and per-flow figures, as plain data (the --json shape)."""
    per = per_interval_jain(series)
    counted = per[np.isfinite(per)]
    means = series.flow_means_bps()
    flows = []
    for j, name in enumerate(series.flows):
        col = series.bps[:, j]
        have = np.isfinite(col)
        flows.append({"flow": name, "intervals": int(have.sum()), "mean_bps": _num(means[j]),
                      "min_bps": _num(np.nanmin(col)) if have.any() else None,
                      "max_bps": _num(np.nanmax(col)) if have.any() else None,
                      "first_start_ns": int(series.start_ns[have][0]) if have.any() else None})
    return {
        "source": series.source,
        "interval_ns": series.interval_ns,
        "flows": flows,
        "intervals": [{"start_ns": int(s), "bps": [_num(v) for v in row], "jain": _num(j)}
                      for s, row, j in zip(series.start_ns, series.bps, per, strict=True)],
        "intervals_counted": int(counted.size),
        "jain_of_means": _num(jain_index(means)) if not np.isnan(means).any() else None,
        "jain_mean_of_intervals": _num(float(counted.mean())) if counted.size else None,
        "jain_min_interval": _num(float(counted.min())) if counted.size else None,
        "variants": dict(VARIANT_LABELS),
        "left_out": [dict(x) for x in series.left_out],
        "notes": list(series.meta.get("notes", [])),
    }


def _num(v: float) -> float | None:
    return None if v is None or not math.isfinite(float(v)) else float(v)


def rtt_fairness(throughput_bps: Mapping[str, float], base_rtt_s: Mapping[str, float]) -> dict[str, Any]:
    """Throughput of the flow with the smallest base RTT divided by that of the flow with the largest
    (1: RTT-fair; > 1: short-RTT flows win, as loss-based CCAs do; < 1: long-RTT flows win)."""
    names = [n for n in throughput_bps if n in base_rtt_s]
    if len(names) < 2:
        raise FairnessError("RTT fairness needs at least two flows with a throughput and a base RTT")
    short = min(names, key=lambda n: base_rtt_s[n])
    long_ = max(names, key=lambda n: base_rtt_s[n])
    if base_rtt_s[short] == base_rtt_s[long_]:
        raise FairnessError("RTT fairness needs flows of different base RTT")
    num, denom = float(throughput_bps[short]), float(throughput_bps[long_])
    # the long-RTT flow got nothing: inf when the short one got something, undefined (NaN) when neither did
    ratio = num / denom if denom > 0 else (math.inf if num > 0 else math.nan)
    return {"short_rtt_flow": short, "long_rtt_flow": long_,
            "short_rtt_s": float(base_rtt_s[short]), "long_rtt_s": float(base_rtt_s[long_]),
            "ratio_short_over_long": ratio,
            "jain_of_means": jain_index([throughput_bps[n] for n in names])}


def convergence_time_s(series: FlowSeries, threshold: float = 0.9, hold_intervals: int = 1) -> float | None:
    """Seconds from the first counted interval to the start of the first run of ``hold_intervals``
    counted intervals after which the per-interval index never falls below ``threshold`` again.
    None when the index ends below the threshold (never converged) or too few intervals count."""
    per = per_interval_jain(series)
    idx = np.nonzero(np.isfinite(per))[0]
    if idx.size < hold_intervals or idx.size == 0:
        return None
    ok = per[idx] >= threshold
    if not ok[-1]:
        return None
    bad = np.nonzero(~ok)[0]
    first_good = 0 if bad.size == 0 else int(bad[-1]) + 1
    if idx.size - first_good < hold_intervals:
        return None
    return float(series.start_ns[idx[first_good]] - series.start_ns[idx[0]]) / 1e9


_FLENT_RATE_UNITS = {"bits/s": 1.0, "Kbits/s": 1e3, "Mbits/s": 1e6, "Gbits/s": 1e9}
_FLENT_AGGREGATE = re.compile(r"(?i)\s(sum|avg|average|total|totals|fairness)$")
_FLENT_SUBSERIES = re.compile(r"::.*::")
BULK_SHARE = 0.01


def flent_series(path: Path | str) -> FlowSeries:
    """Per-flow throughput series of a Flent data file of any data-format version (1-4, upgraded as Flent's
    loader does: benchbook.analysis.flent_data). Flows are the results whose unit is a bit rate, without
    Flent's aggregates ("... sum", "... avg") and per-flow statistics ("name::n::tcp_rtt"); every other
    series is named in ``left_out`` with the reason."""
    p = Path(path)
    try:
        data = load_flent(p)
    except FlentFormatError as exc:
        raise FairnessError(str(exc)) from exc
    meta = data.metadata
    try:
        x = np.asarray(data.x_values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise FairnessError(f"{p}: x_values: {exc}") from exc
    names, cols, left_out, assumed = [], [], [], []
    for name in sorted(data.results, key=_natural_key):
        unit, was_assumed = data.units_of(name)
        if _FLENT_SUBSERIES.search(name):
            left_out.append({"flow": name, "reason": "a per-flow statistic of another series (name::n::stat)"})
            continue
        if unit not in _FLENT_RATE_UNITS:
            left_out.append({"flow": name, "reason": f"unit {unit!r}, not one of {', '.join(_FLENT_RATE_UNITS)}"
                             if unit else "no unit in the file (SERIES_META), not known as a bit rate"})
            continue
        if _FLENT_AGGREGATE.search(name):
            left_out.append({"flow": name,
                             "reason": "a Flent aggregate of other series (sum, avg, fairness), not a flow"})
            continue
        vals = data.results[name]
        if not isinstance(vals, list) or len(vals) != x.size:
            raise FairnessError(f"{p}: results[{name!r}] has {len(vals) if isinstance(vals, list) else 'no'} "
                                f"values for {x.size} x_values")
        try:
            cols.append(np.array([math.nan if v is None else float(v) * _FLENT_RATE_UNITS[unit] for v in vals]))
        except (TypeError, ValueError) as exc:
            raise FairnessError(f"{p}: results[{name!r}]: {exc}") from exc
        names.append(name)
        if was_assumed:
            assumed.append(f"{name} ({unit})")
    if not names:
        raise FairnessError(f"{p}: no per-flow throughput series (units bits/s .. Gbits/s); left out: "
                            + "; ".join(f"{x['flow']}: {x['reason']}" for x in left_out))
    notes = [f"Flent data-format version {data.version} upgraded on load: {n}" for n in data.upgrades]
    if assumed:
        notes.append("a version-1 file names no units: netperf-wrapper's test definitions give "
                     + ", ".join(assumed) + " (Jain's indices do not depend on the unit)")
    step_s = meta.get("STEP_SIZE")
    try:
        interval_ns = int(round(float(step_s) * 1e9)) if step_s else None
    except (TypeError, ValueError, OverflowError) as exc:
        raise FairnessError(f"{p}: STEP_SIZE {step_s!r}: {exc}") from exc
    if x.ndim != 1 or not np.isfinite(x).all():
        raise FairnessError(f"{p}: x_values must be a list of finite numbers")
    start_ns = np.round(x * 1e9).astype(np.int64)
    return FlowSeries(flows=names, start_ns=start_ns, bps=np.column_stack(cols), interval_ns=interval_ns,
                      source=str(p), left_out=left_out,
                      meta={"format": "flent", "name": meta.get("NAME"), "version": data.version, "notes": notes})


def intervals_parquet_series(path: Path | str, metric: str = "goodput_bps") -> FlowSeries:
    """Per-flow series of benchbook's own intervals.parquet (``benchbook tcp``): both directions of a flow
    added up per interval; only bulk flows (at least 1 % of all bytes of ``metric``) count as competitors."""
    import pandas as pd  # noqa: PLC0415 pandas: `benchbook tcp` imports this module without needing it

    p = Path(path)
    try:
        df = pd.read_parquet(p)
    except (OSError, ValueError) as exc:
        raise FairnessError(f"{p}: not a readable Parquet file: {exc}") from exc
    need = {"flow", "start_time_ns", metric}
    if not need <= set(df.columns):
        raise FairnessError(f"{p}: columns {sorted(need - set(df.columns))} missing; expected benchbook tcp's "
                            "intervals.parquet")
    g = df.groupby(["flow", "start_time_ns"], as_index=False, observed=True)[metric].sum()
    totals = g.groupby("flow")[metric].sum()
    whole = float(totals.sum())
    bulk = totals[totals >= BULK_SHARE * whole].index if whole > 0 else totals.index
    left_out = [{"flow": f"flow {f}", "reason": f"{100 * float(v) / whole:.3g} % of all {metric} (summed over "
                 f"intervals), below the {100 * BULK_SHARE:g} % bulk share"}
                for f, v in totals.items() if f not in bulk]
    g = g[g["flow"].isin(bulk)]
    interval_ns = None
    summary = p.parent / "summary.json"
    if summary.is_file():
        try:
            interval_ns = int(round(float(json.loads(summary.read_text())["bin_ms"]) * 1e6))
        except (KeyError, ValueError, TypeError):
            interval_ns = None
    s = FlowSeries.from_columns([f"flow {f}" for f in g["flow"]], g["start_time_ns"].to_numpy(),
                                g[metric].to_numpy(), interval_ns=interval_ns, source=str(p))
    s.meta = {"format": "benchbook-intervals", "metric": metric}
    s.left_out = left_out
    return s


def combine(series: Sequence[FlowSeries], source: str = "") -> FlowSeries:
    """Several series side by side, aligned by interval start relative to each one's first interval (flows
    started together, e.g. one iperf3 client per congestion control). Intervals must be equal."""
    if len(series) == 1:
        return series[0]
    steps = {s.interval_ns for s in series}
    if len(steps) != 1 or None in steps:
        raise FairnessError("series to combine have different or unknown interval lengths: "
                            + ", ".join(f"{s.source}: {s.interval_ns} ns" for s in series))
    step = steps.pop()
    assert step is not None
    n = max(int((s.start_ns[-1] - s.start_ns[0]) // step) + 1 for s in series)
    mat = np.full((n, sum(len(s.flows) for s in series)), np.nan)
    flows: list[str] = []
    col = 0
    for s in series:
        rows = ((s.start_ns - s.start_ns[0]) // step).astype(np.int64)
        mat[rows, col:col + len(s.flows)] = s.bps
        col += len(s.flows)
        flows += s.flows
    if len(set(flows)) != len(flows):
        raise FairnessError(f"flow names repeat across inputs: {flows}")
    return FlowSeries(flows=flows, start_ns=np.arange(n, dtype=np.int64) * step, bps=mat, interval_ns=step,
                      source=source or " + ".join(s.source for s in series),
                      meta={"notes": [n for s in series for n in s.meta.get("notes", [])]},
                      left_out=[x for s in series for x in s.left_out])

__all__ = ["FairnessError", "FlowSeries", "VARIANT_LABELS", "combine", "flent_series", "intervals_parquet_series",
           "convergence_time_s", "jain_index", "jain_of_means", "per_interval_jain", "rtt_fairness", "summarize"]
