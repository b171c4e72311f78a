"""benchbook.capture readers against a plain-Python reference, tshark, and bad input."""

from __future__ import annotations

import struct
import subprocess
import warnings
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest

from benchbook.capture import CaptureFormatError, CaptureWarning, open_capture, write_pcap, write_pcapng
from benchbook.capture.synth import make_capture_pair
from capture_reference import read_reference
from conftest import require_program


def read_all(path, **kw):
    rows = []
    for ch in open_capture(path, **kw):
        assert ch.source == str(path)
        for i in range(len(ch)):
            rows.append((int(ch.ts_ns[i]), int(ch.caplen[i]), int(ch.wirelen[i]), ch.frame(i)))
    return rows


def real_pcaps(shared: Path) -> list[Path]:
    files = sorted(shared.glob("tcpdump-tcp-tests/*.pcap")) + sorted(shared.glob("zeek-tcp-baselines/Traces/**/*.pcap"))
    assert files, "no pcaps in the shared datasets"
    return files


def test_real_pcaps_match_reference_reader(shared_datasets):
    for f in real_pcaps(shared_datasets):
        ref = read_reference(f)
        assert len(ref) > 0
        # tiny chunks and buffers force records across buffer boundaries
        assert read_all(f) == ref, f
        assert read_all(f, chunk_packets=3, buffer_bytes=100) == ref, f


def tshark_fields(path: Path) -> list[tuple[int, int, int]]:
    out = subprocess.run(
        ["tshark", "-r", str(path), "-T", "fields", "-e", "frame.time_epoch", "-e", "frame.len", "-e", "frame.cap_len"],
        capture_output=True, text=True, check=True,
    ).stdout
    rows = []
    for line in out.splitlines():
        t, ln, cl = line.split("\t")
        if not t:  # tshark lists pcapng blocks it does not know as records without a time
            continue
        rows.append((int(Decimal(t) * 10**9), int(cl), int(ln)))
    return rows


def test_readers_agree_with_tshark_on_real_captures(shared_datasets):
    require_program("tshark")
    nano = shared_datasets / "tcpdump-tcp-tests" / "tcp-handshake-nano.pcap"
    files = [nano] + real_pcaps(shared_datasets)[:6]
    for f in files:
        ours = [(t, c, w) for t, c, w, _ in read_all(f)]
        assert ours == tshark_fields(f), f
    # the nanosecond file really has sub-microsecond digits
    assert any(t % 1000 for t, *_ in read_all(nano))


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    """A small synthetic capture plus the real nanosecond pcap's packets."""
    d = tmp_path_factory.mktemp("cap")
    make_capture_pair(d / "pre.pcap", d / "post.pcap", 500, rate_pps=1e5, frame_size=90, seed=3)
    rows = read_reference(d / "pre.pcap")
    ts = np.array([r[0] for r in rows], np.int64) + np.arange(len(rows)) * 7  # odd ns digits
    frames = [r[3] for r in rows]
    return d, ts, frames


@pytest.mark.parametrize("big", [False, True])
@pytest.mark.parametrize("ns", [True, False])
def test_pcap_byte_orders_and_resolutions(sample, big, ns):
    d, ts, frames = sample
    p = write_pcap(d / f"x-{big}-{ns}.pcap", ts, frames, nanosecond=ns, big_endian=big)
    got = read_all(p, chunk_packets=64, buffer_bytes=4096)
    want_ts = ts if ns else ts // 1000 * 1000
    assert [g[0] for g in got] == want_ts.tolist()
    assert [g[3] for g in got] == frames
    assert got == read_reference(p)


@pytest.mark.parametrize(
    "tsresol,big,offset",
    [
        (9, False, 0),
        (6, False, 0),
        (9, True, 0),
        (0x80 | 30, False, 0),
        (0x80 | 40, True, 1_699_999_000),
        (12, False, 1_699_999_000),
    ],
)
def test_pcapng_variants_against_reference_and_tshark(sample, tsresol, big, offset):
    d, ts, frames = sample
    unknown = [
        (0, 0x00000BAD, b"unknown block before the first packet"),
        (10, 5, b"\0" * 16),
        (len(frames), 0x40000BAD, b"x" * 5),
    ]
    p = write_pcapng(
        d / f"x-{tsresol}-{big}.pcapng", ts, frames,
        tsresol=tsresol, big_endian=big, extra_blocks=unknown, tsoffset_s=offset,
    )
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        got = read_all(p, chunk_packets=50, buffer_bytes=2048)
    assert any("skipped 3 pcapng blocks" in str(x.message) for x in w)
    assert got == read_reference(p)
    assert [g[3] for g in got] == frames
    if tsresol == 9 or tsresol == 12:
        assert [g[0] for g in got] == ts.tolist()
    elif tsresol == 6:
        assert [g[0] for g in got] == (ts // 1000 * 1000).tolist()
    else:  # power-of-two ticks lose less than one tick
        k = tsresol & 0x7F
        assert np.all(np.abs(np.array([g[0] for g in got]) - ts) <= 10**9 / 2**k + 1)
    require_program("tshark")
    assert [(t, c, wl) for t, c, wl, _ in got] == [(t, c, wl) for t, c, wl in tshark_fields(p)]


def test_pcapng_from_editcap_and_simple_packet_blocks(sample, shared_datasets):
    editcap = require_program("editcap")
    src = shared_datasets / "tcpdump-tcp-tests" / "mptcp-v0.pcap"
    d = sample[0]
    out = d / "mptcp.pcapng"
    subprocess.run([editcap, "-F", "pcapng", str(src), str(out)], check=True, capture_output=True)
    assert read_all(out) == read_all(src)
    # simple packet blocks carry no timestamps
    _, ts, frames = sample
    p = write_pcapng(d / "spb.pcapng", ts[:20], frames[:20], simple=True, snaplen=64)
    with pytest.warns(CaptureWarning, match="simple packet blocks"):
        got = read_all(p)
    assert [g[3] for g in got] == [f[:64] for f in frames[:20]]
    assert [g[2] for g in got] == [len(f) for f in frames[:20]]


def test_zstd_streams(sample):
    d, ts, frames = sample
    for name, writer in (("z.pcap.zst", write_pcap), ("z.pcapng.zst", write_pcapng)):
        p = writer(d / name, ts, frames)
        assert p.read_bytes()[:4] == b"\x28\xb5\x2f\xfd"
        assert [g[3] for g in read_all(p, buffer_bytes=1000)] == frames


def test_truncated_last_record_warns_and_keeps_complete_packets(sample):
    d, ts, frames = sample
    p = write_pcap(d / "t.pcap", ts[:10], frames[:10])
    raw = p.read_bytes()
    cut = d / "cut.pcap"
    cut.write_bytes(raw[:-30])
    last_off = len(raw) - (16 + len(frames[9]))
    expected = rf"cut\.pcap: truncated last packet record at byte offset {last_off}.*9 complete"
    with pytest.warns(CaptureWarning, match=expected):
        got = read_all(cut)
    assert [g[3] for g in got] == frames[:9]
    # pcapng too
    p = write_pcapng(d / "t.pcapng", ts[:10], frames[:10])
    cutng = d / "cut.pcapng"
    cutng.write_bytes(p.read_bytes()[:-7])
    with pytest.warns(CaptureWarning, match="truncated last block at byte offset"):
        assert len(read_all(cutng)) == 9


def test_wrong_magic_empty_file_and_corrupt_length(tmp_path, sample):
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(b"GIF89a" + b"\0" * 100)
    with pytest.raises(CaptureFormatError, match=r"bad\.pcap: at byte offset 0: unknown magic 0x47494638"):
        list(open_capture(bad))
    empty = tmp_path / "empty.pcap"
    empty.write_bytes(b"")
    with pytest.raises(CaptureFormatError, match=r"empty\.pcap: at byte offset 0: file is empty"):
        list(open_capture(empty))
    header_only = write_pcap(tmp_path / "hdr.pcap", np.zeros(0, np.int64), [])
    assert list(open_capture(header_only)) == []
    _, ts, frames = sample
    p = write_pcap(tmp_path / "c.pcap", ts[:5], frames[:5])
    raw = bytearray(p.read_bytes())
    off = 24 + 2 * (16 + len(frames[0]))
    raw[off + 8 : off + 12] = struct.pack("<I", 0x7FFFFFFF)
    p.write_bytes(bytes(raw))
    with pytest.raises(CaptureFormatError, match=rf"c\.pcap: at byte offset {off}: packet record 2 claims 2147483647"):
        list(open_capture(p))


def test_chunks_are_bounded_and_indexed(sample):
    d, ts, frames = sample
    p = write_pcap(d / "b.pcap", ts, frames)
    chunks = list(open_capture(p, chunk_packets=37))
    assert max(len(c) for c in chunks) <= 37
    assert [c.first_index for c in chunks] == list(np.cumsum([0] + [len(c) for c in chunks[:-1]]))
    c = chunks[1]
    raw = p.read_bytes()
    # file_offsets point at the record headers
    fo = int(c.file_offsets[0])
    assert raw[fo + 16 : fo + 16 + int(c.caplen[0])] == c.frame(0)


def test_recycled_arrays_give_the_same_packets(sample):
    d, ts, frames = sample
    p = write_pcap(d / "r.pcap", ts, frames)
    want = read_all(p, chunk_packets=40)
    got = []
    for ch in open_capture(p, chunk_packets=40, recycle=2):
        got.extend((int(ch.ts_ns[i]), int(ch.caplen[i]), int(ch.wirelen[i]), ch.frame(i)) for i in range(len(ch)))
    assert got == want
    with pytest.raises(ValueError, match="recycle"):
        open_capture(p, recycle=1)


def test_second_pcapng_section_uses_its_own_interfaces_and_byte_order(sample):
    """Concatenated pcapng files are one file of several sections (the format allows it; `cat` makes one): each
    section's packets use that section's interface table, resolution and byte order, never the first's."""
    d, ts, frames = sample
    parts = [write_pcapng(d / "s1.pcapng", ts[:30], frames[:30], tsresol=6),
             write_pcapng(d / "s2.pcapng", ts[30:60], frames[30:60], tsresol=9, big_endian=True),
             write_pcapng(d / "s3.pcapng", ts[60:90], frames[60:90], tsresol=0x80 | 20, tsoffset_s=1_000)]
    p = d / "sections.pcapng"
    p.write_bytes(b"".join(x.read_bytes() for x in parts))
    got = read_all(p, chunk_packets=7, buffer_bytes=1500)
    assert [g[3] for g in got] == frames[:90]
    t = np.array([g[0] for g in got])
    assert t[:30].tolist() == (ts[:30] // 1000 * 1000).tolist()  # microseconds
    assert t[30:60].tolist() == ts[30:60].tolist()  # nanoseconds, big-endian section
    assert np.all(np.abs(t[60:90] - ts[60:90]) <= 10**9 / 2**20 + 1)  # 2^-20 s ticks from an offset
    assert got == read_reference(p)
    require_program("tshark")
    assert [(a, c, w) for a, c, w, _ in got] == tshark_fields(p)


def test_pcapng_interfaces_of_different_resolutions_from_mergecap(sample):
    """mergecap (Wireshark) merges a microsecond and a nanosecond capture into one pcapng with two interfaces:
    every packet keeps its own interface's resolution, in the merged (time) order."""
    mergecap = require_program("mergecap")
    d, ts, frames = sample
    us = write_pcap(d / "m-us.pcap", ts[0:200:2], frames[0:200:2], nanosecond=False)
    ns = write_pcap(d / "m-ns.pcap", ts[1:200:2] + 3, frames[1:200:2], nanosecond=True)
    out = d / "merged.pcapng"
    subprocess.run([mergecap, "-F", "pcapng", "-w", str(out), str(us), str(ns)], check=True, capture_output=True)
    got = read_all(out, chunk_packets=16, buffer_bytes=2048)
    want = sorted([(int(t) // 1000 * 1000, f) for t, f in zip(ts[0:200:2], frames[0:200:2], strict=True)]
                  + [(int(t) + 3, f) for t, f in zip(ts[1:200:2], frames[1:200:2], strict=True)],
                  key=lambda r: r[0])
    assert [(g[0], g[3]) for g in got] == want
    assert got == read_reference(out)
    assert [(a, c, w) for a, c, w, _ in got] == tshark_fields(out)
