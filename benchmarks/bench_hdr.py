"""HDR histograms: benchbook's vectorised recording, codec and .hlog reader against the
`hdrhistogram` package (HdrHistogram_py, import hdrh), measured side by side in one run.

hdrh's per-value record_value is timed on a subsample and extrapolated (it runs ~0.4 M values/s);
everything else is timed on identical inputs. hdrh cannot read the V0/V1 logs, so the log-reading
row uses the V2/V3 interop files only.
"""

from __future__ import annotations

import numpy as np
from hdrh.histogram import HdrHistogram as HdrhHistogram
from hdrh.log import HistogramLogReader

from benchbook.analysis.hdr import HdrHistogram
from benchbook.analysis.hlog import read_hlog
from benchbook.paths import SHARED_DATASETS
from timing import best_of

LAYOUT = (1, 3_600_000_000_000, 3)
PERCENTILES = [50, 90, 99, 99.9, 99.99, 99.999, 100]



def _latencies(n: int, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    # latency-like: ~20 us body with a heavy tail up to tens of ms
    return (15_000 + rng.lognormal(8.5, 1.2, n)).astype(np.int64)


def run(quick: bool) -> list[dict]:
    rows: list[dict] = []
    n = 5_000_000 if quick else 100_000_000
    n_sub = 50_000 if quick else 500_000
    values = _latencies(n)

    # -- recording ---------------------------------------------------------------------------
    warm = HdrHistogram(*LAYOUT)
    warm.record(values[:1000])  # JIT (cached) load outside the timing

    def ours_record():
        HdrHistogram(*LAYOUT).record(values)

    t_ours = best_of(ours_record, 3 if quick else 2)
    sub = values[:n_sub].tolist()

    def theirs_record():
        h = HdrhHistogram(*LAYOUT)
        rv = h.record_value
        for v in sub:
            rv(v)

    t_theirs = best_of(theirs_record, 1) * (n / n_sub)
    rows.append({
        "name": f"HDR record {n / 1e6:.0f} M latencies",
        "benchbook": n / t_ours / 1e6, "other": n / t_theirs / 1e6, "other_tool": "hdrh record_value",
        "unit": "Mvalues/s", "ratio": t_theirs / t_ours,
        "note": f"hdrh timed on {n_sub:,} values and extrapolated; benchbook keeps exact min/max/mean too",
    })

    # -- encode / decode / percentiles on the same histogram -------------------------------------
    ours = HdrHistogram(*LAYOUT)
    ours.record(values[: 2_000_000])
    theirs = HdrhHistogram.decode(ours.encode())
    reps = 20 if quick else 100
    t_ours = best_of(lambda: [ours.encode() for _ in range(reps)], 3) / reps
    t_theirs = best_of(lambda: [theirs.encode() for _ in range(reps)], 3) / reps
    rows.append({"name": "HDR encode (compressed V2, base64)", "benchbook": t_ours * 1e3,
                 "other": t_theirs * 1e3, "other_tool": "hdrh encode", "unit": "ms",
                 "ratio": t_theirs / t_ours, "note": f"{len(ours.recorded()[0])} non-empty buckets"})
    blob = ours.encode()
    t_ours = best_of(lambda: [HdrHistogram.decode(blob) for _ in range(reps)], 3) / reps
    t_theirs = best_of(lambda: [HdrhHistogram.decode(blob) for _ in range(reps)], 3) / reps
    rows.append({"name": "HDR decode (compressed V2, base64)", "benchbook": t_ours * 1e3,
                 "other": t_theirs * 1e3, "other_tool": "hdrh decode", "unit": "ms",
                 "ratio": t_theirs / t_ours, "note": "same payload both sides"})
    t_ours = best_of(lambda: [ours.percentiles(PERCENTILES) for _ in range(reps)], 3) / reps
    t_theirs = best_of(lambda: [theirs.get_percentile_to_value_dict(PERCENTILES) for _ in range(reps)], 3) / reps
    rows.append({"name": "HDR 7 percentiles of one histogram", "benchbook": t_ours * 1e3,
                 "other": t_theirs * 1e3, "other_tool": "hdrh get_percentile_to_value_dict", "unit": "ms",
                 "ratio": t_theirs / t_ours, "note": "p50 .. p100"})

    # -- reading the interop interval logs ---------------------------------------------------------
    interop = SHARED_DATASETS / "hdrhistogram-interop"
    files = [interop / f for f in ("jHiccup-2.0.7S.logV2.hlog", "jHiccup-2.0.7S.logV3.hlog", "tagged-Log.logV2.hlog")]
    if all(f.exists() for f in files):
        rounds = 3 if quick else 10

        def ours_read():
            for _ in range(rounds):
                for f in files:
                    log = read_hlog(f)
                    log.merged(into=HdrHistogram(*LAYOUT))

        def theirs_read():
            for _ in range(rounds):
                for f in files:
                    r = HistogramLogReader(str(f), HdrhHistogram(*LAYOUT))
                    while r.add_next_interval_histogram() is not None:
                        pass
                    r.close()

        t_ours = best_of(ours_read, 3)
        t_theirs = best_of(theirs_read, 3)
        n_iv = sum(len(read_hlog(f).intervals) for f in files)
        rows.append({"name": f"read + accumulate 3 interop .hlog files ({n_iv} intervals)",
                     "benchbook": t_ours / rounds, "other": t_theirs / rounds,
                     "other_tool": "hdrh HistogramLogReader", "unit": "s", "ratio": t_theirs / t_ours,
                     "note": "V2/V3 files; hdrh cannot read the V0/V1 logs, benchbook reads all seven"})
    return rows


if __name__ == "__main__":  # pragma: no cover
    import sys

    for row in run("--full" not in sys.argv):
        print(row)
