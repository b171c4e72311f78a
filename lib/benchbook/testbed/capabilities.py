"""Capability probes: what this host can do for an experiment.

Each probe returns a Capability(name, status, detail) with status "present", "missing" or
"unknown" (the probe itself could not run; detail says why). Probes never raise and never change
the host: the netem probe adds a qdisc to the loopback device of a throw-away network namespace
(`unshare --net`), which the kernel removes when the probe process exits. Importing this module
runs nothing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

from benchbook.errors import BenchbookError
from benchbook.testbed.kvm_guest import kvm_capability

PRESENT, MISSING, UNKNOWN = "present", "missing", "unknown"


class NotRunnable(BenchbookError, RuntimeError):
    """Something an experiment needs cannot run on this host; str(exc) says why (never emulated)."""


@dataclass(frozen=True)
class Capability:
    capability: str
    status: str
    detail: str = ""

    def as_dict(self) -> dict:
        return asdict(self)

    @property
    def ok(self) -> bool:
        return self.status == PRESENT


def _run(cmd: list[str], timeout_s: float = 10.0) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def probe_qdisc(kind: str, args: list[str] | None = None) -> Capability:
    """Can a ``kind`` qdisc be attached? Tried in a throw-away network namespace (needs root)."""
    name = f"qdisc:{kind}"
    if shutil.which("unshare") is None or shutil.which("tc") is None:
        return Capability(name, UNKNOWN, "unshare or tc not installed")
    if os.geteuid() != 0:
        return Capability(name, UNKNOWN, "probe needs root (tc in a private network namespace)")
    cmd = ["unshare", "--net", "tc", "qdisc", "add", "dev", "lo", "root", kind, *(args or [])]
    try:
        out = _run(cmd)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Capability(name, UNKNOWN, f"{type(exc).__name__}: {exc}")
    if out.returncode == 0:
        return Capability(name, PRESENT, f"tc qdisc add ... {kind} succeeded in a private netns")
    return Capability(name, MISSING, (out.stderr or out.stdout).strip() or f"exit {out.returncode}")


def probe_netem() -> Capability:
    cap = probe_qdisc("netem", ["delay", "1ms"])
    return Capability("netem", cap.status, cap.detail)


def probe_tracepoint(event: str) -> Capability:
    """Does perf know the tracepoint (e.g. tcp:tcp_probe)? Run in a private mount namespace, so the
    tracefs perf mounts on first use vanishes with the probe."""
    name = f"tracepoint:{event}"
    if shutil.which("perf") is None or shutil.which("unshare") is None:
        return Capability(name, UNKNOWN, "perf or unshare not installed")
    if os.geteuid() != 0:
        return Capability(name, UNKNOWN, "probe needs root (tracefs)")
    try:
        out = _run(["unshare", "--mount", "--propagation", "private", "perf", "list", event])
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Capability(name, UNKNOWN, f"{type(exc).__name__}: {exc}")
    if event in out.stdout:
        return Capability(name, PRESENT, "perf list shows it")
    return Capability(name, MISSING, (out.stderr or out.stdout).strip()[-300:] or "perf list does not show it")


def probe_nft_random_drop() -> Capability:
    """Can nftables drop at random (``numgen random``)? Tried in a throw-away network namespace."""
    name = "nft:numgen-random-drop"
    if shutil.which("nft") is None or shutil.which("unshare") is None:
        return Capability(name, MISSING, "nft or unshare not installed")
    if os.geteuid() != 0:
        return Capability(name, UNKNOWN, "probe needs root (nft in a private network namespace)")
    cmd = ["unshare", "--net", "nft", "add table inet bbprobe ; add chain inet bbprobe c "
           "{ type filter hook forward priority 0 ; } ; add rule inet bbprobe c numgen random mod 1000 < 1 drop"]
    try:
        out = _run(cmd)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Capability(name, UNKNOWN, f"{type(exc).__name__}: {exc}")
    if out.returncode == 0:
        return Capability(name, PRESENT, "numgen random drop rule accepted in a private netns")
    return Capability(name, MISSING, (out.stderr or out.stdout).strip()[-300:] or f"exit {out.returncode}")


def cgroup_hierarchies() -> dict[str, str]:
    """{controller: "v1" | "v2" | "unavailable"} from /proc/cgroups and the cgroup2 mount."""
    result: dict[str, str] = {}
    text = _read("/proc/cgroups")
    v2_controllers: set[str] = set()
    mounts = _read("/proc/self/mounts") or ""
    for line in mounts.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[2] == "cgroup2":
            ctl = _read(os.path.join(parts[1], "cgroup.controllers"))
            if ctl:
                v2_controllers.update(ctl.split())
    if text is None:
        return result
    for line in text.splitlines()[1:]:
        parts = line.split()
        if len(parts) < 4:
            continue
        ctrl, hierarchy, enabled = parts[0], int(parts[1]), parts[3] == "1"
        if not enabled:
            result[ctrl] = "unavailable"
        elif hierarchy != 0:
            result[ctrl] = "v1"
        elif ctrl in v2_controllers:
            result[ctrl] = "v2"
        else:
            result[ctrl] = "unavailable"
    return result


def cgroup_mode(hierarchies: dict[str, str] | None = None) -> str:
    """"v1", "v2", "hybrid" (both in use) or "none"."""
    h = cgroup_hierarchies() if hierarchies is None else hierarchies
    kinds = set(h.values()) - {"unavailable"}
    mounts = _read("/proc/self/mounts") or ""
    has_v2_mount = any(len(mount.split()) >= 3 and mount.split()[2] == "cgroup2" for mount in mounts.splitlines())
    if "v1" in kinds and (has_v2_mount or "v2" in kinds):
        return "hybrid"
    if "v1" in kinds:
        return "v1"
    if has_v2_mount:
        return "v2"
    return "none"


def probe_cgroup_v2_cpuset() -> Capability:
    h = cgroup_hierarchies()
    if h.get("cpuset") == "v2":
        return Capability("cgroup-v2-cpuset", PRESENT, "cpuset controller bound to the cgroup2 hierarchy")
    if h.get("cpuset") == "v1":
        return Capability("cgroup-v2-cpuset", MISSING,
                          "cpuset controller is bound to a v1 hierarchy (cannot be rebound to v2 at run time)")
    return Capability("cgroup-v2-cpuset", MISSING, f"cpuset controller: {h.get('cpuset', 'not in /proc/cgroups')}")


def probe_cgroup_v1_cpuset() -> Capability:
    h = cgroup_hierarchies()
    if h.get("cpuset") == "v1":
        return Capability("cgroup-v1-cpuset", PRESENT, "cpuset controller on a v1 hierarchy")
    return Capability("cgroup-v1-cpuset", MISSING, f"cpuset controller: {h.get('cpuset', 'absent')}")


def probe_perf_counters() -> Capability:
    """Hardware counters: does `perf stat -e instructions true` count?"""
    if shutil.which("perf") is None:
        return Capability("perf-hw-counters", UNKNOWN, "perf not installed")
    try:
        out = _run(["perf", "stat", "-x,", "-e", "instructions", "true"])
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Capability("perf-hw-counters", UNKNOWN, f"{type(exc).__name__}: {exc}")
    line = next((err_line for err_line in out.stderr.splitlines() if "instructions" in err_line), "")
    value = line.split(",", 1)[0] if line else ""
    if value.strip().isdigit():
        return Capability("perf-hw-counters", PRESENT, f"instructions counted: {value.strip()}")
    return Capability("perf-hw-counters", MISSING, line.strip() or out.stderr.strip()[-300:] or "no output")


def congestion_controls() -> tuple[list[str], str | None]:
    avail = _read("/proc/sys/net/ipv4/tcp_available_congestion_control")
    default = _read("/proc/sys/net/ipv4/tcp_congestion_control")
    return (avail.split() if avail else []), default


def probe_congestion_control(name: str) -> Capability:
    avail, default = congestion_controls()
    cap = f"tcp-cc:{name}"
    if not avail:
        return Capability(cap, UNKNOWN, "/proc/sys/net/ipv4/tcp_available_congestion_control unreadable")
    if name in avail:
        return Capability(cap, PRESENT, f"available: {' '.join(avail)}; default: {default}")
    return Capability(cap, MISSING, f"available: {' '.join(avail)}")


def probe_kvm() -> Capability:
    """Can a stock guest kernel boot under KVM? /dev/kvm existing is not enough (kvm_pvm here)."""
    ok, reason = kvm_capability()
    return Capability("kvm", PRESENT if ok else MISSING, reason)


def probe_program(name: str, capability: str | None = None) -> Capability:
    path = shutil.which(name)
    cap = capability or name
    return Capability(cap, PRESENT, path) if path else Capability(cap, MISSING, f"{name} not on PATH")


def probe_root() -> Capability:
    if os.geteuid() == 0:
        return Capability("root", PRESENT, "euid 0")
    return Capability("root", MISSING, f"euid {os.geteuid()}")


def probe_all() -> list[Capability]:
    """Every probe above (a second or two; used by the host fingerprint and `benchbook env show`)."""
    caps = [
        probe_root(),
        probe_netem(),
        probe_qdisc("tbf", ["rate", "1mbit", "burst", "32kbit", "latency", "400ms"]),
        probe_cgroup_v1_cpuset(),
        probe_cgroup_v2_cpuset(),
        probe_perf_counters(),
        probe_kvm(),
    ]
    caps += [probe_congestion_control(cc) for cc in ("reno", "cubic", "bbr")]
    caps += [probe_program(p) for p in ("dpdk-testpmd", "lxc-start", "tcpdump", "tshark", "iperf3", "perf", "ethtool")]
    return caps
