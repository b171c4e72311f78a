"""DuT kind testpmd-lxc: config rendering, the v2 refusal on hybrid hosts, and for real (root,
lxc, dpdk, cached debootstrap root fs): testpmd in a container forwards frames between the
DuT's veths (counted in a capture behind the DuT), and afterwards no container, cgroup,
process or interface of the run remains (normal exit, failure while starting, SIGINT, and a
killed run swept up)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from benchbook.capture import CaptureFormatError, open_capture
from benchbook.testbed import lxc_dut
from benchbook.testbed.capabilities import probe_cgroup_v2_cpuset
from benchbook.testbed.cleanup import sweep_containers, sweep_leftovers
from benchbook.testbed.isolation import NotRunnable, isolation
from benchbook.testbed.local import LocalBackend
from benchbook.testbed.lxc_dut import LxcTestpmdDut
from benchbook.testbed.rootfs import ensure_rootfs
from benchbook.testbed.rootfs_recipes import TESTPMD_ROOTFS
from benchbook.tools.lxc import ContainerConfig, LxcError, PhysNic, parse_lxc_info
from conftest import require_program, require_root, require_rootfs

# the first test that needs the cached root file system builds it with debootstrap (minutes on a slow mirror)
pytestmark = pytest.mark.timeout(2400)

N_FRAMES = 300
TAG = b"BBF2"


# --- pure parts -------------------------------------------------------------------------------
def test_config_v1_pins_and_moves_nics():
    cfg = ContainerConfig(name="bb-000000-lxc", rootfs="overlay:/lower:/upper", init_cmd=["/usr/bin/x", "-a", "1"],
                          nics=[PhysNic("bb-000000-din"), PhysNic("bb-000000-dout", name="eth1")], cpus="1", mems="0")
    text = cfg.render()
    lines = text.splitlines()
    assert "lxc.cgroup.cpuset.cpus = 1" in lines and "lxc.cgroup.cpuset.mems = 0" in lines
    assert not any(line.startswith("lxc.cgroup2.") for line in lines)
    assert "lxc.net.0.type = phys" in lines and "lxc.net.0.link = bb-000000-din" in lines
    assert "lxc.net.1.name = eth1" in lines and "lxc.net.1.type = phys" in lines
    assert "lxc.init.cmd = /usr/bin/x -a 1" in lines
    assert "lxc.rootfs.path = overlay:/lower:/upper" in lines


def test_config_v2_keys_and_bad_arguments():
    cfg = ContainerConfig(name="bb-000000-lxc", rootfs="/r", init_cmd=["/bin/true"], cpus="1", cgroup_mode="v2")
    lines = cfg.render().splitlines()
    assert "lxc.cgroup2.cpuset.cpus = 1" in lines and "lxc.net.0.type = empty" in lines
    with pytest.raises(ValueError, match="no blanks"):
        ContainerConfig(name="bb-0-x", rootfs="/r", init_cmd=["/bin/echo", "two words"]).render()
    with pytest.raises(ValueError, match="cgroup_mode"):
        ContainerConfig(name="bb-0-x", rootfs="/r", init_cmd=["/bin/true"], cgroup_mode="v3").render()


def test_parse_lxc_info():
    info = parse_lxc_info("Name:           bb-1\nState:          RUNNING\n"
                          "PID:            1741\nCPU use:        10.00 seconds\n")
    assert info == {"name": "bb-1", "state": "RUNNING", "pid": "1741", "cpu use": "10.00 seconds"}


def test_sweep_refuses_foreign_prefix():
    with pytest.raises(ValueError, match="bb-"):
        sweep_containers(prefix="web")


def test_v2_cpuset_probe_agrees_with_proc_cgroups():
    cap = probe_cgroup_v2_cpuset()
    ok, why = cap.ok, cap.detail
    cpuset_hier = next((line.split()[1] for line in Path("/proc/cgroups").read_text().splitlines()
                        if line.startswith("cpuset\t") or line.startswith("cpuset ")), None)
    if cpuset_hier is None:
        pytest.skip("no cpuset controller in this kernel")
    # hierarchy id 0 in /proc/cgroups = the controller is on the unified (v2) hierarchy
    assert ok == (cpuset_hier == "0"), why
    if not ok:
        assert "v1 hierarchy" in why or "cpuset controller" in why


# --- real containers ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def lxc_ready():
    require_root()
    for prog in ("lxc-start", "dpdk-testpmd", "tcpdump", "ip", "debootstrap"):
        require_program(prog)

    require_rootfs(TESTPMD_ROOTFS)
    ensure_rootfs(TESTPMD_ROOTFS)  # one-time (minutes), then cached; a failed build fails the tests
    return True


def _leftovers(token: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    lxc = subprocess.run(["lxc-ls", "-1"], capture_output=True, text=True).stdout.split()
    out["containers"] = [n for n in lxc if token in n] + [p.name for p in Path("/var/lib/lxc").glob(f"*{token}*")]
    cg = []
    for h in Path("/sys/fs/cgroup").iterdir():
        if h.is_dir():  # os.walk skips a cgroup another process removes meanwhile (Path.rglob raises)
            for parent, dirs, files in os.walk(h):
                cg += [str(Path(parent, n)) for n in dirs + files if token in n]
    out["cgroups"] = cg
    ps = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    out["processes"] = [line for line in ps.splitlines()
                        if token in line and "pytest" not in line and "ps -eo" not in line]
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    out["links"] = [line.split(":")[1].strip() for line in links.splitlines() if token in line]
    ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    out["netns"] = [line.split()[0] for line in ns.splitlines() if token in line]
    return {k: v for k, v in out.items() if v}


_SENDER = textwrap.dedent("""
    import socket, struct, sys, time
    iface, n = sys.argv[1], int(sys.argv[2])
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    for i in range(n):
        frame = b"\\xff" * 6 + bytes.fromhex("020000000001") + b"\\x88\\xb5" + b"BBF2" + struct.pack(">Q", i)
        s.send(frame.ljust(60, b"\\0"))
        if i % 50 == 49:
            time.sleep(0.002)
""")


def _ids_in_capture(path: Path) -> list[int]:
    ids = []
    for chunk in open_capture(path):
        for i in range(len(chunk)):
            f = chunk.frame(i)
            if f[12:14] == b"\x88\xb5" and f[14:18] == TAG:
                ids.append(int.from_bytes(f[18:26], "big"))
    return ids


def _ids_so_far(path: Path) -> list[int]:
    """Packet ids in a capture tcpdump is still writing ([] while its last record is incomplete)."""
    try:
        return _ids_in_capture(path)
    except (CaptureFormatError, FileNotFoundError):
        return []


def _forward_through(tb, tmp: Path | None = None, **kw):
    """Start the DuT, send N_FRAMES from the LoadGen, capture behind the DuT; return (dut, ids)."""
    pcap = (tmp or Path("/tmp")) / f"{tb.token}-ts.pcap"
    with lxc_dut.testpmd_lxc_dut(tb, cpu=1, **kw) as dut:
        assert dut.pid is not None and Path(f"/proc/{dut.pid}").exists()
        desc = dut.description
        assert desc["cpus_allowed"] == "1", desc
        cap = tb.host("ts").start(["tcpdump", "-i", tb.ifname("ts0"), "-w", str(pcap), "-U", "--immediate-mode", "-n",
                                   "-s", "128"], what="tcpdump")
        assert cap.wait_for("listening on", "stderr", 10), "tcpdump did not start listening"
        tb.run("lg", [sys.executable, "-c", _SENDER, tb.ifname("lg0"), str(N_FRAMES)])
        deadline = time.monotonic() + 10  # -U: tcpdump writes each frame as it arrives
        while len(_ids_so_far(pcap)) < N_FRAMES and time.monotonic() < deadline:
            time.sleep(0.02)
        cap.interrupt_and_wait(timeout_s=10)
    return dut, desc, _ids_in_capture(pcap)


@pytest.mark.root
def test_container_forwards_and_leaves_nothing(lxc_ready, tmp_path):
    with LocalBackend().topology() as tb:
        token = tb.token
        dut, desc, ids = _forward_through(tb, tmp=tmp_path)
        # while running, the veth ends had moved into the container: they are back in the DuT netns
        back = tb.run("dut", ["ip", "-o", "link"]).stdout
        assert tb.ifname("din") in back and tb.ifname("dout") in back and "PROMISC" in back
    assert sorted(ids) == list(range(N_FRAMES)), f"{len(ids)} of {N_FRAMES} frames forwarded"
    assert desc["kind"] == "testpmd-lxc" and desc["cgroup_mode"] == "v1"
    assert "lxc.cgroup.cpuset.cpus = 1" in desc["config"]
    assert desc["cgroups"].get("cpuset", "").endswith(f"bb-{token}-lxc")
    stats = dut.stats
    assert stats["stopped_cleanly"] is True
    assert stats["ports"][0]["RX-packets"] >= N_FRAMES and stats["ports"][1]["TX-packets"] >= N_FRAMES
    assert any("lxc-start" in " ".join(c["argv"]) for c in stats["record"]["commands"])
    assert _leftovers(token) == {}


@pytest.mark.root
def test_container_inside_v1_isolation_cpuset(lxc_ready, tmp_path):
    with LocalBackend().topology() as tb:
        token = tb.token
        try:
            iso = isolation("v1", token, dut_cpu=1)
            info = iso.__enter__()
        except NotRunnable as exc:
            pytest.skip(f"v1 isolation not runnable here: {exc}")
        try:
            dut, desc, ids = _forward_through(tb, tmp=tmp_path, isolation=info)
        finally:
            iso.__exit__(None, None, None)
    assert sorted(ids) == list(range(N_FRAMES))
    # the container's cgroup sits inside the recipe's exclusive DuT cpuset
    assert desc["cgroups"]["cpuset"] == f"/bb-{token}-dut/bb-{token}-lxc", desc["cgroups"]
    assert desc["cpus_allowed"] == "1"
    assert _leftovers(token) == {}


@pytest.mark.root
def test_v2_refused_with_reason_on_hybrid_host(lxc_ready):
    if probe_cgroup_v2_cpuset().ok:
        pytest.skip("this host has the v2 cpuset controller: the v2 arm can run")
    with pytest.raises(NotRunnable, match="cgroup v2"):
        with LxcTestpmdDut(["nonexistent0", "nonexistent1"], cpu=1, cgroup_mode="v2"):
            pass


@pytest.mark.root
def test_failed_start_cleans_up(lxc_ready):
    """testpmd cannot get its memory (mem_mb=1): the container dies, the error carries the
    console, and nothing remains."""
    with LocalBackend().topology() as tb:
        token = tb.token
        with pytest.raises(LxcError, match="did not start forwarding|not running") as err:
            with lxc_dut.testpmd_lxc_dut(tb, cpu=1, mem_mb=1, ready_timeout_s=15):
                pass
        assert "EAL" in str(err.value) or "testpmd" in str(err.value)
        links = tb.run("dut", ["ip", "-o", "link"]).stdout
        assert tb.ifname("din") in links and tb.ifname("dout") in links
    assert _leftovers(token) == {}


_CHILD = textwrap.dedent("""
    import sys, time
    from benchbook.testbed.local import LocalBackend
    from benchbook.testbed.lxc_dut import testpmd_lxc_dut
    with LocalBackend(sweep=False).topology() as tb:
        with testpmd_lxc_dut(tb, cpu=1):
            print("TOKEN", tb.token, flush=True)
            time.sleep(120)
""")


@pytest.mark.root
@pytest.mark.parametrize("how", ["SIGINT", "SIGTERM", "SIGKILL"])
def test_interrupted_run_leaves_nothing(lxc_ready, how):
    """Ctrl-C and SIGTERM tear down in-process; after SIGKILL the start-up sweeps remove it."""
    proc = subprocess.Popen([sys.executable, "-c", _CHILD], stdout=subprocess.PIPE, text=True,
                            stderr=subprocess.PIPE)
    token = None
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            if line.startswith("TOKEN"):
                token = line.split()[1]
                break
        assert token, f"child did not start: {proc.stderr.read() if proc.poll() is not None else ''}"
        assert _leftovers(token).get("containers")
        proc.send_signal(getattr(signal, how))
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if how == "SIGKILL":
        removed = sweep_containers(prefix=f"bb-{token}")
        assert any(token in r for r in removed), removed
        sweep_leftovers()
    assert _leftovers(token) == {}
