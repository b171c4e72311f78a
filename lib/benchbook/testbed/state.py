"""Per-run ownership records for what benchbook creates on this host.

Each run token has a small JSON file under ``/run/benchbook/`` naming the owning process
(pid and its start time, so a recycled pid is not mistaken for the owner), the processes
it started and the host settings it changed together with their previous values. The
start-up sweep (:mod:`benchbook.testbed.cleanup`) removes the resources of tokens whose
owner is gone and puts the recorded settings back; resources of live runs are left alone.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

STATE_DIR = Path(os.environ.get("BENCHBOOK_STATE_DIR", "/run/benchbook"))
_LOCK = threading.Lock()
_OPEN: dict[str, RunState] = {}


def process_start_ticks(pid: int) -> int | None:
    """Field 22 of /proc/<pid>/stat (start time in clock ticks), None if no such process."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    rest = raw[raw.rfind(")") + 2:].split()
    return int(rest[19])


def process_alive(pid: int, start_ticks: int | None) -> bool:
    """The process runs (a zombie, dead but not yet reaped by its parent, does not)."""
    st = process_start_ticks(pid)
    if st is None or (start_ticks is not None and st != start_ticks):
        return False
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return raw[raw.rfind(")") + 2:][:1] not in ("Z", "X")


@dataclass
class RunState:
    token: str
    owner_pid: int = field(default_factory=os.getpid)
    owner_start: int | None = None
    pids: list[tuple[int, int | None, str]] = field(default_factory=list)  # pid, start, what
    restore: list[tuple[str, str]] = field(default_factory=list)  # file path, previous content
    resources: list[tuple[str, str]] = field(default_factory=list)  # kind, name
    users: int = 0

    @property
    def path(self) -> Path:
        return STATE_DIR / f"{self.token}.json"

    def save(self) -> None:
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({
            "token": self.token, "owner_pid": self.owner_pid, "owner_start": self.owner_start,
            "pids": self.pids, "restore": self.restore, "resources": self.resources,
        }))
        os.replace(tmp, self.path)

    def add_pid(self, pid: int, what: str) -> None:
        self.pids.append((pid, process_start_ticks(pid), what))
        self.save()

    def add_restore(self, path: str, previous: str) -> None:
        if not any(p == path for p, _ in self.restore):  # keep the first (original) value
            self.restore.append((path, previous))
            self.save()

    def add_resource(self, kind: str, name: str) -> None:
        self.resources.append((kind, name))
        self.save()


def acquire(token: str) -> RunState:
    """The in-process RunState for token (created and saved on first use); pair with release()."""
    with _LOCK:
        st = _OPEN.get(token)
        if st is None:
            st = RunState(token=token, owner_start=process_start_ticks(os.getpid()))
            _OPEN[token] = st
            st.save()
        st.users += 1
        return st


def release(token: str) -> None:
    """Drop one user; the last one removes the state file (everything was cleaned up)."""
    with _LOCK:
        st = _OPEN.get(token)
        if st is None:
            return
        st.users -= 1
        if st.users <= 0:
            _OPEN.pop(token, None)
            try:
                st.path.unlink()
            except FileNotFoundError:
                pass


def load_all() -> dict[str, dict[str, Any]]:
    """Every state file on this host: token -> its content (unreadable files are skipped)."""
    out: dict[str, dict[str, Any]] = {}
    if not STATE_DIR.is_dir():
        return out
    for p in STATE_DIR.glob("*.json"):
        try:
            out[p.stem] = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
    return out


def live_tokens() -> set[str]:
    """Tokens whose owning process still runs (their resources must not be swept)."""
    live = set()
    for token, data in load_all().items():
        if token in _OPEN or process_alive(int(data.get("owner_pid", -1)), data.get("owner_start")):
            live.add(token)
    return live
