"""Errors raised by the capture readers: each names the file, the byte offset and what was expected."""

from __future__ import annotations

from pathlib import Path

from benchbook.errors import BenchbookError


class CaptureFormatError(BenchbookError, ValueError):
    """A capture file is not what it claims to be (bad magic, impossible lengths, ...)."""

    def __init__(self, path: str | Path, offset: int, message: str) -> None:
        self.path = str(path)
        self.offset = int(offset)
        self.detail = message
        super().__init__(f"{self.path}: at byte offset {self.offset}: {message}")


class CaptureWarning(UserWarning):
    """Something was wrong with a capture but the complete records were still used."""
