"""benchbook's own native programs (native/*/*.c): built as the Makefile builds them, when missing or
older than their source, so a tool module can run them from a fresh checkout."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path


def ensure_built(binary: Path, source: Path, error: type[Exception]) -> Path:
    """``binary``, compiled from ``source`` with the C compiler when missing or stale; ``error`` (the tool's
    error class) names what is missing or what the compiler said."""
    if binary.exists() and (not source.exists() or binary.stat().st_mtime >= source.stat().st_mtime):
        return binary
    if not source.exists():
        raise error(f"{binary} missing and no source at {source}")
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise error(f"{binary} missing and no C compiler to build {source} (make native)")
    binary.parent.mkdir(parents=True, exist_ok=True)
    r = subprocess.run([cc, "-O2", "-Wall", "-Wextra", "-o", str(binary), str(source)], capture_output=True, text=True)
    if r.returncode != 0:
        raise error(f"building {source} failed:\n{r.stderr}")
    return binary
