"""The ``ssh`` testbed backend: the cgroup v1/v2 LXC experiment on real hosts.

A host inventory (TOML, format in docs/testbed-inventory.md, example in examples/testbed.toml)
names the hosts of the three roles - loadgen (MoonGen), dut (an LXC container running DPDK
testpmd on the DuT's NICs) and timestamper (MoonSniff) - with addresses, users, interfaces,
PCI ids and cores (:mod:`benchbook.testbed.inventory`). `SshBackend.plan(measurement)` turns one
measurement into a `Plan`: an ordered list of steps (:mod:`benchbook.testbed.plan`), each a command
one host runs; the tool command lines in them (perf, dpdk-testpmd, lxc-*, MoonGen, tcpdump) come from
the builders in :mod:`benchbook.tools`, the DuT's cgroup isolation from the recipes of
:mod:`benchbook.testbed.isolation` that the local backend runs too. Each host is an
:class:`~benchbook.testbed.ssh_host.SshHost` (ssh/scp with the inventory's options). The dry run
lists the commands and touches nothing; `execute(plan, log)` runs them with the one plan executor,
every command in the one command log (``<run_dir>/raw/commands.jsonl``, outputs in ``raw/cmd/``), and
collects the remote raw data (pcaps, histogram CSVs, perf output, logs) into ``<run_dir>/raw/<role>/``.

Files the steps need on a remote host (the container's LXC config) are written locally into
``<run_dir>/setup/`` first and copied with scp, so the exact file is part of the run record.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import re
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchbook.errors import BenchbookError
from benchbook.testbed.inventory import Inventory
from benchbook.testbed.isolation import cset_shield, dut_cpuset, systemd_slices, v2_partition
from benchbook.testbed.plan import Measurement, Plan, PlanError, Step, StepEnv, execute
from benchbook.testbed.ssh_host import SshHost
from benchbook.tools import loadgen, lxc, moongen, perf, tcpdump, testpmd
from benchbook.tools.host import CommandLog
from benchbook.tools.loadgen import BINARY as LOCAL_BB_LOADGEN

__all__ = ["Measurement", "SshBackend", "Step", "collected_results", "shell_join"]

UDP_DPORT = 5678              # bb-loadgen's destination port; the captures keep only these frames


def shell_join(argv: Sequence[str]) -> str:
    """shlex.join, except that an argument that is exactly ``$(...)`` is left for the shell to
    expand (double-quoted), e.g. a pid read from a file on the remote host."""
    return " ".join(f'"{a}"' if re.fullmatch(r"\$\([^()'\"]*\)", a) else shlex.quote(a) for a in argv)


def _sh(script: str) -> list[str]:
    return ["sh", "-c", script]


def _whole_s(m: Measurement) -> int:
    """The sending time in whole seconds (MoonGen's and the remote timeouts' unit)."""
    return int(math.ceil(m.duration_s))


class SshBackend:
    """Backend "testbed" (alias "ssh"): plan (and, unless dry_run, execute) measurements on the
    inventory's hosts."""

    name = "testbed"

    def __init__(self, inventory: Inventory | str | Path | None = None, dry_run: bool = True, out: Any = None,
                 log: CommandLog | None = None, probe: bool = False) -> None:
        if inventory is None:
            raise ValueError("backend 'testbed' needs inventory=<host inventory TOML> (see docs/testbed-inventory.md)")
        self.inventory = inventory if isinstance(inventory, Inventory) else Inventory.from_toml(inventory)
        self.dry_run = dry_run
        self.probe_in_dry_run = probe   # a dry run asks the hosts what they have (read-only), as a real run does
        self.out = out or sys.stdout
        self.log = log or CommandLog()
        self.facts: dict[str, dict[str, str]] | None = None    # per role, what the host has (probe())
        self.substitutions: list[dict[str, str]] = []           # of the last plan

    def host(self, role: str) -> SshHost:
        return self.inventory.ssh_host(role, self.log)

    # --- tool command lines (from benchbook.tools) ------------------------------------
    def testpmd_argv(self, m: Measurement) -> list[str]:
        """testpmd as the container's init: the DuT NICs by PCI address, both lcores on the DuT core."""
        dut = self.inventory.role("dut")
        core = dut.cores[0]
        return testpmd.build_argv(pci=[i.pci for i in dut.interfaces], main_cpu=core, fwd_cpu=core,
                                  file_prefix=m.container, binary="/usr/bin/dpdk-testpmd", line_buffered=False)

    def perf_argv(self, m: Measurement, rdir: str, window_s: float | None = None) -> list[str]:
        return perf.build_argv(f"$(cat {rdir}/testpmd.pid)", window_s or _whole_s(m) + 2, events=m.perf_events,
                               repeats=1, output_path=f"{rdir}/perf.csv")

    def load_argv(self, m: Measurement, rdir: str) -> list[str]:
        lgp = [i.port for i in self.inventory.role("loadgen").interfaces[:2]]
        return moongen.build_command("l2-load-latency", {"dev1": lgp[0], "dev2": lgp[1], "rate": m.rate_mbit(),
                                                         "file": f"{rdir}/histogram.csv"})

    def timestamper_argvs(self, m: Measurement, rdir: str, kind: str | None = None) -> dict[str, list[str]]:
        """name -> argv of each timestamper process (MoonSniff, or one tcpdump per tap)."""
        ts = self.inventory.role("timestamper")
        kind = kind or m.timestamper
        if kind == "moonsniff":
            return {"sniffer": moongen.build_command("moonsniff-sniffer", {
                "devs": [i.port for i in ts.interfaces[:2]], "output": f"{rdir}/ms",
                "runtime": _whole_s(m) + 10, "capture": True})}
        if kind == "tcpdump":
            filt = f"udp dst port {UDP_DPORT}" if ts.kernel_interfaces else None
            return {side: tcpdump.build_argv(i.name, f"{rdir}/{side}.pcap", direction="in" if filt else None,
                                             bpf_filter=filt)
                    for side, i in zip(("pre", "post"), ts.interfaces[:2], strict=True)}
        raise ValueError(f"timestamper {kind!r}: expected 'moonsniff' or 'tcpdump'")

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

    # --- what each host has, and what runs there -------------------------------------
    def probe(self) -> dict[str, dict[str, str]]:
        """Per role, what the host has (one ssh command each, in the command log): MoonGen, dpdk-testpmd,
        tcpdump, perf, cset, systemctl, lxc-start, the cgroup file system and cpuset controllers, bb-loadgen."""
        facts: dict[str, dict[str, str]] = {}
        for h in self.inventory.hosts:
            bb = h.bb_loadgen or str(LOCAL_BB_LOADGEN)
            script = "; ".join([
                f"echo moongen=$(test -x {shlex.quote(h.moongen_dir)}/build/MoonGen && echo yes || echo no)",
                *[f"echo {k}=$(command -v {p} || true)" for k, p in (
                    ("testpmd", "dpdk-testpmd"), ("tcpdump", "tcpdump"), ("perf", "perf"), ("cset", "cset"),
                    ("systemctl", "systemctl"), ("lxc", "lxc-start"))],
                "echo cgroupfs=$(stat -fc %T /sys/fs/cgroup)",
                "echo v1cpuset=$(test -f /sys/fs/cgroup/cpuset/cpuset.cpus && echo yes || echo no)",
                "echo v2cpuset=$(grep -qw cpuset /sys/fs/cgroup/cgroup.controllers 2>/dev/null && echo yes || "
                "echo no)",
                f"echo bb_loadgen=$(test -x {shlex.quote(bb)} && echo {shlex.quote(bb)} || true)",
            ])
            r = self.host(h.role).run(_sh(script), check=False, timeout_s=60, what=f"probe {h.name}")
            if r.exit_code != 0:
                raise BenchbookError(f"{self.inventory.source}: cannot probe {h.name} ({h.target}) over ssh: exit "
                                     f"{r.exit_code}: {r.stderr.strip()[-300:]}")
            facts[h.role] = dict(line.split("=", 1) for line in r.stdout.splitlines() if "=" in line)
        self.facts = facts
        return facts

    def mode_status(self, modes: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Per isolation mode: can the DuT host run its recipe (probed over ssh)?"""
        f = (self.facts or self.probe())["dut"]
        out: dict[str, dict[str, Any]] = {}
        dut = self.inventory.role("dut")
        for mode in modes:
            if mode == "v1":
                ok = f.get("cgroupfs") == "tmpfs" and f.get("v1cpuset") == "yes"
                why = ("cgroup v1 cpuset hierarchy on the DuT host" if ok else
                       f"the DuT host {dut.name} has no cgroup v1 cpuset hierarchy (/sys/fs/cgroup is "
                       f"{f.get('cgroupfs')})")
            elif mode == "v2":
                ok = f.get("cgroupfs") == "cgroup2fs" and f.get("v2cpuset") == "yes"
                why = ("cpuset controller on the DuT host's cgroup2 hierarchy" if ok else
                       f"the DuT host {dut.name} booted {f.get('cgroupfs')} at /sys/fs/cgroup (hybrid or v1), "
                       "not cgroup2 with the cpuset controller: the v2 recipe cannot run there")
            else:
                ok, why = False, f"isolation mode {mode!r} is not part of the testbed experiment (v1, v2)"
            out[mode] = {"runnable": ok, "reason": why}
        return out

    def choices(self, m: Measurement) -> dict[str, Any]:
        """What runs on each host for this measurement, and every substitution of the paper's set-up (from the
        inventory and, once probed, what the hosts have; a dry run assumes what the inventory declares)."""
        inv, f = self.inventory, self.facts or {}
        lg, dut, ts = inv.role("loadgen"), inv.role("dut"), inv.role("timestamper")
        subs: list[dict[str, str]] = []
        c: dict[str, Any] = {"substitutions": subs}
        lgf = f.get("loadgen", {})
        if not lg.kernel_interfaces and lgf.get("moongen", "yes") == "yes":
            c["loadgen"] = "moongen"
        else:
            if not lg.kernel_interfaces:
                raise BenchbookError(f"{inv.source}: the loadgen {lg.name} has DPDK NICs (PCI ids) but no MoonGen "
                                     f"at {lg.moongen_dir}/build/MoonGen; bb-loadgen needs kernel interfaces")
            c["loadgen"] = "bb-loadgen"
            found = lgf.get("bb_loadgen", "")
            c["bb_loadgen"] = found or f"{lg.workdir}/bin/bb-loadgen"
            c["bb_loadgen_copy"] = "" if found else str(LOCAL_BB_LOADGEN)
            how = (f"found on the host at {found}" + (" (this machine's build, shared file system)"
                                                      if found == str(LOCAL_BB_LOADGEN) else "")
                   if found else f"this machine's {LOCAL_BB_LOADGEN} copied with scp to {c['bb_loadgen']}")
            why = "the loadgen has kernel interfaces" if lgf.get("moongen", "no") == "yes" else \
                f"no MoonGen at {lg.moongen_dir}/build/MoonGen"
            subs.append({"role": "loadgen", "paper": "MoonGen l2-load-latency.lua on DPDK ports",
                         "here": f"bb-loadgen (AF_PACKET, constant rate) on {lg.interfaces[0].name}; binary {how}",
                         "reason": why})
        if dut.kernel_interfaces:
            c["dut"] = "testpmd-af-packet"
            subs.append({"role": "dut", "paper": "DPDK testpmd in an LXC container on vfio-pci NICs",
                         "here": f"dpdk-testpmd (net_af_packet on {', '.join(i.name for i in dut.interfaces)}, "
                                 f"--no-huge) in a cgroup {m.cgroup_mode} cpuset on core {dut.cores[0]}",
                         "reason": "the DuT's inventory interfaces have no PCI ids (kernel interfaces)"})
        else:
            c["dut"] = "lxc-testpmd"
        dutf = f.get("dut", {})
        if m.cgroup_mode == "v1":
            c["isolation"] = "cset" if dutf.get("cset", "cset") else "cpuset"
            if c["isolation"] == "cpuset":
                subs.append({"role": "dut", "paper": "cset shield --kthread=on (every task moved off the DuT core)",
                             "here": "a cpuset cgroup for the DuT alone (DuT core, sched_load_balance=0; "
                                     "benchbook.testbed.isolation.dut_cpuset); other tasks of the host are not moved",
                             "reason": "no cset on the DuT host"})
        else:
            c["isolation"] = "systemd" if dutf.get("systemctl", "systemctl") else "cgroup"
        if ts.kernel_interfaces or m.timestamper == "tcpdump":
            c["timestamper"] = "tcpdump"
            subs.append({"role": "timestamper", "paper": "MoonSniff hardware timestamps on optical taps",
                         "here": f"tcpdump nanosecond software timestamps on {ts.interfaces[0].name} (pre) and "
                                 f"{ts.interfaces[1].name} (post)",
                         "reason": "kernel interfaces on the timestamper" if ts.kernel_interfaces
                         else "Measurement(timestamper='tcpdump')"})
        else:
            c["timestamper"] = "moonsniff"
        return c

    def capability_lines(self, m: Measurement | None = None) -> list[dict[str, str]]:
        """The substitutions (for ``m``, else of the last plan) as capability lines (capability, status, detail)."""
        subs = self.choices(m)["substitutions"] if m is not None else self.substitutions
        return [{"capability": f"{s['role']}: {s['paper']}", "status": "substituted",
                 "detail": f"{s['here']} ({s['reason']})"} for s in subs]

    # --- the plan -----------------------------------------------------------------------
    def plan(self, m: Measurement) -> Plan:
        """Every command of one measurement, in order (setup, measure, collect, teardown); ``m.run_dir`` is where
        its files go on this machine. A real run (and a dry run with probe=True) asks the hosts first."""
        if self.facts is None and (not self.dry_run or self.probe_in_dry_run):
            self.probe()
        inv = self.inventory
        lg, dut, ts = inv.role("loadgen"), inv.role("dut"), inv.role("timestamper")
        ch = self.choices(m)
        self.substitutions = ch["substitutions"]
        run_dir = str(m.run_dir)
        dur = _whole_s(m)
        steps: list[Step] = []
        rdir = {h.role: f"{h.workdir}/{m.run_id}" for h in (lg, dut, ts)}
        d = rdir["dut"]
        core = dut.cores[0]
        tok = m.run_token
        cg_name = f"bbssh-{tok}-dut"      # not bb-<token>: this machine's sweep must not take it (shared kernels)

        def run(role: str, argv: list[str], note: str = "", check: bool = True) -> None:
            steps.append(Step("run", role, argv, note=note, check=check))

        def wait_for(role: str, path: str, text: str, what: str, timeout_s: int = 20) -> None:
            run(role, _sh(f"i=0; until grep -q {shlex.quote(text)} {path} 2>/dev/null; do i=$((i+1)); "
                          f"test $i -le {timeout_s * 10} || {{ tail -5 {path}; exit 1; }}; sleep 0.1; done"),
                note=f"{what} ready ({text!r} in {path.rsplit('/', 1)[-1]})")

        def stop(role: str, pidfiles: list[str], what: str, timeout_s: int = 20) -> None:
            run(role, _sh(f"p=$(cat {' '.join(pidfiles)}); kill -INT $p 2>/dev/null; i=0; while kill -0 $p 2>/dev/null;"
                          f" do i=$((i+1)); test $i -le {timeout_s * 10} || {{ kill -KILL $p; exit 1; }}; sleep 0.1; "
                          f"done"), note=f"stop {what}, wait for its files")

        # 1. preflight: record what each host booted, check the DuT's hierarchy and boot parameters
        for h in (lg, dut, ts):
            r = rdir[h.role]
            run(h.role, _sh(f"mkdir -p {r} && uname -a > {r}/uname.txt && cat /proc/cmdline > {r}/cmdline.txt && "
                            f"lscpu > {r}/lscpu.txt"), note=f"{h.name}: record kernel, command line and CPU")
        steps.append(Step("file", local=f"{run_dir}/setup/choices.json", content=json.dumps(
            {k: v for k, v in ch.items()}, indent=1) + "\n", note="what runs on each host, substitutions"))
        want = {"v1": "tmpfs", "v2": "cgroup2fs"}[m.cgroup_mode]
        run("dut", _sh(f"test \"$(stat -fc %T /sys/fs/cgroup)\" = {want}"),
            note=f"DuT booted with cgroup {m.cgroup_mode} (systemd.unified_cgroup_hierarchy="
                 f"{0 if m.cgroup_mode == 'v1' else 1}); a mismatch stops the run")
        for p in dut.boot_parameters:
            run("dut", ["grep", "-qw", "--", p, "/proc/cmdline"], note=f"DuT boot parameter {p} present")

        # 2. NICs to DPDK (hosts with PCI ids only; not the timestamper's when tcpdump timestamps), hugepages
        for h in (lg, dut, ts):
            if h.hugepages:
                run(h.role, _sh(f"echo {h.hugepages} > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"),
                    note=f"{h.name}: reserve {h.hugepages} x 2 MiB hugepages")
            if h.kernel_interfaces or (h.role == "timestamper" and ch["timestamper"] == "tcpdump"):
                continue
            run(h.role, ["dpdk-devbind.py", "-b", h.driver, *[i.pci for i in h.interfaces]],
                note=f"{h.name}: bind {', '.join(i.name for i in h.interfaces)} to {h.driver}")
        if ch["loadgen"] == "bb-loadgen" and ch["bb_loadgen_copy"]:
            run("loadgen", ["mkdir", "-p", ch["bb_loadgen"].rsplit("/", 1)[0]], note="directory for bb-loadgen")
            steps.append(Step("put", "loadgen", local=ch["bb_loadgen_copy"], remote=ch["bb_loadgen"],
                              note="bb-loadgen from this machine (no MoonGen on the loadgen)"))

        # 3. DuT isolation (the recipes of benchbook.testbed.isolation) and the DuT
        hk = ",".join(map(str, dut.housekeeping_cores)) or "0"
        cg_dir = ""
        iso: list[Step] = []
        iso_tear: list[Step] = []
        if m.cgroup_mode == "v1":
            if ch["isolation"] == "cset":
                iso, iso_tear = cset_shield("dut", core, readback_to=f"{d}/isolation.txt")
                cg_dir = "/sys/fs/cgroup/cpuset/user"
            else:
                cg_dir = f"/sys/fs/cgroup/cpuset/{cg_name}"
                iso, iso_tear = dut_cpuset("dut", cg_dir, str(core), "/sys/fs/cgroup/cpuset", load_balance=False,
                                           readback_to=f"{d}/isolation.txt",
                                           note=f"cgroup v1: the DuT's cpuset {cg_name} on core {core}")
        else:
            if ch["isolation"] == "systemd":
                iso, iso_tear = systemd_slices("dut", hk, ("system.slice", "user.slice", "init.scope"))
            if ch["dut"] == "testpmd-af-packet":
                cg_dir = f"/sys/fs/cgroup/{cg_name}"
                part, part_tear = v2_partition("dut", cg_dir, str(core), root="/sys/fs/cgroup",
                                               readback_to=f"{d}/isolation.txt")
                iso, iso_tear = iso + part, part_tear + iso_tear
        steps += iso
        if ch["dut"] == "lxc-testpmd":
            self._plan_lxc_dut(m, run_dir, steps, d, core)
        else:
            argv = testpmd.build_argv([i.name for i in dut.interfaces], main_cpu=core, fwd_cpu=core,
                                      file_prefix=cg_name, line_buffered=True) + ["--stats-period", "3600"]
            inner = f"echo $$ > {cg_dir}/cgroup.procs && exec {shell_join(argv)}"
            run("dut", _sh(f"nohup sh -c {shlex.quote(inner)} > {d}/testpmd.log 2>&1 < /dev/null & "
                           f"echo $! > {d}/testpmd.pid"),
                note=f"dpdk-testpmd (net_af_packet) on the DuT core, in {cg_dir}")
            wait_for("dut", f"{d}/testpmd.log", "packet forwarding - ports=", "testpmd")
            run("dut", _sh(f"grep Cpus_allowed_list /proc/$(cat {d}/testpmd.pid)/status > {d}/affinity.txt && "
                           f"cat /proc/$(cat {d}/testpmd.pid)/cgroup > {d}/testpmd-cgroup.txt"),
                note="testpmd's affinity and cgroups")

        # 4. measurement: timestamper first, perf on the DuT, then the load
        t = rdir["timestamper"]
        for name, argv in self.timestamper_argvs(m, t, ch["timestamper"]).items():
            cd = f"cd {ts.moongen_dir} && " if ch["timestamper"] == "moonsniff" else ""
            run("timestamper", _sh(f"{cd}nohup {shell_join(argv)} > {t}/{name}.log 2>&1 < /dev/null & "
                                   f"echo $! > {t}/{name}.pid"),
                note=f"timestamper ({ch['timestamper']}): {name}")
            if ch["timestamper"] == "tcpdump":
                wait_for("timestamper", f"{t}/{name}.log", "listening on", f"tcpdump {name}")
        if ch["timestamper"] == "moonsniff":
            steps.append(Step("wait", seconds=5, note="timestamper ready"))
        perf_window_s = dur + (2 if ch["dut"] == "lxc-testpmd" else 1)
        run("dut", _sh(f"nohup {shell_join(self.perf_argv(m, d, perf_window_s))} > {d}/perf.log 2>&1 < /dev/null & "
                       f"echo $! > {d}/perf.pid"),
            note="perf stat on testpmd for the measurement window")
        lr = rdir["loadgen"]
        if ch["loadgen"] == "moongen":
            run("loadgen", _sh(f"cd {lg.moongen_dir} && timeout {dur + 5} "
                               f"{shell_join(self.load_argv(m, lr))} > {lr}/moongen.log 2>&1; rc=$?; "
                               f"test $rc -eq 0 -o $rc -eq 124"),
                note=f"MoonGen load: {m.rate_pps:g} pkt/s of {m.frame_size} B = {m.rate_mbit()} Mbit/s "
                     f"(frame + CRC) for {dur} s")
        else:
            cfg = loadgen.LoadgenConfig(iface=lg.interfaces[0].name, rate_pps=m.rate_pps, duration_s=dur,
                                        frame_size=m.frame_size, dport=UDP_DPORT,
                                        cpu=lg.cores[0] if lg.cores else None)
            run("loadgen", _sh(f"timeout {dur + 30} {shell_join(loadgen.build_argv(cfg, ch['bb_loadgen']))}"
                               f" > {lr}/loadgen.json 2> {lr}/loadgen.log & echo $! > {lr}/loadgen.pid; wait $!"),
                note=f"bb-loadgen: {m.rate_pps:g} pkt/s of {m.frame_size} B for {dur} s")
            steps.append(Step("wait", seconds=0.5, note="the last packets reach the timestamper"))
        names = list(self.timestamper_argvs(m, t, ch["timestamper"]))
        stop("timestamper", [f"{t}/{name}.pid" for name in names], f"the timestamper's {' and '.join(names)}")
        run("dut", _sh(f"p=$(cat {d}/perf.pid); i=0; while kill -0 $p 2>/dev/null; do i=$((i+1)); "
                       f"test $i -le {perf_window_s * 10 + 50} || exit 1; sleep 0.1; done"),
            note="perf stat has written its counters")
        if ch["dut"] == "lxc-testpmd":
            run("dut", _sh(f"kill -INT $(cat {d}/testpmd.pid); sleep 2; "
                           f"cp {lxc.LXC_PATH}/{m.container}/console.log {d}/testpmd-console.log"),
                note="testpmd prints its forward statistics (RX/TX/dropped per port)")
        else:
            stop("dut", [f"{d}/testpmd.pid"], "testpmd (it prints its forward statistics)")

        # 5. collect (also after a failed step, from every host that answers)
        for h in (lg, dut, ts):
            steps.append(Step("fetch", h.role, remote=rdir[h.role], local=f"{run_dir}/raw/{h.role}",
                              note=f"collect {h.name}'s raw data", check=False, always=True))

        # 6. teardown (also run after a failure: every step here is check=False)
        tear: list[Step] = []
        if ch["dut"] == "lxc-testpmd":
            tear += [Step("run", "dut", lxc.stop_argv(m.container, kill=True), note="stop the container"),
                     Step("run", "dut", lxc.destroy_argv(m.container), note="remove the container")]
        else:
            tear.append(Step("run", "dut", _sh(f"kill -KILL $(cat {d}/testpmd.pid {d}/perf.pid 2>/dev/null) "
                                               f"2>/dev/null; rm -rf /var/run/dpdk/{cg_name}; true"),
                             note="testpmd and perf gone, DPDK runtime directory removed"))
        if ch["timestamper"] == "tcpdump":
            tear.append(Step("run", "timestamper", _sh(f"kill -KILL $(cat {t}/*.pid 2>/dev/null) 2>/dev/null; true"),
                             note="no capture left running"))
        if ch["loadgen"] == "bb-loadgen":
            tear.append(Step("run", "loadgen", _sh(f"kill -TERM $(cat {lr}/loadgen.pid 2>/dev/null) 2>/dev/null; true"),
                             note="no bb-loadgen left running"))
        tear += iso_tear
        for s in tear:
            s.check, s.teardown = False, True
        return Plan("testbed", m, steps + tear, facts={k: v for k, v in ch.items()})

    def _plan_lxc_dut(self, m: Measurement, run_dir: str, steps: list[Step], d: str, core: int) -> None:
        """The paper's DuT: testpmd on the vfio-pci NICs as the init of an LXC container."""
        def run(argv: list[str], note: str = "") -> None:
            steps.append(Step("run", "dut", argv, note=note))

        cfg_local = f"{run_dir}/setup/{m.container}.conf"
        steps.append(Step("file", local=cfg_local, content=self.container_config(m),
                          note="the container's LXC config, kept in the run directory"))
        run(lxc.create_argv(m.container, template="debian",
                            template_args=["-r", "bookworm", "--packages=dpdk,dpdk-dev"]),
            note="container root fs: debootstrap of Debian bookworm with DPDK (testpmd)")
        steps.append(Step("put", "dut", local=cfg_local, remote=f"{lxc.LXC_PATH}/{m.container}/config",
                          note="the container config: testpmd as init, pinned to the DuT core"))
        run(lxc.start_argv(m.container, logfile=f"{d}/lxc.log"), note="start the DuT container")
        run(_sh(f"{shell_join(lxc.info_argv(m.container, pid_only=True))} > {d}/testpmd.pid && "
                f"grep Cpus_allowed_list /proc/$(cat {d}/testpmd.pid)/status > {d}/affinity.txt"),
            note="testpmd's host pid and affinity")
        if m.cgroup_mode == "v2":
            steps += v2_partition("dut", f"/sys/fs/cgroup/lxc.payload.{m.container}", str(core), create=False)[0]

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

    def _plan_at(self, m: Measurement, run_dir: str | Path | None) -> Plan:
        return self.plan(m if run_dir is None else dataclasses.replace(m, run_dir=str(run_dir)))

    def dry_run_lines(self, m: Measurement, run_dir: str | Path | None = None) -> list[str]:
        return [self.command_line(s) for s in self._plan_at(m, run_dir)]

    def render(self, plan: Plan) -> dict[str, list[str]]:
        """Per role, what that host runs (its shell's command lines), in order; "local": this machine (scp, the
        files the plan writes, waits as comments)."""
        out: dict[str, list[str]] = {"loadgen": [], "dut": [], "timestamper": [], "local": []}
        for s in plan.steps:
            if s.kind == "run":
                out[s.role].append(s.remote_line)
            elif s.kind in ("put", "fetch", "file"):
                out["local"].append(self.command_line(s))
            else:
                out[s.role or "local"].append(s.comment())
        return out

    def host_commands(self, m: Measurement, run_dir: str | Path | None = None) -> dict[str, list[str]]:
        """Per role, what that host runs for ``m`` (see render), without the comments."""
        return {role: [c for c in lines if not c.startswith("#")]
                for role, lines in self.render(self._plan_at(m, run_dir)).items()}

    def print_plan(self, m: Measurement, run_dir: str | Path | None = None) -> list[str]:
        lines = []
        for n, s in enumerate(self._plan_at(m, run_dir), 1):
            note = s.note + (" [teardown]" if s.teardown else "")
            lines.append(f"# {n:02d} {s.role or 'local'}: {note}" if note else f"# {n:02d}")
            lines.append(self.command_line(s))
        print("\n".join(lines), file=self.out)
        return lines

    def execute(self, plan: Plan, log: CommandLog) -> dict[str, Any]:
        """Run the plan for real (never in dry-run mode), every command into ``log``. After a failed step the
        rest of the measurement is skipped, the collection steps still fetch what each reachable host has,
        and the teardown steps always run; the raw data are collected into ``<run_dir>/raw/<role>/``."""
        if self.dry_run:
            raise RuntimeError("SshBackend is in dry-run mode: use print_plan(), or dry_run=False to execute")
        m = plan.measurement
        if not m.token:
            raise PlanError("a plan to execute needs its run token (Measurement.token); a dry run's has none")
        run_dir = Path(m.run_dir)
        (run_dir / "setup").mkdir(parents=True, exist_ok=True)
        record: dict[str, Any] = {"backend": "testbed", "inventory": self.inventory.source,
                                  "measurement": vars(m).copy(), "rate_mbit": m.rate_mbit(),
                                  "command_log": str(log.directory)}
        if plan.facts:
            record["choices"] = {k: v for k, v in plan.facts.items() if k != "substitutions"}
            record["substitutions"] = list(plan.facts.get("substitutions", []))
            record["facts"] = self.facts
        execution = execute(plan.steps, _Hosts(self.inventory, log), max(60.0, 3.0 * _whole_s(m) + 60.0),
                            describe=lambda s, argv: self.command_line(dataclasses.replace(s, argv=argv)))
        record.update(execution.record())
        record["results"] = collected_results(run_dir)
        return record

    def leftovers(self, tokens: set[str]) -> None:
        """Not checked from here: the hosts' teardown steps remove what the plan created."""
        return None


class _Hosts(StepEnv):
    """The inventory's hosts, every command into one log."""

    def __init__(self, inventory: Inventory, log: CommandLog) -> None:
        self.inventory = inventory
        self.log = log

    def host(self, role: str) -> SshHost:
        return self.inventory.ssh_host(role, self.log)


def collected_results(run_dir: Path) -> dict[str, Any]:
    """What the collected raw data say (bb-loadgen's report, tcpdump's counts, testpmd's forward statistics),
    read from ``<run_dir>/raw/<role>/``; a file that was not collected is absent from the result."""
    raw = Path(run_dir) / "raw"
    out: dict[str, Any] = {}
    rep = raw / "loadgen" / "loadgen.json"
    if rep.is_file() and rep.stat().st_size:
        try:
            out["loadgen"] = loadgen.parse_report(rep.read_text(), source=str(rep))
        except loadgen.LoadgenError as exc:
            out["loadgen_error"] = str(exc)
    ts = raw / "timestamper"
    caps = {side: tcpdump.parse_stats((ts / f"{side}.log").read_text()) for side in ("pre", "post")
            if (ts / f"{side}.log").is_file()}
    if caps:
        out["captures"] = caps
    if (ts / "pre.pcap").is_file() and (ts / "post.pcap").is_file():
        out["capture_dir"] = str(ts)
    log = raw / "dut" / "testpmd.log"
    if log.is_file():
        out["dut_stats"] = testpmd.parse_forward_stats(log.read_text())
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m benchbook.testbed.ssh INVENTORY [--mode v1|v2] [--rate-pps PPS] [--duration S]``: dry run."""
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
