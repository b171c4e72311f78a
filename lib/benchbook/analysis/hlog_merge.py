"""One histogram of many pairs' latency.hlog interval logs: ``merged.hlog`` (every interval of every log added
into one HdrHistogram, nothing re-recorded) and ``merged.json`` (its count and percentiles; those the merged
count cannot resolve are null, with the reason in ``unresolved_percentiles``), as ``benchbook latency --pairs``
and ``benchbook hist --merged-dir`` write them.

The histogram has the layout `benchbook latency` records with: 1 ns to the maximum latency, 3 significant
digits. Both files are replaced whole (written beside the target, then renamed) or left as they were.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchbook.analysis.hdr import HdrHistogram
from benchbook.analysis.hlog import HlogFormatError, HlogWriter, read_hlog
from benchbook.analysis.percentiles import REPORTED_PERCENTILES
from benchbook.analysis.resolvability import resolved_percentiles
from benchbook.errors import BenchbookError

MERGED_FILES = ("merged.hlog", "merged.json")
PAIR_NAME = r"[A-Za-z0-9_][A-Za-z0-9_.-]*"
DEFAULT_MAX_LATENCY_MS = 5000.0  # benchbook latency's default --max-latency-ms
MAX_LATENCY_MS_LIMIT = 1e9  # about 11.6 days: far beyond any DuT, well inside int64 nanoseconds
PERCENTILE_METHOD = ("HdrHistogram, 3 significant digits: the sum of every pair's interval histograms; each value "
                     "is the highest value equivalent to the bucket holding the discrete percentile (min/max "
                     "likewise at bucket resolution)")


class HlogMergeError(BenchbookError, ValueError):
    """An interval log that cannot be merged: the message names the file and what was expected."""


def pair_name_problem(name: str) -> str | None:
    """What is wrong with ``name`` as a pair's folder name (one phrase), or None."""
    if not re.fullmatch(PAIR_NAME, name) or name in MERGED_FILES or ".attempt-" in name:
        return (f"name {name!r}: expected one folder name (letters, digits, '_', '.', '-'; not starting with '.' "
                f"or '-'; not {' or '.join(MERGED_FILES)})")
    return None


def max_latency_problem(max_latency_ms: float) -> str | None:
    """What is wrong with a --max-latency-ms value (one phrase), or None."""
    if not math.isfinite(max_latency_ms) or max_latency_ms <= 0 or max_latency_ms > MAX_LATENCY_MS_LIMIT:
        return (f"--max-latency-ms {max_latency_ms}: expected a number > 0 and at most {MAX_LATENCY_MS_LIMIT:.0f} "
                "(ms)")
    if round(max_latency_ms * 1e6) < 2:
        return f"--max-latency-ms {max_latency_ms}: below 2 ns, no latency could be kept"
    return None


def pairs_problem(names: Sequence[str], n_files: int) -> str | None:
    """What is wrong with the pair names of ``n_files`` logs (one per log, in order; unique folder names), or
    None."""
    if len(names) != n_files:
        return f"{n_files} file(s) but {len(names)} pair name(s): expected one name per file, in order"
    seen: set[str] = set()
    for i, name in enumerate(names, start=1):
        if (problem := pair_name_problem(name)) is not None:
            return f"pair name {i}: {problem}"
        if name in seen:
            return f"pair name {i}: name {name!r} given twice"
        seen.add(name)
    return None


def merged_line(doc: dict[str, Any]) -> str:
    """One line on merged.json's document: count, pairs, p50 and p99 (or why a percentile is not resolvable)."""
    def pct(p: str) -> str:
        v = doc["percentiles_ns"][p]
        return f"p{p} {v} ns" if v is not None else f"p{p} " + doc.get("unresolved_percentiles", {}).get(p, "no value")

    return f"merged: {doc['count']} latencies of {len(doc['pairs'])} pairs  {pct('50')}  {pct('99')}"


def write_merged(out_dir: Path, pairs: Sequence[tuple[str, Path]], max_latency_ns: int) -> dict[str, Any]:
    """Write ``out_dir``/merged.hlog (one interval from the earliest to the latest interval of the logs, holding
    every interval of each (name, latency.hlog) pair added) and ``out_dir``/merged.json (per-pair counts, count,
    min, max and percentiles in ns); return merged.json's document. Raises HlogMergeError naming the log that
    cannot be read or merged (nothing written then)."""
    out_dir = Path(out_dir)
    names = [name for name, _path in pairs]
    total = HdrHistogram(1, max(2, int(max_latency_ns)), 3)
    start_s: float | None = None
    end_s: float | None = None
    per_pair: dict[str, int] = {}
    for name, path in pairs:
        try:
            log = read_hlog(path)
        except HlogFormatError as exc:
            raise HlogMergeError(str(exc)) from None
        except OSError as exc:
            raise HlogMergeError(f"{path}: cannot read ({exc.strerror or exc})") from None
        n0 = total.total_count
        for iv in log.intervals:
            try:
                total.merge(iv.histogram)
            except ValueError as exc:
                raise HlogMergeError(f"{path}:{iv.line_no}: {exc}") from None
            a = log.absolute_start_s(iv)
            start_s = a if start_s is None else min(start_s, a)
            end_s = a + iv.length_s if end_s is None else max(end_s, a + iv.length_s)
        per_pair[name] = total.total_count - n0
    n = total.total_count
    pct = total.percentiles([float(p) for p in REPORTED_PERCENTILES]) if n else {}
    shown, unresolved = resolved_percentiles({p: int(pct[float(p)]) if n else None for p in REPORTED_PERCENTILES}, n)
    doc = {
        "pairs": per_pair,
        "count": n,
        "min_ns": int(total.hdr_min()) if n else None,
        "max_ns": int(total.hdr_max()) if n else None,
        "percentiles_ns": shown,
        "unresolved_percentiles": unresolved,
        "percentile_method": PERCENTILE_METHOD,
    }
    comments = [f"benchbook latency --pairs: every interval of {len(names)} pairs added: {' '.join(names)}",
                "values in ns"]
    tmp_hlog = out_dir / ".merged.hlog.tmp"
    tmp_json = out_dir / ".merged.json.tmp"
    try:
        with HlogWriter(tmp_hlog, start_time=start_s, comments=comments) as w:
            if n:
                w.write_interval(0.0, (end_s or 0.0) - (start_s or 0.0), total)
        tmp_json.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
        os.replace(tmp_hlog, out_dir / "merged.hlog")
        os.replace(tmp_json, out_dir / "merged.json")
    finally:
        for tmp in (tmp_hlog, tmp_json):
            tmp.unlink(missing_ok=True)
    return doc
