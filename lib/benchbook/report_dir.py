"""A report directory that appears whole or not at all.

``with report_dir(out, names) as work:`` yields a fresh directory beside ``out``; the caller writes every
file of the report there. When the block ends without an exception the report is moved into ``out``:
a rename when ``out`` does not exist yet, else file by file (each an atomic replace; files named in
``names`` that this run did not write are removed, other files in ``out`` are left alone). When the
block raises, ``out`` stays exactly as it was. The working directory is always removed.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def report_dir(out_dir: str | os.PathLike, names: Iterable[str]) -> Iterator[Path]:
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"{out}: exists and is not a directory")
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        os.chmod(work, 0o755)
        yield work
        _install(work, out, tuple(names))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def install_dir(work: Path, out: Path, names: tuple[str, ...]) -> None:
    """Move the finished directory ``work`` into ``out`` as ``report_dir`` does when its block ends."""
    _install(work, out, names)


def _install(work: Path, out: Path, names: tuple[str, ...]) -> None:
    try:
        os.rename(work, out)
        return
    except OSError:
        if not out.is_dir():
            raise
    made = sorted(f.name for f in work.iterdir())
    for name in made:
        os.replace(work / name, out / name)
    for name in names:
        if name not in made and (out / name).exists():
            (out / name).unlink()
