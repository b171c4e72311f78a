"""Testbed hosts emulated on this machine: one network namespace per role, each with its own sshd.

``emulate(inventory_path)`` (as root) starts the three hosts of the ssh backend's inventory -
loadgen, dut, timestamper - as namespaces ``bb-<token>-lg``, ``bb-<token>-dut``, ``bb-<token>-ts``.
Each host has a management veth pair (``bb-<token>-m<role>`` on this side, ``mgmt`` inside) to the
run's management bridge ``bb-<token>-mbr`` in this machine's root namespace, which holds the first
address of the run's /28 of 100.64.0.0/10 (the hosts' default gateway); the hosts reach each other
over the bridge (no forwarding is enabled). Each host's own ``/usr/sbin/sshd`` listens on its
``mgmt`` address. The data plane of the experiment is cabled like the paper's set-up::

    lg:lg0 -- ts:tpa  [bridge bpre]  ts:tpb -- dut:din      (the tap before the DuT)
    dut:dout -- ts:tqa [bridge bpost] ts:tqb -- lg:lg1      (the tap after the DuT, back to the loadgen)

The timestamper captures what arrives on ``tpa`` (pre) and ``tqa`` (post); its bridges forward it
on, so the frames reach the DuT and return to the loadgen as with optical taps.

Per run a directory (``/run/benchbook/emulated/<token>/``, mode 0700) holds the host keys
(ssh-keygen, one ed25519 key per host), the client key (0600), ``known_hosts`` pinning each host
key to its address, each host's ``sshd_config``, pid file, log and working directory. The
inventory written to ``inventory_path`` names the client key and the known_hosts file; the ssh
backend then connects with ``StrictHostKeyChecking=yes`` against that file only. A host is ready
when a real ``ssh ... true`` with the pinned key succeeds.

The run's state file (:mod:`benchbook.testbed.state`) is owned by the loadgen's sshd, so the
start-up sweep leaves a running emulation alone and removes its namespaces once its sshds are
gone. ``down(inventory_path)`` stops the sshds and removes namespaces, links, the per-run
directory and the inventory; it is idempotent and also works after a crash (``down_stale()``
removes every emulation whose sshds are gone).
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import shutil
import signal
import subprocess
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchbook.errors import BenchbookError
from benchbook.testbed import state as run_state
from benchbook.testbed.names import make_name, new_token, token_of
from benchbook.testbed.signals import deferred_signals
from benchbook.tools.host import CommandLog, LocalHost

ROLES = {"loadgen": "lg", "dut": "dut", "timestamper": "ts"}
MGMT_NET = ipaddress.ip_network("100.64.0.0/10")
MARKER = "benchbook-emulated-testbed"
PRIVSEP_DIR = Path("/run/sshd")
SSHD = "/usr/sbin/sshd"
# data-plane veth pairs: (role, ifname) -- (role, ifname); bridges in the timestamper
DATA_LINKS = ((("loadgen", "lg0"), ("timestamper", "tpa")), (("timestamper", "tpb"), ("dut", "din")),
              (("dut", "dout"), ("timestamper", "tqa")), (("timestamper", "tqb"), ("loadgen", "lg1")))
BRIDGES = (("bpre", ("tpa", "tpb")), ("bpost", ("tqa", "tqb")))
HOST_INTERFACES = {"loadgen": (("lg0", "timestamper:tpa"), ("lg1", "timestamper:tqb")),
                   "dut": (("din", "timestamper:tpb"), ("dout", "timestamper:tqa")),
                   "timestamper": (("tpa", "loadgen:lg0"), ("tqa", "dut:dout"))}


class EmulateError(BenchbookError, RuntimeError):
    """The emulated testbed could not be started or removed; the message says what failed."""


def emulated_root() -> Path:
    return run_state.STATE_DIR / "emulated"


@dataclass
class EmulatedHost:
    role: str
    netns: str
    address: str          # inside the namespace (sshd listens here)
    gateway: str          # this machine's address on the management bridge
    mgmt_link: str        # the root-namespace end of the management veth


@dataclass
class EmulatedTestbed:
    token: str
    run_dir: Path
    inventory: Path
    hosts: dict[str, EmulatedHost] = field(default_factory=dict)
    ready_s: float = 0.0

    @property
    def client_key(self) -> Path:
        return self.run_dir / "client_ed25519"

    @property
    def known_hosts(self) -> Path:
        return self.run_dir / "known_hosts"


def _mgmt_block(token: str) -> ipaddress.IPv4Address:
    """The network address of this run's /28 in 100.64.0.0/10 (+1: this machine, +2..+4: the hosts)."""
    blocks = MGMT_NET.num_addresses // 16
    return MGMT_NET.network_address + (int(token, 16) % blocks) * 16  # type: ignore[return-value]


def _addresses_in_use(host: LocalHost) -> set[str]:
    r = host.run(["ip", "-4", "-o", "addr", "show"], check=False)
    return {w.split("/")[0] for line in r.stdout.splitlines() for w in line.split() if "/" in w}


def _ssh_probe_argv(tb: EmulatedTestbed, address: str, timeout_s: int = 2) -> list[str]:
    return ["ssh", "-i", str(tb.client_key), "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes",
            "-o", f"UserKnownHostsFile={tb.known_hosts}", "-o", f"ConnectTimeout={timeout_s}",
            f"root@{address}", "true"]


def sshd_config(tb: EmulatedTestbed, role: str) -> str:
    h, d = tb.hosts[role], tb.run_dir / role
    return (f"# sshd of the emulated {role} host ({h.netns}); benchbook testbed emulate\n"
            f"ListenAddress {h.address}:22\nHostKey {d / 'ssh_host_ed25519_key'}\nPidFile {d / 'sshd.pid'}\n"
            f"AuthorizedKeysFile {tb.run_dir / 'authorized_keys'}\nPermitRootLogin prohibit-password\n"
            "PubkeyAuthentication yes\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n"
            f"X11Forwarding no\nPrintMotd no\nMaxStartups 50:30:100\nSubsystem sftp internal-sftp\n"
            f"SetEnv HOME={d / 'home'}\nLogLevel VERBOSE\n")


def inventory_text(tb: EmulatedTestbed, cores: int) -> str:
    """The inventory TOML of the emulated hosts (format: docs/testbed-inventory.md)."""
    dut_core = 1 if cores > 1 else 0
    hk = [c for c in range(cores) if c != dut_core] or [0]
    lines = ["# benchbook testbed emulate: three hosts emulated on this machine (network namespaces, one sshd each).",
             f"# Remove them with: benchbook testbed down {tb.inventory}", "",
             "[testbed]", f'name = "emulated-{tb.token}"',
             'ssh_options = ["-o", "BatchMode=yes", "-o", "ConnectTimeout=3", "-o", "ServerAliveInterval=2", '
             '"-o", "ServerAliveCountMax=3"]',
             f'known_hosts = "{tb.known_hosts}"', "",
             "[emulated]", f'token = "{tb.token}"', f'run_dir = "{tb.run_dir}"', ""]
    for role, short in ROLES.items():
        h = tb.hosts[role]
        lines += ["[[hosts]]", f'name = "{short}-{tb.token}"', f'role = "{role}"', f'address = "{h.address}"',
                  'user = "root"', f'identity_file = "{tb.client_key}"',
                  f'workdir = "{tb.run_dir / role / "work"}"']
        if role == "dut":
            lines += [f"cores = [{dut_core}]", f"housekeeping_cores = [{', '.join(map(str, hk))}]"]
        else:
            lines.append(f"cores = [{hk[0]}]")
        lines.append("interfaces = [")
        for n, (ifname, peer) in enumerate(HOST_INTERFACES[role]):
            lines.append(f'  {{ name = "{ifname}", port = {n}, peer = "{peer}" }},')
        lines += ["]", ""]
    return "\n".join(lines)


def emulate(inventory: Path | str, *, ready_timeout_s: float = 30.0, log: CommandLog | None = None) -> EmulatedTestbed:
    """Start the three emulated hosts and write the inventory (see the module docstring)."""
    if os.geteuid() != 0:
        raise EmulateError("benchbook testbed emulate needs root (network namespaces, sshd)")
    for prog in (SSHD, "ssh", "ssh-keygen", "ip"):
        if shutil.which(prog) is None:
            raise EmulateError(f"{prog} not found (Debian: openssh-server, openssh-client, iproute2)")
    inv = Path(inventory).absolute()
    if inv.exists():
        raise EmulateError(f"{inv} exists; remove it (or run benchbook testbed down {inv}) first")
    host = LocalHost(name="emulate", log=log or CommandLog())
    used = _addresses_in_use(host)
    while True:
        token = new_token()
        base = _mgmt_block(token)
        if not {str(base + k) for k in range(1, 5)} & used:
            break
    run_dir = emulated_root() / token
    tb = EmulatedTestbed(token=token, run_dir=run_dir, inventory=inv)
    for i, (role, short) in enumerate(ROLES.items()):
        tb.hosts[role] = EmulatedHost(role=role, netns=make_name(token, short), address=str(base + 2 + i),
                                      gateway=str(base + 1),
                                      mgmt_link=make_name(token, f"m{short}", interface=True))
    st = run_state.RunState(token=token, owner_start=run_state.process_start_ticks(os.getpid()))
    st.save()
    try:
        with deferred_signals():
            _prepare_files(tb, host)
            for role in ROLES:
                st.add_resource("netns", tb.hosts[role].netns)
            _build_network(tb, host)
        _start_sshds(tb, host, st)
        t0 = time.monotonic()
        _wait_ready(tb, host, ready_timeout_s)
        tb.ready_s = round(time.monotonic() - t0, 3)
        tmp = inv.with_name(inv.name + ".tmp")
        tmp.write_text(inventory_text(tb, os.cpu_count() or 1))
        os.replace(tmp, inv)
    except BaseException:
        down_token(token, run_dir)
        raise
    return tb


def _prepare_files(tb: EmulatedTestbed, host: LocalHost) -> None:
    emulated_root().mkdir(parents=True, exist_ok=True, mode=0o700)
    tb.run_dir.mkdir(mode=0o700)
    info: dict[str, Any] = {"marker": MARKER, "token": tb.token, "inventory": str(tb.inventory),
                            "created_privsep_dir": False,
                            "hosts": {r: vars(h) for r, h in tb.hosts.items()}}
    if not PRIVSEP_DIR.exists():
        PRIVSEP_DIR.mkdir(mode=0o755)
        info["created_privsep_dir"] = True
    (tb.run_dir / "emulated.json").write_text(json.dumps(info, indent=1))
    old = os.umask(0o077)
    try:
        host.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"benchbook-client-{tb.token}",
                  "-f", str(tb.client_key)])
        os.chmod(tb.client_key, 0o600)
        shutil.copyfile(tb.client_key.with_suffix(".pub"), tb.run_dir / "authorized_keys")
        known = []
        for role, h in tb.hosts.items():
            d = tb.run_dir / role
            for sub in (d, d / "work", d / "home"):
                sub.mkdir(mode=0o700)
            key = d / "ssh_host_ed25519_key"
            host.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"{role}-{tb.token}", "-f", str(key)])
            pub = key.with_suffix(".pub").read_text().split()
            known.append(f"{h.address} {pub[0]} {pub[1]}")
            (d / "sshd_config").write_text(sshd_config(tb, role))
        tb.known_hosts.write_text("\n".join(known) + "\n")
    finally:
        os.umask(old)


def _build_network(tb: EmulatedTestbed, host: LocalHost) -> None:
    ns = {r: h.netns for r, h in tb.hosts.items()}
    bridge = make_name(tb.token, "mbr", interface=True)
    host.run(["ip", "link", "add", bridge, "type", "bridge", "stp_state", "0", "forward_delay", "0"])
    host.run(["ip", "addr", "add", f"{next(iter(tb.hosts.values())).gateway}/28", "dev", bridge])
    host.run(["ip", "link", "set", bridge, "up"])
    for role, h in tb.hosts.items():
        host.run(["ip", "netns", "add", h.netns])
        inside = LocalHost(name=role, netns=h.netns, log=host.log)
        inside.run(["ip", "link", "set", "lo", "up"])
        inside.run(["sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1"], check=False)
        inside.run(["sysctl", "-q", "-w", "net.ipv6.conf.default.disable_ipv6=1"], check=False)
        host.run(["ip", "link", "add", h.mgmt_link, "type", "veth", "peer", "name", "mgmt", "netns", h.netns])
        host.run(["ip", "link", "set", h.mgmt_link, "master", bridge])
        host.run(["ip", "link", "set", h.mgmt_link, "up"])
        inside.run(["ip", "addr", "add", f"{h.address}/28", "dev", "mgmt"])
        inside.run(["ip", "link", "set", "mgmt", "up"])
        inside.run(["ip", "route", "add", "default", "via", h.gateway])
    for (ra, a), (rb, b) in DATA_LINKS:
        host.run(["ip", "link", "add", a, "netns", ns[ra], "type", "veth", "peer", "name", b, "netns", ns[rb]])
    ts = LocalHost(name="timestamper", netns=ns["timestamper"], log=host.log)
    for br, ports in BRIDGES:
        ts.run(["ip", "link", "add", br, "type", "bridge", "stp_state", "0", "forward_delay", "0"])
        for p in ports:
            ts.run(["ip", "link", "set", p, "master", br])
        ts.run(["ip", "link", "set", br, "up"])
    for (ra, a), (rb, b) in DATA_LINKS:
        for role, ifname in ((ra, a), (rb, b)):
            inside = LocalHost(name=role, netns=ns[role], log=host.log)
            inside.run(["ip", "link", "set", ifname, "promisc", "on", "up"])


def _start_sshds(tb: EmulatedTestbed, host: LocalHost, st: run_state.RunState) -> None:
    for role, h in tb.hosts.items():
        d = tb.run_dir / role
        # nsenter, not `ip netns exec`: the host keeps this machine's /sys (cgroup hierarchies) as a real host has
        host.run(["nsenter", f"--net=/run/netns/{h.netns}", SSHD, "-f", str(d / "sshd_config"),
                  "-E", str(d / "sshd.log")], what=f"sshd of {role}")
        pid = _read_pid(d / "sshd.pid", timeout_s=5.0)
        if pid is None:
            raise EmulateError(f"sshd of {role} did not start: {_tail(d / 'sshd.log')}")
        st.add_pid(pid, f"sshd {role}")
    # the emulation lives as long as the loadgen's sshd: the sweep keeps it while that runs
    owner = st.pids[0]
    st.owner_pid, st.owner_start = owner[0], owner[1]
    st.save()


def _read_pid(path: Path, timeout_s: float) -> int | None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        # sshd creates the file before it writes the number: an empty file means "not yet", like a missing one
        with contextlib.suppress(OSError, ValueError, IndexError):
            return int(path.read_text().split()[0])
        time.sleep(0.05)
    return None


def _tail(path: Path, n: int = 5) -> str:
    try:
        return " | ".join(path.read_text().splitlines()[-n:])
    except OSError:
        return "(no log)"


def _wait_ready(tb: EmulatedTestbed, host: LocalHost, timeout_s: float) -> None:
    """Until every sshd accepts a real ssh login with the pinned host key and the client key."""
    pending = dict(tb.hosts)
    deadline = time.monotonic() + timeout_s
    last: dict[str, str] = {}
    while pending:
        for role, h in list(pending.items()):
            r = subprocess.run(_ssh_probe_argv(tb, h.address), capture_output=True, text=True, timeout=30)
            if r.returncode == 0:
                host.log.end(host.log.begin(role, _ssh_probe_argv(tb, h.address), "ssh ready"), 0, 0.0)
                del pending[role]
            else:
                last[role] = r.stderr.strip()
        if pending and time.monotonic() > deadline:
            raise EmulateError("sshd not reachable within "
                               f"{timeout_s:g} s: " + "; ".join(f"{r}: {last.get(r)}" for r in pending))
        if pending:
            time.sleep(0.1)


# --- removal ---------------------------------------------------------------------------------------
def read_emulated(inventory: Path | str) -> tuple[str, Path]:
    """(token, run directory) of the emulation an inventory describes."""
    p = Path(inventory)
    try:
        data = tomllib.loads(p.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise EmulateError(f"{p}: cannot read the inventory: {exc}") from exc
    em = data.get("emulated")
    if not isinstance(em, dict) or "token" not in em or "run_dir" not in em:
        raise EmulateError(f"{p}: no [emulated] table with token and run_dir: not written by benchbook testbed emulate")
    token, run_dir = str(em["token"]), Path(str(em["run_dir"]))
    if token_of(make_name(token, "x")) != token or run_dir != emulated_root() / token:
        raise EmulateError(f"{p}: [emulated] token {token!r} / run_dir {run_dir} do not name an emulation here")
    return token, run_dir


def down_token(token: str, run_dir: Path | None = None, log: CommandLog | None = None) -> list[str]:
    """Stop the emulation's sshds and every process in its namespaces, delete its namespaces,
    links, per-run directory and state file. Returns what was removed (empty: nothing was left)."""
    run_dir = run_dir or emulated_root() / token
    host = LocalHost(name="down", log=log or CommandLog())
    removed: list[str] = []
    with deferred_signals():
        info: dict[str, Any] = {}
        with contextlib.suppress(OSError, ValueError):
            info = json.loads((run_dir / "emulated.json").read_text())
        states = run_state.load_all()
        for pid, start, what in states.get(token, {}).get("pids", []):
            if run_state.process_alive(int(pid), start):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), signal.SIGKILL)
                    removed.append(f"process {pid} ({what})")
        prefix = make_name(token, "x")[:-1]
        r = host.run(["ip", "netns", "list"], check=False)
        for ns in [ln.split()[0] for ln in r.stdout.splitlines() if ln.split() and ln.startswith(prefix)]:
            pids = host.run(["ip", "netns", "pids", ns], check=False).stdout.split()
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, ValueError):
                    os.kill(int(pid), signal.SIGKILL)
            removed += [f"process {p} in {ns}" for p in pids]
            host.run(["ip", "netns", "del", ns], check=False)
            removed.append(f"netns {ns}")
        # cgroups the ssh backend made on these hosts (they share this kernel) and left when a host dropped:
        # empty ones go (a live run's cgroup holds its DuT and stays)
        for d in [*Path("/sys/fs/cgroup").glob("bbssh-*-dut"), *Path("/sys/fs/cgroup").glob("*/bbssh-*-dut")]:
            with contextlib.suppress(OSError):
                d.rmdir()
                removed.append(f"cgroup {d}")
        r = host.run(["ip", "-o", "link", "show"], check=False)
        for line in r.stdout.splitlines():
            parts = line.split(":")
            name = parts[1].strip().split("@")[0] if len(parts) > 1 else ""
            if name.startswith(prefix):
                host.run(["ip", "link", "del", name], check=False)
                removed.append(f"link {name}")
        if run_dir.is_dir() and run_dir.parent == emulated_root():
            shutil.rmtree(run_dir, ignore_errors=True)
            removed.append(f"directory {run_dir}")
        with contextlib.suppress(OSError):
            emulated_root().rmdir()   # only when no other emulation is left
        state_file = run_state.STATE_DIR / f"{token}.json"
        if state_file.exists():
            state_file.unlink()
            removed.append(f"state {state_file}")
        if info.get("created_privsep_dir") and PRIVSEP_DIR.is_dir() and not any(emulated_root().glob("*")) \
                and not _other_sshd_running():
            with contextlib.suppress(OSError):
                PRIVSEP_DIR.rmdir()
                removed.append(f"directory {PRIVSEP_DIR}")
    return removed


def _other_sshd_running() -> bool:
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            with contextlib.suppress(OSError):
                if (d / "comm").read_text().strip() == "sshd":
                    return True
    return False


def down(inventory: Path | str, log: CommandLog | None = None) -> list[str]:
    """Remove the emulation an inventory describes, and the inventory (idempotent)."""
    p = Path(inventory)
    if not p.exists():
        return []
    token, run_dir = read_emulated(p)
    removed = down_token(token, run_dir, log)
    p.unlink()
    removed.append(f"inventory {p}")
    return removed


def down_stale(log: CommandLog | None = None) -> list[str]:
    """Remove every emulation whose sshds are gone (e.g. after a crash of this machine's run)."""
    removed: list[str] = []
    live = run_state.live_tokens()
    root = emulated_root()
    for d in sorted(root.iterdir()) if root.is_dir() else []:
        if d.name not in live and (d / "emulated.json").exists():
            removed += down_token(d.name, d, log)
    return removed


def leftovers(token: str) -> dict[str, list[str]]:
    """What of an emulation is still on this machine: namespaces, links, sshd processes, files."""
    prefix = make_name(token, "x")[:-1]
    host = LocalHost(name="check")
    netns = [ln.split()[0] for ln in host.run(["ip", "netns", "list"], check=False).stdout.splitlines()
             if ln.startswith(prefix)]
    links = []
    for line in host.run(["ip", "-o", "link", "show"], check=False).stdout.splitlines():
        parts = line.split(":")
        if len(parts) > 1 and parts[1].strip().startswith(prefix):
            links.append(parts[1].strip().split("@")[0])
    run_dir = emulated_root() / token
    procs = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            with contextlib.suppress(OSError):
                if str(run_dir) in (d / "cmdline").read_bytes().decode(errors="replace"):
                    procs.append(d.name)
    files = [str(run_dir)] if run_dir.exists() else []
    if (run_state.STATE_DIR / f"{token}.json").exists():
        files.append(str(run_state.STATE_DIR / f"{token}.json"))
    return {"netns": netns, "links": links, "processes": procs, "files": files}


__all__ = ["EmulateError", "EmulatedTestbed", "down", "down_stale", "down_token", "emulate", "leftovers",
           "read_emulated"]
