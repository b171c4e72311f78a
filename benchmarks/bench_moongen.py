"""MoonGen histogram files: benchbook's exact reader against pandas.read_csv on the same file.

The file is what MoonGen's hist:save() writes for hardware timestamps (6.4 ns steps, so values
with one decimal place), one line per distinct latency. benchbook keeps the values exact (scaled
integers) and validates every line; pandas parses them as floats. The compiled scanner is warmed
up (numba cache) before timing, as a second `benchbook hist` run would find it.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from benchbook.analysis.moongen_stats import moongen_summary
from benchbook.tools.moongen_histogram import read_moongen_histogram
from timing import best_of


def _write(path: Path, n_lines: int) -> int:
    rng = np.random.default_rng(7)
    ticks = np.unique(rng.integers(300, 60_000_000, int(n_lines * 1.05)))[:n_lines]
    counts = rng.integers(1, 1000, ticks.size)
    tenths = ticks * 64
    text = "".join(f"{t // 10}" + (f".{t % 10}" if t % 10 else "") + f",{c}\n"
                   for t, c in zip(tenths.tolist(), counts.tolist(), strict=True))
    path.write_text(text)
    return ticks.size


def run(quick: bool) -> list[dict]:
    n = 100_000 if quick else 1_000_000
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "histogram.csv"
        lines = _write(f, n)
        read_moongen_histogram(f)  # compile/load the scanner once
        ours = best_of(lambda: read_moongen_histogram(f), 3)
        theirs = best_of(lambda: pd.read_csv(f, header=None, names=["value", "count"]), 3)
        h = read_moongen_histogram(f)
        summary = best_of(lambda: moongen_summary(h), 3)
    return [
        {
            "name": f"read MoonGen histogram CSV ({lines:,} lines, 6.4 ns steps)",
            "benchbook": ours,
            "other": theirs,
            "other_tool": "pandas.read_csv (floats, not exact)",
            "unit": "s",
            "ratio": theirs / ours,
            "note": f"benchbook exact (scaled int64) and validated; MoonGen summary line on it: {summary:.3f} s",
        }
    ]
