"""Readers for the TUM pos evaluator outputs (MoonSniff pcaps matched in PostgreSQL).

The evaluator writes, per run ``latencies-pre-rate<R>-repeat<k>.pcap.zst``, zstd-compressed CSV
files named ``<run>.<suffix>`` (formats as documented in the dataset's SOURCES.md):

- ``bucket_size100.trim_ms0.hist.csv``        ``latency_bucket,count`` (ns, 100 ns buckets: floor)
- ``trim_ms0.percentiles.csv``                ``percentile,value,onefraconeminuspercentile``
                                              (percentile_disc ladder, exact ns; last row = max)
- ``trim_ms0.stats.csv``                      ``pre_received,post_received,pre_received_trimmed,
                                              post_received_trimmed``
- ``trim_ms0.transferrate.csv``               ``pre_received,post_received,transferrate,
                                              pre_pkts_per_second,post_pkts_per_second``
- ``trim_ms0.packetrate{pre,post}.csv``       ``ts,count`` per-second packet counts
- ``bucket_size100.trim_ms0.jitter{pre,post}.csv``  ``bucket,count`` inter-arrival histograms (ns)
- ``trim_ms0.num_worst5000.worst.csv``        ``latency,prets,postts,encode`` (5000 worst packets)

Every reader checks the header and the numbers and reports bad input with the file and line.
Below the readers: statistics of one run (maximum, minimum, mean, percentiles), the per-rate table,
HDR series and worst-N series of a dataset's runs (``catalogue``).
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import zstandard

from benchbook.analysis.distribution import ExactDistribution
from benchbook.analysis.hdr import HdrHistogram
from benchbook.analysis.percentiles import REPORTED_PERCENTILES, discrete_rank, ladder_value
from benchbook.errors import BenchbookError
from benchbook.figures import ladder_series

RUN_RE = re.compile(r"^(?P<run>latencies-pre-rate(?P<rate>\d+)-repeat(?P<repeat>\d+)\.pcap\.zst)\.(?P<suffix>.+)$")

# kind -> (file-name suffix without .zst, expected header columns)
KINDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "hist": ("bucket_size100.trim_ms0.hist.csv", ("latency_bucket", "count")),
    "percentiles": ("trim_ms0.percentiles.csv", ("percentile", "value", "onefraconeminuspercentile")),
    "stats": (
        "trim_ms0.stats.csv",
        ("pre_received", "post_received", "pre_received_trimmed", "post_received_trimmed"),
    ),
    "transferrate": (
        "trim_ms0.transferrate.csv",
        ("pre_received", "post_received", "transferrate", "pre_pkts_per_second", "post_pkts_per_second"),
    ),
    "packetratepre": ("trim_ms0.packetratepre.csv", ("ts", "count")),
    "packetratepost": ("trim_ms0.packetratepost.csv", ("ts", "count")),
    "jitterpre": ("bucket_size100.trim_ms0.jitterpre.csv", ("bucket", "count")),
    "jitterpost": ("bucket_size100.trim_ms0.jitterpost.csv", ("bucket", "count")),
    "worst": ("trim_ms0.num_worst5000.worst.csv", ("latency", "prets", "postts", "encode")),
}
_INT_COLUMNS = {
    "latency_bucket", "count", "value", "bucket", "ts", "latency", "prets", "postts",
    "pre_received", "post_received", "pre_received_trimmed", "post_received_trimmed",
}
_SUFFIX_TO_KIND = {suffix: kind for kind, (suffix, _) in KINDS.items()}

HIST_BUCKET_NS = 100

# Technology folder -> label the published evaluator datasets use for it.
TECHNOLOGY_LABELS = {
    "bare-metal": "Bare-metal",
    "vm": "VM",
    "container": "Container user-space",
    "kernel": "Container kernel-space",
}


class EvaluatorFormatError(BenchbookError, ValueError):
    """An evaluator file is not what its format says; the message names file and line."""


def _read_text(path: Path) -> str:
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise EvaluatorFormatError(f"{path}: cannot read ({exc.strerror})") from exc
    if path.suffix == ".zst":
        try:
            with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(raw)) as reader:
                raw = reader.read()
        except zstandard.ZstdError as exc:
            raise EvaluatorFormatError(f"{path}: byte 0: not a valid zstd stream ({exc})") from exc
    try:
        return raw.decode("ascii")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise EvaluatorFormatError(f"{path}:{line}: non-ASCII byte in CSV text") from exc


def _locate_bad_line(path: Path, lines: Sequence[str], columns: Sequence[str], text_cols: set[str]) -> str:
    for i, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        fields = line.split(",")
        if len(fields) != len(columns):
            return f"{path}:{i}: expected {len(columns)} fields ({','.join(columns)}), got {len(fields)}"
        for name, field in zip(columns, fields, strict=True):
            if name in text_cols:
                continue
            try:
                float(field)
            except ValueError:
                return f"{path}:{i}: column {name!r}: expected a number, got {field[:40]!r}"
    return f"{path}: could not be parsed as CSV with columns {','.join(columns)}"


def read_csv(path: Path | str, kind: str, allow_all_missing: tuple[str, ...] = (), allow_empty_file: bool = False):
    """Read one evaluator CSV (.csv or .csv.zst) of the given kind into a pandas DataFrame.

    Columns in `allow_all_missing` may be empty in every row (kept as NaN): the evaluator writes
    such files for runs in which it matched no packet. With `allow_empty_file`, a file of zero
    bytes (no header either; a few exist in the published dataset) reads as an empty table."""
    path = Path(path)
    if kind not in KINDS:
        raise ValueError(f"unknown evaluator file kind {kind!r}; known: {', '.join(KINDS)}")
    columns = KINDS[kind][1]
    text = _read_text(path)
    lines = text.splitlines()
    if not lines and allow_empty_file:
        return pd.DataFrame({c: pd.Series(dtype=str if c in ("encode",) else float) for c in columns})
    if not lines:
        raise EvaluatorFormatError(f"{path}:1: empty file, expected header {','.join(columns)}")
    header = tuple(c.strip() for c in lines[0].split(","))
    if header != columns:
        raise EvaluatorFormatError(f"{path}:1: expected header {','.join(columns)}, got {lines[0][:120]!r}")
    text_cols = {"encode"}
    int_cols = [c for c in columns if c in _INT_COLUMNS]
    try:
        df = pd.read_csv(io.StringIO(text), dtype={c: str for c in text_cols if c in columns})
    except (pd.errors.ParserError, ValueError) as exc:
        raise EvaluatorFormatError(_locate_bad_line(path, lines, columns, text_cols)) from exc
    if df.empty:  # header only: the evaluator had nothing to write (e.g. no packets received)
        return df.astype({c: (str if c in text_cols else (np.int64 if c in _INT_COLUMNS else float))
                          for c in columns})
    for col in columns:
        if col in text_cols:
            continue
        if col in allow_all_missing and len(df) and df[col].isna().all():
            df[col] = df[col].astype(float)
            continue
        if not pd.api.types.is_numeric_dtype(df[col]) or df[col].isna().any():
            raise EvaluatorFormatError(_locate_bad_line(path, lines, columns, text_cols))
        if col in int_cols:
            values = df[col].to_numpy()
            if values.dtype.kind == "f":
                if not np.all(np.floor(values) == values):
                    bad = int(np.flatnonzero(np.floor(values) != values)[0])
                    raise EvaluatorFormatError(f"{path}:{bad + 2}: column {col!r}: expected an integer")
            df[col] = values.astype(np.int64)
    if "count" in df.columns and (df["count"] < 0).any():
        bad = int(np.flatnonzero(df["count"].to_numpy() < 0)[0])
        raise EvaluatorFormatError(f"{path}:{bad + 2}: negative count")
    return df


def read_hist(path: Path | str):
    """100 ns latency histogram: DataFrame(latency_bucket [ns, bucket floor], count)."""
    return read_csv(path, "hist")


def read_percentiles(path: Path | str):
    """Percentile ladder: DataFrame(percentile [0..1], value [ns], onefraconeminuspercentile).

    A run without matched packets has a ladder whose values are all empty: value is then NaN
    throughout (test with ``ladder_is_empty``)."""
    return read_csv(path, "percentiles", allow_all_missing=("value",))


def ladder_is_empty(ladder) -> bool:
    return bool(ladder["value"].isna().all())


def _single_row(path: Path | str, kind: str) -> dict[str, Any]:
    df = read_csv(path, kind)
    if len(df) != 1:
        raise EvaluatorFormatError(f"{path}: expected exactly one data row, found {len(df)}")
    return {col: df[col].iloc[0].item() for col in df.columns}


def read_stats(path: Path | str) -> dict[str, int]:
    return _single_row(path, "stats")


def read_transferrate(path: Path | str) -> dict[str, float]:
    return _single_row(path, "transferrate")


def read_packetrate(path: Path | str):
    """Per-second packet counts: DataFrame(ts [ns], count)."""
    kind = "packetratepre" if "packetratepre" in Path(path).name else "packetratepost"
    return read_csv(path, kind)


def read_jitter(path: Path | str):
    """Inter-arrival (jitter) histogram: DataFrame(bucket [ns], count)."""
    kind = "jitterpre" if "jitterpre" in Path(path).name else "jitterpost"
    return read_csv(path, kind)


def read_worst(path: Path | str):
    """The worst packets: DataFrame(latency, prets, postts [ns], encode [hex header])."""
    return read_csv(path, "worst")


def hist_distribution(path: Path | str):
    """The 100 ns histogram as benchbook ExactDistribution over the bucket floors (ns)."""
    df = read_hist(path)
    return ExactDistribution(df["latency_bucket"].to_numpy(), df["count"].to_numpy())


def hist_hdr(path: Path | str, significant_figures: int = 3):
    """The 100 ns histogram recorded into a benchbook HdrHistogram (bucket floors, with counts)."""
    df = read_hist(path)
    h = HdrHistogram(significant_figures=significant_figures)
    if len(df):
        h.record(df["latency_bucket"].to_numpy(dtype=np.int64), df["count"].to_numpy(dtype=np.int64))
    return h


def _parse_variant(parts: tuple[str, ...]) -> dict[str, Any]:
    """measurements/<tech>/<kernel>-<opt>  or  measurements/container/<kernel>/<opt>."""
    tech = parts[0]
    if len(parts) == 3:
        kernel, opt = parts[1], parts[2]
    elif len(parts) == 2:
        kernel, _, opt = parts[1].partition("-")
    else:
        raise ValueError(f"unexpected measurement folder depth: {'/'.join(parts)}")
    if opt not in ("optimized", "non-optimized"):
        raise ValueError(f"unexpected optimisation label {opt!r} in {'/'.join(parts)}")
    return {
        "technology": tech,
        "technology_label": TECHNOLOGY_LABELS.get(tech, tech),
        "kernel": kernel,
        "optimized": opt == "optimized",
        "variant": "/".join(parts[1:]),
    }


def catalogue(dataset_dir: Path | str):
    """Every run in a pos evaluator dataset as a DataFrame.

    Columns: technology, technology_label, kernel, optimized, variant, rate_pps, repeat, folder,
    run (base file name) and one ``<kind>_path`` column per file kind (e.g. ``hist_path``,
    ``percentiles_path``; None where the file is absent).
    """
    root = Path(dataset_dir)
    meas = root / "measurements" if (root / "measurements").is_dir() else root
    runs: dict[tuple[str, str], dict[str, Any]] = {}
    for path in sorted(meas.rglob("*.zst")):
        m = RUN_RE.match(path.name)
        if not m:
            continue
        suffix = m.group("suffix")
        if not suffix.endswith(".zst"):
            continue
        kind = _SUFFIX_TO_KIND.get(suffix[: -len(".zst")])
        if kind is None:
            continue
        folder = path.parent.relative_to(meas)
        key = (folder.as_posix(), m.group("run"))
        if key not in runs:
            row = _parse_variant(folder.parts)
            row.update(
                rate_pps=int(m.group("rate")),
                repeat=int(m.group("repeat")),
                folder=folder.as_posix(),
                run=m.group("run"),
            )
            row.update({f"{k}_path": None for k in KINDS})
            runs[key] = row
        runs[key][f"{kind}_path"] = str(path)
    columns = ["technology", "technology_label", "kernel", "optimized", "variant", "rate_pps", "repeat",
               "folder", "run", *(f"{k}_path" for k in KINDS)]
    df = pd.DataFrame(list(runs.values()), columns=columns)
    return df.sort_values(["technology", "variant", "rate_pps", "repeat"], ignore_index=True)


# -- statistics of runs -----------------------------------------------------------------------------

_STAT_RE = re.compile(r"^p(?P<p>\d+(?:\.\d+)?)$")


def _field(row: Any, name: str) -> Any:
    """A catalogue field from an itertuples() row or a pandas Series (where .repeat is a method)."""
    return row[name] if isinstance(row, pd.Series) else getattr(row, name)


def run_label(row: Any) -> str:
    """'<folder> rate <R> repeat <k>' for a catalogue row."""
    return f"{_field(row, 'folder')} rate {_field(row, 'rate_pps')} repeat {_field(row, 'repeat')}"


def variant_label(row: Any) -> str:
    opt = "optimized" if _field(row, "optimized") else "non-optimized"
    return f"{_field(row, 'kernel')} {opt}"


def run_max_ns(row: Any) -> int:
    """Maximum latency of one run: last value of its percentile ladder (exact ns), checked against
    the 100 ns histogram (whose last non-empty bucket must hold it)."""
    ladder = read_percentiles(_field(row, "percentiles_path"))
    if ladder_is_empty(ladder):
        raise ValueError(f"{_field(row, 'percentiles_path')}: the evaluator matched no packets in this run "
                         "(empty ladder)")
    mx = int(ladder["value"].max())
    hist_path = _field(row, "hist_path")
    if isinstance(hist_path, str):
        hist = read_hist(hist_path)
        nz = hist[hist["count"] > 0]
        top = int(nz["latency_bucket"].max())
        if not (top <= mx < top + HIST_BUCKET_NS):
            raise ValueError(
                f"{_field(row, 'percentiles_path')}: maximum {mx} ns disagrees with the 100 ns histogram "
                f"{hist_path} (last bucket {top} ns)"
            )
    return mx


def parse_statistic(statistic: str) -> tuple[str, float | None]:
    """'max' | 'min' | 'mean' | 'p<percent>' (p50, p99.9 ...) -> (kind, percent or None)."""
    if statistic in ("max", "min", "mean"):
        return statistic, None
    m = _STAT_RE.match(statistic)
    if m and 0 <= float(m.group("p")) <= 100:
        return "percentile", float(m.group("p"))
    raise ValueError(f"unknown statistic {statistic!r}: expected max, min, mean or p<percent> such as p99.9")


def run_statistic_ns(row: Any, statistic: str) -> tuple[float, str]:
    """One statistic of one run in ns, and where it was read: (value, source).

    max and min are the ends of the percentile ladder (exact ns; max checked against the histogram);
    a percentile on the ladder is read from it (exact ns); a percentile the ladder does not hold is
    the discrete percentile of the 100 ns histogram (bucket floor); mean is the mean of the histogram
    at the bucket midpoints (within 50 ns). Raises ValueError when the run has no matched packets or
    lacks the file the statistic needs."""
    kind, pct = parse_statistic(statistic)
    label = run_label(row)
    ladder_path = _field(row, "percentiles_path")
    hist_path = _field(row, "hist_path")
    if kind in ("max", "min", "percentile"):
        if not isinstance(ladder_path, str):
            if kind != "percentile" or not isinstance(hist_path, str):
                raise ValueError(f"{label}: no percentile ladder (trim_ms0.percentiles.csv.zst) in the dataset")
        else:
            ladder = read_percentiles(ladder_path)
            if ladder_is_empty(ladder):
                raise ValueError(f"{label}: the evaluator matched no packets in this run (empty ladder)")
            if kind == "max":
                return float(run_max_ns(row)), "percentile ladder (exact ns)"
            if kind == "min":
                return float(ladder["value"].min()), "percentile ladder (exact ns)"
            at = np.flatnonzero(np.isclose(ladder["percentile"].to_numpy(dtype=float), pct / 100.0,
                                           rtol=0.0, atol=1e-12))
            if len(at):
                return float(ladder["value"].iloc[int(at[0])]), "percentile ladder (exact ns)"
    if not isinstance(hist_path, str):
        raise ValueError(f"{label}: no 100 ns histogram (hist.csv.zst) in the dataset")
    hist = read_hist(hist_path).sort_values("latency_bucket")
    counts = hist["count"].to_numpy(dtype=np.int64)
    floors = hist["latency_bucket"].to_numpy(dtype=np.int64)
    total = int(counts.sum())
    if total == 0:
        raise ValueError(f"{label}: the evaluator matched no packets in this run (empty histogram)")
    if kind == "mean":
        mean = float(np.dot(floors.astype(np.float64) + HIST_BUCKET_NS / 2, counts) / total)
        return mean, f"100 ns histogram, bucket midpoints (within {HIST_BUCKET_NS // 2} ns)"
    rank = discrete_rank(pct, total)
    idx = int(np.searchsorted(np.cumsum(counts), rank, side="left"))
    return float(floors[idx]), f"100 ns histogram, bucket floor (p{pct:g} is not on the ladder)"


def hdr_series_by_technology(cat, technology: str, rate_pps: int, repeat_policy: str = "worst"):
    """HDR series (one per kernel/optimisation variant) of one technology at one rate.

    repeat_policy "worst" takes the repeat with the highest maximum; an integer string ("0", "1",
    "2") takes that repeat. Returns (variant label -> (percent, value ns), run labels)."""
    sub = cat[(cat["technology"] == technology) & (cat["rate_pps"] == rate_pps)]
    series: dict[str, Any] = {}
    runs: list[str] = []
    for _, grp in sub.groupby("variant", sort=True):
        grp = grp.sort_values("repeat")
        ladders = [read_percentiles(p) for p in grp["percentiles_path"]]
        empty = [run_label(r) for r, lad in zip(grp.itertuples(), ladders, strict=True) if ladder_is_empty(lad)]
        runs.extend(f"{e} (no matched packets: skipped)" for e in empty)
        if repeat_policy == "worst":
            maxima = [-1.0 if ladder_is_empty(lad) else float(lad["value"].max()) for lad in ladders]
            if max(maxima) < 0:
                continue
            pick = grp.iloc[int(np.argmax(maxima))]
        else:
            pick = grp[grp["repeat"] == int(repeat_policy)].iloc[0]
            if run_label(pick) in empty:
                continue
        series[variant_label(pick)] = ladder_series(read_percentiles(pick.percentiles_path))
        runs.append(run_label(pick))
    return series, runs


def rate_table(cat):
    """Latency against packet rate: one row per run with p50, p99, p99.9, p99.99, max (ns) and the
    achieved post-DuT rate and transfer rate (received/sent)."""
    rows = []
    for r in cat.itertuples():
        ladder = read_percentiles(r.percentiles_path)
        rec = {"technology": r.technology, "technology_label": r.technology_label, "variant": r.variant,
               "kernel": r.kernel, "optimized": r.optimized, "rate_pps": r.rate_pps, "repeat": r.repeat}
        empty = ladder_is_empty(ladder)
        rec["no_matched_packets"] = empty
        percent = ladder["percentile"].to_numpy(dtype=float) * 100.0
        values = ladder["value"].to_numpy()
        for p in REPORTED_PERCENTILES:
            rec[f"p{p}_ns"] = np.nan if empty else ladder_value(percent, values, float(p))
        rec["max_ns"] = np.nan if empty else float(ladder["value"].max())
        if isinstance(r.transferrate_path, str):
            tr = read_csv(r.transferrate_path, "transferrate", allow_empty_file=True)
            ok = len(tr) == 1
            rec["post_pps"] = float(tr["post_pkts_per_second"].iloc[0]) if ok else np.nan
            rec["transferrate"] = float(tr["transferrate"].iloc[0]) if ok else np.nan
        rows.append(rec)
    return pd.DataFrame(rows)


def worst_series(cat) -> dict[str, Any]:
    """The dataset's worst-N files as worst-latency scatter series: run label -> (t_s, latency_ns),
    t = pre-DuT timestamp in seconds (the evaluator's capture-relative ns clock)."""
    out = {}
    for r in cat[cat["worst_path"].notna()].itertuples():
        w = read_worst(r.worst_path)
        out[run_label(r)] = (w["prets"].to_numpy(dtype=np.float64) / 1e9, w["latency"].to_numpy(dtype=np.int64))
    return out


def hist_tail_sample(hist_df, tail_quantile: float, bucket_ns: int = HIST_BUCKET_NS):
    """Tail of a bucketed histogram as a sample: (bucket midpoints >= threshold, expanded by count,
    threshold u [ns], n_total). u is the upper edge of the bucket holding the tail_quantile."""
    values = hist_df["latency_bucket"].to_numpy(dtype=np.int64)
    counts = hist_df["count"].to_numpy(dtype=np.int64)
    order = np.argsort(values)
    values, counts = values[order], counts[order]
    n = int(counts.sum())
    cum = np.cumsum(counts)
    idx = int(np.searchsorted(cum, tail_quantile * n, side="left"))
    u = float(values[idx] + bucket_ns)
    tail = values >= u
    sample = np.repeat(values[tail].astype(np.float64) + bucket_ns / 2, counts[tail])
    return sample, u, n
