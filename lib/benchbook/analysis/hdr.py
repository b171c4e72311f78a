"""HdrHistogram with vectorised recording, exact statistics alongside, and interop encodings.

The counts array uses HdrHistogram's bucket layout (:mod:`benchbook.analysis.hdr_layout`), so
``encode()`` produces the same compressed V2 payload that the Java/C tools and the
``hdrhistogram`` package (import ``hdrh``) read, and ``decode()`` reads theirs (V0, V1, V2).

Recording is a numba kernel (hundreds of millions of values per second on one core, against
~0.4 M/s for ``hdrh``'s per-value ``record_value``). Alongside the counts the histogram keeps the
exact count, minimum, maximum and (integer) sum of what was recorded, and a float64 second moment,
so ``min``, ``max`` and ``mean`` are exact and ``stddev`` is exact up to float64 rounding. A
histogram decoded from an encoding has only its buckets: then ``exact_stats`` is False and
min/max/mean/stddev follow HdrHistogram's own definitions (lowest-equivalent value of the lowest
bucket, highest-equivalent value of the highest bucket, bucket mid-points for mean and stddev).

Percentiles
-----------
``value_at_percentile(p)`` follows HdrHistogram (Java ``getValueAtPercentile``): find the
bucket holding the sample of rank ``r = max(1, ceil(p/100 * N))`` and return that bucket's
*highest equivalent value* (its *lowest* equivalent value for ``p == 0``). The rank ``r`` is
the rank of the discrete percentile -- the smallest recorded value ``v`` with at least ``p``
percent of the samples ``<= v`` (see :mod:`benchbook.analysis.distribution`) -- computed with
exact decimal arithmetic on ``p``'s shortest repr, as Java approximates with ``nextDown``. Hence::

    lowest_equivalent(hdr_value) <= exact discrete percentile <= hdr_value
    hdr_value - exact <= bucket width - 1 < exact * 10**-significant_figures   (roughly)

The C library and the Python ``hdrh`` package round the target rank to nearest instead
(``int(p/100 * N + 0.5)``); ``rank="nearest"`` reproduces them exactly.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from decimal import ROUND_HALF_UP, Context, Decimal
from typing import TYPE_CHECKING, Literal

import numpy as np

from benchbook.analysis import hdr_codec
from benchbook.analysis.hdr_layout import INT64_MAX, HdrLayout, layout_for
from benchbook.analysis.percentiles import discrete_rank, nearest_rank
from benchbook.kernels import njit, numba_global

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

RankRule = Literal["ceil", "nearest"]
leading_zeros = numba_global("numba.cpython.unsafe.numbers", "leading_zeros")


# ---- recording kernels -----------------------------------------------------------------------


@njit(cache=True, nogil=True)
def _record_kernel(values, counts, unit_mag, half_mag, half_count, mask):  # pragma: no cover - jit
    """Add each value to its slot. Returns (n_bad, first_bad_pos, min, max, sum_lo, sum_hi,
    shift, s1, s2) where the sum is the exact uint128 (sum_hi * 2**64 + sum_lo) of the good values
    and s1/s2 are float64 sums of (v - shift) and (v - shift)**2 for the variance."""
    n = values.shape[0]
    limit = counts.shape[0]
    n_bad = 0
    first_bad = -1
    vmin = np.int64(INT64_MAX)
    vmax = np.int64(-1)
    sum_lo = np.uint64(0)
    sum_hi = np.uint64(0)
    shift = np.int64(0)
    have_shift = False
    s1 = 0.0
    s2 = 0.0
    for i in range(n):
        v = np.int64(values[i])
        if v < 0:
            n_bad += 1
            if first_bad < 0:
                first_bad = i
            continue
        pow2ceiling = 64 - np.int64(leading_zeros(np.uint64(v | mask)))
        bucket = pow2ceiling - unit_mag - (half_mag + 1)
        sub = v >> (bucket + unit_mag)
        idx = ((bucket + 1) << half_mag) + (sub - half_count)
        if idx >= limit:
            n_bad += 1
            if first_bad < 0:
                first_bad = i
            continue
        counts[idx] += 1
        if v < vmin:
            vmin = v
        if v > vmax:
            vmax = v
        uv = np.uint64(v)
        new_lo = sum_lo + uv
        if new_lo < sum_lo:
            sum_hi += np.uint64(1)
        sum_lo = new_lo
        if not have_shift:
            shift = v
            have_shift = True
        d = float(v - shift)
        s1 += d
        s2 += d * d
    return n_bad, first_bad, vmin, vmax, sum_lo, sum_hi, shift, s1, s2


@njit(cache=True, nogil=True)
def _unrecord_kernel(values, counts, unit_mag, half_mag, half_count, mask):  # pragma: no cover - jit
    """Undo _record_kernel for the in-range values (used to roll back a rejected call)."""
    limit = counts.shape[0]
    for i in range(values.shape[0]):
        v = np.int64(values[i])
        if v < 0:
            continue
        pow2ceiling = 64 - np.int64(leading_zeros(np.uint64(v | mask)))
        bucket = pow2ceiling - unit_mag - (half_mag + 1)
        idx = ((bucket + 1) << half_mag) + ((v >> (bucket + unit_mag)) - half_count)
        if idx < limit:
            counts[idx] -= 1


@njit(cache=True, nogil=True)
def _index_kernel(values, out, unit_mag, half_mag, half_count, mask):  # pragma: no cover - jit
    """Counts-array slot of each value (-1 for negative values)."""
    for i in range(values.shape[0]):
        v = np.int64(values[i])
        if v < 0:
            out[i] = -1
            continue
        pow2ceiling = 64 - np.int64(leading_zeros(np.uint64(v | mask)))
        bucket = pow2ceiling - unit_mag - (half_mag + 1)
        out[i] = ((bucket + 1) << half_mag) + ((v >> (bucket + unit_mag)) - half_count)


def _as_int64_values(values: np.ndarray | Sequence[int], what: str = "values") -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        arr = arr.reshape(-1)
    if arr.dtype.kind == "f":
        bad = ~np.isfinite(arr) | (arr != np.floor(arr))
        if bad.any():
            pos = int(np.flatnonzero(bad)[0])
            raise ValueError(f"{what}[{pos}] = {float(arr[pos])!r} is not an integer (HdrHistogram records integers)")
        if arr.size and (arr.max() >= 2.0**63):
            pos = int(np.argmax(arr))
            raise ValueError(f"{what}[{pos}] = {float(arr[pos])!r} exceeds the int64 range")
        return arr.astype(np.int64)
    if arr.dtype.kind == "u":
        if arr.dtype.itemsize == 8 and arr.size and arr.max() > INT64_MAX:
            pos = int(np.argmax(arr))
            raise ValueError(f"{what}[{pos}] = {int(arr[pos])} exceeds the int64 range")
        return arr.astype(np.int64)
    if arr.dtype.kind in "ib":
        return arr.astype(np.int64, copy=False)
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    raise TypeError(f"{what} must be integers, got dtype {arr.dtype}")


class HdrHistogram:
    """HdrHistogram-compatible histogram (see the module docstring for the semantics)."""

    def __init__(
        self,
        lowest_discernible_value: int = 1,
        highest_trackable_value: int = 3_600_000_000_000,
        significant_figures: int = 3,
        _counts: np.ndarray | None = None,
    ) -> None:
        self.layout: HdrLayout = layout_for(
            int(lowest_discernible_value), int(highest_trackable_value), int(significant_figures))
        self.counts = np.zeros(self.layout.counts_len, dtype=np.int64) if _counts is None else _counts
        self.conversion_ratio = 1.0
        self._total = 0
        self._min: int | None = None  # exact when _exact, else lowest-equivalent value
        self._max: int | None = None  # exact when _exact, else highest-equivalent value
        self._sum = 0  # exact integer sum of recorded values (valid when _exact)
        self._m2 = 0.0  # sum of squared deviations from the mean (valid when _exact)
        self._exact = True

    # ---- parameters -------------------------------------------------------------------------
    @property
    def lowest_discernible_value(self) -> int:
        return self.layout.lowest_discernible_value

    @property
    def highest_trackable_value(self) -> int:
        return self.layout.highest_trackable_value

    @property
    def significant_figures(self) -> int:
        return self.layout.significant_figures

    def same_layout(self, other: HdrHistogram) -> bool:
        return self.layout == other.layout

    def empty_like(self) -> HdrHistogram:
        h = HdrHistogram(self.lowest_discernible_value, self.highest_trackable_value, self.significant_figures)
        h.conversion_ratio = self.conversion_ratio
        return h

    def copy(self) -> HdrHistogram:
        h = self.empty_like()
        h.counts = self.counts.copy()
        h._total, h._min, h._max, h._sum, h._m2, h._exact = (
            self._total, self._min, self._max, self._sum, self._m2, self._exact)
        return h

    # ---- recording ----------------------------------------------------------------------------
    def _kernel_args(self) -> tuple[int, int, int, int]:
        L = self.layout
        return L.unit_magnitude, L.sub_bucket_half_count_magnitude, L.sub_bucket_half_count, L.sub_bucket_mask

    def counts_indices(self, values: np.ndarray) -> np.ndarray:
        """Counts-array slot of each value (vectorised; -1 for negative values)."""
        arr = np.ascontiguousarray(_as_int64_values(values))
        out = np.empty(arr.shape[0], dtype=np.int64)
        _index_kernel(arr, out, *self._kernel_args())
        return out

    def record(self, values: np.ndarray | Sequence[int], counts: np.ndarray | Sequence[int] | None = None) -> None:
        """Record every value (each `counts[i]` times if given). All-or-nothing: a negative or
        untrackable value raises ValueError naming its position, and nothing of the call is kept."""
        arr = np.ascontiguousarray(_as_int64_values(values))
        if counts is not None:
            self._record_weighted(arr, counts)
            return
        if arr.size == 0:
            return
        res = _record_kernel(arr, self.counts, *self._kernel_args())
        n_bad, first_bad, vmin, vmax, sum_lo, sum_hi, shift, s1, s2 = res
        if n_bad:
            _unrecord_kernel(arr, self.counts, *self._kernel_args())
            v = int(arr[first_bad])
            raise ValueError(
                f"values[{first_bad}] = {v} cannot be recorded: "
                + ("negative" if v < 0 else f"above the highest trackable value {self.layout.max_trackable_value}")
                + f" ({n_bad} such values in this call; nothing of the call was recorded)"
            )
        n = arr.shape[0]
        total_sum = (int(sum_hi) << 64) + int(sum_lo)
        # second moment of this batch around its own mean, from sums shifted by `shift`
        mean_shifted = s1 / n
        m2_batch = max(0.0, s2 - s1 * mean_shifted)
        self._merge_moments(n, int(vmin), int(vmax), total_sum, m2_batch)

    def _record_weighted(self, arr: np.ndarray, counts) -> None:
        c = _as_int64_values(counts, "counts")
        if c.shape != arr.shape:
            raise ValueError(f"values ({arr.shape[0]}) and counts ({c.shape[0]}) differ in length")
        if c.size and int(c.min()) < 0:
            pos = int(np.argmin(c))
            raise ValueError(f"counts[{pos}] = {int(c[pos])} is negative")
        keep = c > 0
        arr, c = arr[keep], c[keep]
        if arr.size == 0:
            return
        if int(c.max()) > (INT64_MAX - self._total) // c.size and \
                self._total + sum(int(k) for k in c.tolist()) > INT64_MAX:
            raise ValueError(f"counts add up beyond the signed 64-bit limit {INT64_MAX} a histogram counts in")
        idx = self.counts_indices(arr)
        bad = (idx < 0) | (idx >= self.layout.counts_len)
        if bad.any():
            pos = int(np.flatnonzero(keep)[np.flatnonzero(bad)[0]])
            raise ValueError(
                f"values[{pos}] = {int(arr[bad][0])} cannot be recorded (negative or above the highest "
                f"trackable value {self.layout.max_trackable_value}); nothing of the call was recorded"
            )
        np.add.at(self.counts, idx, c)
        n = int(c.sum(dtype=np.int64))
        vmax = int(arr.max())
        if vmax == 0 or vmax * n < (1 << 63):
            total_sum = int(np.dot(arr, c))
        else:
            total_sum = sum(int(v) * int(k) for v, k in zip(arr.tolist(), c.tolist(), strict=True))
        mean = total_sum / n
        d = arr.astype(np.float64) - mean
        m2 = float(np.dot(d * d, c.astype(np.float64)))
        self._merge_moments(n, int(arr.min()), vmax, total_sum, m2)

    def record_value(self, value: int, count: int = 1) -> None:
        """Record one value (convenience; use record() for arrays)."""
        if count == 1:
            self.record(np.array([value], dtype=np.int64))
        else:
            self.record(np.array([value], dtype=np.int64), np.array([count], dtype=np.int64))

    def _merge_moments(self, n: int, vmin: int, vmax: int, total_sum: int, m2: float) -> None:
        if n == 0:
            return
        if self._total == 0:
            self._m2 = m2
            self._sum = total_sum
        else:
            n_a, n_b = self._total, n
            delta = total_sum / n_b - self._sum / n_a
            self._m2 = self._m2 + m2 + delta * delta * n_a * n_b / (n_a + n_b)
            self._sum += total_sum
        self._total += n
        self._min = vmin if self._min is None else min(self._min, vmin)
        self._max = vmax if self._max is None else max(self._max, vmax)

    def reset(self) -> None:
        self.counts[:] = 0
        self._total, self._min, self._max, self._sum, self._m2, self._exact = 0, None, None, 0, 0.0, True

    # ---- statistics ---------------------------------------------------------------------------
    @property
    def total_count(self) -> int:
        return self._total

    @property
    def exact_stats(self) -> bool:
        """True when min/max/mean/stddev are exact (everything was recorded, not decoded)."""
        return self._exact

    @property
    def min(self) -> int:
        """Smallest recorded value (exact), or HdrHistogram's min for decoded data; 0 if empty."""
        return 0 if self._min is None else int(self._min)

    @property
    def max(self) -> int:
        """Largest recorded value (exact), or HdrHistogram's max (highest equivalent) if decoded."""
        return 0 if self._max is None else int(self._max)

    @property
    def mean(self) -> float:
        if self._total == 0:
            return 0.0
        if self._exact:
            return self._sum / self._total
        return self.hdr_mean()

    @property
    def stddev(self) -> float:
        """Population standard deviation."""
        if self._total == 0:
            return 0.0
        if self._exact:
            return math.sqrt(max(self._m2, 0.0) / self._total)
        return self.hdr_stddev()

    def _nonzero(self) -> tuple[np.ndarray, np.ndarray]:
        idx = np.flatnonzero(self.counts)
        return idx, self.counts[idx]

    def hdr_mean(self) -> float:
        """HdrHistogram's mean: bucket mid-points (median-equivalent values) weighted by counts."""
        if self._total == 0:
            return 0.0
        idx, c = self._nonzero()
        return float(np.dot(self.layout.median_values(idx).astype(np.float64), c.astype(np.float64))) / self._total

    def hdr_stddev(self) -> float:
        if self._total == 0:
            return 0.0
        idx, c = self._nonzero()
        d = self.layout.median_values(idx).astype(np.float64) - self.hdr_mean()
        return math.sqrt(float(np.dot(d * d, c.astype(np.float64))) / self._total)

    def hdr_max(self) -> int:
        """HdrHistogram's max: the highest equivalent value of the highest non-empty bucket."""
        last = hdr_codec.nonzero_bounds(self.counts)[1]
        return self.layout.highest_equivalent_value(self.layout.value_from_index(last)) if last >= 0 else 0

    def hdr_min(self) -> int:
        """HdrHistogram's min: lowest equivalent value of the lowest non-empty bucket."""
        first = hdr_codec.nonzero_bounds(self.counts)[0]
        return self.layout.value_from_index(first) if first >= 0 else 0

    # ---- percentiles --------------------------------------------------------------------------
    def _ranks(self, ps: Sequence[float], rank: RankRule) -> np.ndarray:
        rule = discrete_rank if rank == "ceil" else nearest_rank
        return np.array([rule(p, self._total) for p in ps], dtype=np.int64)

    def percentiles(self, ps: Sequence[float], rank: RankRule = "ceil") -> dict[float, int]:
        """{p: value_at_percentile(p)} for every p (vectorised over one cumulative sum)."""
        ps = list(ps)
        if self._total == 0:
            return {p: 0 for p in ps}
        for p in ps:
            if not 0.0 <= float(p) <= 100.0:
                raise ValueError(f"percentile {p} is outside 0..100")
        cum = np.cumsum(self.counts)
        idx = np.searchsorted(cum, self._ranks(ps, rank), side="left")
        lowest, size = self.layout.index_arrays(idx)
        out: dict[float, int] = {}
        for k, p in enumerate(ps):
            out[p] = int(lowest[k]) if float(p) == 0.0 else int(lowest[k] + size[k] - 1)
        return out

    def value_at_percentile(self, p: float, rank: RankRule = "ceil") -> int:
        return self.percentiles([p], rank)[p]

    def recorded(self, which: Literal["highest", "lowest", "median"] = "highest") -> tuple[np.ndarray, np.ndarray]:
        """(values, counts) of the non-empty buckets. Values are each bucket's highest equivalent
        value by default, as HdrHistogram's recorded-values iterator reports them."""
        idx, c = self._nonzero()
        vals = {"highest": self.layout.highest_values, "lowest": self.layout.lowest_values,
                "median": self.layout.median_values}[which](idx)
        return vals.astype(np.int64), c.astype(np.int64)

    def percentile_ladder(self, ticks_per_half: int = 5) -> pd.DataFrame:
        """HdrHistogram's percentile iteration (as HistogramLogProcessor prints it):
        columns percentile (0..100, the level iterated to), value (highest equivalent value),
        count (total count up to this value), inv_one_minus_p (1/(1-percentile/100); inf at 100)."""

        idx, c = self._nonzero()
        rows = percentile_iteration(np.cumsum(c), self._total, ticks_per_half)
        values = self.layout.highest_values(idx)
        return ladder_frame(rows, values, np.cumsum(c))

    def ladder_points(self, ticks_per_half: int = 5) -> tuple[np.ndarray, np.ndarray]:
        """(percent, value) of :meth:`percentile_ladder` without its table (no pandas): an HDR plot's points."""
        idx, c = self._nonzero()
        rows = percentile_iteration(np.cumsum(c), self._total, ticks_per_half)
        levels = np.array([r[0] for r in rows], dtype=np.float64)
        pos = np.array([r[1] for r in rows], dtype=np.int64)
        return levels, np.asarray(self.layout.highest_values(idx))[pos].astype(np.int64)

    def percentile_distribution(
        self, ticks_per_half: int = 5, value_scale: float = 1.0, csv: bool = False
    ) -> str:
        """HistogramLogProcessor-style text: `Value Percentile TotalCount 1/(1-Percentile)` and
        the `#[Mean ...` / `#[Max ...` / `#[Buckets ...` footer. Values are divided by
        `value_scale` (e.g. 1000.0 for ns -> us). Mean/StdDeviation/Max use HdrHistogram's bucket
        definitions so the text equals what the HdrHistogram tools print for the same counts."""
        ladder = self.percentile_ladder(ticks_per_half)
        return format_percentile_distribution(
            ladder,
            significant_figures=self.significant_figures,
            mean=self.hdr_mean(),
            stddev=self.hdr_stddev(),
            max_value=self.hdr_max(),
            total=self._total,
            value_scale=value_scale,
            csv=csv,
            buckets=(self.layout.bucket_count, self.layout.sub_bucket_count),
        )

    # ---- merging --------------------------------------------------------------------------------
    def merge(self, other: HdrHistogram) -> HdrHistogram:
        """Add `other`'s counts (and its exact statistics, when both have them). Returns self."""
        if other._total == 0:
            return self
        if self._total + other._total > INT64_MAX:
            raise ValueError(
                f"cannot merge: the total count {self._total} + {other._total} is beyond the signed 64-bit limit "
                f"{INT64_MAX} a histogram counts in"
            )
        if self.same_layout(other):
            self.counts += other.counts
        else:
            idx, c = other._nonzero()
            values = other.layout.lowest_values(idx)
            if other.hdr_max() > self.layout.max_trackable_value:
                raise ValueError(
                    f"cannot merge: the other histogram holds values up to {other.hdr_max()}, above this "
                    f"histogram's highest trackable value {self.layout.max_trackable_value}"
                )
            np.add.at(self.counts, self.counts_indices(values), c)
        exact = self._exact and other._exact
        if exact:
            self._merge_moments(other._total, other.min, other.max, other._sum, other._m2)
        else:  # decoded data involved: HdrHistogram's bucket-based min/max from the counts
            self._total += other._total
            self._exact = False
            self._sum, self._m2 = 0, 0.0
            self._min, self._max = self.hdr_min(), self.hdr_max()
        return self

    def __iadd__(self, other: HdrHistogram) -> HdrHistogram:
        return self.merge(other)

    # ---- encoding ---------------------------------------------------------------------------------
    def encode_compressed(self) -> bytes:
        """Compressed V2 histogram, binary."""
        return hdr_codec.encode_compressed(self.layout, self.counts, self.conversion_ratio)

    def encode(self) -> bytes:
        """Base64 of the compressed V2 payload ("HISTF..."), as HdrHistogram tools write it."""
        return hdr_codec.encode_base64(self.layout, self.counts, self.conversion_ratio)

    @classmethod
    def from_decoded(cls, d: hdr_codec.DecodedHistogram) -> HdrHistogram:
        h = cls(d.lowest_discernible_value, d.highest_trackable_value, d.significant_figures, _counts=d.counts)
        h.conversion_ratio = d.conversion_ratio
        h._set_from_counts(d.first_index, d.last_index, d.total_count)
        return h

    def _set_from_counts(self, first: int, last: int, total: int) -> None:
        """Totals of decoded counts (first and last non-zero index, total count): HdrHistogram's bucket-based
        min and max; no exact moments (the recorded values are not known) unless nothing was recorded."""
        self._total = total
        self._exact = total == 0
        self._sum, self._m2 = 0, 0.0
        if total:
            L = self.layout
            self._min = L.value_from_index(first)
            self._max = L.highest_equivalent_value(L.value_from_index(last))
        else:
            self._min = self._max = None

    @classmethod
    def decode(cls, b64: bytes | str) -> HdrHistogram:
        """Decode a base64 compressed histogram (V0, V1 or V2) as any HdrHistogram tool writes it.
        Raises hdr_codec.HdrFormatError (a ValueError) saying what is wrong."""
        return cls.from_decoded(hdr_codec.decode_base64(b64))

    def __repr__(self) -> str:
        return (f"HdrHistogram(lowest={self.lowest_discernible_value}, highest={self.highest_trackable_value}, "
                f"sig={self.significant_figures}, total={self._total}, exact_stats={self._exact})")


# ---- percentile iteration shared with ExactDistribution ------------------------------------------


def percentile_iteration(cum: np.ndarray, total: int, ticks_per_half: int = 5) -> list[tuple[float, int]]:
    """HdrHistogram's percentile iterator over non-empty bins with cumulative counts `cum`.

    Returns (percentile level iterated to, bin position) rows: level 0 first, then levels
    advancing by 100 / (ticks_per_half * 2**(floor(log2(100/(100-level))) + 1)), each reported
    at the first bin whose cumulative percentage reaches it, until the last bin is reached; then
    a final row at level 100."""
    if total <= 0 or len(cum) == 0:
        return []
    if ticks_per_half < 1:
        raise ValueError("ticks_per_half must be >= 1")
    pct = (100.0 * cum.astype(np.float64)) / total
    rows: list[tuple[float, int]] = []
    level = 0.0
    last = len(cum) - 1
    pos = 0
    while True:
        pos = int(np.searchsorted(pct[pos:], level, side="left")) + pos
        if pos > last:  # float noise: the level passed 100 before the last bin; clamp
            pos = last
        rows.append((level, pos))
        if pos == last:  # the last bin, whose cumulative count is the total
            break
        ticks = ticks_per_half * (2 ** (int(math.log(100.0 / (100.0 - level)) / math.log(2)) + 1))
        step = level + 100.0 / ticks
        if step <= level or step >= 100.0:  # float resolution exhausted (counts near 2**63): the rest is level 100
            break
        level = step
    rows.append((100.0, last))
    return rows


def ladder_frame(rows: list[tuple[float, int]], values: np.ndarray, cum: np.ndarray) -> pd.DataFrame:
    import pandas as pd  # noqa: PLC0415 pandas: the tcp and latency commands import this module without it

    if not rows:
        return pd.DataFrame({"percentile": np.zeros(0), "value": np.zeros(0, dtype=np.int64),
                             "count": np.zeros(0, dtype=np.int64), "inv_one_minus_p": np.zeros(0)})
    levels = np.array([r[0] for r in rows], dtype=np.float64)
    pos = np.array([r[1] for r in rows], dtype=np.int64)
    with np.errstate(divide="ignore"):
        inv = np.where(levels >= 100.0, np.inf, 1.0 / (1.0 - levels / 100.0))
    return pd.DataFrame({"percentile": levels, "value": np.asarray(values)[pos],
                         "count": np.asarray(cum)[pos].astype(np.int64), "inv_one_minus_p": inv})


def java_fixed(x: float, decimals: int, width: int = 0) -> str:
    """``String.format("%{width}.{decimals}f", x)`` as Java prints it, which HistogramLogProcessor's text is made of:
    Java rounds the shortest decimal that reads back as x (Double.toString's digits, Python's repr) half up, where
    C and Python round x's exact binary value (0.9997802734375 is 0.999780273438 in Java, 0.999780273437 in
    Python, whose %.12f sees the binary value just below the tie)."""
    x = float(x)
    if not math.isfinite(x):
        return ("NaN" if math.isnan(x) else "Infinity" if x > 0 else "-Infinity").rjust(width)
    d = Decimal(repr(x))
    # as many digits as the result has (up to 309 before the point): the default 28 would refuse 1e25 with 3 decimals
    digits = d.quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP,
                        context=Context(prec=max(28, d.adjusted() + decimals + 2)))
    return f"{digits:f}".rjust(width)


def format_percentile_distribution(
    ladder: pd.DataFrame,
    *,
    significant_figures: int,
    mean: float,
    stddev: float,
    max_value: float,
    total: int,
    value_scale: float = 1.0,
    csv: bool = False,
    buckets: tuple[int, int] | None = None,
    value_decimals: int | None = None,
) -> str:
    """Render a percentile ladder the way HdrHistogram's outputPercentileDistribution does (its numbers rounded as
    Java rounds them: java_fixed)."""
    dec = significant_figures if value_decimals is None else value_decimals
    lines: list[str] = []
    if csv:
        lines.append('"Value","Percentile","TotalCount","1/(1-Percentile)"\n')
    else:
        lines.append(f"{'Value':>12} {'Percentile':>14} {'TotalCount':>10} {'1/(1-Percentile)':>14}\n\n")
    for level, value, count in zip(ladder["percentile"].tolist(), ladder["value"].tolist(), ladder["count"].tolist(),
                                   strict=True):
        v, p = value / value_scale, java_fixed(level / 100.0, 12)
        if level != 100.0:
            inv = 1.0 / (1.0 - level / 100.0)
            lines.append(f"{java_fixed(v, dec)},{p},{count},{java_fixed(inv, 2)}\n" if csv else
                         f"{java_fixed(v, dec, 12)} {p} {count:10d} {java_fixed(inv, 2, 14)}\n")
        else:
            lines.append(f"{java_fixed(v, dec)},{p},{count},Infinity\n" if csv else
                         f"{java_fixed(v, dec, 12)} {p} {count:10d}\n")
    if not csv:
        lines.append(f"#[Mean    = {java_fixed(mean / value_scale, dec, 12)}, "
                     f"StdDeviation   = {java_fixed(stddev / value_scale, dec, 12)}]\n")
        lines.append(f"#[Max     = {java_fixed(max_value / value_scale, dec, 12)}, Total count    = {total:12d}]\n")
        if buckets is not None:
            lines.append(f"#[Buckets = {buckets[0]:12d}, SubBuckets     = {buckets[1]:12d}]\n")
    return "".join(lines)


__all__ = [
    "HdrHistogram",
    "discrete_rank",
    "nearest_rank",
    "percentile_iteration",
    "ladder_frame",
    "format_percentile_distribution",
    "java_fixed",
]
