"""Published datasets under data/published/<name>/: locate them and verify their SHA256SUMS.

Every dataset folder holds SOURCES.md (where each file came from, under which licence) and
SHA256SUMS in `sha256sum` format (``<64 hex>  <relative path>``, one file a line, SOURCES.md
included). A dataset is verified before any of its files is used: a missing file, a changed byte
or a file that the sums do not list is an error naming the file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from benchbook.errors import BenchbookError
from benchbook.paths import PUBLISHED_DIR
from benchbook.provenance.checksums import sha256_file

SUMS_NAME = "SHA256SUMS"


class DatasetError(BenchbookError):
    """A dataset is missing, incomplete or corrupted; the message names the file."""


@dataclass(frozen=True)
class VerifiedDataset:
    name: str
    path: Path
    n_files: int
    n_bytes: int


def published_root() -> Path:
    """Root of the published datasets; BENCHBOOK_PUBLISHED overrides it (tests, relocated data)."""
    return Path(os.environ.get("BENCHBOOK_PUBLISHED", PUBLISHED_DIR))


def dataset_path(name: str, root: Path | None = None) -> Path:
    return Path(root if root is not None else published_root()) / name


def read_sums(sums_path: Path) -> dict[str, str]:
    """Parse a SHA256SUMS file into {relative path: hex digest}; malformed lines are errors."""
    if not sums_path.is_file():
        raise DatasetError(f"{sums_path}: missing (every published dataset needs a SHA256SUMS file)")
    sums: dict[str, str] = {}
    with open(sums_path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            line = line.rstrip("\n")
            if not line.strip():
                continue
            digest, sep, rel = line.partition("  ")
            if not sep or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
                raise DatasetError(
                    f"{sums_path}:{lineno}: expected '<64 lowercase hex>  <path>', got {line[:80]!r}"
                )
            rel = rel.lstrip("*")
            if rel in sums:
                raise DatasetError(f"{sums_path}:{lineno}: {rel} listed twice")
            sums[rel] = digest
    return sums


def write_sums(folder: Path) -> Path:
    """(Re)write folder/SHA256SUMS over every file in the folder (for adding a dataset)."""
    folder = Path(folder)
    lines = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.name not in (SUMS_NAME, f".{SUMS_NAME}.tmp")):
        rel = path.relative_to(folder).as_posix()
        lines.append(f"{sha256_file(path)}  {rel}\n")
    out = folder / SUMS_NAME
    tmp = folder / f".{SUMS_NAME}.tmp"
    tmp.write_text("".join(lines), encoding="utf-8")
    tmp.replace(out)
    return out


def verify_dataset(name_or_path: str | Path, root: Path | None = None) -> VerifiedDataset:
    """Check every file of a dataset against its SHA256SUMS; raise DatasetError naming the file."""
    folder = Path(name_or_path)
    if not folder.is_absolute() and not folder.exists():
        folder = dataset_path(str(name_or_path), root)
    if not folder.is_dir():
        raise DatasetError(f"{folder}: dataset folder not found")
    sums = read_sums(folder / SUMS_NAME)
    if "SOURCES.md" not in sums:
        raise DatasetError(f"{folder / 'SOURCES.md'}: missing or not listed in {SUMS_NAME}")
    n_bytes = 0
    for rel, expected in sums.items():
        path = folder / rel
        if not path.is_file():
            raise DatasetError(f"{path}: listed in {folder / SUMS_NAME} but missing")
        actual = sha256_file(path)
        if actual != expected:
            raise DatasetError(
                f"{path}: SHA-256 mismatch (expected {expected}, found {actual}); "
                "the file was changed or corrupted"
            )
        n_bytes += path.stat().st_size
    listed = set(sums)
    for path in folder.rglob("*"):
        if path.is_file() and path.name != SUMS_NAME:
            rel = path.relative_to(folder).as_posix()
            if rel not in listed:
                raise DatasetError(f"{path}: not listed in {folder / SUMS_NAME}")
    return VerifiedDataset(name=folder.name, path=folder, n_files=len(sums), n_bytes=n_bytes)
