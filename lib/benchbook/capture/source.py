"""Byte sources for captures: plain files or zstd-compressed files, read sequentially."""

from __future__ import annotations

import io
import mmap
from pathlib import Path
from typing import BinaryIO

import numpy as np

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


class ByteSource:
    """Sequential reader into numpy buffers; decompresses zstd transparently (by magic, not name)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._raw: BinaryIO = open(self.path, "rb")  # noqa: SIM115 - closed in close()
        head = self._raw.read(4)
        self._raw.seek(0)
        self.compressed = head == ZSTD_MAGIC
        if self.compressed:
            import zstandard

            self._stream: BinaryIO = zstandard.ZstdDecompressor().stream_reader(
                self._raw, read_size=1 << 20
            )
        else:
            self._stream = self._raw

    def mapped(self) -> np.ndarray | None:
        """The whole (uncompressed, non-empty, regular) file as a read-only mmap'ed array, else None."""
        if self.compressed:
            return None
        try:
            mm = mmap.mmap(self._raw.fileno(), 0, access=mmap.ACCESS_READ)
        except (ValueError, OSError):
            return None
        try:
            mm.madvise(mmap.MADV_SEQUENTIAL)
        except (AttributeError, OSError):
            pass
        self._mm = mm
        return np.frombuffer(mm, np.uint8)

    def release(self, upto: int) -> None:
        """Let the kernel drop mapped pages before file offset ``upto`` from our resident set
        (they are re-read from the page cache if a chunk still looks at them)."""
        mm = getattr(self, "_mm", None)
        if mm is None:
            return
        end = upto - upto % mmap.PAGESIZE
        start = getattr(self, "_released", 0)
        if end > start:
            try:
                mm.madvise(mmap.MADV_DONTNEED, start, end - start)
            except (AttributeError, OSError):
                return
            self._released = end

    def read_into(self, buf: np.ndarray, start: int) -> int:
        """Fill buf[start:] as far as the data goes; return the number of bytes read."""
        view = memoryview(buf)[start:]
        total = 0
        while total < len(view):
            try:
                got = self._stream.readinto(view[total:])
            except Exception as exc:  # zstd frame errors surface here
                raise OSError(f"{self.path}: cannot read/decompress: {exc}") from exc
            if not got:
                break
            total += got
        return total

    def close(self) -> None:
        mm = getattr(self, "_mm", None)
        if mm is not None:
            try:
                mm.close()
            except BufferError:  # chunks still refer to the mapping: it goes when they do
                pass
        if self._stream is not self._raw:
            self._stream.close()
        self._raw.close()

    def __enter__(self) -> ByteSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_output(path: str | Path, level: int = 3) -> BinaryIO:
    """Open path for writing; a name ending in .zst gets a zstd stream."""
    path = Path(path)
    raw = open(path, "wb")  # noqa: SIM115
    if path.suffix == ".zst":
        import zstandard

        return zstandard.ZstdCompressor(level=level).stream_writer(raw, closefd=True)
    return io.BufferedWriter(raw, buffer_size=1 << 20) if not isinstance(raw, io.BufferedWriter) else raw
