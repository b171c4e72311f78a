"""Edges of the HdrHistogram payload codec (issue 23): an empty histogram's payload as the hdrh package writes it,
the encoder's limit at 0 and inside a zero run, the word size a V1 cookie carries (Java ignores its lowest bit),
and what a decoded V2 payload reports. Each case is one a mutation of analysis/hdr_codec.py survived."""

from __future__ import annotations

import base64
import struct
import zlib

import numpy as np
import pytest
from hdrh.histogram import HdrHistogram as HdrhHistogram

from benchbook.analysis import hdr_codec
from benchbook.analysis.hdr_layout import layout_for

LAYOUT = (1, 3_600_000_000_000, 3)


def _hdrh_payload(h: HdrhHistogram) -> bytes:
    return zlib.decompress(base64.b64decode(h.encode())[8:])


def test_an_empty_histogram_encodes_no_counts_as_hdrh_does() -> None:
    layout = layout_for(*LAYOUT)
    ours = hdr_codec.encode_payload_v2(layout, np.zeros(layout.counts_len, np.int64))
    theirs = _hdrh_payload(HdrhHistogram(*LAYOUT))
    assert struct.unpack_from(">i", ours, 4)[0] == 0 == struct.unpack_from(">i", theirs, 4)[0]
    assert len(ours) == len(theirs) == 40
    d = hdr_codec.decode_payload(ours)
    assert (d.first_index, d.last_index, d.total_count, int(d.counts.sum())) == (-1, -1, 0, 0)
    assert hdr_codec.zigzag_encode_counts(np.zeros(5, np.int64), -1) == b""


def test_the_encoder_limit_cuts_zero_runs_where_it_says() -> None:
    counts = np.array([1, 0, 0, 0, 5], np.int64)
    assert hdr_codec.zigzag_encode_counts(counts, 0) == b""        # nothing, not "up to the last non-zero"
    assert hdr_codec.zigzag_encode_counts(counts, 1) == bytes([2])  # zigzag(1) = 2
    # counts[:3] = [1, 0, 0]: a run of two zeros is one -2 (zigzag 3), not the run of three the array holds
    assert hdr_codec.zigzag_encode_counts(counts, 3) == bytes([2, 3])
    assert hdr_codec.zigzag_encode_counts(counts, 4) == bytes([2, 5])
    assert hdr_codec.zigzag_encode_counts(counts) == bytes([2, 5, 10]) == hdr_codec.zigzag_encode_counts(counts, -1)
    one_zero = np.array([0, 7], np.int64)  # a single zero slot is a count of 0, not a run
    assert hdr_codec.zigzag_encode_counts(one_zero) == bytes([0, 14])


def _v1_payload(cookie: int, counts: list[int], word: int) -> bytes:
    fmt = {2: ">h", 4: ">i", 8: ">q"}[word]
    body = b"".join(struct.pack(fmt, c) for c in counts)
    return struct.pack(">iiiiqqd", cookie - 2**32 if cookie >= 2**31 else cookie, len(body), 0, 3, 1,
                       3_600_000_000_000, 1.0) + body


def test_v1_word_size_from_the_cookie_ignores_its_lowest_bit() -> None:
    """The word size sits in bits 4..7 of a V0/V1 cookie and Java masks its lowest bit: nibble 9 means 8 bytes,
    nibble 5 means 4, nibble 3 means 2."""
    for nibble, word in ((8, 8), (9, 8), (4, 4), (5, 4), (2, 2), (3, 2)):
        cookie = hdr_codec.V1_ENCODING_COOKIE | (nibble << 4)
        d = hdr_codec.decode_payload(_v1_payload(cookie, [0, 3, 0, 4], word))
        assert (d.version, d.word_size, d.total_count, d.first_index, d.last_index) == (1, word, 7, 1, 3), nibble
    for nibble in (0, 1, 6, 10):
        cookie = hdr_codec.V1_ENCODING_COOKIE | (nibble << 4)
        with pytest.raises(hdr_codec.HdrFormatError, match=f"has invalid word size {nibble & 0xE}$"):
            hdr_codec.decode_payload(_v1_payload(cookie, [0, 3], 8))


def test_a_v2_payload_reports_the_leb128_word_size_whatever_its_cookie_nibble() -> None:
    layout = layout_for(*LAYOUT)
    counts = np.zeros(layout.counts_len, np.int64)
    counts[[3, 40]] = [2, 9]
    payload = hdr_codec.encode_payload_v2(layout, counts)
    assert struct.unpack_from(">I", payload)[0] == hdr_codec.V2_ENCODING_COOKIE | 0x10  # as Java writes it
    d = hdr_codec.decode_payload(payload)
    assert d.version == 2 and d.word_size == hdr_codec.V2_WORD_SIZE == 9  # a LEB128 count takes up to 9 bytes
    assert (d.first_index, d.last_index, d.total_count) == (3, 40, 11)


def _leb(v: int) -> bytes:
    """ZigZag LEB128 of one value, written out by hand (at most 9 bytes, the 9th whole)."""
    u = ((v << 1) ^ (v >> 63)) & (2**64 - 1)
    out = bytearray()
    while u >= 0x80 and len(out) < 8:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u & 0xFF)
    return bytes(out)


@pytest.mark.parametrize(("data", "slots", "message"), [
    # a value cut inside: the position is where that value starts, after the counts 5 (1 byte) and 300 (2 bytes)
    (_leb(5) + _leb(300) + _leb(300)[:1], 8, "truncated LEB128 count at payload byte 3"),
    (_leb(2**40)[:3], 8, "truncated LEB128 count at payload byte 0"),
    (_leb(5) + _leb(-4)[:0] + bytes([0x80] * 8), 8, "truncated LEB128 count at payload byte 1"),
    # a count past the last slot: where it starts, and the slot it would fill
    (_leb(1) + _leb(2) + _leb(3), 2, "counts at payload byte 2 run past the histogram's 2 slots (slot 2)"),
    (_leb(1) + _leb(300) + _leb(3), 2, "counts at payload byte 3 run past the histogram's 2 slots (slot 2)"),
    # a zero run longer than the slots left
    (_leb(1) + _leb(-3), 3, "counts at payload byte 1 run past the histogram's 3 slots (slot 1)"),
    # the total past 2^63 - 1: exactly at the limit after three counts, the fourth takes it past
    (_leb(2**62) + _leb(1) + _leb(2**62 - 2) + _leb(1), 8,
     f"the count at payload byte {len(_leb(2**62) + _leb(1) + _leb(2**62 - 2))} (slot 3) takes the total beyond the "
     f"signed 64-bit limit {2**63 - 1}"),
])
def test_corrupt_counts_are_refused_naming_the_payload_byte_where_their_value_starts(data, slots, message) -> None:
    with pytest.raises(hdr_codec.HdrFormatError) as exc:
        hdr_codec.zigzag_decode_counts(data, slots)
    assert str(exc.value) == message


def test_a_zero_run_that_fills_the_histogram_exactly_and_the_nine_byte_value() -> None:
    got = hdr_codec.zigzag_decode_counts(_leb(4) + _leb(-3), 4)
    assert got.tolist() == [4, 0, 0, 0]
    big = 2**62 + 12345                                          # zigzag needs all 9 bytes, the 9th whole
    assert len(_leb(big)) == 9 and hdr_codec.zigzag_decode_counts(_leb(big), 1).tolist() == [big]
    assert hdr_codec.zigzag_encode_counts(np.array([big], np.int64)) == _leb(big)
    at_limit = hdr_codec.zigzag_decode_counts(_leb(2**62) + _leb(1) + _leb(2**62 - 2), 3)
    assert int(at_limit.sum()) == 2**63 - 1


@pytest.mark.parametrize("slots", [(0, 5), (0, 1, 2), (1, 7), (0,), (3,)])
def test_first_and_last_non_zero_slots_as_hdrh_counts_them(slots) -> None:
    """A value of 0 lands in slot 0: with counts there and above, slot 0 stays the first non-zero slot (the
    decoder's bounds equal a plain scan of the decoded counts), and both ways of decoding agree."""
    layout = layout_for(1, 3600 * 10**6, 3)
    h = HdrhHistogram(1, 3600 * 10**6, 3)
    counts = np.zeros(layout.counts_len, np.int64)
    for k, s in enumerate(slots, start=2):
        counts[s] = k
        h.record_value(s, k)  # slots below 2048 hold the value itself at 3 figures
    payload = hdr_codec.encode_payload_v2(layout, counts)
    got = hdr_codec.decode_payload(payload)
    assert (got.first_index, got.last_index, got.total_count) == (slots[0], slots[-1], sum(range(2, 2 + len(slots))))
    assert hdr_codec.nonzero_bounds(got.counts) == (slots[0], slots[-1], got.total_count)
    assert got.total_count == h.get_total_count() and h.get_min_value() == slots[0]
    assert h.get_max_value() == slots[-1]


def test_a_payload_has_hdrhs_header_and_its_counts() -> None:
    """The uncompressed V2 payload of a histogram with counts has the hdrh package's header byte for byte: its
    cookie (word-size nibble 0x10), length, normalizing offset, figures, range and the default conversion ratio
    1.0; encode_compressed wraps it in hdrh's compressed cookie. The counts differ in one known way: a single
    empty slot between counts is written as a count of 0 (as Java's HdrHistogram writes it), where hdrh writes a
    zero run of length 1 (-1); both decode to the same counts."""
    layout = layout_for(*LAYOUT)
    h = HdrhHistogram(*LAYOUT)
    for value, n in ((1, 3), (2, 1), (1000, 7), (123_456_789, 2)):
        h.record_value(value, n)
    counts = np.array(h.counts[: layout.counts_len], np.int64)
    assert len(h.counts) == layout.counts_len and counts.sum() == 13
    ours = hdr_codec.encode_payload_v2(layout, counts)
    theirs = _hdrh_payload(h)
    assert ours[:40] == theirs[:40]
    assert (ours[40], theirs[40]) == (0x00, 0x01) and ours[41:] == theirs[41:]  # slot 0, a single empty slot
    assert np.array_equal(hdr_codec.decode_payload(theirs).counts, counts)
    assert np.array_equal(hdr_codec.decode_payload(ours).counts, counts)
    assert struct.unpack_from(">i", ours)[0] == 0x1C849313
    assert hdr_codec.decode_payload(ours).conversion_ratio == 1.0
    blob = hdr_codec.encode_compressed(layout, counts)
    assert struct.unpack_from(">i", blob)[0] == 0x1C849314 and zlib.decompress(blob[8:]) == ours
    assert base64.b64decode(hdr_codec.encode_base64(layout, counts)) == blob


def _v0(counts: bytes, word_nibble: int = 0x80) -> bytes:
    """A V0 payload (HdrHistogram 1.x, 32-byte header, no length field) of 8-byte big-endian counts."""
    low, high, sig = LAYOUT
    return struct.pack(">iiqqq", 0x1C849308 & ~0xF0 | word_nibble, sig, low, high, 0) + counts


def _v1(counts: bytes, word_nibble: int = 0x80) -> bytes:
    low, high, sig = LAYOUT
    return struct.pack(">iiiiqqd", 0x1C849301 & ~0xF0 | word_nibble, len(counts), 0, sig, low, high, 1.0) + counts


def test_payload_lengths_at_their_limits() -> None:
    for short in (b"", b"\x1c\x84\x93"):
        with pytest.raises(hdr_codec.HdrFormatError, match=rf"^payload of {len(short)} bytes is too short for a "
                                                           "cookie$"):
            hdr_codec.decode_payload(short)
    with pytest.raises(hdr_codec.HdrFormatError, match="^payload of 4 bytes is shorter than the 40-byte header$"):
        hdr_codec.decode_payload(struct.pack(">i", 0x1C849313))
    with pytest.raises(hdr_codec.HdrFormatError, match="^payload of 31 bytes is shorter than the 32-byte V0 header$"):
        hdr_codec.decode_payload(_v0(b"")[:31])
    empty = hdr_codec.decode_payload(_v0(b""))  # exactly the header: a V0 histogram without counts
    assert (empty.version, empty.total_count, empty.first_index, empty.word_size) == (0, 0, -1, 8)


def test_a_v0_payload_has_no_offset_and_ratio_1() -> None:
    d = hdr_codec.decode_payload(_v0(struct.pack(">qqq", 0, 5, 2)))
    assert (d.version, d.normalizing_index_offset, d.conversion_ratio) == (0, 0, 1.0)
    assert (d.first_index, d.last_index, d.total_count) == (1, 2, 7)


def test_a_partial_count_word_is_refused_in_v1_and_ignored_in_v0() -> None:
    """V1 carries the counts' length, so a length that is no whole number of words is corrupt; V0 has no length
    field and its counts end where the payload does (a trailing partial word holds no count)."""
    with pytest.raises(hdr_codec.HdrFormatError, match="^V1 counts of 17 bytes are not a multiple of the word "
                                                       "size 8$"):
        hdr_codec.decode_payload(_v1(struct.pack(">qq", 4, 1) + b"\x00"))
    assert hdr_codec.decode_payload(_v1(struct.pack(">qq", 4, 1))).total_count == 5
    d = hdr_codec.decode_payload(_v0(struct.pack(">qq", 4, 1) + b"\x00"))
    assert (d.total_count, d.last_index) == (5, 1)


def test_v1_counts_fill_the_histogram_exactly_and_not_one_more() -> None:
    n = layout_for(*LAYOUT).counts_len
    full = struct.pack(f">{n}q", *([0] * (n - 1) + [3]))
    d = hdr_codec.decode_payload(_v1(full))
    assert (d.last_index, d.total_count) == (n - 1, 3)
    with pytest.raises(hdr_codec.HdrFormatError, match=rf"^V1 payload holds {n + 1} counts but the histogram has "
                                                       rf"only {n} slots$"):
        hdr_codec.decode_payload(_v1(full + struct.pack(">q", 1)))
    v0 = hdr_codec.decode_payload(_v0(full + struct.pack(">q", 1)))  # V0: what the layout holds, the rest dropped
    assert (v0.last_index, v0.total_count) == (n - 1, 3)


@pytest.mark.parametrize("encode", [_v0, _v1], ids=["v0", "v1"])
def test_v0_v1_counts_may_add_up_to_the_signed_64_bit_limit_and_not_beyond(encode) -> None:
    top = 2**63 - 1
    d = hdr_codec.decode_payload(encode(struct.pack(">qqq", top - 1, 0, 1)))
    assert (d.total_count, d.first_index, d.last_index) == (top, 0, 2)
    version = 0 if encode is _v0 else 1
    for counts in ((top, 1), (top, 0, 1), (1, top)):
        with pytest.raises(hdr_codec.HdrFormatError, match=rf"^V{version} payload counts add up beyond the signed "
                                                           rf"64-bit limit {top}$"):
            hdr_codec.decode_payload(encode(struct.pack(f">{len(counts)}q", *counts)))


def test_compressed_header_and_length_limits() -> None:
    cookie = struct.pack(">i", 0x1C849314)
    with pytest.raises(hdr_codec.HdrFormatError, match="^compressed histogram of 7 bytes is shorter than its 8-byte "
                                                       "header$"):
        hdr_codec.decode_compressed(cookie + b"\0\0\0")
    # exactly the header, length 0: a zlib stream of no bytes has no end
    with pytest.raises(hdr_codec.HdrFormatError, match=r"^zlib stream is truncated \(no end of stream\)$"):
        hdr_codec.decode_compressed(cookie + struct.pack(">i", 0))
    with pytest.raises(hdr_codec.HdrFormatError, match="^negative compressed length -1$"):
        hdr_codec.decode_compressed(cookie + struct.pack(">i", -1))


def test_base64_with_a_character_outside_its_alphabet_is_refused() -> None:
    """hlog lines are strict base64: a stray character is corruption, not something to skip."""
    layout = layout_for(*LAYOUT)
    counts = np.zeros(layout.counts_len, np.int64)
    counts[5] = 2
    text = hdr_codec.encode_base64(layout, counts).decode()
    assert hdr_codec.decode_base64(text).total_count == 2
    bad = text[:12] + "*" + text[12:]
    with pytest.raises(hdr_codec.HdrFormatError, match=rf"^invalid base64 \(.*\); {len(bad)} characters$"):
        hdr_codec.decode_base64(bad)


def test_bounds_of_no_counts() -> None:
    assert hdr_codec.nonzero_bounds(np.zeros(7, np.int64)) == (-1, -1, 0)
    assert hdr_codec.nonzero_bounds(np.zeros(0, np.int64)) == (-1, -1, 0)
    empty = hdr_codec.decode_payload(_v1(b""))
    assert (empty.first_index, empty.last_index, empty.total_count) == (-1, -1, 0)
