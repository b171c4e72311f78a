"""The hole list of one TCP direction (tcp_flows._cover, _cover_below) against a plain model (issue 23).

The kernel keeps the byte ranges not seen between a direction's lowest and highest byte in at most
``MAX_HOLES`` holes; a list that would hold one more forgets its lowest hole, whose bytes then count as missed
for good (``S_LOST_HOLE_BYTES``, once each in ``C_HOLE_OVERFLOW``). The model below keeps the same ranges as a
sorted Python list, applies each segment, then forgets the lowest holes while there are too many. The kernels
are driven the way the pass drives them (a capture that began mid-connection first extends coverage down with
``_cover_below``), segment by segment, on random and hand-made sequences; after every segment the new bytes,
the holes, the lost bytes and the overflow count must equal the model's, and the direction's span must be
exactly the new bytes plus the holes plus the lost bytes (no byte both seen and missed, none neither)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

from benchbook.analysis import tcp_flows as tf

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class ModelDirection:
    """Seen coverage of one direction as a plain list of holes [start, end), lowest first."""

    def __init__(self, start: int, start_seen: bool) -> None:
        self.low = self.high = start
        self.start_seen = start_seen
        self.holes: list[tuple[int, int]] = []
        self.lost = 0
        self.overflows = 0

    def _forget_lowest_beyond_limit(self) -> None:
        while len(self.holes) > tf.MAX_HOLES:
            s, e = self.holes.pop(0)
            self.lost += e - s
            self.overflows += 1

    def _cover(self, start: int, end: int) -> int:
        top = min(end, self.high)
        new = 0
        kept: list[tuple[int, int]] = []
        for s, e in self.holes:
            a, b = max(s, start), min(e, top)
            if a >= b:
                kept.append((s, e))
                continue
            new += b - a
            kept += [(lo, hi) for lo, hi in ((s, a), (b, e)) if lo < hi]
        self.holes = kept
        self._forget_lowest_beyond_limit()
        if end > self.high:
            new += end - max(start, self.high)
            if start > self.high:
                self.holes.append((self.high, start))
                self._forget_lowest_beyond_limit()
        return new

    def segment(self, start: int, end: int) -> int:
        """Bytes [start, end) arrive; returns how many are new."""
        if not self.start_seen and start < self.low:
            low = self.low
            top = min(end, low)
            new = top - start
            if top < low:
                self.holes.insert(0, (top, low))
                self._forget_lowest_beyond_limit()
            self.low = start
            if end > low:
                new += self._cover(low, end)
        else:
            new = self._cover(start, end)
        self.high = max(self.high, end)
        return new


class KernelDirection:
    """Direction 0 of flow 0 of a kernel state, driven like tcp_flows' pass drives it."""

    def __init__(self, start: int, start_seen: bool) -> None:
        s = tf.new_state(flows=1)
        self.st, self.holes, self.c = s["st"], s["holes"], s["c"]
        self.st[0, 0, tf.S_HIGH] = self.st[0, 0, tf.S_LOW] = start
        self.st[0, 0, tf.S_START_SEEN] = int(start_seen)

    def segment(self, start: int, end: int) -> int:
        st = self.st
        low = st[0, 0, tf.S_LOW]
        if st[0, 0, tf.S_START_SEEN] == 0 and start < low:
            new = tf._cover_below(self.holes, st, 0, 0, start, end, self.c)
            if end > low:
                new += tf._cover(self.holes, st, 0, 0, low, end, self.c)
        else:
            new = tf._cover(self.holes, st, 0, 0, start, end, self.c)
        st[0, 0, tf.S_HIGH] = max(st[0, 0, tf.S_HIGH], end)
        return int(new)

    def hole_list(self) -> list[tuple[int, int]]:
        n = self.st[0, 0, tf.S_NHOLES]
        return [(int(a), int(b)) for a, b in self.holes[0, 0, :n]]


def replay(segments: list[tuple[int, int]], start: int, start_seen: bool) -> ModelDirection:
    """Feed `segments` (start, length) to both; compare after each one; returns the model."""
    model, kern = ModelDirection(start, start_seen), KernelDirection(start, start_seen)
    seen = 0
    for k, (s, length) in enumerate(segments):
        new = kern.segment(s, s + length)
        assert new == model.segment(s, s + length), (k, s, length)
        seen += new
        st = kern.st[0, 0]
        assert kern.hole_list() == model.holes, (k, s, length)
        assert (st[tf.S_LOST_HOLE_BYTES], kern.c[tf.C_HOLE_OVERFLOW]) == (model.lost, model.overflows), k
        assert (st[tf.S_LOW], st[tf.S_HIGH]) == (model.low, model.high), k
        holes = model.holes
        assert all(a < b for a, b in holes) and all(b < c for (_, b), (c, _) in itertools.pairwise(holes))
        assert not holes or (model.low <= holes[0][0] and holes[-1][1] <= model.high)
        assert seen + sum(b - a for a, b in holes) + model.lost == model.high - model.low, k
    return model


segments = hs.lists(hs.tuples(hs.integers(0, 3000), hs.integers(1, 120)), max_size=60)


@SETTINGS
@given(segs=segments, start=hs.integers(0, 1500), first=hs.integers(1, 120), start_seen=hs.booleans())
def test_hole_list_equals_the_plain_model(segs: list[tuple[int, int]], start: int, first: int,
                                          start_seen: bool) -> None:
    """The first segment starts where coverage starts (the kernel's first packet defines position 0)."""
    replay([(start, first), *segs], start, start_seen)


@pytest.mark.parametrize("seed", range(6))
def test_many_small_segments_overflow_the_list_as_the_model_does(seed: int) -> None:
    """Random 1-40 byte segments over 6,000 bytes, half of them arriving (hundreds of holes come and go): the
    list overflows many times, with splits of the lowest hole among them."""
    rng = np.random.default_rng(seed)
    n = 400
    segs = list(zip(rng.integers(0, 6000, n).tolist(), rng.integers(1, 41, n).tolist(), strict=True))
    model = replay([(3000, 10), *segs], 3000, start_seen=bool(seed % 2))
    assert model.overflows > 10


@pytest.mark.parametrize("k", [0, 1, tf.MAX_HOLES - 1])
def test_a_split_of_a_full_list_forgets_the_lowest_after_splitting(k: int) -> None:
    """A full list (16 holes of 100 bytes), then 20 bytes strictly inside hole k: hole k splits in two, and the
    lowest of the 17 goes (hole 0's lower part when k = 0, else hole 0)."""
    segs = [(200 * i, 100) for i in range(tf.MAX_HOLES + 1)] + [(200 * k + 140, 20)]
    model = replay(segs, 0, start_seen=True)
    assert model.overflows == 1 and model.lost == (40 if k == 0 else 100)
    assert len(model.holes) == tf.MAX_HOLES and (200 * k + 160, 200 * k + 200) in model.holes


def test_coverage_extended_below_with_a_full_list_forgets_the_new_lowest_gap() -> None:
    """Mid-connection start at 5,000: 16 holes above, then bytes far below the lowest byte seen: the gap between
    them would be the 17th and lowest hole, so its 3,900 bytes are missed at once; so are the 50 of the next gap
    below; bytes at and below the lowest seen are new, those of a gap forgotten are not."""
    segs = [(5000 + 200 * i, 100) for i in range(tf.MAX_HOLES + 1)] + [(1000, 100), (900, 50)]
    model = replay(segs, 5000, start_seen=False)
    assert (model.overflows, model.lost, model.low, len(model.holes)) == (2, 3950, 900, tf.MAX_HOLES)
    kern = KernelDirection(5000, start_seen=False)
    assert [kern.segment(s, s + n) for s, n in [*segs, (850, 200)]][-3:] == [100, 50, 50]
