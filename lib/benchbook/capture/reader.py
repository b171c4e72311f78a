"""Streaming capture readers: libpcap (µs/ns, both byte orders) and pcapng, plain or zstd.

``open_capture(path)`` yields PacketChunks in bounded memory: the file is read in buffers of
``buffer_bytes`` and every chunk holds at most ``chunk_packets`` packets.
"""

from __future__ import annotations

import struct
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from benchbook.capture import scan
from benchbook.capture.chunk import PacketChunk
from benchbook.capture.errors import CaptureFormatError, CaptureWarning
from benchbook.capture.source import ByteSource

PCAP_MAGIC_US = 0xA1B2C3D4
PCAP_MAGIC_NS = 0xA1B23C4D
PCAPNG_SHB = 0x0A0D0D0A
PCAPNG_BOM = 0x1A2B3C4D

DEFAULT_BUFFER = 32 << 20


class _Buffer:
    """A window of the (decompressed) file: buf[0:fill] holds file bytes base .. base+fill."""

    def __init__(self, src: ByteSource, size: int, head: np.ndarray) -> None:
        self.src = src
        self.size = size
        self.buf = np.empty(0, np.uint8)
        self.pos = 0
        self.fill = 0
        self.base = 0
        self.eof = False
        whole = src.mapped()
        self.mapped = whole is not None
        if whole is not None:  # plain file: map it, no copies and no refills
            self.buf, self.fill, self.eof = whole, len(whole), True
        else:  # the bytes read to tell the format come first
            self.buf = np.array(head, np.uint8)
            self.fill = len(head)

    def release(self, upto: int | None = None) -> None:
        """Let mapped pages before file offset ``upto`` (default: 1 MiB before the read position) leave the
        resident set."""
        self.src.release(self.base + self.pos - (1 << 20) if upto is None else upto)

    def refill(self, need: int = 0) -> None:
        """Start a new buffer holding the unread bytes plus as much new data as fits.

        A new array each time: chunks handed out keep referring to the old one.
        """
        left = self.fill - self.pos
        size = max(self.size, need, left + 1)
        new = np.empty(size, np.uint8)
        if left:
            new[:left] = self.buf[self.pos : self.fill]
        got = 0 if self.eof else self.src.read_into(new, left)
        if left + got < size:
            self.eof = True
        self.base += self.pos
        self.buf, self.pos, self.fill = new, 0, left + got

    def clamp(self) -> None:
        """A mapped file cut short since it was mapped (a capture truncated while it is read): its pages past the
        new end would kill the process with SIGBUS when touched, so the data ends at the file's size now and the
        reader reports the record it cuts as a truncated file. Checked before every scan of the mapping; a file cut
        while a chunk's bytes are being read can still fault: a property of mmap, the price of reading without
        copies."""
        if self.mapped:
            self.fill = max(self.pos, min(self.fill, self.src.size_now() - self.base))

    def ensure(self, n: int) -> bool:
        """Make at least n unread bytes available if the file has them."""
        self.clamp()
        if self.fill - self.pos >= n:
            return True
        if not self.eof:
            self.refill(n)
        return self.fill - self.pos >= n

    def offset(self, p: int | None = None) -> int:
        return self.base + (self.pos if p is None else p)


def _format_of(path: str | Path, head: bytes) -> str:
    if not head:
        raise CaptureFormatError(path, 0, "file is empty: expected a pcap or pcapng header")
    magic_le = int.from_bytes(head, "little")
    if len(head) == 4 and (magic_le in (PCAP_MAGIC_US, PCAP_MAGIC_NS)
                           or int.from_bytes(head, "big") in (PCAP_MAGIC_US, PCAP_MAGIC_NS)):
        return "pcap"
    if len(head) == 4 and magic_le == PCAPNG_SHB:
        return "pcapng"
    raise CaptureFormatError(
        path, 0, f"unknown magic 0x{head.hex()}: expected a pcap (a1b2c3d4/a1b23c4d, either "
        "byte order) or pcapng (0a0d0d0a) file, plain or zstd-compressed"
    )


def _peek_format(src: ByteSource) -> tuple[str, np.ndarray]:
    """Format of the opened source and the bytes read to tell it (to be read again first)."""
    head = np.zeros(4, np.uint8)
    got = src.read_into(head, 0)
    if got < 4 and src.truncated:
        raise CaptureFormatError(src.path, got, f"{src.truncated}: no capture header")
    return _format_of(src.path, head[:got].tobytes()), head[:got]


def capture_format(path: str | Path) -> str:
    """'pcap', 'pcapng' (after zstd decompression where needed) or raise CaptureFormatError."""
    with ByteSource(path) as src:
        return _peek_format(src)[0]


def open_capture(
    path: str | Path, chunk_packets: int = 1 << 20, buffer_bytes: int = DEFAULT_BUFFER,
    recycle: int = 0,
) -> Iterator[PacketChunk]:
    """Yield the packets of a pcap/pcapng file (optionally zstd-compressed) in chunks.

    The file is opened once (a FIFO works: captures piped from tcpdump); its format is checked
    before this returns. recycle=N (N >= 2) reuses N sets of per-packet arrays in turn instead of
    allocating new ones for every chunk: a chunk's arrays then stay valid only until N - 1 further
    chunks have been read. For consumers that finish with a chunk quickly (the latency matcher);
    saves the page faults of fresh memory.
    """
    if chunk_packets < 1:
        raise ValueError("chunk_packets must be >= 1")
    if recycle == 1 or recycle < 0:
        raise ValueError("recycle must be 0 (off) or >= 2")
    src = ByteSource(path)
    try:
        kind, head = _peek_format(src)
    except BaseException:
        src.close()
        raise
    reader = _read_pcap if kind == "pcap" else _read_pcapng
    return reader(Path(path), src, head, chunk_packets, buffer_bytes, _ArrayPool(recycle))


class _ArrayPool:
    def __init__(self, recycle: int) -> None:
        self.recycle = recycle
        self.sets: list[tuple[np.ndarray, ...]] = []
        self.turn = 0
        self.starts: list[int] = []

    def release_point(self, chunk_start: int) -> int | None:
        """With recycle=N >= 3 the consumer may still look at the last N - 2 chunks handed out (a reader thread
        running ahead): pages from the start of the oldest of them stay mapped. None: the default point."""
        if self.recycle < 3:
            return None
        self.starts.append(chunk_start)
        del self.starts[: -(self.recycle - 2)]
        return self.starts[0]

    def get(self, n: int) -> tuple[np.ndarray, ...]:
        if not self.recycle:
            return _alloc(n)
        k = self.turn % self.recycle
        self.turn += 1
        if k >= len(self.sets):
            self.sets.append(_alloc(n))
        elif len(self.sets[k][0]) < n:
            self.sets[k] = _alloc(n)
        return tuple(a[:n] for a in self.sets[k])


def _alloc(n: int) -> tuple[np.ndarray, ...]:
    return (
        np.empty(n, np.int64), np.empty(n, np.uint32), np.empty(n, np.uint32),
        np.empty(n, np.int64), np.empty(n, np.int64),
    )


def _truncated(path: Path, b: _Buffer, what: str, need: int, count: int) -> None:
    have = b.fill - b.pos
    warnings.warn(
        f"{path}: truncated last {what} at byte offset {b.offset()}: it needs {need} bytes but only "
        f"{have} remain; using the {count} complete packets before it",
        CaptureWarning,
        stacklevel=3,
    )


def _read_pcap(path: Path, src: ByteSource, head: np.ndarray, chunk_packets: int, buffer_bytes: int,
               pool: _ArrayPool) -> Iterator[PacketChunk]:
    with src:
        b = _Buffer(src, buffer_bytes, head)
        if not b.ensure(24):
            raise CaptureFormatError(
                path, 0, f"pcap file header is {b.fill} bytes long: expected 24 bytes"
            )
        hdr = b.buf[b.pos : b.pos + 24].tobytes()
        magic = struct.unpack("<I", hdr[:4])[0]
        big = magic not in (PCAP_MAGIC_US, PCAP_MAGIC_NS)
        e = ">" if big else "<"
        magic, vmaj, vmin, _zone, _sig, snaplen, linktype = struct.unpack(e + "IHHiIII", hdr)
        ts_mult = 1 if magic == PCAP_MAGIC_NS else 1000
        if vmaj != 2:
            raise CaptureFormatError(path, 4, f"pcap version {vmaj}.{vmin}: expected 2.4")
        b.pos += 24
        max_caplen = max(snaplen, 262144)
        index = 0
        over = _CaplenOverWire()
        while True:
            b.clamp()
            avail = b.fill - b.pos
            n_alloc = max(1, min(chunk_packets, avail // 16 + 1))
            ts, cap, wire, off, foff = pool.get(n_alloc)
            pos, n, status = scan.scan_pcap(
                b.buf, b.pos, b.fill, big, ts_mult, max_caplen, n_alloc, ts, cap, wire, off, foff, b.base
            )
            start = b.pos
            b.pos = int(pos)
            if n:
                over.add(cap[:n], wire[:n], foff[:n])
                yield PacketChunk(
                    ts[:n], cap[:n], wire[:n], off[:n], b.buf, index, str(path), foff[:n],
                    linktype & 0xFFFF, snaplen,
                )
                index += n
                b.release(pool.release_point(b.base + start))
            if status == scan.BAD_LENGTH:
                incl = struct.unpack(e + "I", b.buf[b.pos + 8 : b.pos + 12].tobytes())[0]
                raise CaptureFormatError(
                    path, b.offset(),
                    f"packet record {index} claims {incl} captured bytes: expected at most "
                    f"{max_caplen} (snap length {snaplen}); the file is corrupt or not a pcap",
                )
            if n == 0 or b.pos == start:
                if b.eof:
                    if b.fill > b.pos:
                        need = 16
                        if b.fill - b.pos >= 16:
                            need = 16 + struct.unpack(e + "I", b.buf[b.pos + 8 : b.pos + 12].tobytes())[0]
                        _truncated(path, b, "packet record", need, index)
                    break
                need = 16
                if b.fill - b.pos >= 16:
                    need = 16 + struct.unpack(e + "I", b.buf[b.pos + 8 : b.pos + 12].tobytes())[0]
                b.refill(need)
            elif n < n_alloc and not b.eof:
                b.refill()
        _finish(path, src, index, over)


class _CaplenOverWire:
    """Counts records whose captured length exceeds their original length (impossible on the wire;
    Wireshark shows them and so do we, with a warning)."""

    def __init__(self) -> None:
        self.count = 0
        self.first_offset = -1
        self.first = (0, 0)

    def add(self, cap: np.ndarray, wire: np.ndarray, foff: np.ndarray) -> None:
        bad = cap > wire
        if bad.any():
            if self.count == 0:
                i = int(np.argmax(bad))
                self.first_offset, self.first = int(foff[i]), (int(cap[i]), int(wire[i]))
            self.count += int(np.count_nonzero(bad))


def _finish(path: Path, src: ByteSource, index: int, over: _CaplenOverWire) -> None:
    if over.count:
        warnings.warn(
            f"{path}: {over.count} packet records capture more bytes than their original length (the first "
            f"at byte offset {over.first_offset}: {over.first[0]} captured, {over.first[1]} on the wire); "
            "the captured bytes are used",
            CaptureWarning, stacklevel=3,
        )
    if src.truncated:
        warnings.warn(f"{path}: {src.truncated}; using the {index} complete packets before it",
                      CaptureWarning, stacklevel=3)


class _Interfaces:
    def __init__(self) -> None:
        self.kind: list[int] = []
        self.param: list[int] = []
        self.offset: list[int] = []
        self.snap: list[int] = []
        self.linktype: list[int] = []

    def arrays(self) -> tuple[np.ndarray, ...]:
        return (
            np.array(self.kind or [0], np.int64), np.array(self.param or [1], np.int64),
            np.array(self.offset or [0], np.int64), np.array(self.snap or [0], np.int64),
        )


def tsresol_conversion(tsresol: int) -> tuple[int, int]:
    """(kind, param) turning pcapng ticks of resolution ``tsresol`` (if_tsresol byte) into ns."""
    exp = tsresol & 0x7F
    if tsresol & 0x80:
        if exp > 63:
            raise ValueError(f"if_tsresol 2^-{exp} is finer than a 64-bit timestamp can count (at most 2^-63)")
        return scan.TS_POW2, exp
    if exp <= 9:
        return scan.TS_MUL, 10 ** (9 - exp)
    if exp > 19:
        raise ValueError(f"if_tsresol 10^-{exp} is finer than a 64-bit timestamp can count (at most 10^-19)")
    return scan.TS_DIV, 10 ** (exp - 9)


def _check_trailer(path: Path, b: _Buffer, e: str, blen: int) -> None:
    tail = struct.unpack(e + "I", b.buf[b.pos + blen - 4 : b.pos + blen].tobytes())[0]
    if tail != blen:
        raise CaptureFormatError(
            path, b.offset() + blen - 4,
            f"block total length {tail} at the end of the block does not match the length {blen} at its start "
            f"(byte offset {b.offset() + 4}): the file is corrupt",
        )


def _parse_idb(path: Path, body: bytes, e: str, offset: int, ifs: _Interfaces) -> None:
    if len(body) < 8:
        raise CaptureFormatError(path, offset, "interface description block shorter than 20 bytes")
    linktype, _res, snaplen = struct.unpack(e + "HHI", body[:8])
    tsresol = 6
    tsoffset = 0
    p = 8
    while p + 4 <= len(body):
        code, length = struct.unpack(e + "HH", body[p : p + 4])
        if code == 0:
            break
        if p + 4 + length > len(body):
            raise CaptureFormatError(
                path, offset + 8 + p,
                f"interface description block option {code} claims {length} bytes but only {len(body) - p - 4} "
                "remain in the block: the file is corrupt",
            )
        value = body[p + 4 : p + 4 + length]
        if code == 9 and length >= 1:
            tsresol = value[0]
        elif code == 14 and length >= 8:
            tsoffset = struct.unpack(e + "q", value[:8])[0]
        p += 4 + ((length + 3) & ~3)
    try:
        kind, param = tsresol_conversion(tsresol)
    except ValueError as exc:
        raise CaptureFormatError(path, offset, str(exc)) from None
    ifs.kind.append(kind)
    ifs.param.append(param)
    ifs.offset.append(tsoffset * 1_000_000_000)
    ifs.snap.append(snaplen)
    ifs.linktype.append(linktype)


def _read_pcapng(path: Path, src: ByteSource, head: np.ndarray, chunk_packets: int, buffer_bytes: int,
                 pool: _ArrayPool) -> Iterator[PacketChunk]:
    with src:
        b = _Buffer(src, buffer_bytes, head)
        ifs = _Interfaces()
        big = False
        e = "<"
        seen_shb = False
        index = 0
        skipped = 0
        simple = 0
        last_ts = np.int64(0)
        arrays = ifs.arrays()
        over = _CaplenOverWire()
        while True:
            if not b.ensure(12):
                if b.fill > b.pos:
                    _truncated(path, b, "block", 12, index)
                break
            btype = struct.unpack(e + "I", b.buf[b.pos : b.pos + 4].tobytes())[0]
            if btype == PCAPNG_SHB:
                bom = b.buf[b.pos + 8 : b.pos + 12].tobytes()
                if struct.unpack("<I", bom)[0] == PCAPNG_BOM:
                    big, e = False, "<"
                elif struct.unpack(">I", bom)[0] == PCAPNG_BOM:
                    big, e = True, ">"
                else:
                    raise CaptureFormatError(
                        path, b.offset() + 8, f"section header byte-order magic 0x{bom.hex()}: expected 1a2b3c4d"
                    )
                blen = struct.unpack(e + "I", b.buf[b.pos + 4 : b.pos + 8].tobytes())[0]
                if blen < 28 or blen % 4:
                    raise CaptureFormatError(path, b.offset() + 4,
                                             f"section header block length {blen}: expected a multiple of 4, >= 28")
                if not b.ensure(blen):
                    _truncated(path, b, "section header block", blen, index)
                    break
                _check_trailer(path, b, e, blen)
                seen_shb = True
                ifs = _Interfaces()
                arrays = ifs.arrays()
                b.pos += blen
                continue
            if not seen_shb:
                raise CaptureFormatError(path, b.offset(), "pcapng file does not start with a section header block")
            if btype == scan.IDB_TYPE:
                blen = struct.unpack(e + "I", b.buf[b.pos + 4 : b.pos + 8].tobytes())[0]
                if blen < 20 or blen % 4:
                    raise CaptureFormatError(path, b.offset() + 4, f"interface description block length {blen}: "
                                             f"expected a multiple of 4, >= 20")
                if not b.ensure(blen):
                    _truncated(path, b, "interface description block", blen, index)
                    break
                _check_trailer(path, b, e, blen)
                _parse_idb(path, b.buf[b.pos + 8 : b.pos + blen - 4].tobytes(), e, b.offset(), ifs)
                arrays = ifs.arrays()
                b.pos += blen
                continue
            avail = b.fill - b.pos  # clamped by the ensure(12) at the top of this pass
            n_alloc = max(1, min(chunk_packets, avail // 32 + 1))
            ts, cap, wire, off, foff = pool.get(n_alloc)
            start = b.pos
            pos, n, status, sk, sp, last_ts = scan.scan_pcapng(
                b.buf, b.pos, b.fill, big, arrays[0], arrays[1], arrays[2], arrays[3], len(ifs.kind),
                n_alloc, ts, cap, wire, off, foff, b.base, last_ts,
            )
            b.pos = int(pos)
            skipped += sk
            simple += sp
            if n:
                over.add(cap[:n], wire[:n], foff[:n])
                lt = ifs.linktype[0] if ifs.linktype else 1
                yield PacketChunk(
                    ts[:n], cap[:n], wire[:n], off[:n], b.buf, index, str(path), foff[:n], lt,
                    ifs.snap[0] if ifs.snap else 0, "pcapng",
                )
                index += n
                b.release(pool.release_point(b.base + start))
            if status == scan.BAD_LENGTH:
                blen = struct.unpack(e + "I", b.buf[b.pos + 4 : b.pos + 8].tobytes())[0]
                raise CaptureFormatError(
                    path, b.offset(),
                    f"block of type 0x{struct.unpack(e + 'I', b.buf[b.pos:b.pos + 4].tobytes())[0]:08x} "
                    f"has impossible length {blen} (or a captured length beyond it)",
                )
            if status == scan.BAD_INTERFACE:
                raise CaptureFormatError(
                    path, b.offset(), f"packet block refers to an interface that no interface description block "
                    f"defined ({len(ifs.kind)} defined)"
                )
            if status == scan.BAD_TRAILER:
                blen = struct.unpack(e + "I", b.buf[b.pos + 4 : b.pos + 8].tobytes())[0]
                tail = struct.unpack(e + "I", b.buf[b.pos + blen - 4 : b.pos + blen].tobytes())[0]
                raise CaptureFormatError(
                    path, b.offset() + blen - 4,
                    f"block total length {tail} at the end of the block does not match the length {blen} at its "
                    f"start (byte offset {b.offset() + 4}): the file is corrupt",
                )
            if status == scan.NEEDS_PYTHON:
                continue
            if b.pos == start:
                # a block spans the end of the buffer (its first 12 bytes are there: ensure(12) above)
                blen = struct.unpack(e + "I", b.buf[b.pos + 4 : b.pos + 8].tobytes())[0]
                if b.eof:
                    _truncated(path, b, "block", blen, index)
                    break
                b.refill(blen)
            elif n < n_alloc and not b.eof:
                b.refill()
        _finish(path, src, index, over)
        if skipped:
            warnings.warn(f"{path}: skipped {skipped} pcapng blocks that hold no packets (statistics, name "
                          f"resolution, custom or unknown types)", CaptureWarning, stacklevel=2)
        if simple:
            warnings.warn(f"{path}: {simple} simple packet blocks carry no timestamp; each got the previous packet's",
                          CaptureWarning, stacklevel=2)
