"""The byte source under the capture readers (benchbook.capture.source), rule by rule and at its edges.

ByteSource hands a capture's bytes out in whatever pieces the reader asks for: a plain file from its first four
bytes (read to tell the format, never sought back: FIFOs cannot) and then the file, a zstd file (told by its full
4-byte magic, not by its name) decompressed frame after frame. A zstd stream that ends inside a frame is reported
in ``truncated`` with the number of decompressed bytes handed out; corrupt zstd data raises CaptureFormatError
naming the decompressed offset where the good data ends. A plain regular file is also offered whole as a read-only
mapping whose pages behind the reader ``release`` drops from the resident set; ``close`` unmaps it once nothing
looks at it. ``check_capture_file`` refuses what is not a regular file or a FIFO, by name; ``open_output`` writes
plain files, or zstd for a ``.zst`` name.

The truth comes from the bytes the tests write (and zstandard's own one-shot decoder), from tshark for packet
counts and timestamps, and from the kernel (/proc/self/smaps, /proc/self/maps, /proc/self/fd) for what is mapped,
resident and open.
"""

from __future__ import annotations

import contextlib
import io
import json
import mmap
import os
import re
import signal
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import textwrap
import threading
import warnings
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest
import zstandard

from benchbook.capture import CaptureFormatError, CaptureWarning, open_capture, write_pcap, write_pcapng
from benchbook.capture.errors import CaptureFileError
from benchbook.capture.source import ZSTD_MAGIC, ByteSource, check_capture_file, open_output
from conftest import require_program

MALFORMED = Path(__file__).resolve().parent.parent / "data" / "malformed"
PAGE = mmap.PAGESIZE
RAW_PIECE = 1 << 17  # compressed bytes the source asks for at a time (after the 4 it read to tell the format)
T0 = 1_700_000_000_000_000_000


# --- helpers ------------------------------------------------------------------------------------------------

@contextlib.contextmanager
def deadline(seconds: float):
    """Fail instead of hanging (a source that never reports its end, a read that waits on a pipe forever)."""
    def expired(*_):
        raise TimeoutError(f"still running after {seconds} s")

    old = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def read_pieces(src: ByteSource, piece: int, start: int = 0) -> bytes:
    """Everything the source hands out, asked for in buffers of `piece` bytes filled from `start`."""
    out = []
    with deadline(20):
        while True:
            buf = np.full(start + piece, 0xEE, np.uint8)
            got = src.read_into(buf, start)
            assert 0 <= got <= piece
            assert not buf[:start].size or np.all(buf[:start] == 0xEE)  # nothing written before start
            out.append(buf[start : start + got].tobytes())
            if got < piece:  # short: the end; it stays the end
                assert src.read_into(buf, start) == 0
                assert src.read_into(buf, start) == 0
                return b"".join(out)


def frames_of(n: int, seed: int, size: int = 0) -> list[bytes]:
    """Frames of varied sizes (or all `size` bytes), half random (incompressible), half zeros."""
    rng = np.random.default_rng(seed)
    sizes = [size] * n if size else rng.integers(14, 700, n).tolist()
    return [rng.bytes(s // 2) + bytes(s - s // 2) for s in sizes]


def times_of(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return T0 + np.cumsum(rng.integers(1, 50_000, n)).astype(np.int64)


def pcap_bytes(tmp: Path, n: int, seed: int = 0, size: int = 0) -> bytes:
    return write_pcap(tmp / f"ref-{n}-{seed}-{size}.pcap", times_of(n, seed), frames_of(n, seed, size)).read_bytes()


def zstd_frames(data: bytes, cuts: list[int], level: int = 1) -> bytes:
    """data compressed as one zstd frame per piece between the cut points."""
    c = zstandard.ZstdCompressor(level=level)
    edges = [0, *cuts, len(data)]
    return b"".join(c.compress(data[a:b]) for a, b in zip(edges, edges[1:], strict=False))


def zstd_reference(blob: bytes) -> bytes:
    """What zstandard's own decoder gets out of a (possibly cut) stream of frames, fed whole."""
    out = []
    while blob:
        d = zstandard.ZstdDecompressor().decompressobj()
        out.append(d.decompress(blob))
        if not d.eof:
            break
        blob = d.unused_data
    return b"".join(out)


def rss_kib(path: Path) -> int:
    """Resident kB of this process's mappings of `path` (/proc/self/smaps)."""
    target = os.path.realpath(path)
    total, inside = 0, False
    with open("/proc/self/smaps") as fh:
        for line in fh:
            if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
                inside = line.rstrip("\n").endswith(" " + target)
            elif inside and line.startswith("Rss:"):
                total += int(line.split()[1])
    return total


def is_mapped(path: Path) -> bool:
    target = os.path.realpath(path)
    with open("/proc/self/maps") as fh:
        return any(line.rstrip("\n").endswith(" " + target) for line in fh)


def open_fds(path: Path) -> int:
    target = os.path.realpath(path)
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            n += os.readlink(f"/proc/self/fd/{fd}") == target
    return n


def feed_fifo(fifo: Path, parts: list[bytes], hold: threading.Event | None = None,
              held: dict | None = None) -> threading.Thread:
    """Write parts into the FIFO; before the last part wait (at most 5 s) for `hold` and note whether it came."""
    def run() -> None:
        with open(fifo, "wb") as fh:
            for i, part in enumerate(parts):
                if hold is not None and i == len(parts) - 1:
                    fh.flush()
                    held["in_time"] = hold.wait(5)
                fh.write(part)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def packets(path: Path, **kw) -> tuple[list[tuple[int, int, int, bytes]], list[str]]:
    rows = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with deadline(20):
            for ch in open_capture(path, **kw):
                assert len(ch) <= kw.get("chunk_packets", 1 << 20)
                assert ch.first_index == len(rows)
                rows += [(int(ch.ts_ns[i]), int(ch.caplen[i]), int(ch.wirelen[i]), ch.frame(i)) for i in range(len(ch))]
    return rows, [str(w.message) for w in caught if issubclass(w.category, CaptureWarning)]


def tshark_times_and_lengths(path: Path) -> list[tuple[int, int, int]]:
    out = subprocess.run(["tshark", "-r", str(path), "-T", "fields", "-e", "frame.time_epoch", "-e", "frame.cap_len",
                          "-e", "frame.len"], capture_output=True, text=True, check=True).stdout
    return [(int(Decimal(t) * 10**9), int(c), int(w)) for t, c, w in (ln.split("\t") for ln in out.splitlines())]


# --- plain files -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("piece", [1, 2, 3, 4, 5, 7, 76, 4096, 632, 633])
def test_a_plain_file_is_handed_out_byte_for_byte_in_buffers_of_any_size(tmp_path, piece):
    """good.pcap is 632 bytes: buffers smaller than the 4-byte head, of exactly the file, one byte more."""
    raw = (MALFORMED / "good.pcap").read_bytes()
    assert len(raw) == 632
    with ByteSource(MALFORMED / "good.pcap") as src:
        assert not src.compressed and src.head() == raw[:4]
        assert read_pieces(src, piece, start=piece % 3) == raw
        assert src.truncated is None


@pytest.mark.parametrize("size", [1, 2, 3, 4, 5])
def test_files_shorter_than_the_head_or_just_longer(tmp_path, size):
    p = tmp_path / "short.bin"
    p.write_bytes(bytes([0xA1, 0xB2, 0xC3, 0xD4, 0x02])[:size])
    with ByteSource(p) as src:
        assert src.head() == p.read_bytes()[:4]
        assert read_pieces(src, 1) == p.read_bytes()
    with ByteSource(p) as src:
        assert read_pieces(src, 64) == p.read_bytes()
    with pytest.raises(CaptureFormatError) as info:
        list(open_capture(p))
    assert info.value.path == str(p) and info.value.offset == 0
    if size < 4:  # too short for a magic number
        assert f"unknown magic 0x{p.read_bytes().hex()}: expected a pcap" in str(info.value)
    else:
        assert info.value.detail == f"pcap file header is {size} bytes long: expected 24 bytes"


def test_an_empty_file_is_refused_as_empty_not_mapped(tmp_path):
    p = tmp_path / "empty.pcap"
    p.write_bytes(b"")
    with ByteSource(p) as src:
        assert src.head() == b"" and src.mapped() is None
        assert read_pieces(src, 8) == b""
    with pytest.raises(CaptureFormatError, match=r"empty\.pcap: at byte offset 0: file is empty"):
        list(open_capture(p))


def test_the_whole_plain_file_is_mapped_read_only_whatever_was_read(tmp_path):
    raw = (MALFORMED / "good.pcap").read_bytes()
    with ByteSource(MALFORMED / "good.pcap") as src:
        head = np.zeros(10, np.uint8)
        assert src.read_into(head, 0) == 10 and head.tobytes() == raw[:10]
        whole = src.mapped()
        assert whole is not None and whole.dtype == np.uint8
        assert whole.tobytes() == raw  # from byte 0, however far the reads went
        assert not whole.flags.writeable
        with pytest.raises(ValueError):
            whole[0] = 1
        del whole


def test_a_zstd_file_is_never_mapped(tmp_path):
    p = tmp_path / "c.pcap.zst"
    p.write_bytes(zstandard.ZstdCompressor().compress((MALFORMED / "good.pcap").read_bytes()))
    with ByteSource(p) as src:
        assert src.compressed and src.head() == ZSTD_MAGIC
        assert src.mapped() is None


# --- release: mapped pages behind the reader leave the resident set -----------------------------------------

def touched(tmp_path: Path, pages: int, extra: int = 0) -> tuple[Path, ByteSource, np.ndarray]:
    p = tmp_path / f"map-{pages}-{extra}.bin"
    p.write_bytes(np.random.default_rng(pages).bytes(pages * PAGE + extra))
    src = ByteSource(p)
    whole = src.mapped()
    assert int(whole.astype(np.int64).sum()) > 0  # every page faulted in
    return p, src, whole


def test_release_drops_exactly_the_whole_pages_before_the_point(tmp_path):
    if not Path("/proc/self/smaps").exists():
        pytest.skip("no /proc/self/smaps")
    p, src, whole = touched(tmp_path, 200, extra=100)
    kib = PAGE // 1024
    full = rss_kib(p)
    if full != 201 * kib:  # every page of the mapping faulted in, counted in pages (not huge pages, not reclaimed)
        pytest.skip(f"the kernel shows {full} kB resident of a 201-page mapping just read through")
    src.release(10 * PAGE + PAGE // 2)  # the page holding the point stays
    assert rss_kib(p) == full - 10 * kib
    src.release(10 * PAGE + PAGE - 1)  # still inside page 10
    assert rss_kib(p) == full - 10 * kib
    src.release(30 * PAGE)  # exactly at a page boundary: pages 10..29 go, page 30 stays
    assert rss_kib(p) == full - 30 * kib
    src.release(5 * PAGE)  # a point behind the last one changes nothing
    src.release(-(1 << 20))  # the reader's default point at the start of a file
    assert rss_kib(p) == full - 30 * kib
    src.release(31 * PAGE + 1)
    assert rss_kib(p) == full - 31 * kib
    assert whole[: 31 * PAGE].tobytes() == p.read_bytes()[: 31 * PAGE]  # released pages read back from the cache
    del whole
    src.close()


def test_release_leaves_pages_touched_again_resident(tmp_path):
    """Each release advises only the range new since the last one: pages a chunk looks at again stay resident."""
    if not Path("/proc/self/smaps").exists():
        pytest.skip("no /proc/self/smaps")
    p, src, whole = touched(tmp_path, 300)
    kib = PAGE // 1024
    src.release(100 * PAGE)
    assert rss_kib(p) == 200 * kib
    assert int(whole[: 100 * PAGE].astype(np.int64).sum()) > 0  # a consumer looks at the first 100 pages again
    src.release(150 * PAGE)
    assert rss_kib(p) >= 250 * kib - 16 * kib  # the first 100 pages stay; 150.. stay (fault-around aside)
    del whole
    src.close()


def test_release_at_the_end_of_a_page_aligned_file_twice(tmp_path):
    p, src, whole = touched(tmp_path, 64)
    src.release(64 * PAGE)
    src.release(64 * PAGE)  # nothing left to drop: no madvise at the end of the mapping
    if Path("/proc/self/smaps").exists():
        assert rss_kib(p) == 0
    assert whole[-PAGE:].tobytes() == p.read_bytes()[-PAGE:]
    del whole
    src.close()


def test_release_past_the_end_of_the_mapping_drops_up_to_its_last_whole_page(tmp_path):
    """A point past the file's end (a reader's release point after the last record) was a ValueError from
    madvise: it drops the whole pages and leaves the partial last one."""
    p, src, whole = touched(tmp_path, 8, extra=100)
    src.release(20 * PAGE)
    src.release(20 * PAGE + 1)
    if Path("/proc/self/smaps").exists():
        assert rss_kib(p) <= PAGE // 1024                             # the partial ninth page at most
    assert whole.tobytes() == p.read_bytes()
    del whole
    src.close()


def test_head_stays_the_first_bytes_after_they_are_read(tmp_path):
    p = tmp_path / "h.bin"
    p.write_bytes(b"\xd4\xc3\xb2\xa1" + bytes(100))
    with ByteSource(p) as src:
        buf = np.zeros(50, np.uint8)
        assert src.read_into(buf, 0) == 50 and src.head() == b"\xd4\xc3\xb2\xa1"


def test_release_without_a_mapping_does_nothing(tmp_path):
    p = tmp_path / "c.zst"
    p.write_bytes(zstandard.ZstdCompressor().compress(bytes(3 * PAGE)))
    with ByteSource(p) as src:
        src.release(2 * PAGE)
        assert read_pieces(src, 5000) == bytes(3 * PAGE)
    with ByteSource(MALFORMED / "good.pcap") as src:  # plain, never mapped
        src.release(PAGE)
        assert read_pieces(src, 100) == (MALFORMED / "good.pcap").read_bytes()


# --- close ---------------------------------------------------------------------------------------------------

def test_close_unmaps_the_file_and_closes_it(tmp_path):
    if not Path("/proc/self/maps").exists():
        pytest.skip("no /proc")
    p = tmp_path / "m.pcap"
    p.write_bytes((MALFORMED / "good.pcap").read_bytes())
    src = ByteSource(p)
    assert open_fds(p) == 1
    whole = src.mapped()
    assert is_mapped(p)
    del whole
    src.close()
    assert not is_mapped(p), "close() leaves the file mapped although nothing refers to the mapping"
    assert open_fds(p) == 0
    # while an array still looks at the mapping, close() leaves it mapped for that array
    src = ByteSource(p)
    whole = src.mapped()
    assert open_fds(p) == 2  # the file and the mapping's own descriptor
    src.close()
    assert open_fds(p) == 1 and is_mapped(p)
    assert whole.tobytes() == p.read_bytes()
    del whole, src
    assert not is_mapped(p) and open_fds(p) == 0


@pytest.mark.parametrize("name", ["good.pcap", "zstd-two-frames.pcap.zst"])
def test_a_reader_closed_early_closes_its_file_and_its_chunks_stay_valid(tmp_path, name):
    p = tmp_path / name
    p.write_bytes((MALFORMED / name).read_bytes())
    want, _ = packets(p)
    mapped = not name.endswith(".zst")
    it = open_capture(p, chunk_packets=3, buffer_bytes=256)
    first = next(it)
    assert open_fds(p) == 1 + mapped  # the file (and the mapping's own descriptor)
    it.close()
    assert open_fds(p) == mapped  # only the mapping the chunk still looks at
    assert [first.frame(i) for i in range(len(first))] == [w[3] for w in want[:3]]
    del first
    assert open_fds(p) == 0 and not is_mapped(p)
    assert list(it) == []  # a closed reader yields nothing more
    again, _ = packets(p, chunk_packets=3, buffer_bytes=256)  # a new reader starts over
    assert again == want
    with ByteSource(p):
        assert open_fds(p) == 1
    assert open_fds(p) == 0


def test_a_file_unlinked_while_read_is_read_to_its_end(tmp_path):
    data = pcap_bytes(tmp_path, 400, seed=4)
    for name, blob in (("u.pcap", data), ("u.pcap.zst", zstd_frames(data, [5000, 9000]))):
        p = tmp_path / name
        p.write_bytes(blob)
        want, _ = packets(p)
        got = []
        for ch in open_capture(p, chunk_packets=50, buffer_bytes=4096):
            if not got:
                p.unlink()
            got += [ch.frame(i) for i in range(len(ch))]
        assert got == [w[3] for w in want] and len(got) == 400


@pytest.mark.parametrize("fmt", ["pcap", "pcapng"])
def test_a_plain_file_cut_short_while_read_does_not_crash_the_process(tmp_path, fmt):
    """Cut between two chunks: the mapped pages past the new end were touched and the process died of SIGBUS; the
    reader now ends at the file's size with the truncated-file warning, keeping the packets read before."""
    p, copy = tmp_path / f"cut.{fmt}", tmp_path / f"copy.{fmt}"
    n = 40_000
    (write_pcap if fmt == "pcap" else write_pcapng)(p, np.arange(n, dtype=np.int64) * 1000 + T0, [bytes(60)] * n)
    copy.write_bytes(p.read_bytes()[:100_000])
    script = textwrap.dedent(f"""
        import json, os, warnings
        from benchbook.capture import open_capture
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            it = open_capture({str(p)!r}, chunk_packets=1000)
            count = len(next(it))
            os.truncate({str(p)!r}, 100_000)
            try:
                for ch in it:
                    count += len(ch)
            except Exception as exc:
                count = type(exc).__name__
        print(json.dumps([count, [str(w.message) for w in caught]]))
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert proc.returncode == 0, f"the reader died of signal {-proc.returncode}" if proc.returncode < 0 else proc.stderr
    count, messages = json.loads(proc.stdout)
    with warnings.catch_warnings(record=True) as caught:                # the same file cut before it was opened
        warnings.simplefilter("always")
        want = sum(len(ch) for ch in open_capture(copy, chunk_packets=1000))
    assert want > 1000 and count == want
    assert messages == [str(w.message).replace(str(copy), str(p)) for w in caught] and len(messages) == 1
    assert "truncated last" in messages[0]


# --- zstd ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("piece", [1, 3, 75, 76, 77, 4096])
def test_zstd_frames_are_handed_out_byte_for_byte_in_buffers_of_any_size(tmp_path, piece):
    """Frames cut inside records, an empty frame, a frame of one byte: the bytes are the plain file's."""
    good = (MALFORMED / "good.pcap").read_bytes()
    blob = zstd_frames(good, [24, 24, 25, 100, 101, 400])
    p = tmp_path / "f.bin"
    p.write_bytes(blob)
    with ByteSource(p) as src:
        assert src.compressed
        assert read_pieces(src, piece, start=1) == good
        assert src.truncated is None
    # one frame whose size is exactly the buffer: handed out, then the end
    p.write_bytes(zstd_frames(good, []))
    with ByteSource(p) as src:
        assert read_pieces(src, len(good)) == good
        assert src.truncated is None


@pytest.mark.parametrize("piece", [4093, 1 << 16, 1 << 20])
def test_a_zstd_stream_of_many_raw_reads_and_frames_is_handed_out_whole(tmp_path, piece):
    rng = np.random.default_rng(7)
    data = rng.bytes(300_000) + bytes(200_000) + rng.bytes(150_000)
    blob = zstd_frames(data, [1000, 1001, 299_999, 450_000])
    assert len(blob) > 3 * RAW_PIECE
    p = tmp_path / "big.zst"
    p.write_bytes(blob)
    with ByteSource(p) as src:
        assert read_pieces(src, piece) == data
        assert src.truncated is None


def test_an_empty_zstd_stream_is_an_empty_file(tmp_path):
    p = tmp_path / "e.pcap.zst"
    p.write_bytes(zstandard.ZstdCompressor().compress(b""))
    with ByteSource(p) as src:
        assert read_pieces(src, 10) == b""
        assert src.truncated is None
    with pytest.raises(CaptureFormatError) as info:
        list(open_capture(p))
    assert (info.value.offset, info.value.detail) == (0, "file is empty: expected a pcap or pcapng header")


def test_zstd_is_told_by_its_whole_magic(tmp_path):
    """Three of the four magic bytes are not zstd; a zstd stream is zstd under any name."""
    p = tmp_path / "almost.pcap"
    p.write_bytes(ZSTD_MAGIC[:3] + b"\x00" + bytes(40))
    with ByteSource(p) as src:
        assert not src.compressed
    with pytest.raises(CaptureFormatError, match=r"at byte offset 0: unknown magic 0x28b52f00: expected"):
        list(open_capture(p))
    p.write_bytes(ZSTD_MAGIC[:3])
    with ByteSource(p) as src:
        assert not src.compressed and read_pieces(src, 2) == ZSTD_MAGIC[:3]
    q = tmp_path / "named-plain.pcap"
    q.write_bytes(zstandard.ZstdCompressor().compress((MALFORMED / "good.pcap").read_bytes()))
    assert len(packets(q)[0]) == 8


def test_a_premature_end_names_the_decompressed_bytes_handed_out(tmp_path):
    # the committed cut: a block flushed after 4 records, then the stream ends inside its frame
    p = MALFORMED / "zstd-cut-at-block.pcap.zst"
    with ByteSource(p) as src:
        got = read_pieces(src, 100)
        assert got == (MALFORMED / "good.pcap").read_bytes()[: 24 + 4 * 76]
        assert src.truncated == ("the zstd stream ends inside a frame (premature end) after 328 decompressed bytes")
    rows, msgs = packets(p)
    assert len(rows) == 4
    assert msgs == [f"{p}: the zstd stream ends inside a frame (premature end) after 328 decompressed bytes; "
                    "using the 4 complete packets before it"]
    # a stream of several frames and raw reads, cut inside its last frame
    data = pcap_bytes(tmp_path, 2000, seed=5)
    blob = zstd_frames(data, [len(data) // 3, len(data) // 2])
    cut = blob[:-9]
    assert len(cut) > 2 * RAW_PIECE
    c = tmp_path / "cut.pcap.zst"
    c.write_bytes(cut)
    ref = zstd_reference(cut)
    assert 0 < len(ref) < len(data) and data.startswith(ref)
    with ByteSource(c) as src:
        assert read_pieces(src, 5000) == ref
        assert src.truncated == (f"the zstd stream ends inside a frame (premature end) after {len(ref)} "
                                 "decompressed bytes")
    rows, msgs = packets(c, buffer_bytes=10_000)
    whole, _ = packets(write_pcap(tmp_path / "whole.pcap", times_of(2000, 5), frames_of(2000, 5)))
    assert rows == whole[: len(rows)] and len(rows) < 2000
    assert msgs[-1] == (f"{c}: the zstd stream ends inside a frame (premature end) after {len(ref)} decompressed "
                        f"bytes; using the {len(rows)} complete packets before it")


def test_the_magic_alone_is_a_premature_end_with_no_capture_header(tmp_path):
    p = tmp_path / "magic.pcap.zst"
    p.write_bytes(ZSTD_MAGIC)
    with ByteSource(p) as src:
        assert read_pieces(src, 4) == b""
        assert src.truncated == "the zstd stream ends inside a frame (premature end) after 0 decompressed bytes"
    with pytest.raises(CaptureFormatError) as info:
        list(open_capture(p))
    assert str(info.value) == (f"{p}: at byte offset 0: the zstd stream ends inside a frame (premature end) after 0 "
                               "decompressed bytes: no capture header")


def test_after_a_premature_end_the_source_stays_at_its_end(tmp_path):
    """What `truncated` says stays true: a stream that ended early hands out nothing more, even when the rest of
    its frame is appended to the file afterwards (a capture still being written is read as far as it was)."""
    data = pcap_bytes(tmp_path, 300, seed=6)
    blob = zstd_frames(data, [])
    p = tmp_path / "growing.pcap.zst"
    p.write_bytes(blob[:-20])
    with ByteSource(p) as src:
        got = read_pieces(src, 1000)
        said = src.truncated
        assert said is not None and said.endswith(f"after {len(got)} decompressed bytes")
        with open(p, "ab") as fh:
            fh.write(blob[-20:])
        buf = np.zeros(1000, np.uint8)
        assert src.read_into(buf, 0) == 0
        assert src.truncated == said


def test_a_complete_stream_is_not_truncated(tmp_path):
    for name in ("zstd-two-frames.pcap.zst", "good.pcap"):
        with ByteSource(MALFORMED / name) as src:
            assert src.truncated is None  # None: nothing known to be missing
            read_pieces(src, 50)
            assert src.truncated is None
    assert packets(MALFORMED / "zstd-two-frames.pcap.zst", chunk_packets=1, buffer_bytes=16)[1] == []


def test_corrupt_zstd_names_the_decompressed_offset_where_the_good_data_ends(tmp_path):
    garbage = bytes((i * 37 + 11) % 251 for i in range(200))
    good = (MALFORMED / "good.pcap").read_bytes()
    big = pcap_bytes(tmp_path, 2000, seed=8)
    cases = {
        "right after the magic": (MALFORMED / "zstd-garbage.pcap.zst", b"", 0),
        "after a good frame in the same raw read": (None, zstd_frames(good, []) + garbage, len(good)),
        "after good frames over several raw reads": (None, zstd_frames(big, [123_457]) + garbage, len(big)),
    }
    assert len(zstd_frames(big, [123_457])) > 2 * RAW_PIECE
    for what, (path, blob, offset) in cases.items():
        if path is None:
            path = tmp_path / f"{len(blob)}.pcap.zst"
            path.write_bytes(blob)
        src = ByteSource(path)
        handed = []
        with pytest.raises(CaptureFormatError) as info:
            while True:
                buf = np.zeros(7919, np.uint8)
                got = src.read_into(buf, 0)
                handed.append(buf[:got].tobytes())
                assert got, "the corrupt data was not noticed"
        src.close()
        assert info.value.path == str(path), what
        assert info.value.offset == offset, what
        assert info.value.detail.startswith("corrupt zstd data (decompressed offset): "), what
        assert str(info.value).startswith(f"{path}: at byte offset {offset}: corrupt zstd data"), what
        assert (good if offset == len(good) else big).startswith(b"".join(handed)), what
    with pytest.raises(CaptureFormatError, match=rf"at byte offset {len(big)}: corrupt zstd data"):
        list(open_capture(path, buffer_bytes=4096))


def test_a_piped_zstd_capture_is_handed_out_as_it_arrives(tmp_path):
    """tcpdump -w - | zstd | benchbook: the source waits for at most 128 KiB of compressed data (after the magic)
    before handing out what they decompress to, and a read satisfied by that does not wait on the pipe for more."""
    data = b"".join(frames_of(6000, seed=9, size=100))
    blob = zstd_frames(data, [], level=3)
    first = 4 + RAW_PIECE
    assert len(blob) > 2 * first
    ready = len(zstandard.ZstdDecompressor().decompressobj().decompress(blob[:first]))
    assert ready > 0
    fifo = tmp_path / "live.fifo"
    os.mkfifo(fifo)
    handed_out, held = threading.Event(), {}
    writer = feed_fifo(fifo, [blob[: first + 1000], blob[first + 1000 :]], handed_out, held)
    with deadline(30), ByteSource(fifo) as src:
        assert src.mapped() is None
        buf = np.zeros(ready, np.uint8)
        assert src.read_into(buf, 0) == ready
        handed_out.set()
        rest = read_pieces(src, 1 << 16)
    writer.join(10)
    assert held["in_time"], "the source waited on the pipe for more than the first 128 KiB of compressed data"
    assert buf.tobytes() + rest == data


@pytest.mark.parametrize("name", ["good.pcap", "zstd-cut-at-frame.pcap.zst"])
def test_a_fifo_is_read_in_pieces_of_any_size(tmp_path, name):
    fifo = tmp_path / "f.fifo"
    os.mkfifo(fifo)
    blob = (MALFORMED / name).read_bytes()
    writer = feed_fifo(fifo, [blob[:3], blob[3:10], blob[10:]])
    with deadline(30), ByteSource(fifo) as src:
        assert src.head() == blob[:4] and src.mapped() is None
        got = read_pieces(src, 3)
    writer.join(10)
    assert got == (zstd_reference(blob) if src.compressed else blob)


# --- the reader over every kind of source, at chunk and buffer edges -------------------------------------------

@pytest.fixture(scope="module")
def capture(tmp_path_factory):
    """300 packets of 14..700 bytes, their truth from tshark, and the plain file."""
    d = tmp_path_factory.mktemp("src")
    ts, frames = times_of(300, 11), frames_of(300, 11)
    p = write_pcap(d / "base.pcap", ts, frames)
    require_program("tshark")
    truth = tshark_times_and_lengths(p)
    assert [(t, c) for t, c, _ in truth] == [(int(t), len(f)) for t, f in zip(ts, frames, strict=True)]
    return d, p, [(t, c, w, f) for (t, c, w), f in zip(truth, frames, strict=True)]


def test_every_source_kind_gives_tsharks_packets_at_chunk_and_buffer_edges(capture):
    d, p, want = capture
    data = p.read_bytes()
    one = 16 + len(want[0][3])  # the first record, header included
    z1 = d / "one-frame.pcap.zst"
    z1.write_bytes(zstd_frames(data, []))
    zn = d / "many-frames.pcap.zst"  # a frame every 997 bytes: frames end inside records and headers
    zn.write_bytes(zstd_frames(data, list(range(997, len(data), 997))))
    assert tshark_times_and_lengths(zn) == [w[:3] for w in want]
    grid = [(1, 24 + one), (299, 64), (300, len(data)), (301, len(data) - 1), (300, len(data) + 1), (7, one)]
    for path in (p, z1, zn):
        for chunk, buffer in grid:
            got, msgs = packets(path, chunk_packets=chunk, buffer_bytes=buffer)
            assert got == want and msgs == [], (path.name, chunk, buffer)
    for name in ("base.pcap", "many-frames.pcap.zst"):
        fifo = d / f"{name}.fifo"
        os.mkfifo(fifo)
        blob = (d / name).read_bytes()
        writer = feed_fifo(fifo, [blob[i : i + 5000] for i in range(0, len(blob), 5000)])
        got, msgs = packets(fifo, chunk_packets=64, buffer_bytes=3000)
        writer.join(10)
        assert got == want and msgs == [], name


def test_empty_and_one_packet_captures_plain_and_compressed(tmp_path):
    for n in (0, 1):
        ts, frames = times_of(n, 12), frames_of(n, 12)
        for path in (write_pcap(tmp_path / f"{n}.pcap", ts, frames), write_pcap(tmp_path / f"{n}.pcap.zst", ts, frames),
                     write_pcapng(tmp_path / f"{n}.pcapng.zst", ts, frames)):
            if path.suffix == ".zst":
                assert path.read_bytes()[:4] == ZSTD_MAGIC
            for chunk, buffer in ((1, 24), (1, 1 << 20), (2, 40)):
                chunks = list(open_capture(path, chunk_packets=chunk, buffer_bytes=buffer))
                assert [len(c) for c in chunks] == [1] * n, path
                if n:
                    assert (int(chunks[0].ts_ns[0]), chunks[0].frame(0)) == (int(ts[0]), frames[0])


def test_a_truncated_last_record_is_at_the_same_offset_plain_or_compressed(tmp_path):
    data = pcap_bytes(tmp_path, 50, seed=13, size=100)
    last = 24 + 49 * 116
    for cut in (1, 100, 115):  # inside the last frame, one byte into its header
        p = tmp_path / f"t{cut}.pcap"
        p.write_bytes(data[: last + 116 - cut])
        z = tmp_path / f"t{cut}.pcap.zst"
        z.write_bytes(zstd_frames(p.read_bytes(), [last - 3]))
        for path in (p, z):
            rows, msgs = packets(path, chunk_packets=49, buffer_bytes=116)
            assert len(rows) == 49
            assert len(msgs) == 1 and f"truncated last packet record at byte offset {last}:" in msgs[0], (path, msgs)


def test_pcapng_sections_compressed_frame_by_frame_like_cat_of_zst_files(tmp_path):
    """Two sections (the second big-endian with two interfaces of different resolutions, from mergecap), each
    its own zstd frame: `cat a.pcapng.zst b.pcapng.zst` is one capture."""
    mergecap = require_program("mergecap")
    ts, frames = times_of(60, 14), frames_of(60, 14)
    a = write_pcapng(tmp_path / "a.pcapng", ts[:20], frames[:20], tsresol=6)
    us = write_pcap(tmp_path / "us.pcap", ts[20:60:2], frames[20:60:2], nanosecond=False)
    ns = write_pcap(tmp_path / "ns.pcap", ts[21:60:2], frames[21:60:2])
    b = tmp_path / "b.pcapng"
    subprocess.run([mergecap, "-F", "pcapng", "-w", str(b), str(us), str(ns)], check=True, capture_output=True)
    plain = tmp_path / "ab.pcapng"
    plain.write_bytes(a.read_bytes() + b.read_bytes())
    packed = tmp_path / "ab.pcapng.zst"
    packed.write_bytes(zstd_frames(a.read_bytes(), []) + zstd_frames(b.read_bytes(), []))
    want, _ = packets(plain)
    assert [(t, c, w) for t, c, w, _ in want] == tshark_times_and_lengths(packed)
    assert len(want) == 60
    for chunk, buffer in ((1, 64), (20, 1 << 20), (61, 333)):
        assert packets(packed, chunk_packets=chunk, buffer_bytes=buffer) == (want, [])


# --- what is not a capture file ----------------------------------------------------------------------------------

def test_what_is_not_a_regular_file_or_fifo_is_refused_by_name(tmp_path):
    cases: list[tuple[Path, str]] = [(tmp_path, "is a directory"), (Path("/dev/null"), "is a character device")]
    blk = tmp_path / "blk"
    try:
        os.mknod(blk, stat.S_IFBLK | 0o600, os.makedev(7, 0))
        cases.append((blk, "is a block device"))
    except (PermissionError, OSError):
        pass
    with tempfile.TemporaryDirectory(dir="/tmp") as short:  # AF_UNIX paths are short
        sock_path = Path(short) / "s"
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(sock_path))
        cases.append((sock_path, "is a socket"))
        try:
            for path, kind in cases:
                with pytest.raises(CaptureFileError) as info:
                    check_capture_file(path)
                assert str(info.value) == f"{path}: {kind}: expected a pcap or pcapng capture file (or a FIFO)"
                assert (info.value.path, info.value.detail) == (str(path), f"{kind}: expected a pcap or pcapng "
                                                                            "capture file (or a FIFO)")
                with pytest.raises(CaptureFileError):
                    ByteSource(path)
        finally:
            sock.close()


def test_missing_and_unreadable_paths_are_named(tmp_path):
    regular = tmp_path / "r.pcap"
    regular.write_bytes(b"x")
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    dangling = tmp_path / "dangling.pcap"
    dangling.symlink_to(tmp_path / "nowhere.pcap")
    cases = [
        (tmp_path / "absent.pcap", "no such file"),
        (dangling, "no such file"),
        (regular / "below-a-file.pcap", "cannot be read: Not a directory"),
        (loop, "cannot be read: Too many levels of symbolic links"),
    ]
    for path, message in cases:
        with pytest.raises(CaptureFileError) as info:
            check_capture_file(path)
        assert str(info.value) == f"{path}: {message}"
        assert isinstance(info.value, FileNotFoundError)
    with pytest.raises(FileNotFoundError, match=r"absent\.pcap: no such file"):
        open_capture(tmp_path / "absent.pcap")


def test_regular_files_fifos_and_links_to_them_are_accepted(tmp_path):
    fifo = tmp_path / "f.fifo"
    os.mkfifo(fifo)
    link = tmp_path / "link.pcap"
    link.symlink_to(MALFORMED / "good.pcap")
    for path in (fifo, link, MALFORMED / "good.pcap"):
        assert check_capture_file(path) is None
    assert len(packets(link)[0]) == 8


# --- open_output ----------------------------------------------------------------------------------------------

def test_a_zst_name_gets_a_level_3_zstd_stream_complete_once_closed(tmp_path):
    data = pcap_bytes(tmp_path, 400, seed=15)
    pieces = [data[i : i + 3000] for i in range(0, len(data), 3000)]

    def reference(level: int) -> bytes:
        raw = io.BytesIO()
        w = zstandard.ZstdCompressor(level=level).stream_writer(raw, closefd=False)
        for x in pieces:
            w.write(x)
        w.flush(zstandard.FLUSH_FRAME)
        return raw.getvalue()

    assert reference(3) != reference(4)
    for level, kw in ((3, {}), (19, {"level": 19})):
        p = tmp_path / f"o{level}.pcap.zst"
        out = open_output(p, **kw)
        for x in pieces:
            out.write(x)
        out.close()
        # complete on disk right after close, while the writer object still exists
        assert p.read_bytes() == reference(level)
        assert zstandard.ZstdDecompressor().decompressobj().decompress(p.read_bytes()) == data
        assert out.closed
        del out
    # only the last suffix counts
    for name, compressed in (("x.zst.pcap", False), ("x.pcap.zst", True), ("zst", False)):
        with open_output(tmp_path / name) as out:
            out.write(b"abc")
        assert ((tmp_path / name).read_bytes()[:4] == ZSTD_MAGIC) is compressed
        assert (tmp_path / name).read_bytes() != b"abc" or not compressed


def test_a_plain_name_gets_the_file_itself_written_as_its_buffer_fills(tmp_path):
    """One buffered writer over the file, no second (1 MiB) layer: what a PcapWriter has written reaches the
    file once the ordinary buffer fills, so a process following the file sees the capture grow."""
    p = tmp_path / "plain.pcap"
    out = open_output(p)
    assert isinstance(out, io.BufferedWriter) and isinstance(out.raw, io.FileIO)
    for _ in range(100):
        out.write(bytes(1000))
    buffered = max(os.stat(p).st_blksize, io.DEFAULT_BUFFER_SIZE)  # the buffer open() gives
    if buffered < 50_000:
        assert p.stat().st_size >= 100_000 - buffered
    out.close()
    assert p.read_bytes() == bytes(100_000)
    # the pcap writer on top of it: a capture written, read back with tshark's count
    n = 3
    w = write_pcap(tmp_path / "w.pcap", times_of(n, 16), frames_of(n, 16))
    require_program("tshark")
    assert len(tshark_times_and_lengths(w)) == n
    assert struct.unpack("<I", w.read_bytes()[:4])[0] == 0xA1B23C4D
