"""SHA-256 of files and of every file under a directory (streamed, bounded memory)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from pathlib import Path

_BLOCK = 1 << 20


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while True:
            block = fh.read(_BLOCK)
            if not block:
                break
            h.update(block)
    return h.hexdigest()


def file_entry(path: Path, relative_to: Path | None = None, role: str | None = None) -> dict:
    """{"path", "sha256", "bytes"[, "role"]} for one file; path relative to ``relative_to`` if given."""
    path = Path(path)
    shown = str(path.relative_to(relative_to)) if relative_to is not None else str(path)
    entry: dict = {"path": shown, "sha256": sha256_file(path), "bytes": path.stat().st_size}
    if role:
        entry["role"] = role
    return entry


def iter_files(root: Path, skip: Iterable[str] = ()) -> list[Path]:
    """Every regular file under ``root`` (sorted), skipping names in ``skip`` at the top level, hidden
    temporary files (``.*.tmp``) that an atomic writer may leave for an instant and hidden lock files
    (``.*.lock``, e.g. the repetition runner's ``.repetitions.lock``: empty, only ever held, never an output)."""
    root = Path(root)
    skip = set(skip)
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        rel_dir = Path(dirpath).relative_to(root)
        for name in sorted(filenames):
            if rel_dir == Path(".") and name in skip:
                continue
            if name.startswith(".") and name.endswith((".tmp", ".lock")):
                continue
            p = Path(dirpath) / name
            if p.is_file() and not p.is_symlink():
                found.append(p)
    return found


def hash_tree(root: Path, skip: Iterable[str] = ()) -> list[dict]:
    """File entries (path relative to root) for every file under ``root``."""
    root = Path(root)
    return [file_entry(p, relative_to=root) for p in iter_files(root, skip)]


def tree_entry(root: Path, role: str | None = None) -> dict:
    """One entry for a whole directory: its sha256 is the SHA-256 of a `sha256sum`-format listing
    ("<sha256>  <relative path>\n" per file, sorted by path), so any changed byte, added, removed or
    renamed file changes it; `sha256sum` output over the same files reproduces the listing."""
    root = Path(root)
    lines, total = [], 0
    files = iter_files(root)
    for f in files:
        rel = f.relative_to(root).as_posix()
        lines.append(f"{sha256_file(f)}  {rel}\n")
        total += f.stat().st_size
    digest = hashlib.sha256("".join(sorted(lines, key=lambda s: s[66:])).encode()).hexdigest()
    entry: dict = {"path": str(root), "sha256": digest, "bytes": total, "kind": "directory", "files": len(files)}
    if role:
        entry["role"] = role
    return entry
