"""Compressed histogram payloads: upstream base64 vectors, interop with the `hdrhistogram`
package in both directions, LEB128 kernels against a plain reference, corrupt input."""

from __future__ import annotations

import base64
import json
import struct
import zlib

import numpy as np
import pytest
from hdrh.histogram import HdrHistogram as HdrhHistogram

from benchbook.analysis import hdr_codec
from benchbook.analysis.hdr import HdrHistogram
from benchbook.analysis.hdr_codec import HdrFormatError


@pytest.fixture(scope="module")
def expected(shared_datasets):
    return json.loads((shared_datasets / "hdrhistogram-interop" / "EXPECTED_from_upstream_tests.json").read_text())


def plain_zigzag_leb128(counts: list[int]) -> bytes:
    """Reference V2 counts encoding, written from the format description."""
    out = bytearray()
    i = 0
    while i < len(counts):
        v = counts[i]
        i += 1
        if v == 0:
            run = 1
            while i < len(counts) and counts[i] == 0:
                run += 1
                i += 1
            if run > 1:
                v = -run
        u = ((v << 1) ^ (v >> 63)) & 0xFFFFFFFFFFFFFFFF
        for _ in range(8):
            if u < 0x80:
                break
            out.append((u & 0x7F) | 0x80)
            u >>= 7
        out.append(u & 0xFF)
    return bytes(out)


def plain_zigzag_decode(data: bytes, n: int) -> list[int]:
    """Reference V2 counts decoding."""
    counts = [0] * n
    pos = idx = 0
    while pos < len(data):
        u = shift = 0
        for k in range(9):
            b = data[pos]
            pos += 1
            if k == 8:
                u |= b << 56
                break
            u |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        v = (u >> 1) ^ -(u & 1)
        if v < 0:
            idx += -v
        else:
            counts[idx] = v
            idx += 1
    return counts


def test_zigzag_kernel_equals_plain_reference():
    rng = np.random.default_rng(1)
    counts = rng.integers(0, 4, 5000) * rng.integers(0, 2**40, 5000)
    counts[100:400] = 0
    counts[-3:] = [1 << 55, (1 << 62) + 17, 1]  # 8- and 9-byte encodings
    enc = hdr_codec.zigzag_encode_counts(counts)
    assert enc == plain_zigzag_leb128(counts.tolist())
    np.testing.assert_array_equal(hdr_codec.zigzag_decode_counts(enc, len(counts)), counts)
    assert plain_zigzag_decode(enc, len(counts)) == counts.tolist()
    padded = np.concatenate([counts, np.zeros(100, dtype=np.int64)])
    assert hdr_codec.zigzag_encode_counts(padded, -1) == enc  # -1: stop at the last non-zero slot
    counts[7] = -3
    with pytest.raises(HdrFormatError, match="slot 7 holds -3"):
        hdr_codec.zigzag_encode_counts(counts)


@pytest.mark.parametrize("layout", [(1, 3_600_000_000_000, 3), (1000, 10**12, 2), (1, 2**20, 4)])
def test_benchbook_encoding_decodes_in_hdrh(layout):
    rng = np.random.default_rng(layout[2])
    h = HdrHistogram(*layout)
    h.record(np.exp(rng.uniform(0, np.log(layout[1] // 2), 50_000)).astype(np.int64))
    theirs = HdrhHistogram.decode(h.encode())
    assert (theirs.lowest_trackable_value, theirs.highest_trackable_value, theirs.significant_figures) == layout
    assert theirs.get_total_count() == h.total_count
    got = np.zeros(theirs.counts_len, dtype=np.int64)
    got[:] = np.asarray(theirs.counts[: theirs.counts_len])
    np.testing.assert_array_equal(got, h.counts)
    ps = [0, 50, 90, 99, 99.9, 99.99, 100]
    assert theirs.get_percentile_to_value_dict(ps) == h.percentiles(ps, rank="nearest")
    assert theirs.get_max_value() == h.hdr_max()


def test_uncompressed_payload_matches_hdrh_payload():
    """Same counts -> the same V2 header and the same counts from either decoder. The LEB128 bytes
    differ in one documented way: a single zero slot is written as count 0 (Java's encoder, which
    benchbook follows) where HdrHistogram_c and hdrh write a zero run of length 1 (-1)."""
    rng = np.random.default_rng(9)
    values = rng.integers(0, 10**9, 2000)
    ours = HdrHistogram()
    ours.record(values)
    theirs = HdrhHistogram(1, 3_600_000_000_000, 3)
    for v in values.tolist():
        theirs.record_value(v)

    def payload(b64: bytes) -> bytes:
        raw = base64.b64decode(b64)
        cookie, length = struct.unpack(">ii", raw[:8])
        assert cookie == 0x1C849314
        return zlib.decompress(raw[8 : 8 + length])

    a, b = payload(ours.encode()), payload(theirs.encode())
    assert a[:4] + a[8:40] == b[:4] + b[8:40]  # cookie and parameters (length may differ)
    ca = hdr_codec.zigzag_decode_counts(a[40:], ours.layout.counts_len)
    cb = hdr_codec.zigzag_decode_counts(b[40:], ours.layout.counts_len)
    np.testing.assert_array_equal(ca, cb)
    np.testing.assert_array_equal(ca, ours.counts)
    # the only byte differences are single zeros: 0x00 (ours) against 0x01 (hdrh)
    assert len(a) == len(b)
    diff = [i for i in range(40, len(a)) if a[i] != b[i]]
    assert all(a[i] == 0x00 and b[i] == 0x01 for i in diff)


def test_hdrh_encoding_decodes_in_benchbook():
    rng = np.random.default_rng(4)
    theirs = HdrhHistogram(10, 10**10, 3)
    values = rng.integers(10, 10**10, 20_000)
    for v in values.tolist():
        theirs.record_value(v)
    for v in range(10, 20):  # corrected-style repeated counts
        theirs.record_value(v, 1000)
    ours = HdrHistogram.decode(theirs.encode())
    assert ours.total_count == theirs.get_total_count()
    np.testing.assert_array_equal(ours.counts, np.asarray(theirs.counts[: theirs.counts_len]))
    ps = [0, 1, 50, 99, 99.99, 100]
    assert ours.percentiles(ps, rank="nearest") == theirs.get_percentile_to_value_dict(ps)
    assert ours.max == theirs.get_max_value()
    assert ours.mean == pytest.approx(theirs.get_mean_value(), rel=1e-12)
    assert not ours.exact_stats


def test_upstream_base64_vectors(expected):
    for vec in expected["base64_vectors"]:
        b64 = vec["b64"]
        if vec["b64"].startswith("HISTIg"):  # V1: hdrhistogram-go refuses it, benchbook reads V1
            # the values Java HdrHistogram 2.2.2 reads from this vector (decodeFromCompressedByteBuffer)
            h = HdrHistogram.decode(b64)
            assert (h.lowest_discernible_value, h.highest_trackable_value, h.significant_figures) == (
                20000, 3_600_000_000_000, 2)
            assert (h.total_count, h.min, h.max) == (724, 0, 2_801_663)
            assert h.mean == pytest.approx(321773.6132596685, rel=1e-12)
            assert h.percentiles([0, 50, 90, 99, 99.9, 100]) == {
                0: 0, 50: 360_447, 90: 393_215, 99: 425_983, 99.9: 2_801_663, 100: 2_801_663}
            continue
        h = HdrHistogram.decode(b64)
        if "total_count" in vec:
            assert h.total_count == vec["total_count"], vec.get("desc")
        for p, want in vec.get("percentiles", {}).items():
            got = h.value_at_percentile(float(p))
            assert abs(got - want) <= 0.001 * want, (vec.get("desc"), p, got, want)
        if "mean" in vec:
            assert h.mean == pytest.approx(vec["mean"], rel=1e-3)
        if "lowest_trackable" in vec:
            assert (h.lowest_discernible_value, h.highest_trackable_value, h.significant_figures) == (
                vec["lowest_trackable"], vec["highest_trackable"], vec["significant_figures"])
        # "dump must not raise": the percentile table renders
        assert "#[Max" in h.percentile_distribution()
        # and re-encoding keeps every count
        np.testing.assert_array_equal(HdrHistogram.decode(h.encode()).counts, h.counts)


def test_standard_vector_min_max(expected):
    vec = expected["base64_vectors"][0]
    h = HdrHistogram.decode(vec["b64"])
    assert h.min == 1000 and h.max == 100007935  # as the vector's description states


def _blob(payload: bytes, cookie: int = 0x1C849314) -> bytes:
    z = zlib.compress(payload)
    return struct.pack(">ii", cookie, len(z)) + z


def test_corrupt_payloads_are_rejected_with_reason():
    h = HdrHistogram()
    h.record(np.array([1, 2, 3, 1000]))
    raw = base64.b64decode(h.encode())
    with pytest.raises(HdrFormatError, match="unknown cookie"):
        hdr_codec.decode_compressed(b"\x12\x34\x56\x78" + raw[4:])
    with pytest.raises(HdrFormatError, match="only"):
        hdr_codec.decode_compressed(raw[:-5])
    with pytest.raises(HdrFormatError, match="invalid base64"):
        HdrHistogram.decode(h.encode()[:-3])
    with pytest.raises(HdrFormatError, match="zlib"):
        hdr_codec.decode_compressed(raw[:8] + bytes(len(raw) - 8))
    payload = zlib.decompress(raw[8:])
    # counts that run past the histogram
    header = bytearray(payload[:40])
    bad_counts = hdr_codec.zigzag_encode_counts(np.ones(40_000, dtype=np.int64))
    header[4:8] = struct.pack(">i", len(bad_counts))
    with pytest.raises(HdrFormatError, match="run past"):
        hdr_codec.decode_compressed(_blob(bytes(header) + bad_counts))
    # a truncated LEB128 value
    trunc = bytes([0x80, 0x80])
    header[4:8] = struct.pack(">i", len(trunc))
    with pytest.raises(HdrFormatError, match="truncated LEB128"):
        hdr_codec.decode_compressed(_blob(bytes(header) + trunc))
    # invalid parameters in the header
    bad = bytearray(payload)
    bad[12:16] = struct.pack(">i", 9)
    with pytest.raises(HdrFormatError, match="significant_figures"):
        hdr_codec.decode_compressed(_blob(bytes(bad)))


def test_v1_fixed_width_payload_roundtrip():
    """A V1 payload (fixed-width big-endian words) as old Java/C writers produced."""
    h = HdrHistogram(1, 10**6, 2)
    h.record(np.array([1, 5, 5, 900, 123_456]))
    n = int(np.flatnonzero(h.counts)[-1]) + 1
    for word, dt in ((2, ">i2"), (4, ">i4"), (8, ">i8")):
        body = h.counts[:n].astype(dt).tobytes()
        header = struct.pack(">iiiiqqd", 0x1C849301 | (word << 4), len(body), 0, 2, 1, 10**6, 1.0)
        d = hdr_codec.decode_compressed(_blob(header + body, cookie=0x1C849302 | (word << 4)))
        assert d.version == 1
        np.testing.assert_array_equal(d.counts, h.counts)
