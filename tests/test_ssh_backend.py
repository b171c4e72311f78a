"""The ssh testbed backend: inventory parsing with clear errors, and the dry run's exact command
list for the example inventory. Nothing here contacts any host: only the dry run is exercised."""

from __future__ import annotations

import io
import subprocess

import pytest

from benchbook.paths import REPO_ROOT
from benchbook.testbed.ssh import Inventory, InventoryError, Measurement, SshBackend

EXAMPLE = REPO_ROOT / "examples" / "testbed.toml"
S = "ssh -p 22 -o BatchMode=yes -o ConnectTimeout=10 "
CONFIG_V1 = """cat > RUN/setup/bb-dut.conf <<'EOF'
# benchbook container bb-dut (written by benchbook.tools.lxc)
lxc.include = /usr/share/lxc/config/common.conf
lxc.uts.name = bb-dut
lxc.rootfs.path = dir:/var/lib/lxc/bb-dut/rootfs
lxc.apparmor.profile = unconfined
lxc.mount.auto = proc:mixed sys:mixed
lxc.autodev = 1
lxc.tty.max = 0
lxc.pty.max = 4
lxc.signal.halt = SIGINT
lxc.init.cmd = /usr/bin/dpdk-testpmd --lcores 0@3,1@3 --main-lcore 0 --file-prefix bb-dut -a 0000:41:00.0 -a 0000:41:00.1 -- --forward-mode=io --auto-start --nb-cores=1
lxc.console.logfile = /var/lib/lxc/bb-dut/console.log
lxc.cgroup.cpuset.cpus = 3
lxc.cgroup.cpuset.mems = 0
lxc.net.0.type = empty
lxc.cgroup.dir.container = user/bb-dut
lxc.cgroup.dir.monitor = system/bb-dut.monitor
lxc.mount.entry = /dev/hugepages dev/hugepages none bind,create=dir 0 0
lxc.mount.entry = /dev/vfio dev/vfio none bind,create=dir 0 0
lxc.cgroup.devices.allow = c 10:196 rwm
lxc.cgroup.devices.allow = c *:* rwm
EOF"""

EXPECTED_V1 = [
    f"{S}root@192.0.2.10 'mkdir -p /srv/benchbook/r0 && uname -a > /srv/benchbook/r0/uname.txt && cat /proc/cmdline > /srv/benchbook/r0/cmdline.txt && lscpu > /srv/benchbook/r0/lscpu.txt'",
    f"{S}root@192.0.2.20 'mkdir -p /srv/benchbook/r0 && uname -a > /srv/benchbook/r0/uname.txt && cat /proc/cmdline > /srv/benchbook/r0/cmdline.txt && lscpu > /srv/benchbook/r0/lscpu.txt'",
    f"{S}root@192.0.2.30 'mkdir -p /srv/benchbook/r0 && uname -a > /srv/benchbook/r0/uname.txt && cat /proc/cmdline > /srv/benchbook/r0/cmdline.txt && lscpu > /srv/benchbook/r0/lscpu.txt'",
    f"{S}root@192.0.2.20 'test \"$(stat -fc %T /sys/fs/cgroup)\" = tmpfs'",
    f"{S}root@192.0.2.20 'grep -qw -- isolcpus=3 /proc/cmdline'",
    f"{S}root@192.0.2.20 'grep -qw -- nohz_full=3 /proc/cmdline'",
    f"{S}root@192.0.2.20 'grep -qw -- rcu_nocbs=3 /proc/cmdline'",
    f"{S}root@192.0.2.20 'grep -qw -- irqaffinity=0 /proc/cmdline'",
    f"{S}root@192.0.2.20 'grep -qw -- idle=poll /proc/cmdline'",
    f"{S}root@192.0.2.10 'echo 1024 > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages'",
    f"{S}root@192.0.2.10 'dpdk-devbind.py -b vfio-pci 0000:03:00.0 0000:03:00.1'",
    f"{S}root@192.0.2.20 'echo 512 > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages'",
    f"{S}root@192.0.2.20 'dpdk-devbind.py -b vfio-pci 0000:41:00.0 0000:41:00.1'",
    f"{S}root@192.0.2.30 'echo 1024 > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages'",
    f"{S}root@192.0.2.30 'dpdk-devbind.py -b vfio-pci 0000:05:00.0 0000:05:00.1'",
    f"{S}root@192.0.2.20 'cset shield --cpu=3 --kthread=on'",
    f"{S}root@192.0.2.20 'echo 0 > /sys/fs/cgroup/cpuset/user/cpuset.sched_load_balance'",
    f"{S}root@192.0.2.20 'cat /sys/fs/cgroup/cpuset/user/cpuset.sched_load_balance > /srv/benchbook/r0/isolation.txt'",
    CONFIG_V1,
    f"{S}root@192.0.2.20 'lxc-create -n bb-dut -t debian -- -r bookworm --packages=dpdk,dpdk-dev'",
    "scp -P 22 -o BatchMode=yes -o ConnectTimeout=10 RUN/setup/bb-dut.conf root@192.0.2.20:/var/lib/lxc/bb-dut/config",
    f"{S}root@192.0.2.20 'lxc-start -n bb-dut -d -o /srv/benchbook/r0/lxc.log -l INFO'",
    f"{S}root@192.0.2.20 'lxc-info -n bb-dut -pH > /srv/benchbook/r0/testpmd.pid && cat /proc/$(cat /srv/benchbook/r0/testpmd.pid)/status | grep Cpus_allowed_list > /srv/benchbook/r0/affinity.txt'",
    f"{S}root@192.0.2.30 'cd /opt/MoonGen && nohup ./build/MoonGen examples/moonsniff/sniffer.lua 0 1 --output /srv/benchbook/r0/ms --runtime 70 --capture > /srv/benchbook/r0/sniffer.log 2>&1 & echo $! > /srv/benchbook/r0/sniffer.pid'",
    "sleep 5",
    f"{S}root@192.0.2.20 'nohup perf stat -x, -e instructions,branches,cpu-migrations,context-switches,task-clock -o /srv/benchbook/r0/perf.csv -p $(cat /srv/benchbook/r0/testpmd.pid) -- sleep 62 > /srv/benchbook/r0/perf.log 2>&1 &'",
    f"{S}root@192.0.2.10 'cd /opt/MoonGen && timeout 65 ./build/MoonGen examples/l2-load-latency.lua 0 1 --rate 826.88 --file /srv/benchbook/r0/histogram.csv > /srv/benchbook/r0/moongen.log 2>&1; rc=$?; test $rc -eq 0 -o $rc -eq 124'",
    f"{S}root@192.0.2.30 'kill -INT $(cat /srv/benchbook/r0/sniffer.pid) 2>/dev/null; while kill -0 $(cat /srv/benchbook/r0/sniffer.pid) 2>/dev/null; do sleep 1; done; true'",
    f"{S}root@192.0.2.20 'kill -INT $(cat /srv/benchbook/r0/testpmd.pid); sleep 2; cp /var/lib/lxc/bb-dut/console.log /srv/benchbook/r0/testpmd-console.log'",
    "rsync -a --partial -e 'ssh -p 22 -o BatchMode=yes -o ConnectTimeout=10' root@192.0.2.10:/srv/benchbook/r0/ RUN/raw/loadgen/",
    "rsync -a --partial -e 'ssh -p 22 -o BatchMode=yes -o ConnectTimeout=10' root@192.0.2.20:/srv/benchbook/r0/ RUN/raw/dut/",
    "rsync -a --partial -e 'ssh -p 22 -o BatchMode=yes -o ConnectTimeout=10' root@192.0.2.30:/srv/benchbook/r0/ RUN/raw/timestamper/",
    f"{S}root@192.0.2.20 'lxc-stop -n bb-dut -k'",
    f"{S}root@192.0.2.20 'lxc-destroy -n bb-dut'",
    f"{S}root@192.0.2.20 'cset shield --reset'",
]


@pytest.fixture
def backend():
    return SshBackend(EXAMPLE, dry_run=True, out=io.StringIO())


def test_example_inventory_loads():
    inv = Inventory.from_toml(EXAMPLE)
    assert [h.role for h in inv.hosts] == ["loadgen", "dut", "timestamper"]
    dut = inv.role("dut")
    assert dut.target == "root@192.0.2.20" and dut.cores == (3,) and dut.housekeeping_cores == (0, 1, 2)
    assert [i.pci for i in dut.interfaces] == ["0000:41:00.0", "0000:41:00.1"]
    assert "nohz_full=3" in dut.boot_parameters


def test_dry_run_exact_commands_v1(backend):
    # conftest does not change the working directory; the CLI may be run from anywhere
    lines = backend.dry_run_lines(Measurement(run_id="r0", cgroup_mode="v1"), run_dir="RUN")
    assert lines == EXPECTED_V1


def test_dry_run_v2_differs_only_in_the_cgroup_steps(backend):
    v2 = backend.dry_run_lines(Measurement(run_id="r0", cgroup_mode="v2"), run_dir="RUN")
    assert f"{S}root@192.0.2.20 'test \"$(stat -fc %T /sys/fs/cgroup)\" = cgroup2fs'" in v2
    assert f"{S}root@192.0.2.20 'systemctl set-property --runtime system.slice AllowedCPUs=0,1,2'" in v2
    assert (f"{S}root@192.0.2.20 'echo 3 > /sys/fs/cgroup/lxc.payload.bb-dut/cpuset.cpus && "
            "echo root > /sys/fs/cgroup/lxc.payload.bb-dut/cpuset.cpus.partition'") in v2
    assert not any("cset" in line for line in v2)
    config = next(line for line in v2 if line.startswith("cat > "))
    assert "lxc.cgroup2.cpuset.cpus = 3" in config and "lxc.cgroup.cpuset" not in config
    # the partition root is set after the container (and its cgroup) exists
    start = next(i for i, l in enumerate(v2) if "lxc-start" in l)
    part = next(i for i, l in enumerate(v2) if "cpuset.cpus.partition" in l)
    assert part > start
    shared = [l for l in EXPECTED_V1 if "cset" not in l and "cgroup" not in l and not l.startswith("cat > ")]
    assert all(l in v2 for l in shared)


def test_moongen_lines_come_from_the_moongen_tool(backend):
    from benchbook.tools.moongen import build_command

    m = Measurement(run_id="r1", rate_mpps=6.24, duration_s=30)
    lines = backend.dry_run_lines(m, run_dir="RUN")
    load = " ".join(build_command("l2-load-latency", {"dev1": 0, "dev2": 1, "rate": m.rate_mbit(),
                                                      "file": "/srv/benchbook/r1/histogram.csv"}))
    assert m.rate_mbit() == pytest.approx(6.24 * 68 * 8)
    assert any(load in l and "timeout 35" in l for l in lines)
    assert any("examples/moonsniff/sniffer.lua 0 1 --output /srv/benchbook/r1/ms --runtime 40 --capture" in l
               for l in lines)


def test_print_plan_touches_nothing(backend, monkeypatch):
    def refuse(*a, **k):
        raise AssertionError(f"the dry run started a process: {a}")

    monkeypatch.setattr(subprocess, "run", refuse)
    monkeypatch.setattr(subprocess, "Popen", refuse)
    lines = backend.print_plan(Measurement(run_id="r0", cgroup_mode="v1"), run_dir="RUN")
    printed = backend.out.getvalue()
    assert printed.count("\nssh ") + printed.startswith("ssh ") >= 25 and "# 01 loadgen:" in printed
    assert len([l for l in lines if not l.startswith("#")]) == len(EXPECTED_V1)
    with pytest.raises(RuntimeError, match="dry-run"):
        backend.execute(Measurement(run_id="r0"), "RUN")


@pytest.mark.parametrize("text,match", [
    ("[[hosts]]\nname='a'\nrole='loadgen'\naddress='x'\n", "exactly one host with role 'dut'"),
    ("[[hosts]]\nname='a'\nrole='dutt'\naddress='x'\n", r"hosts\[0\] \(a\)\.role: 'dutt'"),
    ("[[hosts]]\nname='a'\nrole='dut'\naddress='x'\ninterfaces=[{name='e', pci='3:0.0'}]\n",
     r"interfaces\[0\]\.pci: '3:0.0' is not a PCI address"),
    ("[[hosts]]\nname='a'\nrole='dut'\n", "missing key 'address'"),
    ("[[hosts]]\nname='a'\nrole='dut'\naddress='x'\ncolour='red'\n", r"unknown key\(s\) \['colour'\]"),
    ("[[hosts]\n", "inv.toml"),
])
def test_inventory_errors_name_file_and_key(tmp_path, text, match):
    p = tmp_path / "inv.toml"
    p.write_text(text)
    with pytest.raises(InventoryError, match=match) as err:
        Inventory.from_toml(p)
    assert str(p) in str(err.value)
