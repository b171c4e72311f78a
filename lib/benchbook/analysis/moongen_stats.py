"""MoonGen's own histogram statistics, exactly as libmoon's ``lua/histogram.lua`` computes them.

``hist:print()`` writes::

    Samples: N, Average: X ns, StdDev: Y ns, Quartiles: a/b/c ns

reproduced by :func:`moongen_summary` (rules in :func:`moongen_stats`); ``hist:percentile(p)`` by
:func:`moongen_percentile`. Inputs are anything with exact scaled values (``values_scaled``,
``counts``, ``decimals``, as a MoonGen histogram read by ``benchbook.tools.moongen_histogram``),
anything with ``values``/``counts`` or ``recorded()`` (ExactDistribution), or a (values, counts) pair.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal, localcontext
from fractions import Fraction
from typing import Any

import numpy as np

from benchbook.analysis.exact_decimal import scale_values


@dataclass(frozen=True)
class MoonGenStats:
    samples: int
    average: float
    stddev: float
    quartiles: tuple[float, float, float]


def _values_counts_scaled(dist: Any) -> tuple[list[int], list[int], int]:
    """(scaled int values ascending, counts, decimals) of a histogram (see the module docstring)."""
    if hasattr(dist, "values_scaled") and hasattr(dist, "decimals"):
        return dist.values_scaled.tolist(), dist.counts.tolist(), int(dist.decimals)
    if hasattr(dist, "values") and hasattr(dist, "counts") and not callable(dist.values):
        values, counts = dist.values, dist.counts
    elif hasattr(dist, "recorded"):
        values, counts = dist.recorded()
    elif isinstance(dist, tuple) and len(dist) == 2:
        values, counts = dist
    else:
        raise TypeError(f"cannot read values and counts from {type(dist).__name__}")
    vals, cnts, decimals = scale_values(np.asarray(values), np.asarray(counts))
    return vals.tolist(), cnts.tolist(), decimals


def lua_quartile_positions(n: int) -> list[int | None]:
    """0-based sample positions libmoon's histogram:calc() takes the quartiles from.

    The Lua loop walks the samples in order with idx = 0, 1, ...; at each sample it sets at
    most one quartile (an if/elseif chain): q1 when idx >= n/4, else q2 when idx >= n/2, else q3
    when idx >= 3n/4. So q_j sits at max(ceil(j*n/4), position of q_{j-1} + 1), and is NaN when
    that runs past the last sample (n = 1 gives nan/nan/nan, n = 2 gives x/nan/nan).
    """
    out: list[int | None] = []
    prev = -1
    for j in (1, 2, 3):
        pos = max(-(-j * n // 4), prev + 1)
        if pos > n - 1:
            out.append(None)
            prev = n  # later quartiles are unreachable as well
        else:
            out.append(pos)
            prev = pos
    return out


def moongen_stats(dist: Any) -> MoonGenStats:
    """Samples, average, standard deviation and quartiles as libmoon's histogram.lua computes them.

    * average = sum(k*v)/N (0/0 = NaN for an empty histogram);
    * stddev = (sum(v*(k-avg)^2) / (N-1)) ^ 0.5, the *sample* standard deviation. For N = 1 this
      is 0/0 = NaN; for N = 0 the sum is 0 and 0/(-1) = -0, and (-0)^0.5 = +0 (C99 pow), so an
      empty histogram prints "StdDev: 0.0 ns" next to "Average: nan ns";
    * quartiles as in :func:`lua_quartile_positions`.
    Computed exactly (integers and fractions) and rounded once to the nearest double, where
    MoonGen accumulates doubles in hash order: the printed %.1f can differ only when its own
    rounding error crosses a .x5 boundary.
    """
    vals, cnts, decimals = _values_counts_scaled(dist)
    scale = 10**decimals
    n = sum(cnts)
    if n == 0:
        return MoonGenStats(0, math.nan, 0.0, (math.nan, math.nan, math.nan))
    s1 = sum(v * c for v, c in zip(vals, cnts, strict=True))
    s2 = sum(v * v * c for v, c in zip(vals, cnts, strict=True))
    average = float(Fraction(s1, n * scale))
    if n == 1:
        stddev = math.nan
    else:
        num = n * s2 - s1 * s1  # = n * sum(c (v - mean)^2), exact and >= 0
        with localcontext() as ctx:
            ctx.prec = 50
            stddev = float((Decimal(num) / Decimal(n * (n - 1))).sqrt() / Decimal(scale))
    positions = lua_quartile_positions(n)
    cum = np.cumsum(np.asarray(cnts, dtype=np.int64))
    quarts: list[float] = []
    for pos in positions:
        if pos is None:
            quarts.append(math.nan)
        else:
            i = int(np.searchsorted(cum, pos, side="right"))  # first value whose samples reach pos
            quarts.append(float(Fraction(vals[i], scale)))
    return MoonGenStats(n, average, stddev, (quarts[0], quarts[1], quarts[2]))


def _lua_f1(x: float) -> str:
    """Lua(JIT) string.format('%.1f', x): 'nan' for NaN (LuaJIT prints NaN without sign),
    'inf'/'-inf' for infinities, else C's correctly rounded %.1f."""
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.1f}"


def moongen_summary(dist: Any, prefix: str | None = None) -> str:
    """Exactly the line MoonGen's ``hist:print(prefix)`` prints, e.g.
    ``Samples: 3, Average: 1500.0 ns, StdDev: 500.0 ns, Quartiles: 1000.0/1500.0/2000.0 ns``;
    with a prefix, ``[prefix] `` goes in front."""
    st = moongen_stats(dist)
    head = f"[{prefix}] " if prefix else ""
    q = "/".join(_lua_f1(x) for x in st.quartiles)
    return (
        f"{head}Samples: {st.samples}, Average: {_lua_f1(st.average)} ns, "
        f"StdDev: {_lua_f1(st.stddev)} ns, Quartiles: {q} ns"
    )


def moongen_percentile(dist: Any, percentile: float) -> float | None:
    """libmoon's histogram:percentile(p): the value of the first sample whose 0-based position
    idx satisfies idx >= N*p/100; None where Lua returns nil (empty histogram)."""
    if percentile < 0 or percentile > 100:
        raise ValueError("invalid argument: percentile must be in 0..100")
    vals, cnts, decimals = _values_counts_scaled(dist)
    n = sum(cnts)
    target = float(n) * float(percentile) / 100.0  # in doubles, in Lua's order of operations
    pos = math.ceil(target)
    if pos > n - 1:
        return None
    cum = np.cumsum(np.asarray(cnts, dtype=np.int64))
    i = int(np.searchsorted(cum, pos, side="right"))
    return float(Fraction(vals[i], 10**decimals))


__all__ = ["MoonGenStats", "lua_quartile_positions", "moongen_percentile", "moongen_stats", "moongen_summary"]
