"""Check a run's recorded SHA-256s before it is published: a changed or missing output is an error
naming the file; a changed input is an error too unless the caller allows it (then the site says so)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchbook.provenance.checksums import sha256_file, tree_entry
from benchbook.publish.runs import PublishedRun, PublishError


@dataclass
class Checked:
    """One recorded file or directory and what publishing found: verified | changed | absent here."""

    entry: dict[str, Any]
    status: str
    detail: str = ""


class HashCache:
    """Digests computed in one publish, so an input that many runs share (a dataset) is hashed once."""

    def __init__(self) -> None:
        self._files: dict[Path, str] = {}
        self._trees: dict[Path, str] = {}

    def file(self, path: Path) -> str:
        key = path.resolve()
        if key not in self._files:
            self._files[key] = sha256_file(key)
        return self._files[key]

    def tree(self, path: Path) -> str:
        key = path.resolve()
        if key not in self._trees:
            self._trees[key] = tree_entry(key)["sha256"]
        return self._trees[key]


def verify_outputs(run: PublishedRun, cache: HashCache) -> list[Checked]:
    """Every output of the run re-hashed; raises PublishError naming each changed or missing file."""
    out, bad = [], []
    for entry in run.record.get("outputs", []):
        path = run.run_dir / entry["path"]
        if not path.is_file():
            bad.append(f"{path}: recorded as an output of run {run.run_id} but missing")
            continue
        digest = cache.file(path)
        if digest != entry["sha256"]:
            bad.append(f"{path}: changed since run {run.run_id} recorded it (SHA-256 now {digest[:16]}..., "
                       f"recorded {entry['sha256'][:16]}...)")
            continue
        out.append(Checked(entry, "verified"))
    if bad:
        raise PublishError("refusing to publish a run whose files changed: " + "; ".join(bad))
    return out


def verify_inputs(run: PublishedRun, cache: HashCache, allow_changed: bool = False) -> list[Checked]:
    """Every input of the run re-hashed where it exists here (a directory as one listing digest).

    A changed input raises PublishError naming it, unless ``allow_changed`` (then it is listed as
    changed). An input that is not on this machine is listed as absent here.
    """
    out, bad = [], []
    for entry in run.record.get("inputs", []):
        path = Path(entry["path"])
        if entry.get("kind") == "directory":
            digest = cache.tree(path) if path.is_dir() else None
        else:
            digest = cache.file(path) if path.is_file() else None
        if digest is None:
            out.append(Checked(entry, "absent here", "not on the machine that published the site"))
        elif digest == entry["sha256"]:
            out.append(Checked(entry, "verified"))
        else:
            msg = f"{path}: input of run {run.run_id} changed since the run (SHA-256 now {digest[:16]}...)"
            if not allow_changed and msg not in bad:
                bad.append(msg)
            out.append(Checked(entry, "changed", f"SHA-256 now {digest}"))
    if bad:
        raise PublishError("; ".join(bad) + " (reproduce the figure again, or publish with --allow-changed-inputs "
                           "to show the runs with their inputs marked changed)")
    return out
