"""Capture writers: libpcap (µs or ns, either byte order, optionally .zst) and a small pcapng writer.

Used by the synthetic capture generator and by the tests (which need pcapng variants: power-of-2
timestamp resolution, big-endian sections, simple packet blocks and blocks readers must skip).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import BinaryIO

import numpy as np

from benchbook.capture.source import open_output
from benchbook.kernels import njit

Frames = Sequence[bytes] | tuple[np.ndarray, np.ndarray, np.ndarray]


@njit(cache=True)
def _put_u32(out, p, v, big):
    if big:
        out[p] = (v >> 24) & 0xFF
        out[p + 1] = (v >> 16) & 0xFF
        out[p + 2] = (v >> 8) & 0xFF
        out[p + 3] = v & 0xFF
    else:
        out[p] = v & 0xFF
        out[p + 1] = (v >> 8) & 0xFF
        out[p + 2] = (v >> 16) & 0xFF
        out[p + 3] = (v >> 24) & 0xFF


@njit(cache=True)
def pack_pcap_records(out, ts_ns, data, offsets, lengths, wirelen, nanosecond, big):
    """Write pcap record headers and frames for all packets into out; return bytes used."""
    p = 0
    for i in range(ts_ns.shape[0]):
        t = ts_ns[i]
        sec = t // 1_000_000_000
        frac = t - sec * 1_000_000_000
        if not nanosecond:
            frac //= 1000
        n = lengths[i]
        _put_u32(out, p, np.int64(sec), big)
        _put_u32(out, p + 4, np.int64(frac), big)
        _put_u32(out, p + 8, np.int64(n), big)
        _put_u32(out, p + 12, np.int64(wirelen[i]), big)
        o = offsets[i]
        out[p + 16 : p + 16 + n] = data[o : o + n]
        p += 16 + n
    return p


def _as_arrays(frames: Frames) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if isinstance(frames, tuple) and len(frames) == 3 and isinstance(frames[0], np.ndarray):
        data, offsets, lengths = frames
        return np.ascontiguousarray(data, np.uint8), np.asarray(offsets, np.int64), np.asarray(lengths, np.int64)
    blobs = [bytes(f) for f in frames]
    lengths = np.fromiter((len(f) for f in blobs), np.int64, len(blobs))
    offsets = np.zeros(len(blobs), np.int64)
    if len(blobs):
        offsets[1:] = np.cumsum(lengths)[:-1]
    data = np.frombuffer(b"".join(blobs), np.uint8) if blobs else np.zeros(0, np.uint8)
    return data, offsets, lengths


class PcapWriter:
    """Streaming libpcap writer. ``write(ts_ns, frames)`` may be called repeatedly."""

    def __init__(
        self, path: str | Path, nanosecond: bool = True, snaplen: int = 262144, linktype: int = 1,
        big_endian: bool = False,
    ) -> None:
        self.path = Path(path)
        self.nanosecond = nanosecond
        self.big = big_endian
        self._f: BinaryIO = open_output(self.path)
        magic = 0xA1B23C4D if nanosecond else 0xA1B2C3D4
        e = ">" if big_endian else "<"
        self._f.write(struct.pack(e + "IHHiIII", magic, 2, 4, 0, 0, snaplen, linktype))
        self.count = 0

    def write(self, ts_ns: np.ndarray, frames: Frames, wirelen: np.ndarray | None = None) -> None:
        data, offsets, lengths = _as_arrays(frames)
        ts = np.asarray(ts_ns, np.int64)
        if ts.shape[0] != lengths.shape[0]:
            raise ValueError(f"{ts.shape[0]} timestamps but {lengths.shape[0]} frames")
        wl = lengths if wirelen is None else np.asarray(wirelen, np.int64)
        out = np.empty(int(lengths.sum()) + 16 * len(lengths), np.uint8)
        used = pack_pcap_records(out, ts, data, offsets, lengths, wl, self.nanosecond, self.big)
        self._f.write(memoryview(out)[:used])
        self.count += len(lengths)

    def write_raw(self, records: np.ndarray, n_packets: int) -> None:
        """Append already packed records (as pack_pcap_records produces)."""
        self._f.write(memoryview(records))
        self.count += n_packets

    def close(self) -> None:
        self._f.close()

    def __enter__(self) -> PcapWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def write_pcap(
    path: str | Path, ts_ns: np.ndarray | Sequence[int], frames: Frames, nanosecond: bool = True,
    snaplen: int = 262144, linktype: int = 1, big_endian: bool = False,
    wirelen: np.ndarray | None = None,
) -> Path:
    """Write a whole libpcap file (``.zst`` name: zstd-compressed)."""
    with PcapWriter(path, nanosecond, snaplen, linktype, big_endian) as w:
        w.write(np.asarray(ts_ns, np.int64), frames, wirelen)
    return Path(path)


def _block(e: str, btype: int, body: bytes) -> bytes:
    body = body + b"\0" * (-len(body) % 4)
    n = len(body) + 12
    return struct.pack(e + "II", btype, n) + body + struct.pack(e + "I", n)


def _option(e: str, code: int, value: bytes) -> bytes:
    return struct.pack(e + "HH", code, len(value)) + value + b"\0" * (-len(value) % 4)


def write_pcapng(
    path: str | Path, ts_ns: np.ndarray | Sequence[int], frames: Frames, tsresol: int = 9,
    big_endian: bool = False, snaplen: int = 0, linktype: int = 1, simple: bool = False,
    extra_blocks: Iterable[tuple[int, int, bytes]] = (), tsoffset_s: int = 0,
) -> Path:
    """Write a pcapng file with one section and one interface.

    tsresol is the if_tsresol byte (e.g. 6, 9, or 0x80 | 30 for 2^-30 s). ``simple`` writes simple
    packet blocks (no timestamps). extra_blocks: (packet_index, block_type, body) blocks inserted
    before that packet, e.g. blocks of unknown types that readers must skip.
    """
    e = ">" if big_endian else "<"
    data, offsets, lengths = _as_arrays(frames)
    ts = np.asarray(ts_ns, np.int64)
    exp = tsresol & 0x7F
    extras: dict[int, list[tuple[int, bytes]]] = {}
    for idx, btype, body in extra_blocks:
        extras.setdefault(idx, []).append((btype, body))
    with open_output(path) as f:
        shb = struct.pack(e + "IHHq", 0x1A2B3C4D, 1, 0, -1) + _option(e, 4, b"benchbook") + _option(e, 0, b"")
        f.write(_block(e, 0x0A0D0D0A, shb))
        opts = _option(e, 9, bytes([tsresol]))
        if tsoffset_s:
            opts += _option(e, 14, struct.pack(e + "q", tsoffset_s))
        opts += _option(e, 0, b"")
        f.write(_block(e, 1, struct.pack(e + "HHI", linktype, 0, snaplen) + opts))
        for i in range(len(lengths)):
            for btype, body in extras.get(i, ()):
                f.write(_block(e, btype, body))
            o, n = int(offsets[i]), int(lengths[i])
            frame = data[o : o + n].tobytes()
            if simple:
                f.write(_block(e, 3, struct.pack(e + "I", n) + frame))
                continue
            t = int(ts[i]) - tsoffset_s * 1_000_000_000
            if tsresol & 0x80:
                ticks = (t // 1_000_000_000 << exp) + ((t % 1_000_000_000) << exp) // 1_000_000_000
            elif exp <= 9:
                ticks = t // 10 ** (9 - exp)
            else:
                ticks = t * 10 ** (exp - 9)
            f.write(_block(e, 6, struct.pack(e + "IIIII", 0, ticks >> 32, ticks & 0xFFFFFFFF, n, n) + frame))
        for btype, body in extras.get(len(lengths), ()):
            f.write(_block(e, btype, body))
    return Path(path)
