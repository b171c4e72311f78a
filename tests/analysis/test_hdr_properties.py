"""Invariants of benchbook's HdrHistogram (hypothesis): it never counts what it refused, a call is all or nothing,
and every value it accepts lands in the one slot whose equivalent range holds it. The range edges come from the
published layout rules, recomputed here with Python integers (test_hdr.plain_counts_index's algorithm)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchbook.analysis.hdr import HdrHistogram
from benchbook.analysis.hdr_layout import HdrLayout

LAYOUTS = [(1, 1_000_000, 3), (1, 3_600_000_000_000, 2), (1000, 10**9, 1), (3, 100, 0), (1, (1 << 62), 4)]


def slot_of(layout: HdrLayout, value: int) -> int:
    """Slot of a non-negative value in the counts array, from the layout's published index rule with Python
    integers (what HdrLayout.counts_index computed before it went as dead code)."""
    b = layout.bucket_index(value)
    sub = int(value) >> (b + layout.unit_magnitude)
    return ((b + 1) << layout.sub_bucket_half_count_magnitude) + (sub - layout.sub_bucket_half_count)


def edges(h: HdrHistogram) -> dict[str, int]:
    """The largest value with a slot and the first one past it, from the layout parameters alone."""
    L = h.layout
    # the last slot: sub-bucket sub_bucket_count - 1 of the last bucket, whose resolution is 2^(bucket + unit)
    last_lowest = (L.sub_bucket_count - 1) << (L.bucket_count - 1 + L.unit_magnitude)
    width = 1 << (L.bucket_count - 1 + L.unit_magnitude)
    top = min(last_lowest + width - 1, (1 << 63) - 1)
    return {"top": top, "past": top + 1}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_largest_trackable_value_is_kept_and_the_next_refused(layout):
    h = HdrHistogram(*layout)
    e = edges(h)
    assert h.layout.max_trackable_value == e["top"]
    h.record(np.array([e["top"], 0]))
    assert h.counts[h.layout.counts_len - 1] == 1 and h.counts[0] == 1 and h.max == e["top"]
    if e["past"] < (1 << 63):
        before = h.counts.copy()
        with pytest.raises(ValueError, match=rf"values\[1\] = {e['past']} cannot be recorded: above the highest "
                                             rf"trackable value {e['top']} \(1 such values"):
            h.record(np.array([7, e["past"], 8]))
        with pytest.raises(ValueError, match=rf"values\[1\] = {e['past']} cannot be recorded"):
            h.record(np.array([7, e["past"]]), np.array([1, 3]))
        np.testing.assert_array_equal(h.counts, before)
        assert h.total_count == 2


values_st = st.lists(st.one_of(st.integers(-3, 3), st.integers(0, 1 << 40), st.integers(-(1 << 62), (1 << 63) - 1),
                               st.sampled_from(["top", "past", "top-1"])), min_size=0, max_size=40)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(layout=st.sampled_from(LAYOUTS), first=values_st, second=values_st,
       weights=st.lists(st.integers(0, 5), min_size=40, max_size=40), weighted=st.booleans())
def test_never_counts_what_it_refused(layout, first, second, weights, weighted):
    h = HdrHistogram(*layout)
    e = edges(h)

    def concrete(vals: list) -> np.ndarray:
        sub = {"top": e["top"], "past": e["past"], "top-1": e["top"] - 1}
        return np.array([min(sub.get(v, v) if isinstance(v, str) else v, (1 << 63) - 1) for v in vals], np.int64)

    kept: list[int] = []
    for batch in (first, second):
        arr = concrete(batch)
        w = np.array(weights[: len(arr)], np.int64)
        before, total = h.counts.copy(), h.total_count
        bad = [int(v) for v, k in zip(arr, w if weighted else np.ones(len(arr), np.int64), strict=True)
               if k and (v < 0 or v > e["top"])]
        try:
            h.record(arr, w if weighted else None)
        except ValueError:
            assert bad, "refused a call whose every value has a slot"
            np.testing.assert_array_equal(h.counts, before)  # nothing of the call kept
            assert h.total_count == total
            continue
        assert not bad, f"accepted {bad[:3]} outside [0, {e['top']}]"
        kept += [int(v) for v, k in zip(arr, w if weighted else np.ones(len(arr), np.int64), strict=True)
                 for _ in range(int(k))]
    assert h.total_count == len(kept) == int(h.counts.sum())
    if kept:
        assert (h.min, h.max) == (min(kept), max(kept))
        assert h.mean == pytest.approx(sum(kept) / len(kept), rel=1e-12)
    L = h.layout
    for v in set(kept):  # each value in the slot whose equivalent range holds it
        idx = slot_of(L, v)
        assert L.value_from_index(idx) == L.lowest_equivalent_value(v) <= v <= L.highest_equivalent_value(v)
        assert h.counts[idx] >= kept.count(v)
