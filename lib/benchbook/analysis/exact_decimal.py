"""Decimal values kept exactly as integers scaled by 10**decimals.

``"1286.4"`` is kept as ``(12864, decimals=1)``; a set of values shares the smallest number of
decimal places that writes every one of them exactly.
"""

from __future__ import annotations

import math
from decimal import Decimal

import numpy as np

MAX_DECIMALS = 12


def number_text(v: float | int) -> str:
    """Decimal text of a number: integers as they are, floats at their shortest repr."""
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if not math.isfinite(v):
        raise ValueError(f"histogram value {v} is not finite")
    return repr(float(v))


def scaled_to_str(scaled: int, decimals: int) -> str:
    """Exact decimal text of ``scaled / 10**decimals`` without trailing zeros."""
    if decimals == 0:
        return str(scaled)
    sign = "-" if scaled < 0 else ""
    q, r = divmod(abs(scaled), 10**decimals)
    frac = str(r).rjust(decimals, "0").rstrip("0")
    return f"{sign}{q}.{frac}" if frac else f"{sign}{q}"


def parse_decimal(text: str) -> tuple[int, int]:
    """'1286.4' -> (12864, 1); '1.5e3' -> (1500, 0). Exact."""
    d = Decimal(text).normalize()
    sign, digits, exp = d.as_tuple()
    if not isinstance(exp, int):
        raise ValueError(f"{text!r} is not a finite number")
    mant = int("".join(map(str, digits))) if digits else 0
    if sign:
        mant = -mant
    if exp >= 0:
        return mant * 10**exp, 0
    return mant, -exp


def normalise_scaled(vals: np.ndarray, counts: np.ndarray, decimals: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Drop decimal places no value needs and values with a zero count."""
    while decimals > 0 and vals.size and not np.any(vals % 10):
        vals = vals // 10
        decimals -= 1
    keep = counts > 0
    return vals[keep].astype(np.int64), counts[keep].astype(np.int64), decimals


def sum_by_value(vals: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct values ascending and the summed counts of each."""
    u, inv = np.unique(vals, return_inverse=True)
    tot = np.zeros(u.size, dtype=np.int64)
    np.add.at(tot, inv, counts)
    return u, tot


def scale_decimal_texts(texts: list[str], counts: list[int], source: str = "") -> tuple[np.ndarray, np.ndarray, int]:
    """(distinct scaled values ascending, summed counts, decimals) of decimal texts with counts."""
    parsed = [parse_decimal(t) for t in texts]
    d = max((p[1] for p in parsed), default=0)
    if d > MAX_DECIMALS:
        raise ValueError(f"{source}: values with more than {MAX_DECIMALS} decimal places cannot be kept exactly")
    scaled = [m * 10 ** (d - e) for m, e in parsed]
    if scaled and (max(scaled) >= 2**63 or min(scaled) < -(2**63)):
        raise ValueError(f"{source}: a value is too large to keep exactly at {d} decimal places")
    u, tot = sum_by_value(np.asarray(scaled, dtype=np.int64), np.asarray(counts, dtype=np.int64))
    return normalise_scaled(u, tot, d)


def scale_values(values: np.ndarray | list, counts: np.ndarray | list,
                 source: str = "") -> tuple[np.ndarray, np.ndarray, int]:
    """As :func:`scale_decimal_texts` for numbers (floats at their shortest repr) or decimal strings."""
    texts = [v if isinstance(v, str) else number_text(v) for v in np.asarray(values).tolist()]
    cnts = [int(c) for c in np.asarray(counts).tolist()]
    if len(texts) != len(cnts):
        raise ValueError(f"{source or 'histogram'}: {len(texts)} values but {len(cnts)} counts")
    return scale_decimal_texts(texts, cnts, source)


__all__ = ["MAX_DECIMALS", "normalise_scaled", "number_text", "parse_decimal", "scale_decimal_texts",
           "scale_values", "scaled_to_str", "sum_by_value"]
