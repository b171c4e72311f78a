"""capture.reader at its edges: capture_format on every kind of file (and closing it), a pcap version other than
2, the chunk size and recycle limits, the release points and array sets of recycling, if_tsresol at the limits of a
64-bit count, and every pcapng check by its exact text and byte offset: a section header's byte-order magic, length
and truncation, an interface description block's length, body and truncation, a block of impossible length, a
packet block naming an undefined interface, a pcapng file that does not start with a section header, and a last
block cut inside its first 12 bytes (coverage found these unrun, or run only by chance by the property tests)."""


from __future__ import annotations

import os
import re
import struct
import warnings
from pathlib import Path

import numpy as np
import pytest
import zstandard

from benchbook.capture import (
    CaptureFormatError,
    CaptureWarning,
    capture_format,
    open_capture,
    reader,
    scan,
    write_pcap,
    write_pcapng,
)
from benchbook.capture.reader import _ArrayPool, _Interfaces, _parse_idb, _read_pcapng, tsresol_conversion
from benchbook.capture.source import ByteSource
from capture_reference import zstd_cut_after_block

T0 = 1_700_000_000_000_000_000
LE_BOM = struct.pack("<I", 0x1A2B3C4D)


# --- pcapng bytes by hand ------------------------------------------------------------------------------------

def block(btype: int, body: bytes, e: str = "<", blen: int | None = None) -> bytes:
    """A pcapng block; blen: the length its header claims (the trailer keeps the true one)."""
    body += b"\0" * (-len(body) % 4)
    n = len(body) + 12
    return struct.pack(e + "II", btype, n if blen is None else blen) + body + struct.pack(e + "I", n)


def option(code: int, value: bytes, e: str = "<") -> bytes:
    return struct.pack(e + "HH", code, len(value)) + value + b"\0" * (-len(value) % 4)


def shb(e: str = "<", bom: bytes | None = None, blen: int | None = None) -> bytes:
    """The shortest section header block: 28 bytes, no options."""
    body = (struct.pack(e + "I", 0x1A2B3C4D) if bom is None else bom) + struct.pack(e + "HHq", 1, 0, -1)
    return block(scan.SHB_TYPE, body, e, blen)


def idb(e: str = "<", tsresol: int | None = None, snaplen: int = 0, linktype: int = 1,
        blen: int | None = None) -> bytes:
    """An interface description block: 20 bytes without options, 32 with an if_tsresol."""
    body = struct.pack(e + "HHI", linktype, 0, snaplen)
    if tsresol is not None:
        body += option(9, bytes([tsresol]), e) + option(0, b"", e)
    return block(scan.IDB_TYPE, body, e, blen)


def epb(ticks: int, frame: bytes, iface: int = 0, e: str = "<") -> bytes:
    return block(scan.EPB_TYPE, struct.pack(e + "IIIII", iface, ticks >> 32, ticks & 0xFFFFFFFF, len(frame),
                                            len(frame)) + frame, e)


def frame(i: int, size: int = 60) -> bytes:
    return struct.pack(">I", i) + bytes((i * 7 + k) % 256 for k in range(size - 4))


def packets(path: Path, **kw) -> tuple[list[tuple[int, bytes]], list[str]]:
    """(ts_ns, frame) of every packet and the CaptureWarnings, in order."""
    got = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for c in open_capture(path, **kw):
            got += [(int(c.ts_ns[i]), c.frame(i)) for i in range(len(c))]
    return got, [str(w.message) for w in caught if issubclass(w.category, CaptureWarning)]


def format_error(path: Path, **kw) -> tuple[CaptureFormatError, list[tuple[int, bytes]]]:
    """The CaptureFormatError reading path ends in, and the packets handed out before it."""
    got = []
    with pytest.raises(CaptureFormatError) as info:
        for c in open_capture(path, **kw):
            got += [(int(c.ts_ns[i]), c.frame(i)) for i in range(len(c))]
    assert info.value.path == str(path)
    return info.value, got


def zst(data: bytes) -> bytes:
    return zstandard.ZstdCompressor(level=1).compress(data)


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


# --- capture_format -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("compressed", [False, True])
def test_capture_format_tells_pcap_from_pcapng_plain_or_compressed(tmp_path, compressed):
    suffix = ".zst" if compressed else ""
    ts, frames = [T0, T0 + 1], [frame(0), frame(1)]
    files = {
        "pcap": [write_pcap(tmp_path / f"us-le.pcap{suffix}", ts, frames, nanosecond=False),
                 write_pcap(tmp_path / f"ns-be.pcap{suffix}", ts, frames, big_endian=True)],
        "pcapng": [write_pcapng(tmp_path / f"le.pcapng{suffix}", ts, frames),
                   write_pcapng(tmp_path / f"be.pcapng{suffix}", ts, frames, big_endian=True)],
    }
    before = open_fds()
    for kind, paths in files.items():
        for p in paths:
            assert (p.read_bytes()[:4] == b"\x28\xb5\x2f\xfd") is compressed
            assert capture_format(p) == kind
            assert capture_format(str(p)) == kind
    assert open_fds() == before  # each file closed again


@pytest.mark.parametrize("compressed", [False, True])
def test_capture_format_refuses_what_is_no_capture_and_closes_it(tmp_path, compressed):
    p = tmp_path / "notes.txt"
    p.write_bytes(zst(b"GIF89a" + bytes(40)) if compressed else b"GIF89a" + bytes(40))
    before = open_fds()
    with pytest.raises(CaptureFormatError) as info:
        capture_format(p)
    assert str(info.value) == (
        f"{p}: at byte offset 0: unknown magic 0x47494638: expected a pcap (a1b2c3d4/a1b23c4d, either byte order) "
        "or pcapng (0a0d0d0a) file, plain or zstd-compressed")
    assert info.value.offset == 0 and info.value.path == str(p)
    assert open_fds() == before


@pytest.mark.parametrize("big", [False, True])
def test_a_pcap_version_other_than_2_is_refused_at_its_offset(tmp_path, big):
    e = ">" if big else "<"
    good = write_pcap(tmp_path / "v.pcap", [T0], [frame(0)], big_endian=big).read_bytes()
    assert struct.unpack(e + "HH", good[4:8]) == (2, 4)
    for vmaj, vmin in ((1, 4), (3, 0), (0, 2)):
        p = tmp_path / f"v{vmaj}.pcap"
        p.write_bytes(good[:4] + struct.pack(e + "HH", vmaj, vmin) + good[8:])
        err, got = format_error(p)
        assert str(err) == f"{p}: at byte offset 4: pcap version {vmaj}.{vmin}: expected 2.4"
        assert err.offset == 4 and got == []
    p = tmp_path / "v2.pcap"  # the minor version is not checked
    p.write_bytes(good[:4] + struct.pack(e + "HH", 2, 2) + good[8:])
    assert packets(p) == ([(T0, frame(0))], [])


# --- chunk size and recycling ---------------------------------------------------------------------------------

def test_chunk_packets_below_one_refused_and_one_accepted(tmp_path):
    p = write_pcap(tmp_path / "c.pcap", T0 + np.arange(5), [frame(i) for i in range(5)])
    for bad in (0, -1):
        with pytest.raises(ValueError, match=r"^chunk_packets must be >= 1$"):
            open_capture(p, chunk_packets=bad)
    chunks = [(c.first_index, len(c), c.frame(0)) for c in open_capture(p, chunk_packets=1)]
    assert chunks == [(i, 1, frame(i)) for i in range(5)]


def test_release_point_keeps_the_last_recycle_minus_two_chunk_starts():
    for recycle in (0, 2):
        pool = _ArrayPool(recycle)
        assert [pool.release_point(s) for s in (100, 200, 300)] == [None, None, None]
    starts = [100, 200, 300, 400, 500]
    want = {3: [100, 200, 300, 400, 500], 4: [100, 100, 200, 300, 400], 5: [100, 100, 100, 200, 300]}
    for recycle, points in want.items():
        pool = _ArrayPool(recycle)
        assert [pool.release_point(s) for s in starts] == points
        assert pool.starts == starts[-(recycle - 2):]


RECORD = 16 + 60  # a pcap record of a 60-byte frame
ENTRY = 92  # an enhanced packet block of a 60-byte frame


@pytest.mark.parametrize("fmt", ["pcap", "pcapng"])
@pytest.mark.parametrize("recycle", [0, 2, 3, 4])
def test_the_reader_releases_pages_up_to_the_release_point(tmp_path, monkeypatch, fmt, recycle):
    """A mapped file of 20 packets in chunks of 4: recycle=N >= 3 releases up to the start of the oldest of the
    last N - 2 chunks; otherwise up to 1 MiB before where the reader stopped."""
    ts, frames = T0 + np.arange(20) * 1000, [frame(i) for i in range(20)]
    if fmt == "pcap":
        p, first, size = write_pcap(tmp_path / "r.pcap", ts, frames), 24, RECORD
    else:
        p = tmp_path / "r.pcapng"
        p.write_bytes(shb() + idb(tsresol=9) + b"".join(epb(int(t), f) for t, f in zip(ts, frames, strict=True)))
        first, size = 28 + 32, ENTRY
    points: list[int] = []
    original = ByteSource.release

    def release(self, upto):
        points.append(upto)
        original(self, upto)

    monkeypatch.setattr(ByteSource, "release", release)
    got = [(c.first_index, [c.frame(i) for i in range(len(c))]) for c in open_capture(p, chunk_packets=4,
                                                                                        recycle=recycle)]
    assert got == [(4 * k, frames[4 * k : 4 * k + 4]) for k in range(5)]
    starts = [first + 4 * size * k for k in range(5)]
    if recycle == 3:
        assert points == starts
    elif recycle == 4:
        assert points == [starts[0]] + starts[:4]
    else:
        assert points == [s + 4 * size - (1 << 20) for s in starts]


@pytest.mark.parametrize("recycle", [3, 4])
def test_release_points_are_file_offsets_across_buffer_refills(tmp_path, monkeypatch, recycle):
    """A compressed file read in 500-byte buffers: the points are offsets in the file, not in the buffer."""
    n = 30
    frames = [frame(i) for i in range(n)]
    p = write_pcap(tmp_path / "r.pcap.zst", T0 + np.arange(n), frames)
    points: list[int] = []
    monkeypatch.setattr(ByteSource, "release", lambda self, upto: points.append(upto))
    starts, got = [], []
    for c in open_capture(p, chunk_packets=4, buffer_bytes=500, recycle=recycle):
        starts.append(int(c.file_offsets[0]))
        got += [c.frame(i) for i in range(len(c))]
    assert got == frames
    assert starts == [24 + RECORD * k for k in (0, 4, 6, 10, 12, 16, 18, 22, 24, 28)]
    keep = recycle - 2
    assert points == [starts[max(0, i - keep + 1)] for i in range(len(starts))]


def test_array_pool_reuses_a_set_until_a_chunk_needs_more_rows():
    pool = _ArrayPool(2)
    a = pool.get(4)
    b = pool.get(6)
    assert [len(x) for x in a] == [4] * 5 and [len(x) for x in b] == [6] * 5
    assert [x.dtype for x in a] == [np.int64, np.uint32, np.uint32, np.int64, np.int64]
    again = pool.get(4)  # the first set, as large as asked: reused
    assert all(np.shares_memory(x, y) for x, y in zip(a, again, strict=True))
    smaller = pool.get(5)  # the second set, larger than asked: reused
    assert [len(x) for x in smaller] == [5] * 5
    assert all(np.shares_memory(x, y) for x, y in zip(b, smaller, strict=True))
    bigger = pool.get(7)  # the first set is too small: a new one
    assert [len(x) for x in bigger] == [7] * 5
    assert not any(np.shares_memory(x, y) for x, y in zip(a, bigger, strict=True))
    assert [len(x) for x in pool.sets[0]] == [7] * 5 and len(pool.sets) == 2
    assert pool.turn == 5
    assert not any(np.shares_memory(x, y) for x, y in zip(_ArrayPool(0).get(3), _ArrayPool(0).get(3), strict=True))


def test_a_recycled_set_too_small_for_a_later_chunk_is_replaced(tmp_path, monkeypatch):
    """A compressed file of 4-byte frames read in 200-byte buffers: the first buffer also holds the file header,
    so the first chunk has 8 packets and room for 12, the later ones 10 and room for 13. With recycle=2 the third
    chunk needs a new set in the first one's place; every chunk holds its own packets, also while the next is read."""
    n = 50
    ts = T0 + np.arange(n) * 3
    frames = [struct.pack(">I", i * 17) for i in range(n)]
    p = write_pcap(tmp_path / "g.pcap.zst", ts, frames)
    sizes: list[int] = []
    alloc = reader._alloc

    def counted(k):
        sizes.append(k)
        return alloc(k)

    monkeypatch.setattr(reader, "_alloc", counted)
    counts, previous = [], None
    for c in open_capture(p, chunk_packets=1000, buffer_bytes=200, recycle=2):
        counts.append(len(c))
        span = slice(c.first_index, c.first_index + len(c))
        assert c.ts_ns.tolist() == ts[span].tolist()
        assert [c.frame(i) for i in range(len(c))] == frames[span]
        if previous is not None:  # the chunk before is still whole
            chunk, want_ts, want_frames = previous
            assert chunk.ts_ns.tolist() == want_ts and [chunk.frame(i) for i in range(len(chunk))] == want_frames
        previous = (c, ts[span].tolist(), frames[span])
    assert counts == [8, 10, 10, 10, 10, 2]
    assert sizes == [12, 13, 13]


# --- if_tsresol -------------------------------------------------------------------------------------------------

def test_tsresol_conversion_at_its_limits():
    assert tsresol_conversion(0) == (scan.TS_MUL, 10**9)
    assert tsresol_conversion(6) == (scan.TS_MUL, 1000)
    assert tsresol_conversion(9) == (scan.TS_MUL, 1)
    assert tsresol_conversion(10) == (scan.TS_DIV, 10)
    assert tsresol_conversion(19) == (scan.TS_DIV, 10**10)
    assert tsresol_conversion(0x80 | 0) == (scan.TS_POW2, 0)
    assert tsresol_conversion(0x80 | 63) == (scan.TS_POW2, 63)
    for exp in (20, 0x7F):
        with pytest.raises(ValueError, match=rf"^if_tsresol 10\^-{exp} is finer than a 64-bit timestamp can count "
                                             r"\(at most 10\^-19\)$"):
            tsresol_conversion(exp)
    for exp in (64, 0x7F):
        with pytest.raises(ValueError, match=rf"^if_tsresol 2\^-{exp} is finer than a 64-bit timestamp can count "
                                             r"\(at most 2\^-63\)$"):
            tsresol_conversion(0x80 | exp)


def test_finest_decimal_and_binary_resolutions_read_and_one_step_finer_refused(tmp_path):
    ts = [1_000_000_123, 1_234_567_891]  # 10^10 ticks a ns: small times, or the count leaves 64 bits
    frames = [frame(0), frame(1)]
    p = write_pcapng(tmp_path / "d19.pcapng", ts, frames, tsresol=19)
    assert packets(p) == ([(ts[0], frames[0]), (ts[1], frames[1])], [])
    p = write_pcapng(tmp_path / "b63.pcapng", ts, frames, tsresol=0x80 | 63)
    got, msgs = packets(p)
    assert [f for _, f in got] == frames and msgs == []
    assert all(0 <= t - g <= 1 for t, (g, _) in zip(ts, got, strict=True))  # 2^-63 s ticks lose below a ns
    for tsresol, text, limit in ((20, "10^-20", "10^-19"), (0x80 | 64, "2^-64", "2^-63")):
        p = write_pcapng(tmp_path / f"{tsresol}.pcapng", [123_456_789], frames[:1], tsresol=tsresol)
        z = tmp_path / f"{tsresol}.pcapng.zst"
        z.write_bytes(zst(p.read_bytes()))
        for path in (p, z):
            err, got = format_error(path)
            # write_pcapng's section header is 48 bytes: the interface description block follows
            assert str(err) == (f"{path}: at byte offset 48: if_tsresol {text} is finer than a 64-bit timestamp can "
                                f"count (at most {limit})")
            assert err.offset == 48 and got == []


# --- section header blocks --------------------------------------------------------------------------------------

def section(e: str = "<", n: int = 2, base: int = 0) -> bytes:
    """A whole section: shortest header, a nanosecond interface, n packets (ids base ..)."""
    return shb(e) + idb(e, tsresol=9) + b"".join(epb(T0 + base + i, frame(base + i), e=e) for i in range(n))


SECTION = 28 + 32 + 2 * ENTRY  # bytes of section() with two packets


@pytest.mark.parametrize("e", ["<", ">"])
def test_the_shortest_section_header_is_read(tmp_path, e):
    p = tmp_path / "s.pcapng"
    p.write_bytes(section(e, 2) + section(e, 1, base=2))
    assert len(shb(e)) == 28
    assert packets(p) == ([(T0 + i, frame(i)) for i in range(3)], [])


@pytest.mark.parametrize("first", [True, False])
@pytest.mark.parametrize("bom", [bytes.fromhex("1a2b3c4e"), bytes.fromhex("4c3c2b1a"), bytes(4)])
def test_a_section_header_with_a_bad_byte_order_magic_is_refused(tmp_path, bom, first):
    p = tmp_path / "bom.pcapng"
    at = 0 if first else SECTION
    p.write_bytes((b"" if first else section()) + shb(bom=bom) + idb() + epb(1, frame(9)))
    err, got = format_error(p)
    assert str(err) == f"{p}: at byte offset {at + 8}: section header byte-order magic 0x{bom.hex()}: expected 1a2b3c4d"
    assert err.offset == at + 8
    assert got == ([] if first else [(T0, frame(0)), (T0 + 1, frame(1))])


@pytest.mark.parametrize("e", ["<", ">"])
@pytest.mark.parametrize("first", [True, False])
@pytest.mark.parametrize("blen", [24, 26, 30, 0])
def test_a_section_header_length_below_28_or_not_a_multiple_of_4_is_refused(tmp_path, e, first, blen):
    p = tmp_path / "len.pcapng"
    at = 0 if first else SECTION
    p.write_bytes((b"" if first else section(e)) + shb(e, blen=blen) + idb(e) + epb(1, frame(9), e=e))
    err, got = format_error(p)
    assert str(err) == (f"{p}: at byte offset {at + 4}: section header block length {blen}: expected a multiple of 4, "
                        ">= 28")
    assert err.offset == at + 4
    assert got == ([] if first else [(T0, frame(0)), (T0 + 1, frame(1))])


@pytest.mark.parametrize("compressed", [False, True])
def test_a_truncated_section_header_warns_with_the_packets_before_it(tmp_path, compressed):
    for before, cut, count in ((b"", 12, 0), (b"", 27, 0), (section(), 20, 2)):
        p = tmp_path / ("t.pcapng.zst" if compressed else "t.pcapng")
        data = before + shb()[:cut]
        p.write_bytes(zst(data) if compressed else data)
        got, msgs = packets(p, buffer_bytes=64)
        assert got == [(T0 + i, frame(i)) for i in range(count)]
        assert msgs == [f"{p}: truncated last section header block at byte offset {len(before)}: it needs 28 bytes "
                        f"but only {cut} remain; using the {count} complete packets before it"]


def test_a_pcapng_file_must_start_with_a_section_header(tmp_path):
    """open_capture tells pcapng by the section header's type, so only the pcapng reader itself meets a file that
    starts with another block."""
    p = tmp_path / "nohdr.pcapng"
    p.write_bytes(idb(tsresol=9) + epb(T0, frame(0)))
    with pytest.raises(CaptureFormatError) as info:
        list(_read_pcapng(p, ByteSource(p), np.zeros(0, np.uint8), 16, 1 << 16, _ArrayPool(0)))
    assert str(info.value) == f"{p}: at byte offset 0: pcapng file does not start with a section header block"
    assert info.value.offset == 0
    with pytest.raises(CaptureFormatError, match="^" + re.escape(f"{p}: at byte offset 0: unknown magic 0x01000000")):
        open_capture(p)


# --- interface description blocks --------------------------------------------------------------------------------

@pytest.mark.parametrize("e", ["<", ">"])
def test_the_shortest_interface_description_block_is_read_with_microsecond_ticks(tmp_path, e):
    p = tmp_path / "i.pcapng"
    p.write_bytes(shb(e) + idb(e, snaplen=1500, linktype=228) + epb(1_700_000_000_123_456, frame(0), e=e))
    assert len(idb(e)) == 20
    chunks = list(open_capture(p))
    assert [(c.linktype, c.snaplen, c.ts_ns.tolist(), c.frame(0)) for c in chunks] == [
        (228, 1500, [1_700_000_000_123_456_000], frame(0))]


@pytest.mark.parametrize("e", ["<", ">"])
@pytest.mark.parametrize("blen", [16, 12, 22, 0])
def test_an_interface_description_block_length_below_20_or_not_a_multiple_of_4_is_refused(tmp_path, e, blen):
    p = tmp_path / "idb.pcapng"
    p.write_bytes(shb(e) + idb(e, tsresol=9) + epb(T0, frame(0), e=e) + idb(e, blen=blen) + epb(T0, frame(1), e=e))
    at = 28 + 32 + ENTRY
    err, got = format_error(p)
    assert str(err) == (f"{p}: at byte offset {at + 4}: interface description block length {blen}: expected a "
                        "multiple of 4, >= 20")
    assert err.offset == at + 4 and got == [(T0, frame(0))]


def test_an_interface_description_body_shorter_than_8_bytes_is_refused():
    """The reader never hands over such a body (a block of at least 20 bytes has 8), so the parser is asked
    directly."""
    ifs = _Interfaces()
    for body in (b"", bytes(7)):
        with pytest.raises(CaptureFormatError) as info:
            _parse_idb(Path("x.pcapng"), body, "<", 60, ifs)
        assert str(info.value) == "x.pcapng: at byte offset 60: interface description block shorter than 20 bytes"
        assert info.value.offset == 60
    assert (ifs.kind, ifs.param, ifs.offset, ifs.snap, ifs.linktype) == ([], [], [], [], [])
    _parse_idb(Path("x.pcapng"), struct.pack(">HHI", 147, 0, 9000), ">", 60, ifs)
    assert (ifs.kind, ifs.param, ifs.offset, ifs.snap, ifs.linktype) == ([scan.TS_MUL], [1000], [0], [9000], [147])


@pytest.mark.parametrize("compressed", [False, True])
def test_a_truncated_interface_description_block_warns_with_the_packets_before_it(tmp_path, compressed):
    for before, cut, count in ((shb(), 12, 0), (shb(), 31, 0), (section(), 20, 2)):
        p = tmp_path / ("t.pcapng.zst" if compressed else "t.pcapng")
        data = before + idb(tsresol=9)[:cut]
        p.write_bytes(zst(data) if compressed else data)
        got, msgs = packets(p, buffer_bytes=64)
        assert got == [(T0 + i, frame(i)) for i in range(count)]
        assert msgs == [f"{p}: truncated last interface description block at byte offset {len(before)}: it needs 32 "
                        f"bytes but only {cut} remain; using the {count} complete packets before it"]


# --- packet blocks -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("defined", [0, 1, 2])
def test_a_packet_block_of_an_undefined_interface_is_refused_after_the_packets_before_it(tmp_path, defined):
    p = tmp_path / "if.pcapng"
    good = b"".join(epb(T0 + i, frame(i), iface=i % defined) for i in range(3)) if defined else b""
    p.write_bytes(shb() + idb(tsresol=9) * defined + good + epb(T0 + 5, frame(5), iface=defined))
    at = 28 + 32 * defined + len(good)
    err, got = format_error(p)
    assert str(err) == (f"{p}: at byte offset {at}: packet block refers to an interface that no interface "
                        f"description block defined ({defined} defined)")
    assert err.offset == at
    assert got == [(T0 + i, frame(i)) for i in range(3 if defined else 0)]


def bad_blocks(e: str) -> list[tuple[str, bytes, int, int]]:
    """(what, bytes, type, the length the error names): blocks whose length the scan refuses."""
    return [
        ("shorter than a block", struct.pack(e + "II", 0xBAD, 8) + bytes(8), 0xBAD, 8),
        ("not a multiple of 4", block(scan.EPB_TYPE, bytes(80), e, blen=94), scan.EPB_TYPE, 94),
        ("above the largest record", block(scan.EPB_TYPE, bytes(80), e, blen=(1 << 28) + 4), scan.EPB_TYPE,
         (1 << 28) + 4),
        ("a packet block shorter than 32", block(scan.EPB_TYPE, bytes(16), e), scan.EPB_TYPE, 28),
        ("a captured length beyond the block", block(scan.EPB_TYPE, struct.pack(e + "IIIII", 0, 0, 1, 61, 60)
                                                     + frame(60), e), scan.EPB_TYPE, 92),
    ]


@pytest.mark.parametrize("e", ["<", ">"])
@pytest.mark.parametrize("case", range(5))
def test_a_block_of_impossible_length_is_refused_after_the_packets_before_it(tmp_path, e, case):
    what, bad, btype, blen = bad_blocks(e)[case]
    p = tmp_path / "len.pcapng"
    p.write_bytes(section(e) + bad + epb(T0 + 9, frame(9), e=e))
    err, got = format_error(p)
    assert str(err) == (f"{p}: at byte offset {SECTION}: block of type 0x{btype:08x} has impossible length {blen} "
                        "(or a captured length beyond it)"), what
    assert err.offset == SECTION and got == [(T0, frame(0)), (T0 + 1, frame(1))]



@pytest.mark.parametrize("source", ["plain", "zstd", "zstd-premature"])
@pytest.mark.parametrize("left", [1, 11])
@pytest.mark.parametrize("buffer_bytes", [150, 1 << 20])
def test_a_last_block_cut_inside_its_first_12_bytes_warns_and_keeps_the_packets(tmp_path, source, left,
                                                                               buffer_bytes):
    """Three packets, an unknown block the reader skips, then the first bytes of a fourth packet: the three
    packets and one warning naming the cut block (a compressed stream that itself ends early: a second one)."""
    whole = section(n=3) + block(0x0BAD, b"skipped") + epb(T0 + 3, frame(3))
    cut_at = SECTION + ENTRY + 20
    data = whole[: cut_at + left]
    p = tmp_path / ("c.pcapng" if source == "plain" else "c.pcapng.zst")
    p.write_bytes(data if source == "plain" else zst(data) if source == "zstd"
                  else zstd_cut_after_block(whole, len(data), level=1))
    got, msgs = packets(p, buffer_bytes=buffer_bytes)
    assert got == [(T0 + i, frame(i)) for i in range(3)]
    want = [f"{p}: truncated last block at byte offset {cut_at}: it needs 12 bytes but only {left} remain; using the "
            "3 complete packets before it"]
    if source == "zstd-premature":
        want.append(f"{p}: the zstd stream ends inside a frame (premature end) after {len(data)} decompressed bytes; "
                    "using the 3 complete packets before it")
    want.append(f"{p}: skipped 1 pcapng blocks that hold no packets (statistics, name resolution, custom or unknown "
                "types)")
    assert msgs == want


# --- the fields and counts a reader reports, by their exact values ----------------------------------------------

def test_the_pcap_link_type_is_the_low_16_bits_of_its_field(tmp_path):
    """The pcap header's link-type field carries FCS information in its upper bits (pcap spec, LinkType and
    additional information): 0x24000001 is Ethernet (1) with a 4-byte FCS flag, not link type 603979777."""
    p = write_pcap(tmp_path / "fcs.pcap", [T0], [frame(0)], linktype=0x24000001)
    (c,) = list(open_capture(p))
    assert c.linktype == 1


def test_a_short_pcap_header_is_refused_at_offset_0(tmp_path):
    p = tmp_path / "short.pcap"
    p.write_bytes(write_pcap(tmp_path / "whole.pcap", [T0], [frame(0)]).read_bytes()[:10])
    err, got = format_error(p)
    assert (err.offset, got) == (0, [])
    assert str(err) == f"{p}: at byte offset 0: pcap file header is 10 bytes long: expected 24 bytes"


@pytest.mark.parametrize("cut,need", [(24 + 2 * 76 + 10, 16), (24 + 2 * 76 + 16, 76), (24 + 2 * 76 + 16 + 7, 76)])
def test_a_pcap_cut_in_its_last_record_warns_with_the_bytes_it_needs(tmp_path, cut, need):
    """Three 60-byte records (76 bytes each with their header) cut inside the third record's header (it needs its
    16 header bytes), right after it or inside its data (the whole record: 16 + 60)."""
    whole = write_pcap(tmp_path / "whole.pcap", [T0, T0 + 1, T0 + 2], [frame(i) for i in range(3)]).read_bytes()
    p = tmp_path / "cut.pcap"
    p.write_bytes(whole[:cut])
    got, msgs = packets(p)
    assert got == [(T0, frame(0)), (T0 + 1, frame(1))]
    assert msgs == [f"{p}: truncated last packet record at byte offset {24 + 2 * 76}: it needs {need} bytes but "
                    f"only {cut - 24 - 2 * 76} remain; using the 2 complete packets before it"]


def test_records_longer_than_on_the_wire_are_counted_over_every_chunk(tmp_path):
    """Records 1 and 3 of five capture 60 bytes of 50 on the wire, read two per chunk: one warning counting both,
    naming the first by its offset and lengths."""
    p = write_pcap(tmp_path / "over.pcap", [T0 + i for i in range(5)], [frame(i) for i in range(5)],
                   wirelen=np.array([60, 50, 60, 50, 60]))
    got, msgs = packets(p, chunk_packets=2)
    assert len(got) == 5
    assert msgs == [f"{p}: 2 packet records capture more bytes than their original length (the first at byte "
                    f"offset {24 + 76}: 60 captured, 50 on the wire); the captured bytes are used"]


def _idb_with(options: bytes) -> bytes:
    return block(scan.IDB_TYPE, struct.pack("<HHI", 1, 0, 0) + options)


@pytest.mark.parametrize("name", [b"eth0", b"ethernet0", b"enp0s31f6-with-a-long-name"])
def test_interface_options_before_the_resolution_are_stepped_over_by_their_padded_length(tmp_path, name):
    """if_name (2) of 4, 9 and 26 bytes, then if_tsresol = 9 (ns): the ticks are nanoseconds. An option of 8 bytes
    or more is no if_tsoffset (14) unless its code says so."""
    p = tmp_path / "opts.pcapng"
    p.write_bytes(shb() + _idb_with(option(2, name) + option(9, bytes([9])) + option(0, b"")) + epb(T0, frame(0)))
    assert packets(p) == ([(T0, frame(0))], [])


def test_options_after_the_end_of_options_are_not_read(tmp_path):
    """opt_endofopt (0) ends the options (pcapng spec; Wireshark stops there too): an if_tsresol after it is not
    applied, the ticks stay microseconds."""
    p = tmp_path / "end.pcapng"
    p.write_bytes(shb() + _idb_with(option(0, b"") + option(9, bytes([9]))) + epb(T0 // 1000, frame(0)))
    assert packets(p) == ([(T0, frame(0))], [])


def test_an_option_longer_than_its_block_is_refused_where_it_starts(tmp_path):
    p = tmp_path / "opt.pcapng"
    p.write_bytes(shb() + _idb_with(struct.pack("<HH", 9, 100) + b"\x09\0\0\0") + epb(T0, frame(0)))
    err, got = format_error(p)
    assert (err.offset, got) == (28 + 8 + 8, [])
    assert str(err).endswith("interface description block option 9 claims 100 bytes but only 4 remain in the "
                             "block: the file is corrupt")


@pytest.mark.parametrize("kind", ["idb", "epb"])
def test_a_block_whose_trailing_length_differs_is_refused_at_its_trailer(tmp_path, kind):
    """The trailer of the interface block (checked by the reader) or of the second packet block (by the scan
    kernel) says 4 more than the block's header: refused at the trailer's offset, naming the header's."""
    good = (_idb_with(b"") if kind == "idb" else epb(T0 + 1, frame(1)))
    bad = good[:-4] + struct.pack("<I", len(good) + 4)
    head = shb() + (bad if kind == "idb" else idb(tsresol=9) + epb(T0, frame(0)) + bad)
    start = len(head) - len(bad)
    p = tmp_path / "trailer.pcapng"
    p.write_bytes(head)
    err, got = format_error(p)
    assert err.offset == start + len(good) - 4
    assert str(err).endswith(f"block total length {len(good) + 4} at the end of the block does not match the length "
                             f"{len(good)} at its start (byte offset {start + 4}): the file is corrupt")
    assert got == ([] if kind == "idb" else [(T0, frame(0))])


def test_simple_packet_blocks_are_counted_over_every_chunk(tmp_path):
    p = write_pcapng(tmp_path / "simple.pcapng", [T0 + i for i in range(5)], [frame(i) for i in range(5)],
                     simple=True)
    got, msgs = packets(p, chunk_packets=2)
    assert [f for _, f in got] == [frame(i) for i in range(5)]
    assert msgs[-1] == f"{p}: 5 simple packet blocks carry no timestamp; each got the previous packet's"


@pytest.mark.parametrize("kind", ["pcap", "pcapng"])
@pytest.mark.parametrize("buffer_bytes", [1, 7, 16, 17, 150])
def test_any_buffer_size_gives_the_same_packets(tmp_path, kind, buffer_bytes):
    """A compressed file (read through the buffer, not mapped) of records of 60 to 300 bytes, with buffers smaller
    than a record header, than a block's first 12 bytes, and a few records long: the same packets."""
    ts = [T0 + 1000 * i for i in range(12)]
    frames = [frame(i, 60 + 20 * i) for i in range(12)]
    write = write_pcap if kind == "pcap" else write_pcapng
    p = write(tmp_path / f"f.{kind}.zst", ts, frames)
    assert packets(p, buffer_bytes=buffer_bytes) == (list(zip(ts, frames, strict=True)), [])


def test_a_compressed_capture_cut_after_its_magic_is_a_short_header(tmp_path):
    """Four decompressed bytes (the magic), then the stream ends early: a pcap whose header is 4 bytes long."""
    whole = write_pcap(tmp_path / "w.pcap", [T0], [frame(0)]).read_bytes()
    p = tmp_path / "cut.pcap.zst"
    p.write_bytes(zstd_cut_after_block(whole, 4))
    err, got = format_error(p)
    assert (err.offset, got) == (0, [])
    assert str(err).endswith("pcap file header is 4 bytes long: expected 24 bytes")


@pytest.mark.parametrize("incl,ok", [(262144, True), (262145, False)])
def test_a_record_may_exceed_a_small_snap_length_up_to_256_kib(tmp_path, incl, ok):
    """Snap length 1500: a record of 262,144 captured bytes is still read (the largest any libpcap writes), one of
    262,145 is refused as corrupt."""
    hdr = struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 1500, 1)
    rec = struct.pack("<IIII", T0 // 10**9, T0 % 10**9, incl, incl) + bytes(incl)
    p = tmp_path / "big.pcap"
    p.write_bytes(hdr + rec)
    if ok:
        got, msgs = packets(p)
        assert [(t, len(f)) for t, f in got] == [(T0, incl)] and msgs == []
    else:
        err, got = format_error(p)
        assert (err.offset, got) == (24, [])
        assert str(err).endswith(f"packet record 0 claims {incl} captured bytes: expected at most 262144 (snap "
                                 "length 1500); the file is corrupt or not a pcap")


@pytest.mark.parametrize("kind", ["pcap", "pcapng"])
def test_one_packet_per_chunk_when_asked(tmp_path, kind):
    write = write_pcap if kind == "pcap" else write_pcapng
    p = write(tmp_path / f"f.{kind}", [T0 + i for i in range(4)], [frame(i) for i in range(4)])
    assert [len(c) for c in open_capture(p, chunk_packets=1)] == [1, 1, 1, 1]


def test_every_warning_points_at_the_line_that_reads_the_capture(tmp_path):
    """Python shows a warning with the file and line it is attributed to: the reader's warnings name the loop
    that reads the capture (here, this file), not a line inside benchbook or above the caller."""
    whole = write_pcap(tmp_path / "w.pcap", [T0, T0 + 1], [frame(0), frame(1)]).read_bytes()
    (tmp_path / "cut.pcap").write_bytes(whole[:-10])
    (tmp_path / "cut.pcap.zst").write_bytes(zstd_cut_after_block(whole, len(whole) - 10))
    cases = {
        "cut.pcap": tmp_path / "cut.pcap",
        "cut stream": tmp_path / "cut.pcap.zst",
        "over": write_pcap(tmp_path / "over.pcap", [T0], [frame(0)], wirelen=np.array([50])),
        "simple": write_pcapng(tmp_path / "simple.pcapng", [T0], [frame(0)], simple=True),
        "skipped": write_pcapng(tmp_path / "skip.pcapng", [T0], [frame(0)], extra_blocks=[(0, 0x0BAD, b"x")]),
    }
    for what, p in cases.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for _chunk in open_capture(p):
                pass
        mine = [w for w in caught if issubclass(w.category, CaptureWarning)]
        assert mine and all(w.filename == __file__ for w in mine), (what, [(w.filename, str(w.message)) for w in mine])


def test_an_option_that_exactly_fills_its_block_is_read_and_one_byte_more_is_refused(tmp_path):
    """if_tsresol = 9, then an if_name of 4 bytes that ends the block (no opt_endofopt, which may be left out):
    read, the ticks are ns; the same name claiming 5 bytes, one more than remain: refused where it starts."""
    fits = option(9, bytes([9])) + option(2, b"eth0")
    p = tmp_path / "fits.pcapng"
    p.write_bytes(shb() + _idb_with(fits) + epb(T0, frame(0)))
    assert packets(p) == ([(T0, frame(0))], [])
    over = option(9, bytes([9])) + struct.pack("<HH", 2, 5) + b"eth0"
    q = tmp_path / "over.pcapng"
    q.write_bytes(shb() + _idb_with(over) + epb(T0, frame(0)))
    err, got = format_error(q)
    assert (err.offset, got) == (28 + 8 + 8 + 8, [])
    assert str(err).endswith("interface description block option 2 claims 5 bytes but only 4 remain in the block: "
                             "the file is corrupt")


def test_simple_packet_blocks_before_any_timestamp_are_at_time_0_and_chunks_name_their_format(tmp_path):
    p = write_pcapng(tmp_path / "simple.pcapng", [T0, T0 + 1], [frame(0), frame(1)], simple=True)
    got, _ = packets(p)
    assert [t for t, _ in got] == [0, 0]
    q = write_pcap(tmp_path / "f.pcap", [T0], [frame(0)])
    assert [c.format for c in open_capture(p)] == ["pcapng"] and [c.format for c in open_capture(q)] == ["pcap"]
