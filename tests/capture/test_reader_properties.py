"""Property-based tests of the capture readers (hypothesis, bounded so they run in make test):
what the writers write reads back exactly, and mutated files end either in the packets or in a
CaptureFormatError naming file and offset, never another exception."""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchbook.capture import CaptureFormatError, open_capture, write_pcap, write_pcapng

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MAX_TS_NS = (1 << 32) * 1_000_000_000 - 1  # libpcap seconds are 32-bit

packets = st.lists(st.tuples(st.integers(0, MAX_TS_NS), st.binary(min_size=0, max_size=96)), max_size=24)


def read_back(path: Path) -> tuple[list[int], list[bytes], list[int]]:
    ts, frames, wire = [], [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for c in open_capture(path, chunk_packets=5, buffer_bytes=256):
            ts += c.ts_ns.tolist()
            wire += c.wirelen.tolist()
            frames += [c.frame(i) for i in range(len(c))]
    return ts, frames, wire


@SETTINGS
@given(pkts=packets, nanosecond=st.booleans(), big=st.booleans(), zst=st.booleans())
def test_pcap_round_trip(pkts, nanosecond, big, zst):
    ts = [t if nanosecond else t - t % 1000 for t, _ in pkts]
    frames = [f for _, f in pkts]
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / ("x.pcap.zst" if zst else "x.pcap")
        write_pcap(p, np.array(ts, np.int64), frames, nanosecond=nanosecond, big_endian=big)
        assert read_back(p) == (ts, frames, [len(f) for f in frames])


@SETTINGS
@given(pkts=packets, tsresol=st.sampled_from([6, 9]), big=st.booleans())
def test_pcapng_round_trip(pkts, tsresol, big):
    ts = [t - t % 1000 for t, _ in pkts]
    frames = [f for _, f in pkts]
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "x.pcapng"
        write_pcapng(p, np.array(ts, np.int64), frames, tsresol=tsresol, big_endian=big)
        assert read_back(p) == (ts, frames, [len(f) for f in frames])


def _seed_files() -> dict[str, bytes]:
    out = {}
    with tempfile.TemporaryDirectory() as d:
        ts = np.arange(6, dtype=np.int64) * 1000 + 1_700_000_000_000_000_000
        frames = [bytes(range(i, i + 60)) for i in range(6)]
        write_pcap(Path(d) / "a.pcap", ts, frames)
        write_pcapng(Path(d) / "a.pcapng", ts, frames, extra_blocks=[(2, 5, b"\0" * 8)])
        write_pcap(Path(d) / "a.pcap.zst", ts, frames)
        for name in ("a.pcap", "a.pcapng", "a.pcap.zst"):
            out[name] = (Path(d) / name).read_bytes()
    return out


SEEDS = _seed_files()


@st.composite
def mutated(draw):
    name = draw(st.sampled_from(sorted(SEEDS)))
    data = bytearray(SEEDS[name])
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["flip", "cut", "insert", "u32"]))
        pos = draw(st.integers(0, max(0, len(data) - 1)))
        if kind == "flip" and data:
            data[pos] ^= draw(st.integers(1, 255))
        elif kind == "cut":
            del data[pos:]
        elif kind == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=12))
        elif kind == "u32" and pos + 4 <= len(data):
            data[pos:pos + 4] = draw(st.sampled_from([0, 1, 0xFFFFFFFF, 0x7FFFFFFF, 12, 28])).to_bytes(4, "little")
    return name, bytes(data)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=mutated())
def test_mutated_captures_never_raise_anything_else(case):
    name, data = case
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / name
        p.write_bytes(data)
        try:
            ts, frames, wire = read_back(p)
        except CaptureFormatError as exc:
            assert exc.path == str(p) and exc.offset >= 0
        else:
            assert len(ts) == len(frames) == len(wire)
