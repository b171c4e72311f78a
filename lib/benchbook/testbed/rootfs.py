"""Root file systems for container and VM DuTs, built once with debootstrap and cached.

A recipe (suite, variant, packages, mirror) has a content hash; its tree lives in
``<cache>/rootfs-<hash>`` (default cache ``/var/cache/benchbook``, ``BENCHBOOK_CACHE`` overrides).
Building takes minutes (Debian's mirror, a few hundred MB); it is done once, under a file lock,
into a ``.partial`` directory that is renamed only when debootstrap succeeded, so a killed build
never leaves a tree that looks complete. Users of the tree must not write into it: containers
mount it as the lower layer of an overlay, VM images are copied from it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from benchbook.errors import BenchbookError
from benchbook.filelock import FileLock

DEFAULT_MIRROR = "http://deb.debian.org/debian"
MARKER = ".benchbook-rootfs.json"


def cache_dir() -> Path:
    """The benchbook cache root (root file systems, kernels, VM images)."""
    return Path(os.environ.get("BENCHBOOK_CACHE", "/var/cache/benchbook"))


class RootfsError(BenchbookError, RuntimeError):
    """debootstrap failed or the cache is unusable; the message names the log file."""


@dataclass(frozen=True)
class RootfsRecipe:
    """What goes into a root file system. Equal recipes share one cached tree."""

    name: str
    suite: str = "bookworm"
    variant: str = "minbase"
    include: tuple[str, ...] = ()
    mirror: str = DEFAULT_MIRROR
    arch: str = "amd64"
    # Files written into the finished tree: (path inside the tree, content, mode).
    files: tuple[tuple[str, str, int], ...] = field(default=())
    # Then commands run inside the tree with chroot (e.g. enabling a unit, update-initramfs).
    post: tuple[str, ...] = field(default=())

    def key(self) -> str:
        fields = {
            "suite": self.suite,
            "variant": self.variant,
            "include": sorted(self.include),
            "mirror": self.mirror,
            "arch": self.arch,
            "post": list(self.post),
        }
        if self.files:
            fields["files"] = [list(f) for f in self.files]
        blob = json.dumps(fields, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def path(self, root: Path | None = None) -> Path:
        return (root or cache_dir()) / f"rootfs-{self.name}-{self.key()}"

    def debootstrap_command(self, target: Path) -> list[str]:
        cmd = ["debootstrap", f"--variant={self.variant}", f"--arch={self.arch}"]
        if self.include:
            cmd.append("--include=" + ",".join(self.include))
        cmd += [self.suite, str(target), self.mirror]
        return cmd


def is_built(recipe: RootfsRecipe, root: Path | None = None) -> bool:
    return (recipe.path(root) / MARKER).is_file()


def ensure_rootfs(
    recipe: RootfsRecipe,
    root: Path | None = None,
    log: Callable[[str], None] | None = None,
) -> Path:
    """Return the cached tree for `recipe`, building it first if needed (root only, minutes)."""
    say = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    target = recipe.path(root)
    if (target / MARKER).is_file():
        return target
    if os.geteuid() != 0:
        raise RootfsError(f"root file system {target} is not built yet and building it needs root")
    if shutil.which("debootstrap") is None:
        raise RootfsError("debootstrap is not installed (apt-get install debootstrap)")
    target.parent.mkdir(parents=True, exist_ok=True)
    lock_path = target.parent / f"{target.name}.lock"
    with FileLock(lock_path, description=f"building root file system {target}"):
        if (target / MARKER).is_file():  # another process built it while we waited
            return target
        partial = target.parent / f"{target.name}.partial"
        if partial.exists():
            shutil.rmtree(partial)
        log_path = target.parent / f"{target.name}.log"
        cmd = recipe.debootstrap_command(partial)
        say(
            f"benchbook: building the '{recipe.name}' root file system once with debootstrap "
            f"({recipe.suite}, {', '.join(recipe.include) or 'no extra packages'}); this takes a few "
            f"minutes and is cached in {target} (log: {log_path})"
        )
        t0 = time.monotonic()
        with open(log_path, "w") as out:
            out.write("$ " + " ".join(cmd) + "\n")
            out.flush()
            rc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT).returncode
            if rc == 0:
                for rel, content, mode in recipe.files:
                    dest = partial / rel.lstrip("/")
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    dest.write_text(content)
                    os.chmod(dest, mode)
                    out.write(f"# wrote {rel} ({len(content)} bytes, mode {mode:o})\n")
                for step in recipe.post:
                    out.write(f"$ chroot {partial} /bin/sh -c {step!r}\n")
                    out.flush()
                    rc = subprocess.run(
                        ["chroot", str(partial), "/bin/sh", "-c", step],
                        stdout=out,
                        stderr=subprocess.STDOUT,
                    ).returncode
                    if rc != 0:
                        break
        if rc != 0:
            tail = log_path.read_text(errors="replace").splitlines()[-15:]
            shutil.rmtree(partial, ignore_errors=True)
            raise RootfsError(
                f"building root file system {target} failed (exit {rc}); see {log_path}:\n"
                + "\n".join(tail)
            )
        (partial / MARKER).write_text(
            json.dumps(
                {
                    "recipe": recipe.name,
                    "key": recipe.key(),
                    "command": cmd,
                    "post": list(recipe.post),
                    "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "seconds": round(time.monotonic() - t0, 1),
                },
                indent=2,
            )
        )
        os.rename(partial, target)
        say(f"benchbook: root file system ready in {time.monotonic() - t0:.0f} s: {target}")
    return target


def rootfs_info(recipe: RootfsRecipe, root: Path | None = None) -> dict:
    """The build record of a cached tree (command, time), or {} when it is not built."""
    marker = recipe.path(root) / MARKER
    return json.loads(marker.read_text()) if marker.is_file() else {}
