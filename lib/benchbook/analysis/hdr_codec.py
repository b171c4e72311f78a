"""HdrHistogram's serialised forms: the compressed V2 payload (written) and V0/V1/V2 (read).

A compressed histogram ("histoblob") is, big-endian::

    compressed header : int32 cookie, int32 length of the zlib stream, then the zlib stream
    payload (inflated): V1/V2 header = int32 cookie, int32 payload length, int32 normalizing
                        index offset, int32 significant figures, int64 lowest discernible value,
                        int64 highest trackable value, float64 integer-to-double ratio (40 bytes)
                        V0 header    = int32 cookie, int32 significant figures, int64 lowest,
                        int64 highest, int64 total count (32 bytes)
    counts            : V2 = ZigZag LEB128 (at most 9 bytes, the 9th carries 8 bits), a negative
                        number -n standing for n zero slots; V0/V1 = fixed-width big-endian
                        words, the width in bits 4..7 of the payload cookie (2, 4 or 8 bytes)

Cookies (low nibble = version, bits 4..7 = word size): V0 0x1c849308 / compressed 0x1c849309,
V1 0x1c849301 / 0x1c849302, V2 0x1c849303 / 0x1c849304 (V2 cookies are written 0x1c849313 and
0x1c849314; their word-size nibble is ignored). In an .hlog the compressed bytes are base64 encoded ("HISTF..." for V2).

The normalizing index offset only changes how Java stores the counts internally; the counts in
the payload are in logical order, so it does not change the decoded histogram.

This module knows nothing of the histogram class: it turns bytes into (parameters, counts) and
back. Hot loops (LEB128) are numba kernels with plain-Python references in the tests.
"""

from __future__ import annotations

import base64
import binascii
import struct
import zlib
from dataclasses import dataclass

import numpy as np

from benchbook.analysis.hdr_layout import HdrLayout, layout_for
from benchbook.errors import BenchbookError
from benchbook.kernels import njit

V0_ENCODING_COOKIE = 0x1C849308
V0_COMPRESSED_COOKIE = 0x1C849309
V1_ENCODING_COOKIE = 0x1C849301
V1_COMPRESSED_COOKIE = 0x1C849302
V2_ENCODING_COOKIE = 0x1C849303
V2_COMPRESSED_COOKIE = 0x1C849304
V2_WORD_SIZE = 9

_V1V2_HEADER = struct.Struct(">iiiiqqd")  # 40 bytes
_V0_HEADER = struct.Struct(">iiqqq")  # 32 bytes
_COMPRESSED_HEADER = struct.Struct(">ii")  # 8 bytes


class HdrFormatError(BenchbookError, ValueError):
    """A histogram payload that is not a valid HdrHistogram encoding; the message says why."""


@dataclass
class DecodedHistogram:
    """What a payload holds: the layout parameters and the logical counts array."""

    version: int  # 0, 1 or 2
    lowest_discernible_value: int
    highest_trackable_value: int
    significant_figures: int
    conversion_ratio: float
    normalizing_index_offset: int
    counts: np.ndarray  # int64, exactly layout.counts_len long
    word_size: int
    first_index: int  # first non-zero slot (-1: empty)
    last_index: int  # last non-zero slot (-1: empty)
    total_count: int


def _cookie_base(cookie: int) -> int:
    return cookie & ~0xF0 & 0xFFFFFFFF


def _word_size(cookie: int) -> int:
    """Word size of a V0/V1 cookie (as Java reads it: bits 4..7, lowest bit ignored)."""
    return ((cookie & 0xF0) >> 4) & 0xE


# ---- ZigZag LEB128 (numba kernels) -------------------------------------------------------


@njit(cache=True)
def _zz_encode_counts(counts: np.ndarray, limit: int) -> tuple[np.ndarray, int]:  # pragma: no cover - jit
    if limit < 0:  # up to the last non-zero slot
        limit = counts.shape[0]
        while limit > 0 and counts[limit - 1] == 0:
            limit -= 1
    out = np.empty(limit * 9 + 9, dtype=np.uint8)
    pos = 0
    i = 0
    while i < limit:
        v = counts[i]
        i += 1
        if v < 0:
            return out, -i  # slot i - 1 is negative
        if v == 0:
            zeros = 1
            while i < limit and counts[i] == 0:
                zeros += 1
                i += 1
            if zeros > 1:
                v = -zeros
        # ZigZag
        u = np.uint64((v << 1) ^ (v >> 63))
        n = 0
        while n < 8:
            if (u >> np.uint64(7)) == np.uint64(0):
                break
            out[pos] = np.uint8((u & np.uint64(0x7F)) | np.uint64(0x80))
            pos += 1
            u = u >> np.uint64(7)
            n += 1
        out[pos] = np.uint8(u & np.uint64(0xFF))
        pos += 1
    return out, pos


@njit(cache=True)
def _zz_decode_counts(  # pragma: no cover - jit
    data: np.ndarray, counts: np.ndarray
) -> tuple[int, int, int, int, int, int]:
    """Decode into `counts`; returns (status, data position, slots filled, first non-zero slot,
    last non-zero slot, total count). status 0 ok, 1 truncated value, 2 zero run/counts beyond
    the histogram."""
    n = data.shape[0]
    limit = counts.shape[0]
    pos = 0
    idx = 0
    first = -1
    last = -1
    total = 0
    while pos < n:
        start = pos
        u = np.uint64(0)
        shift = np.uint64(0)
        nbytes = 0
        done = False
        while pos < n:
            b = np.uint64(data[pos])
            pos += 1
            nbytes += 1
            if nbytes == 9:
                u |= b << np.uint64(56)
                done = True
                break
            u |= (b & np.uint64(0x7F)) << shift
            shift += np.uint64(7)
            if (b & np.uint64(0x80)) == np.uint64(0):
                done = True
                break
        if not done:
            return 1, start, idx, first, last, total
        v = np.int64(u >> np.uint64(1)) ^ -np.int64(u & np.uint64(1))
        if v < 0:
            zeros = -v
            if zeros > limit - idx:
                return 2, start, idx, first, last, total
            idx += zeros
        else:
            if idx >= limit:
                return 2, start, idx, first, last, total
            counts[idx] = v
            if v != 0:
                if first < 0:
                    first = idx
                last = idx
                if total > 9223372036854775807 - v:
                    return 3, start, idx, first, last, total
                total += v
            idx += 1
    return 0, pos, idx, first, last, total


@njit(cache=True)
def _nonzero_bounds(counts: np.ndarray) -> tuple[int, int, int]:  # pragma: no cover - jit
    first = -1
    last = -1
    total = 0
    for i in range(counts.shape[0]):
        c = counts[i]
        if c != 0:
            if first < 0:
                first = i
            last = i
            total += c
    return first, last, total


def nonzero_bounds(counts: np.ndarray) -> tuple[int, int, int]:
    """(first non-zero slot, last non-zero slot, total count); -1, -1, 0 when all are zero."""
    first, last, total = _nonzero_bounds(np.ascontiguousarray(counts, dtype=np.int64))
    return int(first), int(last), int(total)


def zigzag_encode_counts(counts: np.ndarray, limit: int | None = None) -> bytes:
    """V2 counts encoding of counts[:limit] (zero runs of 2+ slots as one negative number);
    limit -1 means up to the last non-zero slot. Counts must not be negative (HdrHistogram's
    record/merge never produce negative counts)."""
    arr = np.ascontiguousarray(counts, dtype=np.int64)
    out, n = _zz_encode_counts(arr, len(arr) if limit is None else int(limit))
    if n < 0:
        raise HdrFormatError(f"cannot encode a negative count (slot {-n - 1} holds {int(arr[-n - 1])})")
    return out[:n].tobytes()


def zigzag_decode_counts(data: bytes, counts_len: int) -> np.ndarray:
    """Decode V2 counts into an array of `counts_len` slots."""
    return _zigzag_decode(data, counts_len)[0]


def _zigzag_decode(data: bytes, counts_len: int) -> tuple[np.ndarray, int, int, int]:
    counts = np.zeros(counts_len, dtype=np.int64)
    status, pos, idx, first, last, total = _zz_decode_counts(np.frombuffer(data, dtype=np.uint8), counts)
    if status == 1:
        raise HdrFormatError(f"truncated LEB128 count at payload byte {pos}")
    if status == 2:
        raise HdrFormatError(
            f"counts at payload byte {pos} run past the histogram's {counts_len} slots (slot {idx})"
        )
    if status == 3:
        raise HdrFormatError(
            f"the count at payload byte {pos} (slot {idx}) takes the total beyond the signed 64-bit limit "
            f"{2**63 - 1}"
        )
    return counts, int(first), int(last), int(total)


# ---- payloads -------------------------------------------------------------------------------


def encode_payload_v2(layout: HdrLayout, counts: np.ndarray, conversion_ratio: float = 1.0) -> bytes:
    """Uncompressed V2 payload: 40-byte header + ZigZag LEB128 counts up to the last non-zero."""
    body = zigzag_encode_counts(counts, -1)  # -1: up to the last non-zero slot
    header = _V1V2_HEADER.pack(
        V2_ENCODING_COOKIE | 0x10,
        len(body),
        0,
        layout.significant_figures,
        layout.lowest_discernible_value,
        layout.highest_trackable_value,
        float(conversion_ratio),
    )
    return header + body


def encode_compressed(layout: HdrLayout, counts: np.ndarray, conversion_ratio: float = 1.0) -> bytes:
    """Compressed V2 histogram (binary; base64 it for .hlog files)."""
    deflated = zlib.compress(encode_payload_v2(layout, counts, conversion_ratio))
    return _COMPRESSED_HEADER.pack(V2_COMPRESSED_COOKIE | 0x10, len(deflated)) + deflated


def encode_base64(layout: HdrLayout, counts: np.ndarray, conversion_ratio: float = 1.0) -> bytes:
    return base64.b64encode(encode_compressed(layout, counts, conversion_ratio))


def _inflate(blob: bytes, length: int) -> bytes:
    stream = blob[_COMPRESSED_HEADER.size : _COMPRESSED_HEADER.size + length]
    if len(stream) < length:
        raise HdrFormatError(
            f"compressed length field says {length} bytes but only {len(stream)} follow the header"
        )
    d = zlib.decompressobj()
    try:
        out = d.decompress(stream)
        out += d.flush()
    except zlib.error as exc:
        raise HdrFormatError(f"zlib stream is corrupt: {exc}") from None
    if not d.eof:
        raise HdrFormatError("zlib stream is truncated (no end of stream)")
    return out


def decode_payload(payload: bytes) -> DecodedHistogram:
    """Decode an uncompressed V0, V1 or V2 payload."""
    if len(payload) < 4:
        raise HdrFormatError(f"payload of {len(payload)} bytes is too short for a cookie")
    cookie = struct.unpack_from(">i", payload)[0] & 0xFFFFFFFF
    base = _cookie_base(cookie)
    word = _word_size(cookie)
    if base in (V1_ENCODING_COOKIE, V2_ENCODING_COOKIE):
        if len(payload) < _V1V2_HEADER.size:
            raise HdrFormatError(f"payload of {len(payload)} bytes is shorter than the 40-byte header")
        _, plen, norm, sig, lowest, highest, ratio = _V1V2_HEADER.unpack_from(payload)
        version = 2 if base == V2_ENCODING_COOKIE else 1
        body = payload[_V1V2_HEADER.size :]
        if plen < 0:
            raise HdrFormatError(f"negative payload length field {plen}")
        # Older HdrHistogram_c wrote the length including the 40-byte header; Java and hdrh read
        # such payloads (missing bytes would be zero counts), so take what is there.
        body = body[:plen]
    elif base == V0_ENCODING_COOKIE:
        if len(payload) < _V0_HEADER.size:
            raise HdrFormatError(f"payload of {len(payload)} bytes is shorter than the 32-byte V0 header")
        _, sig, lowest, highest, _total = _V0_HEADER.unpack_from(payload)
        version, norm, ratio = 0, 0, 1.0
        body = payload[_V0_HEADER.size :]
    else:
        raise HdrFormatError(f"unknown payload cookie 0x{cookie:08x} (expected an HdrHistogram V0/V1/V2 cookie)")
    try:
        layout = layout_for(int(lowest), int(highest), int(sig))
    except ValueError as exc:
        raise HdrFormatError(f"invalid histogram parameters in header: {exc}") from None
    if version == 2:  # the word-size nibble of a V2 cookie is not used (always LEB128)
        word = V2_WORD_SIZE
        counts, first, last, total = _zigzag_decode(body, layout.counts_len)
    else:
        if word not in (2, 4, 8):
            raise HdrFormatError(f"V{version} payload cookie 0x{cookie:08x} has invalid word size {word}")
        n = len(body) // word
        if version == 1 and len(body) % word:
            raise HdrFormatError(f"V1 counts of {len(body)} bytes are not a multiple of the word size {word}")
        if n > layout.counts_len:
            if version == 1:
                raise HdrFormatError(
                    f"V1 payload holds {n} counts but the histogram has only {layout.counts_len} slots"
                )
            n = layout.counts_len  # V0 carries no length: take what the layout holds
        dtype = {2: ">i2", 4: ">i4", 8: ">i8"}[word]
        counts = np.zeros(layout.counts_len, dtype=np.int64)
        counts[:n] = np.frombuffer(body, dtype=dtype, count=n)
        if n and int(counts[:n].min()) < 0:
            raise HdrFormatError("payload holds negative counts")
        if n and sum(int(c) for c in counts[:n][counts[:n] > 0].tolist()) > 2**63 - 1:
            raise HdrFormatError(f"V{version} payload counts add up beyond the signed 64-bit limit {2**63 - 1}")
        first, last, total = nonzero_bounds(counts)
    return DecodedHistogram(
        version=version,
        lowest_discernible_value=layout.lowest_discernible_value,
        highest_trackable_value=layout.highest_trackable_value,
        significant_figures=layout.significant_figures,
        conversion_ratio=float(ratio),
        normalizing_index_offset=int(norm),
        counts=counts,
        word_size=word,
        first_index=first,
        last_index=last,
        total_count=total,
    )


def decode_compressed(blob: bytes) -> DecodedHistogram:
    """Decode a compressed histogram (V0, V1 or V2), binary form."""
    if len(blob) < _COMPRESSED_HEADER.size:
        raise HdrFormatError(f"compressed histogram of {len(blob)} bytes is shorter than its 8-byte header")
    cookie, length = _COMPRESSED_HEADER.unpack_from(blob)
    cookie &= 0xFFFFFFFF
    base = _cookie_base(cookie)
    if base not in (V0_COMPRESSED_COOKIE, V1_COMPRESSED_COOKIE, V2_COMPRESSED_COOKIE):
        if base in (V0_ENCODING_COOKIE, V1_ENCODING_COOKIE, V2_ENCODING_COOKIE):
            return decode_payload(blob)  # an uncompressed payload: accept it as well
        raise HdrFormatError(
            f"unknown cookie 0x{cookie:08x} (expected a compressed HdrHistogram cookie 0x1c8493x4/x2/x9)"
        )
    if length < 0:
        raise HdrFormatError(f"negative compressed length {length}")
    decoded = decode_payload(_inflate(blob, length))
    expected_version = {V0_COMPRESSED_COOKIE: 0, V1_COMPRESSED_COOKIE: 1, V2_COMPRESSED_COOKIE: 2}[base]
    if decoded.version != expected_version:
        raise HdrFormatError(
            f"compressed cookie says V{expected_version} but the payload is V{decoded.version}"
        )
    return decoded


def decode_base64(text: bytes | str) -> DecodedHistogram:
    """Decode a base64 compressed histogram ("HISTF...", "HISTIg...", "HISTiQ...")."""
    if isinstance(text, str):
        try:
            text = text.encode("ascii")
        except UnicodeEncodeError:
            raise HdrFormatError("histogram text is not ASCII base64") from None
    text = text.strip()
    try:
        blob = binascii.a2b_base64(text, strict_mode=True)
    except binascii.Error as exc:
        raise HdrFormatError(f"invalid base64 ({exc}); {len(text)} characters") from None
    return decode_compressed(blob)
