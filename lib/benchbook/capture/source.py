"""Byte sources for captures: plain files or zstd-compressed files, read sequentially."""

from __future__ import annotations

import mmap
import os
import stat
from pathlib import Path
from typing import BinaryIO

import numpy as np
import zstandard

from benchbook.capture.errors import CaptureFileError, CaptureFormatError

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


class ByteSource:
    """Sequential reader into numpy buffers; decompresses zstd transparently (by magic, not name).

    Regular files and FIFOs (a capture piped from tcpdump) are read; a directory, device or socket
    is refused by name (CaptureFileError). The zstd stream is decompressed frame after frame; a
    stream that ends inside a frame sets ``truncated`` (what ``zstd -t`` calls a premature end) and
    corrupt compressed data raises CaptureFormatError naming the decompressed byte offset.
    """

    RAW_READ = 1 << 17

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        check_capture_file(self.path)
        self._raw: BinaryIO = open(self.path, "rb")  # closed in close()
        self._prefix = self._raw.read(4)  # no seek: FIFOs cannot go back
        self._head = self._prefix
        self.compressed = self._prefix == ZSTD_MAGIC
        self.truncated: str | None = None
        self._produced = 0  # decompressed bytes so far
        self._pending = b""
        self._pending_pos = 0
        self._dobj = None
        self._frame_fed = False
        self._raw_eof = False
        if self.compressed:
            self._zstd = zstandard
            self._new_frame()

    def _new_frame(self) -> None:
        self._dobj = self._zstd.ZstdDecompressor().decompressobj(write_size=1 << 20)
        self._frame_fed = False

    def head(self) -> bytes:
        """The first (up to 4) bytes of the file as stored (before decompression), also once they were read."""
        return self._head

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

    def size_now(self) -> int:
        """The file's size now (it may have changed since it was opened or mapped)."""
        return os.fstat(self._raw.fileno()).st_size

    def release(self, upto: int) -> None:
        """Let the kernel drop mapped pages before file offset ``upto`` from our resident set
        (they are re-read from the page cache if a chunk still looks at them)."""
        mm = getattr(self, "_mm", None)
        if mm is None:
            return
        end = min(upto - upto % mmap.PAGESIZE, len(mm) - len(mm) % mmap.PAGESIZE)  # madvise refuses past the end
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
            got = self._read_some(view[total:])
            if not got:
                break
            total += got
        return total

    def _read_some(self, view: memoryview) -> int:
        if not self.compressed:
            if self._prefix:
                n = min(len(view), len(self._prefix))
                view[:n] = self._prefix[:n]
                self._prefix = self._prefix[n:]
                return n
            return self._raw.readinto(view) or 0
        while self._pending_pos >= len(self._pending):
            if not self._decompress_more():
                return 0
        n = min(len(view), len(self._pending) - self._pending_pos)
        view[:n] = self._pending[self._pending_pos : self._pending_pos + n]
        self._pending_pos += n
        return n

    def _decompress_more(self) -> bool:
        """Decompress the next piece into _pending; False at the end of the stream."""
        if self._raw_eof:
            return False
        if self._prefix:
            raw, self._prefix = self._prefix + self._raw.read(self.RAW_READ), b""
        else:
            raw = self._raw.read(self.RAW_READ)
        if not raw:
            self._raw_eof = True
            if self._frame_fed and not self._dobj.eof:
                self.truncated = (f"the zstd stream ends inside a frame (premature end) after "
                                  f"{self._produced} decompressed bytes")
            return False
        out = []
        while raw:
            try:
                out.append(self._dobj.decompress(raw))
            except self._zstd.ZstdError as exc:
                raise CaptureFormatError(
                    self.path, self._produced + sum(map(len, out)),
                    f"corrupt zstd data (decompressed offset): {exc}",
                ) from None
            self._frame_fed = True
            if self._dobj.eof:
                raw = self._dobj.unused_data
                self._new_frame()
            else:
                raw = b""
        self._pending = b"".join(out) if len(out) != 1 else out[0]
        self._produced += len(self._pending)
        self._pending_pos = 0
        return True

    def close(self) -> None:
        mm = getattr(self, "_mm", None)
        if mm is not None:
            try:
                mm.close()
            except BufferError:  # chunks still refer to the mapping: it goes when they do
                pass
        self._raw.close()

    def __enter__(self) -> ByteSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def check_capture_file(path: Path) -> None:
    """Refuse what is not a regular file or FIFO (by name: directory, device, socket)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise CaptureFileError(path, "no such file") from None
    except OSError as exc:
        raise CaptureFileError(path, f"cannot be read: {exc.strerror}") from None
    if stat.S_ISREG(mode) or stat.S_ISFIFO(mode):
        return
    kind = ("a directory" if stat.S_ISDIR(mode) else "a character device" if stat.S_ISCHR(mode)
            else "a block device" if stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode) else "not a file")
    raise CaptureFileError(path, f"is {kind}: expected a pcap or pcapng capture file (or a FIFO)")


def open_output(path: str | Path, level: int = 3) -> BinaryIO:
    """Open path for writing; a name ending in .zst gets a zstd stream."""
    path = Path(path)
    # open()'s own buffer only: what a writer wrote reaches the file as that buffer fills, so a process following
    # the capture sees it grow (a 1 MiB wrapper here never applied: open() already returns a BufferedWriter)
    raw = open(path, "wb")  # returned or wrapped: the caller closes it
    if path.suffix == ".zst":
        return zstandard.ZstdCompressor(level=level).stream_writer(raw, closefd=True)
    return raw
