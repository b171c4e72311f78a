"""The ``ssh`` testbed backend: the cgroup v1/v2 LXC experiment on real hosts.

A host inventory (TOML, format in docs/testbed-inventory.md, example in examples/testbed.toml)
names the hosts of the three roles - loadgen (MoonGen), dut (an LXC container running DPDK
testpmd on the DuT's NICs) and timestamper (MoonSniff) - with addresses, users, interfaces,
PCI ids and cores. `SshBackend.plan(...)` turns one measurement into an ordered list of steps,
each a command one host runs; the tool command lines in them (perf, dpdk-testpmd, lxc-*,
MoonGen, tcpdump) come from the builders in :mod:`benchbook.tools`. Each host is an
:class:`~benchbook.testbed.ssh_host.SshHost` (ssh/scp with the inventory's options). The dry run
lists the commands and touches nothing; `execute` runs them in order, keeps every command in
the one command log (``<run_dir>/raw/commands.jsonl``, outputs in ``raw/cmd/``) and collects the
remote raw data (pcaps, histogram CSVs, perf output, logs) into ``<run_dir>/raw/<role>/``.

Files the steps need on a remote host (the container's LXC config) are written locally into
``<run_dir>/setup/`` first and copied with scp, so the exact file is part of the run record.
"""

from __future__ import annotations

import re
import shlex
import sys
import time
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchbook.errors import BenchbookError
from benchbook.testbed.ssh_host import SshHost
from benchbook.tools import lxc, moongen, perf, tcpdump, testpmd
from benchbook.tools.host import CommandLog

ROLES = ("loadgen", "dut", "timestamper")
_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]+$")
_PCI_RE = re.compile(r"^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")


class InventoryError(BenchbookError, ValueError):
    """The inventory file is malformed; the message names the file and the key."""


@dataclass(frozen=True)
class Interface:
    name: str                 # kernel name (before DPDK takes it), e.g. "ens1f0"
    pci: str                  # PCI address, e.g. "0000:03:00.0"
    port: int                 # DPDK port number on that host (order of the allow-list)
    peer: str = ""            # "<host>:<interface>" on the other end of the cable/tap


@dataclass(frozen=True)
class InventoryHost:
    name: str
    role: str
    address: str
    user: str = "root"
    port: int = 22
    identity_file: str | None = None      # ssh -i
    proxy_jump: str | None = None         # ssh -J (scp: -J as well)
    interfaces: tuple[Interface, ...] = ()
    cores: tuple[int, ...] = ()           # cores benchbook may use on this host
    housekeeping_cores: tuple[int, ...] = ()
    workdir: str = "/srv/benchbook"
    moongen_dir: str = "/opt/MoonGen"     # loadgen, timestamper
    boot_parameters: tuple[str, ...] = ()  # expected on the kernel command line (checked, recorded)
    driver: str = "vfio-pci"              # DPDK driver the NICs are bound to
    hugepages: int = 0                    # 2 MiB pages to reserve (0: leave as is)

    @property
    def target(self) -> str:
        return f"{self.user}@{self.address}"

    def interface(self, name: str) -> Interface:
        for i in self.interfaces:
            if i.name == name:
                return i
        raise KeyError(f"host {self.name} has no interface {name!r}")


@dataclass(frozen=True)
class Inventory:
    name: str
    hosts: tuple[InventoryHost, ...]
    ssh_options: tuple[str, ...] = ("-o", "BatchMode=yes", "-o", "ConnectTimeout=10")
    source: str = "<dict>"

    def role(self, role: str) -> InventoryHost:
        for h in self.hosts:
            if h.role == role:
                return h
        raise KeyError(f"{self.source}: no host with role {role!r}")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "<dict>") -> Inventory:
        def need(d: Mapping[str, Any], key: str, where: str, kind: type | tuple[type, ...] = str) -> Any:
            if key not in d:
                raise InventoryError(f"{source}: {where}: missing key {key!r}")
            if not isinstance(d[key], kind):
                raise InventoryError(f"{source}: {where}.{key}: expected {getattr(kind, '__name__', kind)}, "
                                     f"got {type(d[key]).__name__} {d[key]!r}")
            return d[key]

        tb = data.get("testbed", {})
        if not isinstance(tb, Mapping):
            raise InventoryError(f"{source}: [testbed] must be a table")
        raw_hosts = data.get("hosts")
        if not isinstance(raw_hosts, list) or not raw_hosts:
            raise InventoryError(f"{source}: expected one or more [[hosts]] tables")
        hosts = []
        for n, h in enumerate(raw_hosts):
            where = f"hosts[{n}]"
            name = need(h, "name", where)
            where = f"hosts[{n}] ({name})"
            if not _NAME_RE.match(name):
                raise InventoryError(f"{source}: {where}: name may hold letters, digits, '_', '.', '-'")
            role = need(h, "role", where)
            if role not in ROLES:
                raise InventoryError(f"{source}: {where}.role: {role!r} is not one of {', '.join(ROLES)}")
            ifaces = []
            for k, i in enumerate(h.get("interfaces", [])):
                iw = f"{where}.interfaces[{k}]"
                pci = need(i, "pci", iw)
                if not _PCI_RE.match(pci):
                    raise InventoryError(f"{source}: {iw}.pci: {pci!r} is not a PCI address like 0000:03:00.0")
                ifaces.append(Interface(name=need(i, "name", iw), pci=pci, port=int(i.get("port", k)),
                                        peer=str(i.get("peer", ""))))
            cores = h.get("cores", [])
            hk = h.get("housekeeping_cores", [])
            for key, val in (("cores", cores), ("housekeeping_cores", hk)):
                if not isinstance(val, list) or not all(isinstance(c, int) and c >= 0 for c in val):
                    raise InventoryError(f"{source}: {where}.{key}: expected a list of core numbers")
            known = {"name", "role", "address", "user", "port", "interfaces", "cores", "housekeeping_cores",
                     "workdir", "moongen_dir", "boot_parameters", "driver", "hugepages", "identity_file",
                     "proxy_jump"}
            unknown = sorted(set(h) - known)
            if unknown:
                raise InventoryError(f"{source}: {where}: unknown key(s) {unknown}; known: {sorted(known)}")
            hosts.append(InventoryHost(
                name=name, role=role, address=need(h, "address", where), user=str(h.get("user", "root")),
                port=int(h.get("port", 22)),
                identity_file=str(h["identity_file"]) if h.get("identity_file") else None,
                proxy_jump=str(h["proxy_jump"]) if h.get("proxy_jump") else None,
                interfaces=tuple(ifaces), cores=tuple(cores),
                housekeeping_cores=tuple(hk), workdir=str(h.get("workdir", "/srv/benchbook")),
                moongen_dir=str(h.get("moongen_dir", "/opt/MoonGen")),
                boot_parameters=tuple(str(p) for p in h.get("boot_parameters", [])),
                driver=str(h.get("driver", "vfio-pci")), hugepages=int(h.get("hugepages", 0)),
            ))
        roles = [h.role for h in hosts]
        for r in ROLES:
            if roles.count(r) != 1:
                raise InventoryError(f"{source}: expected exactly one host with role {r!r}, found {roles.count(r)}")
        dut = next(h for h in hosts if h.role == "dut")
        if len(dut.interfaces) != 2:
            raise InventoryError(f"{source}: the dut host needs two interfaces (ingress, egress), "
                                 f"has {len(dut.interfaces)}")
        if not dut.cores:
            raise InventoryError(f"{source}: the dut host needs cores = [<DuT core>, ...]")
        for r in ("loadgen", "timestamper"):
            h = next(x for x in hosts if x.role == r)
            if len(h.interfaces) < 2:
                raise InventoryError(f"{source}: the {r} host needs two interfaces, has {len(h.interfaces)}")
        opts = tb.get("ssh_options")
        return cls(name=str(tb.get("name", "testbed")), hosts=tuple(hosts), source=source,
                   ssh_options=tuple(opts) if opts is not None else cls.ssh_options)

    def ssh_host(self, role: str, log: CommandLog | None = None) -> SshHost:
        """The host of a role, reached with ssh/scp with this inventory's options."""
        h = self.role(role)
        return SshHost(name=role, address=h.address, user=h.user, port=h.port, identity_file=h.identity_file,
                       proxy_jump=h.proxy_jump, options=self.ssh_options, log=log or CommandLog())

    @classmethod
    def from_toml(cls, path: str | Path) -> Inventory:
        p = Path(path)
        try:
            with open(p, "rb") as fh:
                data = tomllib.load(fh)
        except tomllib.TOMLDecodeError as exc:
            raise InventoryError(f"{p}: {exc}") from exc
        except OSError as exc:
            raise InventoryError(f"{p}: cannot read the inventory: {exc.strerror}") from exc
        return cls.from_dict(data, source=str(p))


@dataclass
class Step:
    """One command of the plan, in order.

    kind: ``run`` (argv on the role's host; ``["sh", "-c", SCRIPT]`` for shell lines), ``put``
    (copy ``local`` to ``remote`` on the host), ``fetch`` (copy ``remote`` to ``local``), ``file``
    (write ``content`` to ``local`` on this machine) or ``wait`` (``seconds``)."""

    kind: str
    role: str = ""
    argv: list[str] = field(default_factory=list)
    note: str = ""
    check: bool = True
    teardown: bool = False
    seconds: float = 0.0
    content: str = ""
    local: str = ""
    remote: str = ""

    @property
    def remote_line(self) -> str:
        """What the host runs (kind ``run``), as its shell gets it."""
        from benchbook.testbed.ssh_host import remote_command

        return remote_command(self.argv)


@dataclass
class Measurement:
    """One point of the experiment: what the paper varies, plus where things go."""

    run_id: str
    cgroup_mode: str = "v2"             # "v1" | "v2": the DuT's booted hierarchy (checked, not set)
    rate_pps: float = 1.52e6
    frame_size: int = 64
    duration_s: int = 60
    repetition: int = 0
    perf_events: tuple[str, ...] = ("instructions", "branches", "cpu-migrations", "context-switches", "task-clock")
    container: str = "bb-dut"
    timestamper: str = "moonsniff"      # "moonsniff" (DPDK, hardware timestamps) | "tcpdump" (kernel NICs)

    def rate_mbit(self) -> float:
        """l2-load-latency takes Mbit/s; MoonGen's rate counts the frame with its 4-byte CRC
        (size + 4 bytes), not preamble and gap. Recorded with the run."""
        return round(self.rate_pps / 1e6 * (self.frame_size + 4) * 8, 3)


def shell_join(argv: Sequence[str]) -> str:
    """shlex.join, except that an argument that is exactly ``$(...)`` is left for the shell to
    expand (double-quoted), e.g. a pid read from a file on the remote host."""
    return " ".join(f'"{a}"' if re.fullmatch(r"\$\([^()'\"]*\)", a) else shlex.quote(a) for a in argv)


def _sh(script: str) -> list[str]:
    return ["sh", "-c", script]


class SshBackend:
    """Backend "testbed" (alias "ssh"): plan (and, unless dry_run, execute) measurements on the
    inventory's hosts."""

    name = "testbed"

    def __init__(self, inventory: Inventory | str | Path, dry_run: bool = True, out: Any = None,
                 log: CommandLog | None = None) -> None:
        self.inventory = inventory if isinstance(inventory, Inventory) else Inventory.from_toml(inventory)
        self.dry_run = dry_run
        self.out = out or sys.stdout
        self.log = log or CommandLog()

    def host(self, role: str) -> SshHost:
        return self.inventory.ssh_host(role, self.log)

    # --- tool command lines (from benchbook.tools) ------------------------------------
    def testpmd_argv(self, m: Measurement) -> list[str]:
        """testpmd as the container's init: the DuT NICs by PCI address, both lcores on the DuT core."""
        dut = self.inventory.role("dut")
        core = dut.cores[0]
        return testpmd.build_argv(pci=[i.pci for i in dut.interfaces], main_cpu=core, fwd_cpu=core,
                                  file_prefix=m.container, binary="/usr/bin/dpdk-testpmd", line_buffered=False)

    def perf_argv(self, m: Measurement, rdir: str) -> list[str]:
        return perf.build_argv(f"$(cat {rdir}/testpmd.pid)", m.duration_s + 2, events=m.perf_events, repeats=1,
                               output_path=f"{rdir}/perf.csv")

    def load_argv(self, m: Measurement, rdir: str) -> list[str]:
        lgp = [i.port for i in self.inventory.role("loadgen").interfaces[:2]]
        return moongen.build_command("l2-load-latency", {"dev1": lgp[0], "dev2": lgp[1], "rate": m.rate_mbit(),
                                                         "file": f"{rdir}/histogram.csv"})

    def timestamper_argvs(self, m: Measurement, rdir: str) -> dict[str, list[str]]:
        """name -> argv of each timestamper process (MoonSniff, or one tcpdump per tap)."""
        ts = self.inventory.role("timestamper")
        if m.timestamper == "moonsniff":
            return {"sniffer": moongen.build_command("moonsniff-sniffer", {
                "devs": [i.port for i in ts.interfaces[:2]], "output": f"{rdir}/ms",
                "runtime": m.duration_s + 10, "capture": True})}
        if m.timestamper == "tcpdump":
            return {side: tcpdump.build_argv(i.name, f"{rdir}/{side}.pcap")
                    for side, i in zip(("pre", "post"), ts.interfaces[:2], strict=True)}
        raise ValueError(f"timestamper {m.timestamper!r}: expected 'moonsniff' or 'tcpdump'")

    def container_config(self, m: Measurement) -> str:
        """The DuT container's LXC config: DPDK testpmd on the DuT NICs (PCI allow-list) as init,
        pinned to the DuT core; with cgroup v1 inside cset's shield ("user"), as in the paper."""
        core = self.inventory.role("dut").cores[0]
        extra: dict[str, str] = {}
        if m.cgroup_mode == "v1":
            extra = {"lxc.cgroup.dir.container": f"user/{m.container}",
                     "lxc.cgroup.dir.monitor": f"system/{m.container}.monitor"}
        text = lxc.ContainerConfig(
            name=m.container, rootfs=f"dir:{lxc.LXC_PATH}/{m.container}/rootfs", init_cmd=self.testpmd_argv(m),
            nics=(), cpus=str(core), mems="0", cgroup_mode=m.cgroup_mode,
            console_log=f"{lxc.LXC_PATH}/{m.container}/console.log", extra=extra,
        ).render()
        devices = "lxc.cgroup2.devices.allow" if m.cgroup_mode == "v2" else "lxc.cgroup.devices.allow"
        # hugepages and VFIO inside the container; VFIO group devices have dynamic majors
        text += ("lxc.mount.entry = /dev/hugepages dev/hugepages none bind,create=dir 0 0\n"
                 "lxc.mount.entry = /dev/vfio dev/vfio none bind,create=dir 0 0\n"
                 f"{devices} = c 10:196 rwm\n{devices} = c *:* rwm\n")
        return text

    # --- the plan -----------------------------------------------------------------------
    def plan(self, m: Measurement, run_dir: str | Path = "RUN_DIR") -> list[Step]:
        """Every command of one measurement, in order (setup, measure, collect, teardown)."""
        inv = self.inventory
        lg, dut, ts = inv.role("loadgen"), inv.role("dut"), inv.role("timestamper")
        run_dir = str(run_dir)
        steps: list[Step] = []
        rdir = {h.role: f"{h.workdir}/{m.run_id}" for h in (lg, dut, ts)}
        d = rdir["dut"]
        core = dut.cores[0]

        def run(role: str, argv: list[str], note: str = "", check: bool = True) -> None:
            steps.append(Step("run", role, argv, note=note, check=check))

        # 1. preflight: record what each host booted, check the DuT's hierarchy and boot parameters
        for h in (lg, dut, ts):
            r = rdir[h.role]
            run(h.role, _sh(f"mkdir -p {r} && uname -a > {r}/uname.txt && cat /proc/cmdline > {r}/cmdline.txt && "
                            f"lscpu > {r}/lscpu.txt"), note=f"{h.name}: record kernel, command line and CPU")
        want = {"v1": "tmpfs", "v2": "cgroup2fs"}[m.cgroup_mode]
        run("dut", _sh(f"test \"$(stat -fc %T /sys/fs/cgroup)\" = {want}"),
            note=f"DuT booted with cgroup {m.cgroup_mode} (systemd.unified_cgroup_hierarchy="
                 f"{0 if m.cgroup_mode == 'v1' else 1}); a mismatch stops the run")
        for p in dut.boot_parameters:
            run("dut", ["grep", "-qw", "--", p, "/proc/cmdline"], note=f"DuT boot parameter {p} present")

        # 2. NICs to DPDK (not the timestamper's when tcpdump timestamps on kernel NICs), hugepages
        for h in (lg, dut, ts):
            if h.hugepages:
                run(h.role, _sh(f"echo {h.hugepages} > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"),
                    note=f"{h.name}: reserve {h.hugepages} x 2 MiB hugepages")
            if h.role == "timestamper" and m.timestamper == "tcpdump":
                continue
            run(h.role, ["dpdk-devbind.py", "-b", h.driver, *[i.pci for i in h.interfaces]],
                note=f"{h.name}: bind {', '.join(i.name for i in h.interfaces)} to {h.driver}")

        # 3. DuT isolation (the paper's recipes) and the container
        hk = ",".join(map(str, dut.housekeeping_cores)) or "0"
        if m.cgroup_mode == "v1":
            run("dut", ["cset", "shield", f"--cpu={core}", "--kthread=on"],
                note="cgroup v1: housekeeping cpuset, kernel threads moved off the DuT core (cset)")
            run("dut", _sh("echo 0 > /sys/fs/cgroup/cpuset/user/cpuset.sched_load_balance"),
                note="cgroup v1: no load balancing on the DuT set; read back below")
            run("dut", _sh(f"cat /sys/fs/cgroup/cpuset/user/cpuset.sched_load_balance > {d}/isolation.txt"))
        else:
            for unit in ("system.slice", "user.slice", "init.scope"):
                run("dut", ["systemctl", "set-property", "--runtime", unit, f"AllowedCPUs={hk}"],
                    note=f"cgroup v2: {unit} off the DuT core")
        cfg_local = f"{run_dir}/setup/{m.container}.conf"
        steps.append(Step("file", local=cfg_local, content=self.container_config(m),
                          note="the container's LXC config, kept in the run directory"))
        run("dut", lxc.create_argv(m.container, template="debian",
                                   template_args=["-r", "bookworm", "--packages=dpdk,dpdk-dev"]),
            note="container root fs: debootstrap of Debian bookworm with DPDK (testpmd)")
        steps.append(Step("put", "dut", local=cfg_local, remote=f"{lxc.LXC_PATH}/{m.container}/config",
                          note="the container config: testpmd as init, pinned to the DuT core"))
        run("dut", lxc.start_argv(m.container, logfile=f"{d}/lxc.log"), note="start the DuT container")
        run("dut", _sh(f"{shell_join(lxc.info_argv(m.container, pid_only=True))} > {d}/testpmd.pid && "
                       f"grep Cpus_allowed_list /proc/$(cat {d}/testpmd.pid)/status > {d}/affinity.txt"),
            note="testpmd's host pid and affinity")
        if m.cgroup_mode == "v2":
            run("dut", _sh(f"echo {core} > /sys/fs/cgroup/lxc.payload.{m.container}/cpuset.cpus && "
                           f"echo root > /sys/fs/cgroup/lxc.payload.{m.container}/cpuset.cpus.partition"),
                note="cgroup v2: the container's cpuset becomes a partition root")

        # 4. measurement: timestamper first, perf on the DuT, then the load
        t = rdir["timestamper"]
        for name, argv in self.timestamper_argvs(m, t).items():
            cd = f"cd {ts.moongen_dir} && " if m.timestamper == "moonsniff" else ""
            run("timestamper", _sh(f"{cd}nohup {shell_join(argv)} > {t}/{name}.log 2>&1 & echo $! > {t}/{name}.pid"),
                note=f"timestamper ({m.timestamper}): {name}")
        steps.append(Step("wait", seconds=5, note="timestamper ready"))
        run("dut", _sh(f"nohup {shell_join(self.perf_argv(m, d))} > {d}/perf.log 2>&1 &"),
            note="perf stat on testpmd for the measurement window")
        lr = rdir["loadgen"]
        run("loadgen", _sh(f"cd {lg.moongen_dir} && timeout {m.duration_s + 5} {shell_join(self.load_argv(m, lr))} "
                           f"> {lr}/moongen.log 2>&1; rc=$?; test $rc -eq 0 -o $rc -eq 124"),
            note=f"MoonGen load: {m.rate_pps:g} pkt/s of {m.frame_size} B = {m.rate_mbit()} Mbit/s "
                 f"(frame + CRC) for {m.duration_s} s")
        for name in self.timestamper_argvs(m, t):
            run("timestamper", _sh(f"kill -INT $(cat {t}/{name}.pid) 2>/dev/null; "
                                   f"while kill -0 $(cat {t}/{name}.pid) 2>/dev/null; do sleep 1; done; true"),
                note=f"stop the timestamper's {name}, wait for its files")
        run("dut", _sh(f"kill -INT $(cat {d}/testpmd.pid); sleep 2; "
                       f"cp {lxc.LXC_PATH}/{m.container}/console.log {d}/testpmd-console.log"),
            note="testpmd prints its forward statistics (RX/TX/dropped per port)")

        # 5. collect
        for h in (lg, dut, ts):
            steps.append(Step("fetch", h.role, remote=rdir[h.role], local=f"{run_dir}/raw/{h.role}",
                              note=f"collect {h.name}'s raw data"))

        # 6. teardown (also run after a failure: every step here is check=False)
        tear = [Step("run", "dut", lxc.stop_argv(m.container, kill=True), note="stop the container"),
                Step("run", "dut", lxc.destroy_argv(m.container), note="remove the container")]
        if m.cgroup_mode == "v1":
            tear.append(Step("run", "dut", ["cset", "shield", "--reset"], note="undo the v1 shield"))
        else:
            tear += [Step("run", "dut", ["systemctl", "set-property", "--runtime", u, "AllowedCPUs="])
                     for u in ("system.slice", "user.slice", "init.scope")]
        for s in tear:
            s.check, s.teardown = False, True
        return steps + tear

    # --- dry run and execution --------------------------------------------------------
    def command_line(self, s: Step) -> str:
        """The step as it is run from this machine (ssh/scp with the inventory's options)."""
        if s.kind == "wait":
            return f"sleep {s.seconds:g}"
        if s.kind == "file":
            return f"cat > {shlex.quote(s.local)} <<'EOF'\n{s.content}EOF"
        h = self.host(s.role)
        if s.kind == "put":
            return shlex.join(h.put_argv(s.local, s.remote))
        if s.kind == "fetch":
            return shlex.join(h.fetch_argv(s.remote, s.local))
        return shlex.join(h.argv(s.argv))

    def dry_run_lines(self, m: Measurement, run_dir: str | Path = "RUN_DIR") -> list[str]:
        return [self.command_line(s) for s in self.plan(m, run_dir)]

    def host_commands(self, m: Measurement, run_dir: str | Path = "RUN_DIR") -> dict[str, list[str]]:
        """Per role, what that host runs (its shell's command lines), in order; "local": this machine."""
        out: dict[str, list[str]] = {"loadgen": [], "dut": [], "timestamper": [], "local": []}
        for s in self.plan(m, run_dir):
            if s.kind == "run":
                out[s.role].append(s.remote_line)
            elif s.kind in ("put", "fetch", "file"):
                out["local"].append(self.command_line(s))
        return out

    def print_plan(self, m: Measurement, run_dir: str | Path = "RUN_DIR") -> list[str]:
        lines = []
        for n, s in enumerate(self.plan(m, run_dir), 1):
            note = s.note + (" [teardown]" if s.teardown else "")
            lines.append(f"# {n:02d} {s.role or 'local'}: {note}" if note else f"# {n:02d}")
            lines.append(self.command_line(s))
        print("\n".join(lines), file=self.out)
        return lines

    def execute(self, m: Measurement, run_dir: str | Path, steps: list[Step] | None = None) -> dict[str, Any]:
        """Run the plan (or the given steps) for real (never in dry-run mode); teardown steps always
        run. Commands go into the command log in ``<run_dir>/raw/``."""
        if self.dry_run:
            raise RuntimeError("SshBackend is in dry-run mode: use print_plan(), or dry_run=False to execute")
        run_dir = Path(run_dir)
        (run_dir / "setup").mkdir(parents=True, exist_ok=True)
        if self.log.directory is None:
            self.log = CommandLog(run_dir / "raw")
        steps = self.plan(m, run_dir) if steps is None else steps
        record: dict[str, Any] = {"inventory": self.inventory.source, "measurement": vars(m).copy(),
                                  "rate_mbit": m.rate_mbit(), "command_log": str(self.log.directory), "steps": []}
        failed: str | None = None
        for n, s in enumerate(steps, 1):
            if failed and not s.teardown:
                continue
            entry: dict[str, Any] = {"n": n, "kind": s.kind, "role": s.role, "note": s.note}
            t0 = time.monotonic()
            first = len(self.log.records)
            if s.kind == "wait":
                time.sleep(s.seconds)
                rc = 0
            elif s.kind == "file":
                Path(s.local).parent.mkdir(parents=True, exist_ok=True)
                Path(s.local).write_text(s.content)
                rc = 0
            elif s.kind == "put":
                rc = self.host(s.role).put(s.local, s.remote, check=False).exit_code
            elif s.kind == "fetch":
                self.host(s.role).fetch(s.remote, s.local, check=False)
                rc = self.log.records[-1].exit_code or 0
            else:
                rc = self.host(s.role).run(s.argv, check=False, timeout_s=None, what=s.note).exit_code
            entry.update(exit_code=rc, seconds=round(time.monotonic() - t0, 3),
                         commands=[r.n for r in self.log.since(first)])
            record["steps"].append(entry)
            if rc != 0 and s.check and not failed:
                failed = f"step {n} ({self.command_line(s)}) failed with exit {rc}; see {self.log.directory}/cmd/"
        record["status"] = "failed" if failed else "complete"
        record["error"] = failed
        return record


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m benchbook.testbed.ssh INVENTORY [--mode v1|v2] [--rate-pps PPS] [--duration S]``: dry run."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m benchbook.testbed.ssh", description="print the ssh plan (dry run)")
    ap.add_argument("inventory")
    ap.add_argument("--mode", default="v2", choices=("v1", "v2"))
    ap.add_argument("--rate-pps", type=float, default=1.52e6, help="packets per second")
    ap.add_argument("--duration", type=int, default=60)
    ap.add_argument("--run-id", default="run-0")
    a = ap.parse_args(argv)
    SshBackend(a.inventory, dry_run=True).print_plan(
        Measurement(run_id=a.run_id, cgroup_mode=a.mode, rate_pps=a.rate_pps, duration_s=a.duration))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
