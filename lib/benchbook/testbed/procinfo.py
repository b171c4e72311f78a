"""Facts about a running process read from /proc (no side effects)."""

from __future__ import annotations

from pathlib import Path


def cpus_allowed(pid: int) -> str | None:
    """The CPUs the process may run on (`Cpus_allowed_list`, e.g. "1" or "0-1"), None if gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Cpus_allowed_list:"):
                return line.split(":", 1)[1].strip()
    except OSError:
        return None
    return None
