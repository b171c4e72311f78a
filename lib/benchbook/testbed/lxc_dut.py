"""DuT kind ``testpmd-lxc``: dpdk-testpmd as the init process of an LXC container.

The DuT is a single LXC container with direct access to the ingress and egress interfaces,
running a DPDK L2 forwarder. Here:

- the container's root file system is a debootstrap tree (minbase + Debian's dpdk) built once and
  cached (:mod:`benchbook.testbed.rootfs`), mounted as the read-only lower layer of an overlay so
  runs never change it (sharing the host's root fs fails on this kind of machine);
- the DuT's two veth ends are moved into the container (``lxc.net.N.type = phys``);
- testpmd (``--no-huge --no-pci``, two ``net_af_packet`` vdevs, io forwarding, both lcores on the
  DuT core) is the container's init, so its host pid is the container's init pid (``perf stat -p``);
- the container is pinned to the DuT core with ``lxc.cgroup.cpuset.cpus`` (cgroup v1) or
  ``lxc.cgroup2.cpuset.cpus`` (cgroup v2; refused with the reason where the v2 cpuset controller
  is not available, as on hybrid hosts), and placed inside the isolation recipe's DuT cgroup when
  one is given (``lxc.cgroup.dir.container``), so the v1 recipe's exclusive cpuset holds it.

LXC's monitor listens on an abstract unix socket, which is per network namespace, and
``ip netns exec`` hides /sys/fs/cgroup; so every lxc-* command runs in the host's namespaces and
the veth ends are moved from the DuT namespace to the host just for ``lxc-start`` (LXC moves
them into the container, and back to the host on stop; we then return them to the DuT
namespace, up and promiscuous as before).

Stopping: SIGINT to testpmd makes it print its forward statistics ("Bye..."); as a pid
namespace's init it then keeps waiting on its console, so the container is killed after the
statistics are in the console log. The container is always stopped and destroyed, also when
starting fails half-way, on Ctrl-C and on SIGTERM; :mod:`benchbook.testbed.cleanup` removes
leftovers of killed runs (container processes found through LXC's cgroups, then lxc-destroy).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from benchbook.testbed.capabilities import NotRunnable, probe_cgroup_v2_cpuset
from benchbook.testbed.cleanup import container_pids, lxc_cgroup_dirs, monitor_pids, remove_container_cgroups
from benchbook.testbed.dut import DutPlan, RunningDuT
from benchbook.testbed.isolation import IsolationInfo
from benchbook.testbed.names import make_name, new_token
from benchbook.testbed.plan import Execution, Step
from benchbook.testbed.procinfo import cpus_allowed
from benchbook.testbed.rootfs import RootfsRecipe, ensure_rootfs, rootfs_info
from benchbook.testbed.rootfs_recipes import TESTPMD_ROOTFS
from benchbook.tools import cgroups as cg
from benchbook.tools import lxc as lxctool
from benchbook.tools import testpmd
from benchbook.tools.host import CommandResult, LocalHost
from benchbook.tools.lxc import PREFIX, ContainerConfig, Lxc, LxcError, PhysNic

KIND = "testpmd-lxc"
TESTPMD_IN_ROOTFS = "/usr/bin/dpdk-testpmd"
READY_MARK = "Press enter to exit"
BYE_MARK = "Bye..."


def testpmd_argv(ifaces: Sequence[str], cpu: int, file_prefix: str, mem_mb: int = 128,
                 nb_mbufs: int = 8192, burst: int = 32) -> list[str]:
    """testpmd's command line inside the container (no stdbuf: the console is a tty)."""
    return testpmd.build_argv(list(ifaces), main_cpu=cpu, fwd_cpu=cpu, file_prefix=file_prefix, mem_mb=mem_mb,
                              nb_mbufs=nb_mbufs, burst=burst, binary=TESTPMD_IN_ROOTFS, line_buffered=False)


def _ip(host: LocalHost, args: Sequence[str], netns: str | None = None, check: bool = True) -> CommandResult:
    argv = ["ip", *(["-n", netns] if netns else []), *args]
    r = host.run(argv, check=False)
    if check and r.exit_code != 0:
        raise LxcError(f"{' '.join(argv)} failed (exit {r.exit_code}): {r.stderr.strip()}")
    return r


def _proc_cgroups(pid: int) -> dict[str, str]:
    out: dict[str, str] = {}
    try:
        for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
            _, ctrl, path = line.split(":", 2)
            out[ctrl or "unified"] = path
    except (OSError, ValueError):
        pass
    return out


class LxcTestpmdDut:
    """dpdk-testpmd in an LXC container; a context manager that always tears the container down.

    interfaces: the DuT's ingress and egress interface names (in `netns`, or in the host
    namespace when netns is None). cpu: the DuT core. cgroup_mode: "v1" or "v2" (which LXC
    cgroup keys pin the container). parent_cgroup: a cgroup path relative to the hierarchy
    roots (e.g. the isolation recipe's "bb-<token>-dut") under which the container's cgroup is
    created; monitor_cgroup likewise for LXC's monitor process.
    """

    kind = KIND

    def __init__(self, interfaces: Sequence[str], *, cpu: int, cgroup_mode: str = "v1",
                 netns: str | None = None, name: str | None = None, token: str | None = None,
                 parent_cgroup: str | None = None, monitor_cgroup: str | None = None,
                 rootfs: RootfsRecipe = TESTPMD_ROOTFS, mem_mb: int = 128, nb_mbufs: int = 8192,
                 burst: int = 32, ready_timeout_s: float = 30.0, host: LocalHost | None = None) -> None:
        if len(interfaces) != 2:
            raise ValueError(f"testpmd-lxc forwards between two interfaces, got {list(interfaces)}")
        if cgroup_mode not in ("v1", "v2"):
            raise ValueError(f"cgroup_mode must be 'v1' or 'v2', not {cgroup_mode!r}")
        self.interfaces = list(interfaces)
        self.cpu = int(cpu)
        self.cgroup_mode = cgroup_mode
        self.netns = netns
        self.token = token or new_token()
        self.name = name or make_name(self.token, "lxc")
        if not self.name.startswith(PREFIX):
            raise ValueError(f"container name {self.name!r} must start with {PREFIX!r}")
        self.parent_cgroup = parent_cgroup.strip("/") if parent_cgroup else None
        self.monitor_cgroup = monitor_cgroup.strip("/") if monitor_cgroup else None
        self.rootfs_recipe = rootfs
        self.argv = testpmd_argv(self.interfaces, self.cpu, self.name, mem_mb, nb_mbufs, burst)
        self.ready_timeout_s = ready_timeout_s
        self.host = host or LocalHost(name="dut")
        self.lxc = Lxc(host=self.host)
        self._log_start = len(self.host.log.records)
        self.dir = self.lxc.lxcpath / self.name
        self.console_log = self.dir / "console.log"
        self.lxc_log = self.dir / "lxc.log"
        self.pid: int | None = None
        self.stats: dict[str, Any] = {}
        self.config_text = ""
        self.steps: list[str] = []  # what was done, in order (for the run record)
        self._created = False
        self._moved_to_host: list[str] = []
        self._cgroups_before: set[Path] = set()
        self._console_tail = ""
        self._old_term: Any = None

    # --- description --------------------------------------------------------------------
    @property
    def description(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "kind": KIND, "container": self.name, "cpu": self.cpu, "cgroup_mode": self.cgroup_mode,
            "testpmd_argv": self.argv, "forward_mode": "io", "ports": self.interfaces,
            "netns": self.netns, "parent_cgroup": self.parent_cgroup,
            "rootfs": str(self.rootfs_recipe.path()), "rootfs_build": rootfs_info(self.rootfs_recipe),
            "lxc_version": lxctool.lxc_version(), "config": self.config_text,
        }
        if self.pid is not None:
            d["pid"] = self.pid
            d["cpus_allowed"] = cpus_allowed(self.pid)
            d["cgroups"] = _proc_cgroups(self.pid)
        return d

    def record(self) -> dict[str, Any]:
        """Everything for the run record: description, commands with their outputs, statistics."""
        return {**self.description, "steps": self.steps,
                "commands": [r.as_dict() for r in self.host.log.since(self._log_start)],
                "stats": self.stats, "console_tail": self._console_tail}

    # --- life cycle ---------------------------------------------------------------------
    def __enter__(self) -> LxcTestpmdDut:
        self._guard_signals()
        try:
            self._start()
        except BaseException:
            self._teardown()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._teardown()

    def _guard_signals(self) -> None:
        if threading.current_thread() is threading.main_thread():
            def _raise(signum: int, frame: object) -> None:
                raise KeyboardInterrupt(f"received signal {signal.Signals(signum).name}")

            self._old_term = signal.signal(signal.SIGTERM, _raise)

    def _check_runnable(self) -> None:
        ok, why = lxctool.lxc_capability()
        if not ok:
            raise NotRunnable(why)
        if self.cgroup_mode == "v2":
            cap = probe_cgroup_v2_cpuset()
            if not cap.ok:
                raise NotRunnable(f"testpmd-lxc with cgroup v2: {cap.detail}; the v2 arm "
                                  "(lxc.cgroup2.cpuset.cpus) cannot run on this host")
        elif cg.v1_hierarchy("cpuset") is None:
            raise NotRunnable("testpmd-lxc with cgroup v1: no cgroup v1 cpuset hierarchy is mounted")
        if self.lxc.list() and self.name in self.lxc.list():
            raise LxcError(f"container {self.name} already exists (run `sweep` or pick another name)")

    def _start(self) -> None:
        self._check_runnable()
        tree = ensure_rootfs(self.rootfs_recipe)
        self.steps.append(f"root file system {tree}")
        self._cgroups_before = set(lxc_cgroup_dirs(self.name, self.parent_cgroup, self.monitor_cgroup))
        cfg = ContainerConfig(
            name=self.name,
            rootfs=f"overlay:{tree}:{self.dir / 'delta0'}",
            init_cmd=self.argv,
            nics=[PhysNic(i) for i in self.interfaces],
            cpus=str(self.cpu),
            mems=_mems(),
            cgroup_mode=self.cgroup_mode,
            console_log=str(self.console_log),
            extra=self._extra_config(),
        )
        self.config_text = cfg.render()
        # lxc-create checks the rootfs path exists and does not understand overlay specs: create
        # the container on the plain tree, then write the full config (overlay rootfs) over it.
        create_cfg = self.lxc.lxcpath / f".{self.name}.create.conf"
        self.lxc.lxcpath.mkdir(parents=True, exist_ok=True)
        create_cfg.write_text(f"lxc.rootfs.path = dir:{tree}\nlxc.uts.name = {self.name}\n")
        try:
            self._created = True
            self.lxc.create(self.name, create_cfg)
        finally:
            create_cfg.unlink(missing_ok=True)
        (self.dir / "delta0").mkdir(exist_ok=True)
        (self.dir / "config").write_text(self.config_text)
        self.steps.append(f"lxc-create {self.name}; config written to {self.dir / 'config'}")

        for iface in self.interfaces:  # promiscuous (net_af_packet on veth needs it), then to the host
            _ip(self.host, ["link", "set", iface, "promisc", "on"], self.netns)
            if self.netns:
                _ip(self.host, ["link", "set", iface, "netns", "1"], self.netns)
                self._moved_to_host.append(iface)
        if self.netns:
            self.steps.append(f"moved {', '.join(self.interfaces)} from netns {self.netns} to the host for lxc-start")

        self.lxc.start(self.name, logfile=self.lxc_log)
        self.steps.append(f"lxc-start {self.name}")
        info = self.lxc.info(self.name)
        if info.get("state") != "RUNNING" or not info.get("pid", "").isdigit():
            raise LxcError(f"container {self.name} is not running after lxc-start: {info}; "
                           f"console:\n{self._console()[-2000:]}\nlxc log tail:\n{_tail(self.lxc_log)}")
        self.pid = int(info["pid"])
        self._wait_ready()
        self.steps.append(f"testpmd forwarding, host pid {self.pid}, cpus {cpus_allowed(self.pid)}")

    def _extra_config(self) -> dict[str, str]:
        extra = {
            # no IPv6 autoconfiguration chatter on the measured links inside the container
            "lxc.sysctl.net.ipv6.conf.all.disable_ipv6": "1",
            "lxc.sysctl.net.ipv6.conf.default.disable_ipv6": "1",
            # no lxcfs hooks from common.conf.d (lxcfs is not used; its post-stop hook outlives stop)
            "lxc.hook.mount": "",
            "lxc.hook.post-stop": "",
        }
        if self.parent_cgroup or self.monitor_cgroup:
            extra["lxc.cgroup.dir.container"] = "/".join(p for p in (self.parent_cgroup, self.name) if p)
            extra["lxc.cgroup.dir.monitor"] = "/".join(p for p in (self.monitor_cgroup, self.name + ".monitor") if p)
        return extra

    def _console(self) -> str:
        try:
            return self.console_log.read_text(errors="replace")
        except OSError:
            return ""

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.ready_timeout_s
        while time.monotonic() < deadline:
            text = self._console()
            if READY_MARK in text:
                return
            if self.pid is None or not Path(f"/proc/{self.pid}").exists():
                break
            time.sleep(0.1)
        raise LxcError(f"dpdk-testpmd in container {self.name} did not start forwarding within "
                       f"{self.ready_timeout_s:.0f} s: {' '.join(self.argv)}\nconsole:\n{self._console()[-3000:]}")

    def _stop_testpmd(self) -> None:
        """SIGINT: testpmd stops its ports and prints the forward statistics, then waits on the
        console (as init it cannot re-raise the signal on itself); wait for "Bye..."."""
        if self.pid is None or not Path(f"/proc/{self.pid}").exists():
            return
        try:
            os.kill(self.pid, signal.SIGINT)
        except ProcessLookupError:
            return
        self.steps.append(f"SIGINT to testpmd (host pid {self.pid})")
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and BYE_MARK not in self._console():
            if not Path(f"/proc/{self.pid}").exists():
                break
            time.sleep(0.05)

    def _teardown(self) -> None:
        errors: list[str] = []
        old = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)} \
            if _main_thread() else {}
        try:
            if self._created:
                try:
                    self._stop_testpmd()
                except Exception as exc:  # keep tearing down
                    errors.append(f"stopping testpmd: {exc}")
                console = self._console()
                self._console_tail = console[-4000:]
                if console:
                    self.stats = testpmd.parse_forward_stats(console)
                    self.stats["stopped_cleanly"] = BYE_MARK in console
                self.lxc.stop(self.name, kill=True)
                self.lxc.wait(self.name, "STOPPED", timeout_s=10)
                self._kill_leftover_processes()
                self.steps.append(f"lxc-stop -k {self.name}")
                # the console log lives in the container directory: keep a copy for the record
                if not self.lxc.destroy(self.name):
                    errors.append(f"lxc-destroy {self.name} left {self.dir}")
                self.steps.append(f"lxc-destroy {self.name}")
                self._created = False
            errors += self._remove_new_cgroups()
            for iface in list(self._moved_to_host):  # LXC put them back in the host namespace
                if _ip(self.host, ["link", "show", iface], check=False).exit_code == 0:
                    _ip(self.host, ["link", "set", iface, "netns", self.netns or "1"], check=False)
                if self.netns:
                    _ip(self.host, ["link", "set", iface, "promisc", "on"], self.netns, check=False)
                    _ip(self.host, ["link", "set", iface, "up"], self.netns, check=False)
                self._moved_to_host.remove(iface)
            if self._moved_to_host == [] and self.netns:
                self.steps.append(f"returned {', '.join(self.interfaces)} to netns {self.netns}")
        finally:
            for s, h in old.items():
                signal.signal(s, h)
            if self._old_term is not None and _main_thread():
                signal.signal(signal.SIGTERM, self._old_term)
                self._old_term = None
        if errors:
            self.stats.setdefault("teardown_errors", errors)

    def _remove_new_cgroups(self) -> list[str]:
        """rmdir the cgroups this container made (LXC leaves parents it created in every hierarchy)."""
        new = set(lxc_cgroup_dirs(self.name, self.parent_cgroup, self.monitor_cgroup)) - self._cgroups_before
        return remove_container_cgroups(self.name, sorted(new))[1]

    def _kill_leftover_processes(self) -> None:
        for pid in container_pids(self.name):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        # LXC's monitor (and hooks it runs) exit on their own shortly after the container
        deadline = time.monotonic() + 5
        while monitor_pids(self.name) and time.monotonic() < deadline:
            time.sleep(0.05)
        for pid in monitor_pids(self.name):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _tail(path: Path, n: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return "(no log)"


def _mems() -> str:
    root = cg.v1_hierarchy("cpuset")
    if root is not None:
        with contextlib.suppress(OSError):
            return (root / "cpuset.mems").read_text().strip() or "0"
    return "0"


# --- the DuT registry's factory ("testpmd-lxc" in benchbook.testbed.dut) ---------------------------
@contextlib.contextmanager
def testpmd_lxc_dut(testbed: Any, *, cpu: int, isolation: Any = None, ingress: str = "din",
                    egress: str = "dout", cgroup_mode: str | None = None, **options: Any) -> Iterator[Any]:
    """Factory for benchbook.testbed.dut: yields a RunningDuT for a started LocalTestbed."""
    mode = cgroup_mode or (isolation.mode if isolation is not None and isolation.mode in ("v1", "v2") else "v1")
    parent = monitor = None
    if isolation is not None and isolation.dut_procs_file is not None:
        cg_dir = Path(isolation.dut_procs_file).parent
        root = cg.v1_hierarchy("cpuset") if mode == "v1" else None
        if root is not None and root in cg_dir.parents:
            parent = str(cg_dir.relative_to(root))
            hk = isolation.report.get("housekeeping_cgroup") if isinstance(isolation.report, dict) else None
            if hk and root in Path(hk).parents:
                monitor = str(Path(hk).relative_to(root))
    role = testbed.role_of(ingress)
    try:
        dst_mac = testbed.mac(ingress)  # read before the interface moves into the container
    except Exception:  # testpmd is promiscuous: the load generator may use any MAC
        dst_mac = None
    dut = LxcTestpmdDut([testbed.ifname(ingress), testbed.ifname(egress)], cpu=cpu, cgroup_mode=mode,
                        netns=testbed.netns(role), token=testbed.token, parent_cgroup=parent,
                        monitor_cgroup=monitor, host=testbed.host(None), **options)
    running: Any = None
    try:
        with dut:
            running = RunningDuT(kind=KIND, pid=dut.pid, cpu=cpu, description=dut.description, dst_mac=dst_mac)
            yield running
    finally:
        if running is not None:
            running.stats = {**dut.stats, "record": dut.record()}


def plan_testpmd_lxc(testbed: Any, *, cpu: int, recipe: Any = None, ingress: str = "din", egress: str = "dout",
                     **options: Any) -> DutPlan:
    """DuT kind testpmd-lxc for benchbook.testbed.dut: one step that runs the container (testpmd_lxc_dut) inside
    the recipe's DuT cgroup; its lxc-* commands go to the command log as they run (they are not listed in the
    plan: the root file system, the veth moves and the container's start depend on this host)."""
    def open_container(env: Any) -> Any:
        iso = None
        if recipe is not None:
            iso = IsolationInfo(recipe.mode, recipe.dut_cpus, recipe.housekeeping_cpus, Path(recipe.dut_procs_file),
                                report={"housekeeping_cgroup": recipe.housekeeping_cgroup})
        return testpmd_lxc_dut(env, cpu=cpu, isolation=iso, ingress=ingress, egress=egress, **options)

    start = [Step("start", "", [], name="dut", tool="context", produces=("DUT_PID", "DUT_INGRESS_MAC"),
                  options={"open": open_container},
                  note=f"{KIND}: dpdk-testpmd as the init of an LXC container on CPU {cpu} (benchbook.testbed.lxc_dut; "
                       "its lxc-* commands are logged as they run)")]
    stop = [Step("stop", "", name="dut", always=True, note="the container's testpmd prints its statistics; "
                                                            "the container is stopped and destroyed")]

    def stats(ex: Execution) -> dict[str, Any]:
        return {k: v for k, v in ex.outputs.get("dut", {}).get("stats", {}).items() if k != "log_tail"}

    return DutPlan(KIND, start, stop, {"kind": KIND, "cpu": cpu}, stats_of=stats)
