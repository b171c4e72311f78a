"""The ``ssh`` testbed backend: the cgroup v1/v2 LXC experiment on real hosts.

A host inventory (TOML, format in docs/testbed-inventory.md, example in examples/testbed.toml)
names the hosts of the three roles - loadgen (MoonGen), dut (an LXC container running DPDK
testpmd on the DuT's NICs) and timestamper (MoonSniff) - with addresses, users, interfaces,
PCI ids and cores. `SshBackend.plan(...)` turns one measurement into an ordered list of steps;
each step is one exact command line run on this machine (``ssh user@host 'cmd'``, ``scp``,
``rsync``). The dry run prints them and touches nothing; `execute` runs them in order, keeps
every command's stdout/stderr beside the results (pos's discipline) and collects the remote
raw data (pcaps, histogram CSVs, perf output, logs) into ``<run_dir>/raw/<role>/``.

Files the steps need on a remote host (the container's LXC config) are written locally into
``<run_dir>/setup/`` first and copied with scp, so the exact file is part of the run record.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import time
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchbook.errors import BenchbookError

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
class Host:
    name: str
    role: str
    address: str
    user: str = "root"
    port: int = 22
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
    hosts: tuple[Host, ...]
    ssh_options: tuple[str, ...] = ("-o", "BatchMode=yes", "-o", "ConnectTimeout=10")
    source: str = "<dict>"

    def role(self, role: str) -> Host:
        for h in self.hosts:
            if h.role == role:
                return h
        raise KeyError(f"{self.source}: no host with role {role!r}")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "<dict>") -> "Inventory":
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
                     "workdir", "moongen_dir", "boot_parameters", "driver", "hugepages"}
            unknown = sorted(set(h) - known)
            if unknown:
                raise InventoryError(f"{source}: {where}: unknown key(s) {unknown}; known: {sorted(known)}")
            hosts.append(Host(
                name=name, role=role, address=need(h, "address", where), user=str(h.get("user", "root")),
                port=int(h.get("port", 22)), interfaces=tuple(ifaces), cores=tuple(cores),
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
            raise InventoryError(f"{source}: the dut host needs two interfaces (ingress, egress), has {len(dut.interfaces)}")
        if not dut.cores:
            raise InventoryError(f"{source}: the dut host needs cores = [<DuT core>, ...]")
        for r in ("loadgen", "timestamper"):
            h = next(x for x in hosts if x.role == r)
            if len(h.interfaces) < 2:
                raise InventoryError(f"{source}: the {r} host needs two interfaces, has {len(h.interfaces)}")
        opts = tb.get("ssh_options")
        return cls(name=str(tb.get("name", "testbed")), hosts=tuple(hosts), source=source,
                   ssh_options=tuple(opts) if opts is not None else cls.ssh_options)

    @classmethod
    def from_toml(cls, path: str | Path) -> "Inventory":
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
    """One command run on this machine, in order. kind: ssh | scp | rsync | local | wait."""

    kind: str
    argv: list[str]
    role: str = ""
    note: str = ""
    background: bool = False   # the remote command is started with nohup and left running
    check: bool = True
    seconds: float = 0.0       # kind == "wait": how long
    content: str = ""          # kind == "file": what is written to argv[0] on this machine

    @property
    def command_line(self) -> str:
        if self.kind == "wait":
            return f"sleep {self.seconds:g}"
        if self.kind == "file":
            return f"cat > {shlex.quote(self.argv[0])} <<'EOF'\n{self.content}EOF"
        return shlex.join(self.argv)


@dataclass
class Measurement:
    """One point of the experiment: what the paper varies, plus where things go."""

    run_id: str
    cgroup_mode: str = "v2"             # "v1" | "v2": the DuT's booted hierarchy (checked, not set)
    rate_mpps: float = 1.52
    frame_size: int = 64
    duration_s: int = 60
    repetition: int = 0
    perf_events: tuple[str, ...] = ("instructions", "branches", "cpu-migrations", "context-switches", "task-clock")
    container: str = "bb-dut"

    def rate_mbit(self) -> float:
        """l2-load-latency takes Mbit/s; MoonGen's rate counts the frame with its 4-byte CRC
        (size + 4 bytes), not preamble and gap. Recorded with the run."""
        return round(self.rate_mpps * (self.frame_size + 4) * 8, 3)


def _q(cmd: str | Sequence[str]) -> str:
    return cmd if isinstance(cmd, str) else shlex.join(list(cmd))


class SshBackend:
    """Backend "ssh": plan (and, unless dry_run, execute) measurements on inventory hosts."""

    name = "ssh"

    def __init__(self, inventory: Inventory | str | Path, dry_run: bool = True,
                 out=None) -> None:
        self.inventory = inventory if isinstance(inventory, Inventory) else Inventory.from_toml(inventory)
        self.dry_run = dry_run
        self.out = out or sys.stdout

    # --- command line builders --------------------------------------------------------
    def ssh(self, host: Host, cmd: str | Sequence[str], note: str = "", background: bool = False,
            check: bool = True) -> Step:
        remote = _q(cmd)
        argv = ["ssh", "-p", str(host.port), *self.inventory.ssh_options, host.target, remote]
        return Step("ssh", argv, role=host.role, note=note, background=background, check=check)

    def scp_to(self, host: Host, local: str, remote: str, note: str = "") -> Step:
        argv = ["scp", "-P", str(host.port), *self.inventory.ssh_options, local, f"{host.target}:{remote}"]
        return Step("scp", argv, role=host.role, note=note)

    def rsync_from(self, host: Host, remote_dir: str, local_dir: str, note: str = "") -> Step:
        ssh_cmd = shlex.join(["ssh", "-p", str(host.port), *self.inventory.ssh_options])
        argv = ["rsync", "-a", "--partial", "-e", ssh_cmd, f"{host.target}:{remote_dir.rstrip('/')}/",
                local_dir.rstrip("/") + "/"]
        return Step("rsync", argv, role=host.role, note=note)

    def container_config(self, m: Measurement) -> str:
        """The DuT container's LXC config: DPDK testpmd on the DuT NICs (PCI allow-list) as init,
        pinned to the DuT core; with cgroup v1 inside cset's shield ("user"), as in the paper."""
        from benchbook.tools.lxc import ContainerConfig

        dut = self.inventory.role("dut")
        core = dut.cores[0]
        argv = ["/usr/bin/dpdk-testpmd", "--lcores", f"0@{core},1@{core}", "--main-lcore", "0",
                "--file-prefix", m.container]
        for i in dut.interfaces:
            argv += ["-a", i.pci]
        argv += ["--", "--forward-mode=io", "--auto-start", "--nb-cores=1"]
        extra: dict[str, str] = {}
        if m.cgroup_mode == "v1":
            extra = {"lxc.cgroup.dir.container": f"user/{m.container}",
                     "lxc.cgroup.dir.monitor": f"system/{m.container}.monitor"}
        text = ContainerConfig(
            name=m.container, rootfs=f"dir:/var/lib/lxc/{m.container}/rootfs", init_cmd=argv, nics=(),
            cpus=str(core), mems="0", cgroup_mode=m.cgroup_mode,
            console_log=f"/var/lib/lxc/{m.container}/console.log", extra=extra,
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
        core = dut.cores[0]

        # 1. preflight: record what each host booted, check the DuT's hierarchy and boot parameters
        for h in (lg, dut, ts):
            steps.append(self.ssh(h, f"mkdir -p {rdir[h.role]} && uname -a > {rdir[h.role]}/uname.txt && "
                                     f"cat /proc/cmdline > {rdir[h.role]}/cmdline.txt && "
                                     f"lscpu > {rdir[h.role]}/lscpu.txt",
                                  note=f"{h.name}: record kernel, command line and CPU"))
        want = {"v1": "tmpfs", "v2": "cgroup2fs"}[m.cgroup_mode]
        steps.append(self.ssh(dut, f"test \"$(stat -fc %T /sys/fs/cgroup)\" = {want}",
                              note=f"DuT booted with cgroup {m.cgroup_mode} "
                                   f"(systemd.unified_cgroup_hierarchy={0 if m.cgroup_mode == 'v1' else 1}); "
                                   "a mismatch stops the run"))
        for p in dut.boot_parameters:
            steps.append(self.ssh(dut, f"grep -qw -- {shlex.quote(p)} /proc/cmdline",
                                  note=f"DuT boot parameter {p} present"))

        # 2. NICs to DPDK, hugepages
        for h in (lg, dut, ts):
            if h.hugepages:
                steps.append(self.ssh(h, f"echo {h.hugepages} > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages",
                                      note=f"{h.name}: reserve {h.hugepages} x 2 MiB hugepages"))
            pcis = [i.pci for i in h.interfaces]
            steps.append(self.ssh(h, ["dpdk-devbind.py", "-b", h.driver, *pcis],
                                  note=f"{h.name}: bind {', '.join(i.name for i in h.interfaces)} to {h.driver}"))

        # 3. DuT isolation (the paper's recipes) and the container
        hk = ",".join(map(str, dut.housekeeping_cores)) or "0"
        if m.cgroup_mode == "v1":
            steps.append(self.ssh(dut, f"cset shield --cpu={core} --kthread=on",
                                  note="cgroup v1: housekeeping cpuset, kernel threads moved off the DuT core (cset)"))
            steps.append(self.ssh(dut, "echo 0 > /sys/fs/cgroup/cpuset/user/cpuset.sched_load_balance",
                                  note="cgroup v1: no load balancing on the DuT set; read back below"))
            steps.append(self.ssh(dut, "cat /sys/fs/cgroup/cpuset/user/cpuset.sched_load_balance "
                                       f"> {rdir['dut']}/isolation.txt"))
        else:
            for unit in ("system.slice", "user.slice", "init.scope"):
                steps.append(self.ssh(dut, ["systemctl", "set-property", "--runtime", unit, f"AllowedCPUs={hk}"],
                                      note=f"cgroup v2: {unit} off the DuT core"))
        cfg_local = f"{run_dir}/setup/{m.container}.conf"
        steps.append(Step("file", [cfg_local], content=self.container_config(m),
                          note="the container's LXC config, kept in the run directory"))
        steps.append(self.ssh(dut, ["lxc-create", "-n", m.container, "-t", "debian", "--", "-r", "bookworm",
                                    "--packages=dpdk,dpdk-dev"],
                              note="container root fs: debootstrap of Debian bookworm with DPDK (testpmd)"))
        steps.append(self.scp_to(dut, cfg_local, f"/var/lib/lxc/{m.container}/config",
                                 note="the container config: testpmd as init, pinned to the DuT core"))
        steps.append(self.ssh(dut, ["lxc-start", "-n", m.container, "-d", "-o", f"{rdir['dut']}/lxc.log", "-l", "INFO"],
                              note="start the DuT container"))
        steps.append(self.ssh(dut, f"lxc-info -n {m.container} -pH > {rdir['dut']}/testpmd.pid && "
                                   f"cat /proc/$(cat {rdir['dut']}/testpmd.pid)/status | grep Cpus_allowed_list "
                                   f"> {rdir['dut']}/affinity.txt",
                              note="testpmd's host pid and affinity"))

        if m.cgroup_mode == "v2":
            steps.append(self.ssh(dut, f"echo {core} > /sys/fs/cgroup/lxc.payload.{m.container}/cpuset.cpus && "
                                       f"echo root > /sys/fs/cgroup/lxc.payload.{m.container}/cpuset.cpus.partition",
                                  note="cgroup v2: the container's cpuset becomes a partition root ",
                                  check=True))

        # 4. measurement: timestamper first, perf on the DuT, then the load
        from benchbook.tools.moongen import build_command

        tsp = [i.port for i in ts.interfaces[:2]]
        sniff = build_command("moonsniff-sniffer", {"devs": tsp, "output": f"{rdir['timestamper']}/ms",
                                                    "runtime": m.duration_s + 10, "capture": True})
        steps.append(self.ssh(ts, f"cd {ts.moongen_dir} && nohup {_q(sniff)} > {rdir['timestamper']}/sniffer.log "
                                  f"2>&1 & echo $! > {rdir['timestamper']}/sniffer.pid",
                              note="MoonSniff timestamper: pre- and post-DuT captures", background=True))
        steps.append(Step("wait", [], seconds=5, note="timestamper ready"))
        events = ",".join(m.perf_events)
        steps.append(self.ssh(dut, f"nohup perf stat -x, -e {events} -o {rdir['dut']}/perf.csv "
                                   f"-p $(cat {rdir['dut']}/testpmd.pid) -- sleep {m.duration_s + 2} "
                                   f"> {rdir['dut']}/perf.log 2>&1 &",
                              note="perf stat on testpmd for the measurement window", background=True))
        lgp = [i.port for i in lg.interfaces[:2]]
        load = build_command("l2-load-latency", {"dev1": lgp[0], "dev2": lgp[1], "rate": m.rate_mbit(),
                                                 "file": f"{rdir['loadgen']}/histogram.csv"})
        steps.append(self.ssh(lg, f"cd {lg.moongen_dir} && timeout {m.duration_s + 5} {_q(load)} "
                                  f"> {rdir['loadgen']}/moongen.log 2>&1; rc=$?; test $rc -eq 0 -o $rc -eq 124",
                              note=f"MoonGen load: {m.rate_mpps} Mpkt/s of {m.frame_size} B = {m.rate_mbit()} Mbit/s "
                                   f"(frame + CRC) for {m.duration_s} s"))
        steps.append(self.ssh(ts, f"kill -INT $(cat {rdir['timestamper']}/sniffer.pid) 2>/dev/null; "
                                  f"while kill -0 $(cat {rdir['timestamper']}/sniffer.pid) 2>/dev/null; do sleep 1; done; true",
                              note="stop the timestamper, wait for its files"))

        steps.append(self.ssh(dut, f"kill -INT $(cat {rdir['dut']}/testpmd.pid); sleep 2; "
                                   f"cp /var/lib/lxc/{m.container}/console.log {rdir['dut']}/testpmd-console.log",
                              note="testpmd prints its forward statistics (RX/TX/dropped per port)"))

        # 5. collect
        for h in (lg, dut, ts):
            steps.append(self.rsync_from(h, rdir[h.role], f"{run_dir}/raw/{h.role}",
                                         note=f"collect {h.name}'s raw data"))

        # 6. teardown (also run after a failure: every step here is check=False)
        tear = [self.ssh(dut, ["lxc-stop", "-n", m.container, "-k"], note="stop the container"),
                self.ssh(dut, ["lxc-destroy", "-n", m.container], note="remove the container")]
        if m.cgroup_mode == "v1":
            tear.append(self.ssh(dut, "cset shield --reset", note="undo the v1 shield"))
        else:
            tear += [self.ssh(dut, ["systemctl", "set-property", "--runtime", u, "AllowedCPUs="])
                     for u in ("system.slice", "user.slice", "init.scope")]
        for s in tear:
            s.check = False
            s.note = (s.note + " " if s.note else "") + "[teardown]"
        steps += tear
        return steps

    # --- dry run and execution --------------------------------------------------------
    def dry_run_lines(self, m: Measurement, run_dir: str | Path = "RUN_DIR") -> list[str]:
        return [s.command_line for s in self.plan(m, run_dir)]

    def print_plan(self, m: Measurement, run_dir: str | Path = "RUN_DIR") -> list[str]:
        lines = []
        for n, s in enumerate(self.plan(m, run_dir), 1):
            lines.append(f"# {n:02d} {s.role or 'local'}: {s.note}" if s.note else f"# {n:02d}")
            lines.append(s.command_line)
        print("\n".join(lines), file=self.out)
        return lines

    def execute(self, m: Measurement, run_dir: str | Path) -> dict[str, Any]:
        """Run the plan for real (never in dry-run mode); teardown steps always run."""
        if self.dry_run:
            raise RuntimeError("SshBackend is in dry-run mode: use print_plan(), or dry_run=False to execute")
        run_dir = Path(run_dir)
        (run_dir / "setup").mkdir(parents=True, exist_ok=True)
        logs = run_dir / "commands"
        logs.mkdir(exist_ok=True)
        steps = self.plan(m, run_dir)
        record: dict[str, Any] = {"inventory": self.inventory.source, "measurement": vars(m).copy(),
                                  "rate_mbit": m.rate_mbit(), "steps": []}
        failed: str | None = None
        for n, s in enumerate(steps, 1):
            teardown = "[teardown]" in s.note
            if failed and not teardown:
                continue
            entry = {"n": n, "role": s.role, "command": s.command_line, "note": s.note}
            t0 = time.monotonic()
            if s.kind == "wait":
                time.sleep(s.seconds)
                rc = 0
            elif s.kind == "file":
                Path(s.argv[0]).parent.mkdir(parents=True, exist_ok=True)
                Path(s.argv[0]).write_text(s.content)
                rc = 0
            else:
                if s.kind == "rsync":
                    Path(s.argv[-1]).mkdir(parents=True, exist_ok=True)
                with open(logs / f"{n:02d}.out", "w") as out, open(logs / f"{n:02d}.err", "w") as err:
                    rc = subprocess.run(s.argv, stdout=out, stderr=err).returncode
            entry.update(returncode=rc, seconds=round(time.monotonic() - t0, 3))
            record["steps"].append(entry)
            if rc != 0 and s.check and not failed:
                failed = f"step {n} ({s.command_line}) failed with exit {rc}; see {logs / f'{n:02d}.err'}"
        record["status"] = "failed" if failed else "complete"
        record["error"] = failed
        return record


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m benchbook.testbed.ssh INVENTORY [--mode v1|v2] [--rate MPPS] [--duration S]``: dry run."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m benchbook.testbed.ssh", description="print the ssh plan (dry run)")
    ap.add_argument("inventory")
    ap.add_argument("--mode", default="v2", choices=("v1", "v2"))
    ap.add_argument("--rate", type=float, default=1.52, help="Mpkt/s")
    ap.add_argument("--duration", type=int, default=60)
    ap.add_argument("--run-id", default="run-0")
    a = ap.parse_args(argv)
    SshBackend(a.inventory, dry_run=True).print_plan(
        Measurement(run_id=a.run_id, cgroup_mode=a.mode, rate_mpps=a.rate, duration_s=a.duration))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
