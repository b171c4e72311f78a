"""The native load generator ``bb-loadgen`` (native/loadgen/bb-loadgen.c): command line, run, parse.

Frames are Ethernet/IPv4/UDP; each carries a 64-bit big-endian packet id at byte
``ID_OFFSET`` (42: the first UDP payload bytes), so captures are matched with
``IdKey(offset=42, width=8)``. ``frame_size`` counts the 4 B FCS as MoonGen does: a
64 B frame is 60 B in a capture.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchbook.errors import BenchbookError
from benchbook.paths import BUILD_DIR, REPO_ROOT
from benchbook.tools.host import Host, describe_exit
from benchbook.tools.native import ensure_built

ID_OFFSET = 42
ID_WIDTH = 8
ID_BYTEORDER = "big"
BINARY = BUILD_DIR / "bb-loadgen"
SOURCE = REPO_ROOT / "native" / "loadgen" / "bb-loadgen.c"


class LoadgenError(BenchbookError, RuntimeError):
    pass


@dataclass
class LoadgenConfig:
    iface: str
    rate_pps: float | None = None      # None: unpaced (as fast as the path takes them)
    duration_s: float | None = None
    count: int | None = None
    frame_size: int = 64
    batch: int = 32
    src_mac: str | None = None
    dst_mac: str | None = None
    src_ip: str = "10.250.0.1"
    dst_ip: str = "10.250.1.2"
    sport: int = 1234
    dport: int = 5678
    id_start: int = 0
    cpu: int | None = None
    spin_ns: int = 0


def ensure_binary() -> Path:
    """build/bb-loadgen, compiled (as the Makefile does) when missing or older than its source."""
    return ensure_built(BINARY, SOURCE, LoadgenError)


def build_argv(cfg: LoadgenConfig, binary: Path | None = None) -> list[str]:
    argv = [str(binary or BINARY), "--iface", cfg.iface]
    if cfg.rate_pps is None:
        argv.append("--unpaced")
    else:
        if cfg.rate_pps <= 0:
            raise ValueError(f"rate_pps must be > 0, got {cfg.rate_pps}")
        argv += ["--rate", repr(float(cfg.rate_pps))]
    if cfg.count is not None:
        argv += ["--count", str(int(cfg.count))]
    elif cfg.duration_s is not None:
        argv += ["--duration", repr(float(cfg.duration_s))]
    else:
        raise ValueError("LoadgenConfig needs duration_s or count")
    argv += ["--size", str(cfg.frame_size), "--batch", str(cfg.batch), "--src-ip", cfg.src_ip,
             "--dst-ip", cfg.dst_ip, "--sport", str(cfg.sport), "--dport", str(cfg.dport),
             "--id-start", str(cfg.id_start)]
    if cfg.src_mac:
        argv += ["--src-mac", cfg.src_mac]
    if cfg.dst_mac:
        argv += ["--dst-mac", cfg.dst_mac]
    if cfg.cpu is not None:
        argv += ["--cpu", str(cfg.cpu)]
    if cfg.spin_ns:
        argv += ["--spin-ns", str(cfg.spin_ns)]
    return argv


def parse_report(stdout: str, source: str = "bb-loadgen") -> dict[str, Any]:
    """The JSON object bb-loadgen prints (last line starting with '{')."""
    lines = [ln for ln in stdout.splitlines() if ln.lstrip().startswith("{")]
    if not lines:
        raise LoadgenError(f"{source}: no JSON report on stdout (got {stdout[:200]!r})")
    try:
        rep = json.loads(lines[-1])
    except ValueError as exc:
        raise LoadgenError(f"{source}: report line is not JSON ({exc}): {lines[-1][:200]!r}") from exc
    for key in ("sent", "achieved_pps", "id_offset"):
        if key not in rep:
            raise LoadgenError(f"{source}: report lacks {key!r}")
    return rep


def run_loadgen(host: Host, cfg: LoadgenConfig, timeout_s: float | None = None,
                binary: Path | str | None = None) -> dict[str, Any]:
    """Run to completion on ``host`` and return the parsed report plus its argv (this machine's
    build/bb-loadgen, compiled when missing, unless binary names the program on the host)."""
    argv = build_argv(cfg, Path(binary) if binary is not None else ensure_binary())
    if timeout_s is None:
        span_s = cfg.duration_s if cfg.duration_s is not None else (cfg.count or 0) / (cfg.rate_pps or 1e5)
        timeout_s = span_s * 3 + 30
    return run_argv(host, argv, timeout_s)


def run_argv(host: Host, argv: list[str], timeout_s: float | None) -> dict[str, Any]:
    """Run a bb-loadgen command line (from build_argv) to completion on ``host``; the parsed report plus
    the argv as run. LoadgenError names how it ended when it did not exit 0."""
    r = host.run(argv, check=False, timeout_s=timeout_s, what="bb-loadgen")
    if r.exit_code != 0:
        raise LoadgenError(f"bb-loadgen failed ({describe_exit(r.exit_code)}) on {host.name}: "
                           f"{' '.join(host.argv(argv))}\n"
                           f"{r.stderr.strip()}")
    rep = parse_report(r.stdout)
    rep["argv"] = host.argv(argv)
    return rep
