"""Plain-Python reference readers for pcap/pcapng, used by the tests to check the numba kernels."""

from __future__ import annotations

import io
import struct
from pathlib import Path

import zstandard


def _open_bytes(path: Path) -> bytes:
    raw = Path(path).read_bytes()
    if raw[:4] == b"\x28\xb5\x2f\xfd":
        return zstandard.ZstdDecompressor().decompressobj().decompress(raw)
    return raw


def read_reference(path: str | Path) -> list[tuple[int, int, int, bytes]]:
    """[(ts_ns, caplen, wirelen, frame bytes)] for every complete packet."""
    data = _open_bytes(Path(path))
    magic_le = struct.unpack("<I", data[:4])[0]
    if magic_le == 0x0A0D0D0A:
        return _pcapng(data)
    for e in "<>":
        magic = struct.unpack(e + "I", data[:4])[0]
        if magic in (0xA1B2C3D4, 0xA1B23C4D):
            break
    else:
        raise ValueError("not a capture")
    scale = 1 if magic == 0xA1B23C4D else 1000
    out = []
    p = 24
    while p + 16 <= len(data):
        sec, frac, incl, orig = struct.unpack(e + "IIII", data[p : p + 16])
        if p + 16 + incl > len(data):
            break
        out.append((sec * 10**9 + frac * scale, incl, orig, data[p + 16 : p + 16 + incl]))
        p += 16 + incl
    return out


def _pcapng(data: bytes) -> list[tuple[int, int, int, bytes]]:
    out = []
    p = 0
    e = "<"
    ifaces: list[tuple[int, int, int]] = []  # (tsresol byte, offset s, snaplen)
    last_ts = 0
    while p + 12 <= len(data):
        btype = struct.unpack(e + "I", data[p : p + 4])[0]
        if btype == 0x0A0D0D0A:
            e = "<" if struct.unpack("<I", data[p + 8 : p + 12])[0] == 0x1A2B3C4D else ">"
            ifaces = []
        blen = struct.unpack(e + "I", data[p + 4 : p + 8])[0]
        if p + blen > len(data):
            break
        body = data[p + 8 : p + blen - 4]
        if btype == 1:
            _lt, _r, snap = struct.unpack(e + "HHI", body[:8])
            res, off, q = 6, 0, 8
            while q + 4 <= len(body):
                code, ln = struct.unpack(e + "HH", body[q : q + 4])
                if code == 0:
                    break
                if code == 9:
                    res = body[q + 4]
                if code == 14:
                    off = struct.unpack(e + "q", body[q + 4 : q + 12])[0]
                q += 4 + (ln + 3) // 4 * 4
            ifaces.append((res, off, snap))
        elif btype in (6, 2):
            if btype == 6:
                iface, hi, lo, incl, orig = struct.unpack(e + "IIIII", body[:20])
            else:
                iface, _d, hi, lo, incl, orig = struct.unpack(e + "HHIIII", body[:20])
            res, off, _snap = ifaces[iface]
            ticks = (hi << 32) | lo
            if res & 0x80:
                k = res & 0x7F
                ns = (ticks >> k) * 10**9 + (((ticks & ((1 << k) - 1)) * 10**9) >> k)
            else:
                ns = ticks * 10**9 // 10 ** res
            last_ts = ns + off * 10**9
            out.append((last_ts, incl, orig, body[20 : 20 + incl]))
        elif btype == 3:
            orig = struct.unpack(e + "I", body[:4])[0]
            snap = ifaces[0][2]
            incl = min(orig, snap) if snap else orig
            incl = min(incl, len(body) - 4)
            out.append((last_ts, incl, orig, body[4 : 4 + incl]))
        p += blen
    return out


def frames_with_ids(ids) -> list[bytes]:
    """Ethernet/IPv4/UDP frames (60 bytes) carrying a little-endian 8-byte id at offset 42."""
    head = bytes.fromhex("020000000002020000000001" "0800" "45000024000000004011" "0000" "0a000001" "0a000002"
                         "04d2" "04d3" "0010" "0000")
    return [(head + struct.pack("<Q", i)).ljust(60, b"\0") for i in ids]


def zstd_cut_after_block(data: bytes, keep: int, level: int = 3) -> bytes:
    """zstd of `data` whose first `keep` bytes end a block (flushed there), cut right after that block: a stream
    that ends at a block boundary inside its frame (zstd -t: premature end)."""
    raw = io.BytesIO()
    w = zstandard.ZstdCompressor(level=level).stream_writer(raw, closefd=False)
    w.write(data[:keep])
    w.flush(zstandard.FLUSH_BLOCK)
    cut = raw.tell()
    w.write(data[keep:])
    w.flush(zstandard.FLUSH_FRAME)
    return raw.getvalue()[:cut]
