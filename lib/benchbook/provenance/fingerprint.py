"""Host fingerprint: on which kernel, CPUs, cgroup layout, NICs and tool versions a run happened.

`host_fingerprint()` returns a JSON-able dict. Every probe is independent; one that cannot run
records why (``{"error": "..."}`` or a capability with status "unknown") instead of failing the run.
Probes run in a small thread pool; the result is cached per process (a sweep fingerprints once).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import re
import shutil
import socket
import subprocess
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from benchbook.provenance.environment import environment_description
from benchbook.testbed.capabilities import cgroup_hierarchies, cgroup_mode, congestion_controls, probe_all

FINGERPRINT_VERSION = 1
_CACHE: dict[str, Any] | None = None


def _read(path: str | Path) -> str:
    return Path(path).read_text(errors="replace").strip()


def _run(cmd: list[str], timeout: float = 15.0) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)


def _guard(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except Exception as exc:  # a probe that cannot run says why
        return {"error": f"{type(exc).__name__}: {exc}"}


# ---------------------------------------------------------------- kernel, CPU, memory

def kernel() -> dict[str, Any]:
    u = platform.uname()
    info: dict[str, Any] = {"release": u.release, "version": u.version, "machine": u.machine}
    info["cmdline"] = _guard(lambda: _read("/proc/cmdline"))
    return info


def cpu() -> dict[str, Any]:
    info: dict[str, Any] = {"count": os.cpu_count()}
    cpuinfo = _read("/proc/cpuinfo")
    models = sorted({m.strip() for m in re.findall(r"^model name\s*:\s*(.*)$", cpuinfo, re.M)})
    info["model"] = models[0] if len(models) == 1 else models
    flags = re.search(r"^flags\s*:\s*(.*)$", cpuinfo, re.M)
    if flags:
        f = set(flags.group(1).split())
        info["flags_of_interest"] = sorted(f & {"constant_tsc", "nonstop_tsc", "tsc_known_freq", "hypervisor",
                                                "avx2", "avx512f", "ht", "rdtscp", "invariant_tsc"})
    info["online"] = _guard(lambda: _read("/sys/devices/system/cpu/online"))
    info["isolated"] = _guard(lambda: _read("/sys/devices/system/cpu/isolated") or "")
    info["nohz_full"] = _guard(lambda: _read("/sys/devices/system/cpu/nohz_full"))
    smt: dict[str, Any] = {}
    for key in ("control", "active"):
        p = Path(f"/sys/devices/system/cpu/smt/{key}")
        smt[key] = _read(p) if p.exists() else None
    if smt["control"] is None and smt["active"] is None:
        smt["note"] = "/sys/devices/system/cpu/smt absent"
    tpc = re.search(r"^siblings\s*:\s*(\d+)", cpuinfo, re.M), re.search(r"^cpu cores\s*:\s*(\d+)", cpuinfo, re.M)
    if all(tpc):
        smt["threads_per_core"] = int(tpc[0].group(1)) // max(1, int(tpc[1].group(1)))
    info["smt"] = smt
    governors: dict[str, str] = {}
    base = Path("/sys/devices/system/cpu")
    for d in sorted(base.glob("cpu[0-9]*")):
        g = d / "cpufreq" / "scaling_governor"
        if g.exists():
            governors[d.name] = _read(g)
    info["frequency_governor"] = governors or {"error": "no cpufreq in sysfs (no frequency scaling exposed)"}
    return info


def memory() -> dict[str, Any]:
    text = _read("/proc/meminfo")
    out: dict[str, Any] = {}
    for key in ("MemTotal", "MemAvailable", "HugePages_Total", "Hugepagesize"):
        m = re.search(rf"^{key}:\s*(\d+)(?:\s*kB)?", text, re.M)
        if m:
            out[key] = int(m.group(1))
    out["unit"] = "kB (HugePages_Total: pages)"
    return out


# ---------------------------------------------------------------- cgroups

def cgroups() -> dict[str, Any]:
    h = cgroup_hierarchies()
    info: dict[str, Any] = {"mode": cgroup_mode(h), "controllers": h}
    layout: dict[str, Any] = {}
    mounts = _read("/proc/self/mounts").splitlines()
    for line in mounts:
        parts = line.split()
        if len(parts) < 4:
            continue
        if parts[2] == "cgroup" and "cpuset" in parts[3].split(","):
            root = Path(parts[1])
            for d in [root, *sorted(p for p in root.iterdir() if p.is_dir())][:32]:
                entry = {}
                for f in ("cpuset.cpus", "cpuset.mems", "cpuset.cpu_exclusive", "cpuset.sched_load_balance"):
                    if (d / f).exists():
                        entry[f] = _read(d / f)
                if entry:
                    layout[str(d)] = entry
        elif parts[2] == "cgroup2":
            root = Path(parts[1])
            for f in ("cgroup.controllers", "cgroup.subtree_control", "cpuset.cpus.effective", "cpuset.cpus.partition"):
                if (root / f).exists():
                    layout.setdefault(str(root), {})[f] = _read(root / f)
    info["cpuset_layout"] = layout
    return info


# ---------------------------------------------------------------- network

def _ethtool_offloads(dev: str) -> dict[str, Any]:
    if shutil.which("ethtool") is None:
        return {"error": "ethtool not installed"}
    out = _run(["ethtool", "-k", dev])
    if out.returncode != 0:
        return {"error": (out.stderr or out.stdout).strip()[-300:]}
    offloads: dict[str, str] = {}
    for line in out.stdout.splitlines()[1:]:
        m = re.match(r"^\s*([\w-]+):\s*(on|off)(\s*\[fixed\])?", line)
        if m:
            offloads[m.group(1)] = m.group(2) + (" [fixed]" if m.group(3) else "")
    return offloads


def _driver(dev: str) -> str | None:
    link = Path(f"/sys/class/net/{dev}/device/driver")
    if link.exists():
        return os.path.basename(os.path.realpath(link))
    if shutil.which("ethtool"):
        out = _run(["ethtool", "-i", dev])
        m = re.search(r"^driver:\s*(\S+)", out.stdout, re.M)
        if m:
            return m.group(1)
    return None


def nics() -> dict[str, Any]:
    qdiscs: dict[str, list] = {}
    if shutil.which("tc"):
        out = _run(["tc", "-j", "qdisc", "show"])
        if out.returncode == 0 and out.stdout.strip():
            for q in json.loads(out.stdout):
                qdiscs.setdefault(q.get("dev", "?"), []).append(
                    {k: q.get(k) for k in ("kind", "handle", "parent", "root") if k in q})
        else:
            qdiscs = {"error": out.stderr.strip()}  # type: ignore[assignment]
    result: dict[str, Any] = {}
    for d in sorted(Path("/sys/class/net").iterdir()):
        dev = d.name
        info: dict[str, Any] = {}
        for f in ("operstate", "mtu", "speed", "address", "tx_queue_len"):
            try:
                info[f] = _read(d / f)
            except OSError as exc:
                info[f] = None if exc.errno == 22 else f"unreadable: {exc.strerror}"
        info["driver"] = _guard(lambda dev=dev: _driver(dev))
        info["offloads"] = _guard(lambda dev=dev: _ethtool_offloads(dev))
        info["qdiscs"] = qdiscs.get(dev, []) if isinstance(qdiscs, dict) else qdiscs
        result[dev] = info
    return result


def tcp() -> dict[str, Any]:
    avail, default = congestion_controls()
    allowed = None
    p = Path("/proc/sys/net/ipv4/tcp_allowed_congestion_control")
    if p.exists():
        allowed = _read(p).split()
    return {"available_congestion_control": avail, "default_congestion_control": default,
            "allowed_congestion_control": allowed}


# ---------------------------------------------------------------- tools

_TOOLS: dict[str, tuple[list[str], str | None]] = {
    # program: (version command, Debian package to ask dpkg when the program has no quick --version)
    "tshark": (["tshark", "-v"], "tshark"),
    "iperf3": (["iperf3", "-v"], "iperf3"),
    "dpdk-testpmd": ([], "dpdk"),
    "lxc-start": (["lxc-start", "--version"], "lxc"),
    "perf": (["perf", "--version"], None),
    "tcpdump": (["tcpdump", "--version"], "tcpdump"),
    "ethtool": (["ethtool", "--version"], "ethtool"),
    "MoonGen": ([], None),
    "guile": (["guile", "--version"], None),
}


def _tool_version(name: str) -> dict[str, Any]:
    cmd, deb = _TOOLS[name]
    aliases = {"MoonGen": ("MoonGen", "moongen", "build/MoonGen")}.get(name, (name,))
    path = next((p for p in (shutil.which(a) for a in aliases) if p), None)
    if path is None:
        return {"present": False, "reason": f"{' / '.join(aliases)} not on PATH"}
    info: dict[str, Any] = {"present": True, "path": path}
    if cmd:
        try:
            out = _run(cmd, timeout=20)
            text = (out.stdout or out.stderr).strip().splitlines()
            info["version"] = text[0].strip() if text else f"(no output, exit {out.returncode})"
        except (OSError, subprocess.TimeoutExpired) as exc:
            info["version_error"] = f"{type(exc).__name__}: {exc}"
    if deb and shutil.which("dpkg-query"):
        out = _run(["dpkg-query", "-W", "-f=${Version}", deb])
        if out.returncode == 0 and out.stdout.strip():
            info["debian_package"] = f"{deb} {out.stdout.strip()}"
    if "version" not in info and "debian_package" not in info:
        info["version_error"] = "no version command known and no Debian package found"
    return info


def tools() -> dict[str, Any]:
    return {name: _guard(lambda n=name: _tool_version(n)) for name in _TOOLS}


# ---------------------------------------------------------------- assemble

def host_fingerprint(refresh: bool = False) -> dict[str, Any]:
    """The whole fingerprint (cached per process unless ``refresh``)."""
    global _CACHE
    if _CACHE is not None and not refresh:
        return _CACHE

    probes: dict[str, Callable[[], Any]] = {
        "kernel": kernel, "cpu": cpu, "memory": memory, "cgroups": cgroups, "nics": nics, "tcp": tcp,
        "tools": tools, "capabilities": lambda: [c.as_dict() for c in probe_all()],
        "environment": environment_description,
    }
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = {k: pool.submit(_guard, fn) for k, fn in probes.items()}
        results = {k: f.result() for k, f in futures.items()}
    fp: dict[str, Any] = {
        "fingerprint_version": FINGERPRINT_VERSION,
        "taken": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "hostname": socket.gethostname(),
        "euid": os.geteuid(),
        **results,
    }
    caps = results.get("capabilities")
    if isinstance(caps, list):
        by = {c["capability"]: c for c in caps}
        fp["netem"] = by.get("netem", {}).get("status")
        fp["perf_hw_counters"] = by.get("perf-hw-counters", {}).get("status")
    _CACHE = fp
    return fp
