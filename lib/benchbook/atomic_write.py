"""Files that appear whole or not at all: JSON (``write_json_atomic``) and any other file (``atomic_path``).

Both write a temporary file beside the target (same directory, so the rename cannot cross a file system),
fsync it and rename it into place; a reader sees the previous file or the new one, never a part of either,
and a process killed midway leaves the previous file as it was.

    write_json_atomic(out / "summary.json", {"runs": 3, "p99_ms": math.nan})   # NaN written as "NaN"
    with atomic_path(out / "table.parquet") as tmp:
        frame.to_parquet(tmp)                  # renamed to table.parquet when the block ends without error
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def json_safe(data: Any) -> Any:
    """`data` with every NaN or infinite float replaced by the string "NaN", "Infinity" or
    "-Infinity" (JSON has no such numbers; json.dump would write invalid JSON)."""
    if isinstance(data, float) and not math.isfinite(data):
        return "NaN" if math.isnan(data) else ("Infinity" if data > 0 else "-Infinity")
    if isinstance(data, dict):
        return {k: json_safe(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [json_safe(v) for v in data]
    return data


def _fsync_dir(directory: Path) -> None:
    """Make a rename in ``directory`` durable (best effort: some file systems refuse to open a directory)."""
    try:
        dfd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path`` for the caller to write; when the block ends without an
    exception it is fsynced and renamed to ``path``, else removed and ``path`` stays as it was. An
    OSError of the rename names ``path``."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        yield tmp
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(path)) from exc
    finally:
        if tmp.exists():
            tmp.unlink()
    _fsync_dir(path.parent)


def write_json_atomic(path: str | os.PathLike, data: Any) -> None:
    """Write ``data`` as indented JSON, atomically; always valid JSON (non-finite floats as strings, see
    json_safe; other values JSON cannot hold as their str()). An OSError names ``path`` (e.g. "[Errno 28]
    No space left on device: '<path>'"); the previous file is then unchanged. The directory must exist."""
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        json.dump(json_safe(data), fh, indent=2, sort_keys=False, default=str, allow_nan=False)
        fh.write("\n")


__all__ = ["atomic_path", "json_safe", "write_json_atomic"]
