"""Property-based tests of the MoonGen histogram reader (hypothesis, bounded): what
write_moongen_histogram writes reads back exactly (values with decimals, counts up to the int64
total); arbitrary and mutated bytes end in a histogram or a MoonGenFormatError naming the file."""

from __future__ import annotations

import tempfile
from decimal import Decimal
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchbook.tools.moongen_histogram import (
    MoonGenFormatError,
    MoonGenHistogram,
    read_moongen_histogram,
    write_moongen_histogram,
)

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def histograms(draw):
    decimals = draw(st.integers(0, 4))
    n = draw(st.integers(0, 30))
    scaled = sorted(draw(st.sets(st.integers(0, 10**12), min_size=n, max_size=n)))
    counts = draw(st.lists(st.integers(1, 2**62 // max(1, n)), min_size=n, max_size=n))
    texts = [str(Decimal(v).scaleb(-decimals)) if decimals else str(v) for v in scaled]
    return texts, counts


@SETTINGS
@given(h=histograms())
def test_moongen_round_trip(h):
    texts, counts = h
    hist = MoonGenHistogram.from_values(np.array(texts, dtype=object) if texts else np.zeros(0), counts)
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "h.csv"
        write_moongen_histogram(p, hist)
        back = read_moongen_histogram(p)
    assert back.decimals == hist.decimals
    assert back.values_scaled.tolist() == hist.values_scaled.tolist()
    assert back.counts.tolist() == hist.counts.tolist()
    assert back.count == sum(counts)


lines = st.lists(st.one_of(
    st.tuples(st.integers(-5, 10**20), st.integers(-5, 10**20)).map(lambda t: f"{t[0]},{t[1]}"),
    st.tuples(st.floats(allow_nan=True, allow_infinity=True), st.integers(0, 10**6)).map(lambda t: f"{t[0]!r},{t[1]}"),
    st.text(alphabet="0123456789.,eE+- \r\t", max_size=30),
), max_size=20)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=lines, tail=st.booleans(), junk=st.binary(max_size=16))
def test_odd_files_never_raise_anything_else(body, tail, junk):
    data = "\n".join(body).encode() + (b"\n" if tail else b"") + (junk if not tail else b"")
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "h.csv"
        p.write_bytes(data)
        try:
            h = read_moongen_histogram(p)
        except MoonGenFormatError as exc:
            assert str(p) in str(exc)
        else:
            assert (h.counts > 0).all() and 0 <= h.count <= 2**63 - 1
