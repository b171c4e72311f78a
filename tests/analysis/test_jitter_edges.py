"""benchbook.analysis.jitter at its edges: interval boundaries exactly at and one before a limit, packets before
the origin, the first and last interval, empty and one-element inputs, ties, and calls refused whole. The
expectations are computed by hand or by plain Python in the test."""

from __future__ import annotations

import numpy as np
import pytest

from benchbook.analysis.jitter import IntervalRecorder

S = 1_000_000_000


def counts(intervals) -> list[tuple[float, int]]:
    return [(iv.start_s, iv.histogram.total_count) for iv in intervals]


def test_a_refused_latency_records_nothing_of_the_call_and_names_its_position():
    rec = IntervalRecorder(origin_ns=0, highest_trackable_value=1_000_000)
    top = rec.total().layout.max_trackable_value
    with pytest.raises(ValueError, match=rf"^latency_ns\[2\] = 5000000000 cannot be recorded: above the highest "
                                         rf"trackable value {top} \(1 such values in this call; nothing of this "
                                         rf"call was recorded\)$"):
        rec.record(np.array([0, S, 2 * S + 5]), np.array([10, 20, 5_000_000_000]))
    with pytest.raises(ValueError, match=r"^latency_ns\[1\] = -3 cannot be recorded: negative \(2 such"):
        rec.record(np.array([0, S, 2 * S]), np.array([10, -3, -4]))
    assert rec.intervals() == [] and rec.total().total_count == 0
    rec.record(np.array([0, S]), np.array([top, 0]))  # both ends of the range are kept
    assert counts(rec.intervals()) == [(0.0, 1), (1.0, 1)]
