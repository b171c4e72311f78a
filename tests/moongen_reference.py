"""Independent references the MoonGen tests compare benchbook against.

A plain-Python transcription of libmoon's lua/histogram.lua (calc, percentile, print) for
benchbook.analysis.moongen_stats: it follows the Lua step by step in double precision, sample by
sample; it is slow on purpose. And a line-by-line decimal reader of hist:save() files for
benchbook.tools.moongen_histogram."""

from __future__ import annotations

import math
from decimal import Decimal
from pathlib import Path


def lua_calc(values: list[float], counts: list[int]) -> tuple[int, float, float, list[float]]:
    """(numSamples, avg, stdDev, quarts) exactly as histogram:calc() computes them."""
    histo = sorted(zip(values, counts, strict=True))
    num = 0
    s = 0.0
    for k, v in histo:
        num += v
        s += k * v
    avg = s / num if num else math.nan  # Lua: 0/0 = nan
    sd_sum = 0.0
    for k, v in histo:
        sd_sum += v * (k - avg) ** 2
    denom = num - 1
    if denom == 0:
        stddev = math.nan  # 0/0
    else:
        q = sd_sum / denom
        stddev = 0.0 if q == 0 else q ** 0.5  # (-0)^0.5 = +0 in C99 pow
    if not histo:
        return num, avg, stddev, [math.nan] * 3
    quart_samples = num / 4
    quarts: list[float | None] = [None, None, None]
    idx = 0
    for k, v in histo:
        for _ in range(v):
            if quarts[0] is None and idx >= quart_samples:
                quarts[0] = k
            elif quarts[1] is None and idx >= quart_samples * 2:
                quarts[1] = k
            elif quarts[2] is None and idx >= quart_samples * 3:
                quarts[2] = k
                break
            idx += 1
    return num, avg, stddev, [math.nan if q is None else q for q in quarts]


def lua_fmt(x: float) -> str:
    return "nan" if math.isnan(x) else f"{x:.1f}"


def lua_print(values: list[float], counts: list[int], prefix: str | None = None) -> str:
    n, avg, sd, q = lua_calc(values, counts)
    head = f"[{prefix}] " if prefix else ""
    return (f"{head}Samples: {n}, Average: {lua_fmt(avg)} ns, StdDev: {lua_fmt(sd)} ns, "
            f"Quartiles: {lua_fmt(q[0])}/{lua_fmt(q[1])}/{lua_fmt(q[2])} ns")


def lua_percentile(values: list[float], counts: list[int], percentile: float) -> float | None:
    histo = sorted(zip(values, counts, strict=True))
    num = sum(counts)
    idx = 0
    for k, v in histo:
        for _ in range(v):
            if idx >= num * percentile / 100:
                return k
            idx += 1
    return None


def read_histogram_reference(path: Path) -> tuple[list[int], list[int], int]:
    """A MoonGen hist:save() file read line by line with decimal.Decimal: (distinct values scaled
    by 10**decimals ascending, summed counts, decimals), decimals the fewest that write every value.
    Blank lines are skipped and a last line without a newline is kept when it parses."""
    totals: dict[Decimal, int] = {}
    for line in path.read_bytes().decode("ascii").split("\n"):
        line = line.strip()
        if not line:
            continue
        value, count = line.split(",")
        v = Decimal(value.strip())
        totals[v] = totals.get(v, 0) + int(Decimal(count.strip()))
    kept = {v: c for v, c in totals.items() if c > 0}
    decimals = max((max(0, -v.normalize().as_tuple().exponent) for v in kept), default=0)
    ordered = sorted(kept)
    return [int(v.scaleb(decimals)) for v in ordered], [kept[v] for v in ordered], decimals
