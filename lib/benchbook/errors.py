"""The base class of benchbook's own errors."""

from __future__ import annotations


class BenchbookError(Exception):
    """Base of every error benchbook raises on purpose; the CLI prints its message without a traceback."""


__all__ = ["BenchbookError"]
