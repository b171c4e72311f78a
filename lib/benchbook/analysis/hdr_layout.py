"""HdrHistogram's bucket layout: which counts-array slot a value falls in, and back.

The layout is defined by (lowest_discernible_value, highest_trackable_value, significant_figures)
exactly as in the Java, C and Python HdrHistogram implementations, so that a counts array built
here means the same thing to every HdrHistogram tool:

* ``unit_magnitude = floor(log2(lowest_discernible_value))``
* ``sub_bucket_count = 2 ** ceil(log2(2 * 10**significant_figures))`` (at least 2),
  ``sub_bucket_half_count = sub_bucket_count / 2``
* bucket ``b`` covers values with resolution ``2 ** (unit_magnitude + b)``; bucket 0 holds the
  full ``sub_bucket_count`` slots, every later bucket only its upper half (the lower half would
  duplicate the previous bucket), so the counts array has ``(bucket_count + 1) * half`` slots.

The hot path (value -> index for millions of values) lives in :mod:`benchbook.analysis.hdr`
as a numba kernel; this module holds the scalar reference math and the vectorised
index -> value maps used for percentiles and iteration.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

INT64_MAX = (1 << 63) - 1


@dataclass(frozen=True)
class HdrLayout:
    """Bucket layout of an HdrHistogram with the given range and precision."""

    lowest_discernible_value: int
    highest_trackable_value: int
    significant_figures: int
    unit_magnitude: int = field(init=False)
    sub_bucket_half_count_magnitude: int = field(init=False)
    sub_bucket_count: int = field(init=False)
    sub_bucket_half_count: int = field(init=False)
    sub_bucket_mask: int = field(init=False)
    bucket_count: int = field(init=False)
    counts_len: int = field(init=False)

    def __post_init__(self) -> None:
        lowest = int(self.lowest_discernible_value)
        highest = int(self.highest_trackable_value)
        sig = int(self.significant_figures)
        if lowest < 1:
            raise ValueError(f"lowest_discernible_value must be >= 1, got {lowest}")
        if not 0 <= sig <= 5:
            raise ValueError(f"significant_figures must be in 0..5, got {sig}")
        if highest < 2 * lowest:
            raise ValueError(
                f"highest_trackable_value ({highest}) must be >= 2 * lowest_discernible_value ({lowest})"
            )
        if highest > INT64_MAX:
            raise ValueError(f"highest_trackable_value ({highest}) exceeds the int64 range")
        unit_magnitude = lowest.bit_length() - 1  # floor(log2(lowest)) exactly
        largest_single_unit = 2 * 10**sig
        sub_bucket_count_magnitude = max(1, math.ceil(math.log2(largest_single_unit)))
        half_mag = sub_bucket_count_magnitude - 1
        sub_bucket_count = 1 << (half_mag + 1)
        if unit_magnitude + half_mag > 61:
            raise ValueError(
                f"lowest_discernible_value {lowest} with {sig} significant figures exceeds the int64 range"
            )
        # Number of buckets needed to cover `highest` (same loop as the reference implementations).
        smallest_untrackable = sub_bucket_count << unit_magnitude
        buckets = 1
        while smallest_untrackable <= highest:
            if smallest_untrackable > INT64_MAX // 2:
                buckets += 1
                break
            smallest_untrackable <<= 1
            buckets += 1
        s = object.__setattr__
        s(self, "lowest_discernible_value", lowest)
        s(self, "highest_trackable_value", highest)
        s(self, "significant_figures", sig)
        s(self, "unit_magnitude", unit_magnitude)
        s(self, "sub_bucket_half_count_magnitude", half_mag)
        s(self, "sub_bucket_count", sub_bucket_count)
        s(self, "sub_bucket_half_count", sub_bucket_count // 2)
        s(self, "sub_bucket_mask", (sub_bucket_count - 1) << unit_magnitude)
        s(self, "bucket_count", buckets)
        s(self, "counts_len", (buckets + 1) * (sub_bucket_count // 2))

    # ---- scalar reference math (plain Python; the kernels must agree with these) ----------

    def bucket_index(self, value: int) -> int:
        pow2ceiling = (int(value) | self.sub_bucket_mask).bit_length()
        return pow2ceiling - self.unit_magnitude - (self.sub_bucket_half_count_magnitude + 1)

    def value_from_index(self, index: int) -> int:
        b = (index >> self.sub_bucket_half_count_magnitude) - 1
        sub = (index & (self.sub_bucket_half_count - 1)) + self.sub_bucket_half_count
        if b < 0:
            sub -= self.sub_bucket_half_count
            b = 0
        return sub << (b + self.unit_magnitude)

    def lowest_equivalent_value(self, value: int) -> int:
        b = self.bucket_index(value)
        sub = int(value) >> (b + self.unit_magnitude)
        return sub << (b + self.unit_magnitude)

    def size_of_equivalent_range(self, value: int) -> int:
        b = self.bucket_index(value)
        sub = int(value) >> (b + self.unit_magnitude)
        if sub >= self.sub_bucket_count:
            b += 1
        return 1 << (self.unit_magnitude + b)

    def highest_equivalent_value(self, value: int) -> int:
        return self.lowest_equivalent_value(value) + self.size_of_equivalent_range(value) - 1

    @property
    def max_trackable_value(self) -> int:
        """Largest value that still has a slot (the highest equivalent of the last slot)."""
        return min(INT64_MAX, self.highest_equivalent_value(self.value_from_index(self.counts_len - 1)))

    # ---- vectorised index -> value maps ----------------------------------------------------

    def index_arrays(self, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(lowest value, range size) of each counts-array slot in `indices` (int64 arrays)."""
        idx = np.asarray(indices, dtype=np.int64)
        b = (idx >> self.sub_bucket_half_count_magnitude) - 1
        sub = (idx & (self.sub_bucket_half_count - 1)) + self.sub_bucket_half_count
        first = b < 0
        sub = np.where(first, sub - self.sub_bucket_half_count, sub)
        b = np.where(first, 0, b)
        shift = (b + self.unit_magnitude).astype(np.int64)
        lowest = np.left_shift(sub, shift)
        size = np.left_shift(np.int64(1), shift)
        return lowest, size

    def lowest_values(self, indices: np.ndarray) -> np.ndarray:
        return self.index_arrays(indices)[0]

    def highest_values(self, indices: np.ndarray) -> np.ndarray:
        lowest, size = self.index_arrays(indices)
        return lowest + (size - 1)

    def median_values(self, indices: np.ndarray) -> np.ndarray:
        lowest, size = self.index_arrays(indices)
        return lowest + (size >> 1)


@lru_cache(maxsize=256)
def layout_for(lowest_discernible_value: int, highest_trackable_value: int, significant_figures: int) -> HdrLayout:
    """Shared (cached) layout instance for these parameters."""
    return HdrLayout(lowest_discernible_value, highest_trackable_value, significant_figures)
