"""Can a registry entry run on this machine? Each `requires` name is checked, with the reason.

Names with a meaning of their own are listed in SPECIAL ("root", "kvm", "cgroup-v2-cpuset",
"netns", "testbed"); any other name is a program that must be on PATH (or in /usr/sbin, /sbin),
such as "dpdk-testpmd", "lxc-start", "tcpdump". Checks are cheap and have no side effects.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path

from benchbook.testbed import capabilities as _probes

# Debian packages that provide programs entries commonly need (for a helpful reason text).
PROGRAM_PACKAGES = {
    "dpdk-testpmd": "dpdk",
    "lxc-start": "lxc",
    "lxc-create": "lxc",
    "tcpdump": "tcpdump",
    "tshark": "tshark",
    "iperf3": "iperf3",
    "perf": "linux-perf",
    "qemu-system-x86_64": "qemu-system-x86",
    "debootstrap": "debootstrap",
    "ip": "iproute2",
    "tc": "iproute2",
    "chromium": "chromium",
}


def _root() -> str | None:
    return None if os.geteuid() == 0 else "needs root (run as root or with sudo)"


def _from_probe(probe: Callable[[], _probes.Capability]) -> Callable[[], str | None]:
    """Adapt a testbed capability probe (the one source of truth) to a reason-or-None check."""

    def check() -> str | None:
        cap = probe()
        return None if cap.ok else cap.detail

    return check


def _netns() -> str | None:
    if not Path("/proc/self/ns/net").exists():
        return "network namespaces are not supported by this kernel"
    return _root()


def _testbed() -> str | None:
    inv = os.environ.get("BENCHBOOK_TESTBED")
    if inv and Path(inv).is_file():
        return None
    return "needs a real testbed: set BENCHBOOK_TESTBED to a host inventory file"


SPECIAL: dict[str, Callable[[], str | None]] = {
    "root": _root,
    "kvm": _from_probe(_probes.probe_kvm),
    "cgroup-v2-cpuset": _from_probe(_probes.probe_cgroup_v2_cpuset),
    "netns": _netns,
    "testbed": _testbed,
}


def find_program(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for d in ("/usr/sbin", "/sbin", "/usr/local/sbin"):
        p = Path(d) / name
        if p.is_file() and os.access(p, os.X_OK):
            return str(p)
    return None


def check_requirement(name: str) -> str | None:
    """None when the capability is present, otherwise the reason it is not."""
    if name in SPECIAL:
        return SPECIAL[name]()
    if find_program(name) is None:
        pkg = PROGRAM_PACKAGES.get(name)
        hint = f" (Debian package {pkg}; `make deps` installs it as root)" if pkg else ""
        return f"program {name} not found on PATH{hint}"
    return None


def missing_requirements(names: Iterable[str]) -> list[str]:
    """Reasons for every requirement that is not met (empty list: all met)."""
    return [reason for reason in (check_requirement(n) for n in names) if reason]


def entry_blockers(entry) -> list[str]:
    """Why a registry entry (benchbook.reproduce.registry.FigureEntry) cannot run here; [] if it can."""
    reasons = missing_requirements(entry.requires)
    if not entry.notebook_path.is_file():
        reasons.append(f"notebook {entry.notebook} not found ({entry.notebook_path})")
    folder = entry.dataset_dir
    if folder is not None and not folder.is_dir():
        reasons.append(f"dataset {entry.dataset} not found under {folder.parent}")
    return reasons
