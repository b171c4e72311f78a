"""The capture readers on crafted bad input (tests/data/malformed, made by its make.py): every case
ends in a CaptureFormatError naming file and byte offset, or in the complete packets with a warning
that says what was wrong; nothing is read partially in silence."""

from __future__ import annotations

import os
import shutil
import threading
import warnings
from pathlib import Path

import pytest
import zstandard

from benchbook.capture import CaptureFormatError, CaptureWarning, open_capture
from benchbook.capture.errors import CaptureFileError
from benchbook.capture.source import ByteSource

MALFORMED = Path(__file__).resolve().parent.parent / "data" / "malformed"


def read_all(path: Path) -> tuple[int, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        n = sum(len(c) for c in open_capture(path))
    return n, [str(w.message) for w in caught if issubclass(w.category, CaptureWarning)]


def test_good_reference_reads_whole():
    assert read_all(MALFORMED / "good.pcap") == (8, [])


def test_zstd_garbage_after_magic_is_a_format_error():
    with pytest.raises(CaptureFormatError, match="corrupt zstd data"):
        read_all(MALFORMED / "zstd-garbage.pcap.zst")


def test_zstd_cut_at_block_boundary_warns_with_packets_read():
    n, msgs = read_all(MALFORMED / "zstd-cut-at-block.pcap.zst")
    assert n == 4  # the records flushed before the cut are whole
    assert any("premature end" in m and "using the 4 complete packets" in m for m in msgs), msgs


def test_zstd_two_frames_are_read_whole():
    assert read_all(MALFORMED / "zstd-two-frames.pcap.zst") == (8, [])


def test_zstd_cut_inside_last_frame_warns():
    n, msgs = read_all(MALFORMED / "zstd-cut-at-frame.pcap.zst")
    assert n < 8
    assert any("premature end" in m for m in msgs), msgs


def test_incl_len_over_orig_len_counted_and_warned():
    n, msgs = read_all(MALFORMED / "incl-over-orig.pcap")
    assert n == 8
    assert any("1 packet records capture more bytes than their original length" in m for m in msgs), msgs


def test_pcapng_tsresol_beyond_int64_refused():
    with pytest.raises(CaptureFormatError, match=r"2\^-127 is finer than a 64-bit timestamp"):
        read_all(MALFORMED / "pcapng-tsresol-ff.pcapng")


def test_pcapng_trailer_mismatch_refused_with_offset():
    with pytest.raises(CaptureFormatError) as info:
        read_all(MALFORMED / "pcapng-trailer-mismatch.pcapng")
    assert info.value.offset == 80 + 92 + 88
    assert "does not match the length 92" in str(info.value)


def test_pcapng_idb_option_overrun_refused():
    with pytest.raises(CaptureFormatError, match="option 9 claims 40 bytes"):
        read_all(MALFORMED / "pcapng-idb-option-overrun.pcapng")


def test_directory_and_device_refused_by_name(tmp_path):
    with pytest.raises(CaptureFileError, match="is a directory"):
        open_capture(tmp_path)
    with pytest.raises(CaptureFileError, match="is a character device"):
        open_capture("/dev/null")
    with pytest.raises(FileNotFoundError, match="no such file"):  # CaptureFileError is one
        open_capture(tmp_path / "absent.pcap")


@pytest.mark.parametrize("name", ["good.pcap", "zstd-two-frames.pcap.zst"])
def test_fifo_is_read_as_a_stream(tmp_path, name):
    fifo = tmp_path / "capture.fifo"
    os.mkfifo(fifo)
    data = (MALFORMED / name).read_bytes()

    def feed() -> None:
        with open(fifo, "wb") as fh:
            fh.write(data)

    writer = threading.Thread(target=feed)
    writer.start()
    try:
        assert read_all(fifo) == (8, [])
    finally:
        writer.join(timeout=30)


def test_zstd_stream_larger_than_one_read(tmp_path):
    """A compressed capture bigger than the raw read size, split into several frames, reads whole."""
    good = (MALFORMED / "good.pcap").read_bytes()
    body = good[24:] * 4000  # 32000 packets, ~2.4 MB
    c = zstandard.ZstdCompressor(level=1)
    half = 24 + (len(body) // 2) // 76 * 76
    whole = good[:24] + body
    blob = c.compress(whole[:half]) + c.compress(whole[half:])
    assert len(blob) > ByteSource.RAW_READ or len(whole) > ByteSource.RAW_READ
    p = tmp_path / "big.pcap.zst"
    p.write_bytes(blob)
    assert read_all(p) == (32000, [])
    shutil.rmtree(tmp_path, ignore_errors=True)
