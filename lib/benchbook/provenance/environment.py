"""The software environment of a run: pip lock hash, pinned Guix channels, git state, Python."""

from __future__ import annotations

import platform
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterable
from importlib.metadata import version
from pathlib import Path
from typing import Any

from benchbook.paths import MANIFESTS_DIR, REPO_ROOT
from benchbook.provenance.checksums import sha256_file
from benchbook.provenance.scheme import channel_commits

LOCK_FILE = MANIFESTS_DIR / "requirements.lock"
CHANNELS_FILE = REPO_ROOT / "channels.scm"
ANALYSIS_MANIFEST = MANIFESTS_DIR / "analysis.scm"
TESTBED_MANIFEST = MANIFESTS_DIR / "testbed.scm"


def _run(cmd: list[str], cwd: Path | None = None, timeout: float = 10.0) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)


def git_state(repo: Path = REPO_ROOT, read_paths: Iterable[Path | str] = ()) -> dict[str, Any]:
    """{"git_commit", "git_dirty", "git_untracked_inputs"} or nulls with a reason under "git_error".

    The tree is dirty when a tracked file differs from HEAD or when one of ``read_paths`` (the files
    a run read) lies inside the work tree but is not tracked (and not ignored) by git: such a run
    cannot be rebuilt from the commit alone. ``git_untracked_inputs`` lists those paths."""
    if shutil.which("git") is None:
        return {"git_commit": None, "git_dirty": None, "git_error": "git not installed"}
    try:
        head = _run(["git", "rev-parse", "HEAD"], cwd=repo)
        if head.returncode != 0:
            return {"git_commit": None, "git_dirty": None, "git_error": head.stderr.strip() or "not a git work tree"}
        status = _run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=repo)
        dirty = bool(status.stdout.strip()) if status.returncode == 0 else None
        untracked = untracked_paths(repo, read_paths)
        if untracked and dirty is not None:
            dirty = True
        return {"git_commit": head.stdout.strip(), "git_dirty": dirty, "git_untracked_inputs": untracked}
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"git_commit": None, "git_dirty": None, "git_error": f"{type(exc).__name__}: {exc}"}


def untracked_paths(repo: Path, paths: Iterable[Path | str]) -> list[str]:
    """Those of ``paths`` inside ``repo`` that git neither tracks nor ignores (repo-relative, sorted);
    a directory counts through the untracked files below it."""
    root = Path(repo).resolve()
    inside = []
    for p in paths:
        try:
            inside.append(str(Path(p).resolve().relative_to(root)))
        except ValueError:
            continue
    if not inside:
        return []
    out = _run(["git", "status", "--porcelain", "--untracked-files=all", "-z", "--", *inside], cwd=root, timeout=30)
    if out.returncode != 0:
        return []
    return sorted({entry[3:] for entry in out.stdout.split("\0") if entry.startswith("?? ")})


def guix_channel_commit(channels: Path = CHANNELS_FILE) -> str | None:
    """The commit pinned for the 'guix' channel in channels.scm (None if the file is absent)."""
    if not Path(channels).is_file():
        return None
    commits = channel_commits(channels)
    return commits.get("guix") or next(iter(commits.values()))


def guix_describe() -> dict[str, Any]:
    """`guix describe -f channels` when running under Guix, else why not."""
    if shutil.which("guix") is None:
        return {"available": False, "reason": "guix not on PATH (not running under Guix)"}
    try:
        out = _run(["guix", "describe", "-f", "channels"], timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"available": False, "reason": f"{type(exc).__name__}: {exc}"}
    if out.returncode != 0:
        return {"available": False, "reason": out.stderr.strip()[-500:]}
    return {"available": True, "channels": out.stdout}


def lock_hash(lock: Path = LOCK_FILE) -> str | None:
    return sha256_file(lock) if Path(lock).is_file() else None


def environment_description() -> dict[str, Any]:
    """What goes under "environment" in a run record."""
    try:
        bb_version = version("benchbook")
    except Exception:  # not installed as a distribution (running from the tree)
        bb_version = "unknown"
    env: dict[str, Any] = {
        "lock_file": str(LOCK_FILE.relative_to(REPO_ROOT)),
        "lock_sha256": lock_hash(),
        "python": f"{platform.python_implementation()} {platform.python_version()} ({sys.executable})",
        "benchbook_version": bb_version,
    }
    try:
        env["guix_channel_commit"] = guix_channel_commit()
    except ValueError as exc:
        env["guix_channel_commit"] = None
        env["guix_channel_error"] = str(exc)
    env["guix_describe"] = guix_describe()
    env.update(git_state())
    return env


GUIX_VENV = ".venv-guix"


def guix_rebuild_argv(channels: str, manifest: str, benchbook_args: list[str]) -> list[str]:
    """``guix time-machine -C CHANNELS -- shell -m MANIFEST -- sh -c ...`` running ``benchbook ARGS`` from the
    checkout: inside the pinned shell the Python packages come from the hashed pip lock (manifests/
    exceptions.toml says why), installed into a venv on the manifest's interpreter."""
    py = f"{GUIX_VENV}/bin/python"
    script = (f"python3 -m venv {GUIX_VENV} && {py} -m pip install --require-hashes --no-deps "
              f"-r manifests/requirements.lock && PYTHONPATH=lib {py} -m benchbook.cli {shlex.join(benchbook_args)}")
    return ["guix", "time-machine", "-C", channels, "--", "shell", "-m", manifest, "--", "sh", "-c", script]
