"""Write the crafted capture, histogram and CSV files of this folder (README.md says what each is).

Run from the repository root: .venv/bin/python tests/data/malformed/make.py
The files are committed; rerunning this writes identical bytes (fixed timestamps and frames)."""

from __future__ import annotations

import io
import struct
import sys
from pathlib import Path

import zstandard

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))  # tests/, for the helper the reader's tests share; run as a script
from capture_reference import zstd_cut_after_block  # noqa: E402  (after the path it needs)


def frame(i: int) -> bytes:
    """A 60-byte Ethernet/IPv4/UDP-shaped frame carrying the little-endian id `i` at offset 42."""
    return bytes(range(42)) + struct.pack("<Q", i) + bytes(10)


def pcap(n: int = 8, incl_over: int | None = None) -> bytes:
    """A nanosecond libpcap file of n packets, 1 µs apart; record `incl_over` claims a shorter
    original length than it captured."""
    out = io.BytesIO()
    out.write(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 262144, 1))
    for i in range(n):
        f = frame(i)
        orig = len(f) - 20 if i == incl_over else len(f)
        out.write(struct.pack("<IIII", 1_700_000_000, 1000 * i, len(f), orig) + f)
    return out.getvalue()


def pcapng(n: int = 4, tsresol: int = 9) -> bytearray:
    """A pcapng file: SHB (48 bytes), IDB at byte 48 (32 bytes, if_tsresol value at byte 68), then
    n enhanced packet blocks of 92 bytes each from byte 80."""
    def block(btype: int, body: bytes) -> bytes:
        body += b"\0" * (-len(body) % 4)
        return struct.pack("<II", btype, len(body) + 12) + body + struct.pack("<I", len(body) + 12)

    def option(code: int, value: bytes) -> bytes:
        return struct.pack("<HH", code, len(value)) + value + b"\0" * (-len(value) % 4)

    out = bytearray()
    out += block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1) + option(4, b"benchbook") + option(0, b""))
    out += block(1, struct.pack("<HHI", 1, 0, 0) + option(9, bytes([tsresol])) + option(0, b""))
    for i in range(n):
        t = 1_700_000_000_000_000_000 + 1000 * i
        f = frame(i)
        out += block(6, struct.pack("<IIIII", 0, t >> 32, t & 0xFFFFFFFF, len(f), len(f)) + f)
    return out



def main() -> None:
    files: dict[str, bytes] = {}
    good = pcap(8)
    files["good.pcap"] = good
    files["zstd-garbage.pcap.zst"] = b"\x28\xb5\x2f\xfd" + bytes((i * 37 + 11) % 251 for i in range(200))
    files["zstd-cut-at-block.pcap.zst"] = zstd_cut_after_block(good, 24 + 4 * 76)
    c = zstandard.ZstdCompressor(level=3)
    files["zstd-two-frames.pcap.zst"] = c.compress(good[: 24 + 3 * 76]) + c.compress(good[24 + 3 * 76 :])
    files["zstd-cut-at-frame.pcap.zst"] = (c.compress(good[: 24 + 3 * 76])
                                           + c.compress(good[24 + 3 * 76 :])[:-7])
    files["incl-over-orig.pcap"] = pcap(8, incl_over=2)
    ng = pcapng(4, tsresol=0xFF)
    files["pcapng-tsresol-ff.pcapng"] = bytes(ng)
    ng = pcapng(4)
    struct.pack_into("<I", ng, 80 + 92 + 88, 96)  # second EPB: trailer 96, leading length 92
    files["pcapng-trailer-mismatch.pcapng"] = bytes(ng)
    ng = pcapng(4)
    struct.pack_into("<H", ng, 66, 40)  # if_tsresol option claims 40 bytes in a 32-byte block
    files["pcapng-idb-option-overrun.pcapng"] = bytes(ng)
    files["counts-wrap-int64.csv"] = b"".join(b"%d,%d\n" % (1000 * (i + 1), 2**62) for i in range(4))
    files["count-beyond-int64.csv"] = b"1000,99999999999999999999\n"
    files["counts-at-int64-max.csv"] = b"1000,9223372036854775807\n2000,9223372036854775807\n"
    files["value-1e300.csv"] = b"1e300,5\n"
    files["value-13-decimals.csv"] = b"1.0000000000001,5\n2,3\n"
    # inputs `make fuzz` (atheris) found, kept as they were found
    files["value-exponent-overflow.csv"] = b"1E3999999999999990,99999999999999999\n00,3\nE30"
    files["perf-run-time-overflow.txt"] = (b"# started on Sun Nov 22 16:59:28 2026# st 16:59:30 2026\n\n"
                                           b"166,85;msec;task-clock;166E847979;100,T\xff\xff\xff\xff00 K/se")
    for name, data in files.items():
        (HERE / name).write_bytes(data)


if __name__ == "__main__":
    main()
