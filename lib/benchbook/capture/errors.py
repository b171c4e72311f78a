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


class CaptureFileError(BenchbookError, FileNotFoundError):
    """A capture path that names no readable capture: missing, a directory, a device or a socket."""

    def __init__(self, path: str | Path, message: str) -> None:
        self.path = str(path)
        self.detail = message
        BenchbookError.__init__(self, f"{self.path}: {message}")

    def __str__(self) -> str:
        return str(self.args[0])


class CaptureWarning(UserWarning):
    """Something was wrong with a capture but the complete records were still used."""
