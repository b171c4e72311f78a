"""The ssh testbed backend: inventory parsing with clear errors; the dry run's command lists for
the example inventory, whose tool command lines are what benchbook.tools builds; and execute()
against a real sshd started on 127.0.0.1 for the test."""

from __future__ import annotations

import io
import os
import shlex
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from benchbook.paths import REPO_ROOT
from benchbook.testbed.inventory import Inventory, InventoryError
from benchbook.testbed.plan import Measurement, Plan, Step
from benchbook.testbed.ssh import SshBackend, shell_join
from benchbook.tools import lxc, moongen, perf, tcpdump, testpmd
from benchbook.tools.host import CommandLog, read_command_log

EXAMPLE = REPO_ROOT / "examples" / "testbed.toml"
S = "ssh -p 22 -o BatchMode=yes -o ConnectTimeout=10 "
CONFIG_V1 = (
    """cat > RUN/setup/bb-dut.conf <<'EOF'
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
lxc.init.cmd = /usr/bin/dpdk-testpmd --lcores 0@3,1@3 --main-lcore 0 --file-prefix bb-dut -a 0000:41:00.0 """
    """-a 0000:41:00.1 -- --forward-mode=io --auto-start --nb-cores=1 --burst=32 --no-mlockall --total-num-mbufs=8192
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
)

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


def test_dry_run_v1_commands(backend):
    lines = backend.dry_run_lines(Measurement(run_id="r0", cgroup_mode="v1"), run_dir="RUN")
    assert lines[0] == (f"{S}root@192.0.2.10 'mkdir -p /srv/benchbook/r0 && uname -a > /srv/benchbook/r0/uname.txt && "
                        "cat /proc/cmdline > /srv/benchbook/r0/cmdline.txt && lscpu > /srv/benchbook/r0/lscpu.txt'")
    assert f"{S}root@192.0.2.20 'test \"$(stat -fc %T /sys/fs/cgroup)\" = tmpfs'" in lines
    assert f"{S}root@192.0.2.20 'grep -qw -- nohz_full=3 /proc/cmdline'" in lines
    assert f"{S}root@192.0.2.20 'cset shield --cpu=3 --kthread=on'" in lines
    assert CONFIG_V1 in lines
    assert ("scp -P 22 -o BatchMode=yes -o ConnectTimeout=10 RUN/setup/bb-dut.conf "
            "root@192.0.2.20:/var/lib/lxc/bb-dut/config") in lines
    assert ("scp -r -P 22 -o BatchMode=yes -o ConnectTimeout=10 root@192.0.2.30:/srv/benchbook/r0 "
            "RUN/raw/timestamper") in lines
    assert lines[-3:] == [f"{S}root@192.0.2.20 'lxc-stop -P /var/lib/lxc -n bb-dut -k'",
                          f"{S}root@192.0.2.20 'lxc-destroy -P /var/lib/lxc -n bb-dut -f'",
                          f"{S}root@192.0.2.20 'cset shield --reset'"]
    assert len(lines) == 37   # 35 commands + the choices file + waiting for perf


def test_tool_command_lines_come_from_the_tools(backend):
    """perf, dpdk-testpmd, lxc-* and MoonGen in the plan are exactly what benchbook.tools builds."""
    m = Measurement(run_id="r1", cgroup_mode="v1", rate_pps=6.24e6, duration_s=30)
    per_host = backend.host_commands(m, run_dir="RUN")
    d = "/srv/benchbook/r1"
    dut, lg, ts = per_host["dut"], per_host["loadgen"], per_host["timestamper"]
    want_perf = shell_join(perf.build_argv(f"$(cat {d}/testpmd.pid)", 32, events=m.perf_events, repeats=1,
                                           output_path=f"{d}/perf.csv"))
    assert any(want_perf in c for c in dut) and '-p "$(cat /srv/benchbook/r1/testpmd.pid)"' in want_perf
    for argv in (lxc.create_argv("bb-dut", template="debian", template_args=["-r", "bookworm",
                                                                            "--packages=dpdk,dpdk-dev"]),
                 lxc.start_argv("bb-dut", logfile=f"{d}/lxc.log"), lxc.stop_argv("bb-dut", kill=True),
                 lxc.destroy_argv("bb-dut")):
        assert shlex.join(argv) in dut
    assert any(c.startswith(shlex.join(lxc.info_argv("bb-dut", pid_only=True))) for c in dut)
    tp = testpmd.build_argv(pci=["0000:41:00.0", "0000:41:00.1"], main_cpu=3, fwd_cpu=3, file_prefix="bb-dut",
                            binary="/usr/bin/dpdk-testpmd", line_buffered=False)
    assert "lxc.init.cmd = " + " ".join(tp) in backend.container_config(m)
    load = moongen.build_command("l2-load-latency", {"dev1": 0, "dev2": 1, "rate": m.rate_mbit(),
                                                     "file": f"{d}/histogram.csv"})
    assert m.rate_mbit() == pytest.approx(6.24 * 68 * 8)
    assert any(shell_join(load) in c and "timeout 35" in c for c in lg)
    sniff = moongen.build_command("moonsniff-sniffer", {"devs": [0, 1], "output": f"{d}/ms", "runtime": 40,
                                                        "capture": True})
    assert any(shell_join(sniff) in c for c in ts)


def test_tcpdump_timestamper_uses_the_tcpdump_tool(backend):
    m = Measurement(run_id="r2", timestamper="tcpdump")
    ts = backend.host_commands(m, run_dir="RUN")["timestamper"]
    for side, iface in (("pre", "ens2f0"), ("post", "ens2f1")):
        assert any(shell_join(tcpdump.build_argv(iface, f"/srv/benchbook/r2/{side}.pcap")) in c for c in ts)
    assert not any("dpdk-devbind" in c for c in ts), "tcpdump needs the kernel's NICs"


def test_dry_run_v2_differs_only_in_the_cgroup_steps(backend):
    v1 = backend.dry_run_lines(Measurement(run_id="r0", cgroup_mode="v1"), run_dir="RUN")
    v2 = backend.dry_run_lines(Measurement(run_id="r0", cgroup_mode="v2"), run_dir="RUN")
    assert f"{S}root@192.0.2.20 'test \"$(stat -fc %T /sys/fs/cgroup)\" = cgroup2fs'" in v2
    assert f"{S}root@192.0.2.20 'systemctl set-property --runtime system.slice AllowedCPUs=0,1,2'" in v2
    assert (f"{S}root@192.0.2.20 'echo 3 > /sys/fs/cgroup/lxc.payload.bb-dut/cpuset.cpus && "
            "echo root > /sys/fs/cgroup/lxc.payload.bb-dut/cpuset.cpus.partition'") in v2
    assert not any("cset" in line for line in v2)
    config = next(line for line in v2 if line.startswith("cat > RUN/setup/bb-dut.conf"))
    assert "lxc.cgroup2.cpuset.cpus = 3" in config and "lxc.cgroup.cpuset" not in config
    # the partition root is set after the container (and its cgroup) exists
    start = next(i for i, line in enumerate(v2) if "lxc-start" in line)
    part = next(i for i, line in enumerate(v2) if "cpuset.cpus.partition" in line)
    assert part > start
    shared = [line for line in v1 if "cset" not in line and "cgroup" not in line and not line.startswith("cat > ")]
    assert shared and all(line in v2 for line in shared)


def test_print_plan_touches_nothing(backend, monkeypatch):
    def refuse(*a, **k):
        raise AssertionError(f"the dry run started a process: {a}")

    monkeypatch.setattr(subprocess, "run", refuse)
    monkeypatch.setattr(subprocess, "Popen", refuse)
    lines = backend.print_plan(Measurement(run_id="r0", cgroup_mode="v1"), run_dir="RUN")
    printed = backend.out.getvalue()
    assert printed.count("\nssh ") + printed.startswith("ssh ") >= 25 and "# 01 loadgen:" in printed
    assert len([line for line in lines if not line.startswith("#")]) == 37
    with pytest.raises(RuntimeError, match="dry-run"):
        backend.execute(backend.plan(Measurement(run_id="r0", run_dir="RUN")), CommandLog())


# --- execute() against a real sshd on 127.0.0.1 --------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def local_sshd(tmp_path):
    """A throw-away sshd (root, 127.0.0.1, free port, temporary host key and authorized key)."""
    if os.geteuid() != 0:
        pytest.skip("needs root: sshd is started as root for the test")
    sshd = shutil.which("sshd") or ("/usr/sbin/sshd" if Path("/usr/sbin/sshd").exists() else None)
    if sshd is None or shutil.which("ssh-keygen") is None or shutil.which("scp") is None:
        pytest.skip("no sshd (Debian: openssh-server) or ssh-keygen/scp")
    d = tmp_path / "sshd"
    d.mkdir(mode=0o700)
    for name in ("host_key", "client_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / name)], check=True)
    (d / "authorized_keys").write_text((d / "client_key.pub").read_text())
    (d / "authorized_keys").chmod(0o600)
    port = _free_port()
    created_run_sshd = not Path("/run/sshd").exists()
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation directory
    cfg = d / "sshd_config"
    cfg.write_text(f"Port {port}\nListenAddress 127.0.0.1\nHostKey {d / 'host_key'}\n"
                   f"AuthorizedKeysFile {d / 'authorized_keys'}\nPermitRootLogin prohibit-password\n"
                   f"PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
                   f"PidFile {d / 'sshd.pid'}\nSubsystem sftp internal-sftp\n")
    proc = subprocess.Popen([sshd, "-D", "-e", "-f", str(cfg)], stderr=open(d / "sshd.log", "w"))
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if proc.poll() is not None:
                pytest.fail(f"sshd exited: {(d / 'sshd.log').read_text()}")
            time.sleep(0.05)
        yield port, d / "client_key"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if created_run_sshd:
            shutil.rmtree("/run/sshd", ignore_errors=True)


def _local_inventory(port: int, key: Path) -> Inventory:
    hosts = []
    for n, role in enumerate(("loadgen", "dut", "timestamper")):
        hosts.append({"name": f"{role}1", "role": role, "address": "127.0.0.1", "port": port,
                      "identity_file": str(key), "cores": [1], "workdir": "/tmp",
                      "interfaces": [{"name": "e0", "pci": f"0000:0{n}:00.0"},
                                     {"name": "e1", "pci": f"0000:0{n}:00.1"}]})
    ssh_options = ["-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
                   "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR"]
    return Inventory.from_dict({"testbed": {"ssh_options": ssh_options}, "hosts": hosts}, source="local-sshd")


@pytest.mark.root
def test_execute_runs_a_plan_over_real_ssh(local_sshd, tmp_path):
    port, key = local_sshd
    remote_dir = tmp_path / "remote"
    remote_dir.mkdir()
    (remote_dir / "data.txt").write_text("measured 42\n")
    backend = SshBackend(_local_inventory(port, key), dry_run=False)
    steps = [Step("run", "dut", ["uname", "-s"], note="kernel"),
             Step("run", "loadgen", ["sh", "-c", f"echo $((6*7)) > {remote_dir}/answer.txt"]),
             Step("fetch", "dut", remote=str(remote_dir), local=str(tmp_path / "run" / "raw" / "dut")),
             Step("run", "dut", ["false"], check=False, teardown=True)]
    m = Measurement(run_id="t", token="abc123", run_dir=str(tmp_path / "run"))
    rec = backend.execute(Plan("testbed", m, steps), CommandLog(tmp_path / "run" / "raw"))
    assert rec["status"] == "complete", rec
    assert [s["exit_code"] for s in rec["steps"]] == [0, 0, 0, 1]
    got = tmp_path / "run" / "raw" / "dut"
    assert (got / "data.txt").read_text() == "measured 42\n" and (got / "answer.txt").read_text() == "42\n"
    log = read_command_log(tmp_path / "run" / "raw")
    assert [r["exit_code"] for r in log] == [0, 0, 0, 1]
    assert log[0]["argv"][:3] == ["ssh", "-p", str(port)] and log[0]["argv"][-1] == "uname -s"
    assert "-i" in log[0]["argv"] and log[2]["argv"][:2] == ["scp", "-r"]
    assert (tmp_path / "run" / "raw" / log[0]["stdout"]).read_text() == "Linux\n"
    assert all(r["seconds"] >= 0 for r in log)


@pytest.mark.root
def test_execute_stops_at_a_failed_step_but_runs_teardown(local_sshd, tmp_path):
    port, key = local_sshd
    backend = SshBackend(_local_inventory(port, key), dry_run=False)
    steps = [Step("run", "dut", ["sh", "-c", "exit 3"]), Step("run", "dut", ["true"], note="skipped"),
             Step("run", "dut", ["true"], check=False, teardown=True)]
    m = Measurement(run_id="t", token="abc123", run_dir=str(tmp_path / "run"))
    rec = backend.execute(Plan("testbed", m, steps), CommandLog(tmp_path / "run" / "raw"))
    assert rec["status"] == "failed" and "exit 3" in rec["error"]
    assert [s["n"] for s in rec["steps"]] == [1, 3]


@pytest.mark.root
def test_ssh_host_start_and_interrupt(local_sshd, tmp_path):
    """start() over ssh: the remote process gets the SIGINT (it prints on SIGINT and ends)."""
    port, key = local_sshd
    host = _local_inventory(port, key).ssh_host("dut")
    cmd = host.start(["sh", "-c", "trap 'echo got-int; exit 0' INT; echo ready; while :; do sleep 0.1; done"])
    assert cmd.wait_for("ready", "stdout", timeout_s=20)
    assert cmd.interrupt_and_wait(timeout_s=20) == 0
    assert "got-int" in cmd.output("stdout")


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


def test_known_hosts_pins_the_host_keys(tmp_path):
    text = EXAMPLE.read_text().replace("[testbed]\n", '[testbed]\nknown_hosts = "pinned_hosts"\n', 1)
    (tmp_path / "inv.toml").write_text(text)
    inv = Inventory.from_toml(tmp_path / "inv.toml")
    pinned = tmp_path / "pinned_hosts"
    assert inv.known_hosts == str(pinned)
    assert inv.connect_options[:4] == ("-o", "StrictHostKeyChecking=yes", "-o", f"UserKnownHostsFile={pinned}")
    first = SshBackend(inv).dry_run_lines(Measurement(run_id="r0"), run_dir="RUN")[0]
    assert first.startswith(f"ssh -p 22 -o StrictHostKeyChecking=yes -o UserKnownHostsFile={pinned} ")
    weak = text.replace('ssh_options = ["-o", "BatchMode=yes"',
                        'ssh_options = ["-o", "StrictHostKeyChecking=accept-new", "-o", "BatchMode=yes"')
    (tmp_path / "weak.toml").write_text(weak)
    with pytest.raises(InventoryError, match=r"weak.toml: \[testbed\].ssh_options: 'StrictHostKeyChecking=accept-new' "
                                             "conflicts with known_hosts"):
        Inventory.from_toml(tmp_path / "weak.toml")


def _kernel_inventory() -> Inventory:
    ifs = {"loadgen": ("lg0", "lg1"), "dut": ("din", "dout"), "timestamper": ("tpa", "tqa")}
    hosts = [{"name": role[:3], "role": role, "address": f"192.0.2.{n + 1}", "cores": [1] if role == "dut" else [0],
              "workdir": "/w", "interfaces": [{"name": i} for i in ifs[role]]} for n, role in enumerate(ifs)]
    return Inventory.from_dict({"hosts": hosts}, source="kernel-hosts")


def test_kernel_interfaces_plan_substitutes_and_says_so():
    """Hosts without PCI ids: bb-loadgen, testpmd on net_af_packet in a cpuset cgroup, tcpdump taps; no DPDK binding."""
    backend = SshBackend(_kernel_inventory(), dry_run=True, out=io.StringIO())
    m = Measurement(run_id="k", cgroup_mode="v1", rate_pps=1000, duration_s=1, token="abc123")
    backend.facts = {"loadgen": {"moongen": "no", "bb_loadgen": "/opt/bb-loadgen"},
                     "dut": {"cset": "", "systemctl": ""}, "timestamper": {}}
    per_host = backend.host_commands(m, run_dir="RUN")
    assert [s["role"] for s in backend.substitutions] == ["loadgen", "dut", "dut", "timestamper"]
    assert "/opt/bb-loadgen" in backend.substitutions[0]["here"]
    assert not any("bb-loadgen" in c for c in per_host["local"] if c.startswith("scp "))  # the host's own is used
    load = "timeout 31 /opt/bb-loadgen --iface lg0 --rate 1000.0 --duration 1"
    assert any(c.startswith(load) for c in per_host["loadgen"])
    dut = " ".join(per_host["dut"])
    assert "--vdev net_af_packet0,iface=din --vdev net_af_packet1,iface=dout" in dut and "--stats-period" in dut
    cg = "/sys/fs/cgroup/cpuset/bbssh-abc123-dut"
    assert f"mkdir {cg}" in dut and f"rmdir {cg}" in dut
    assert "cset" not in dut and "lxc-" not in dut
    assert not any("dpdk-devbind" in c for cs in per_host.values() for c in cs)
    ts = " ".join(per_host["timestamper"])
    assert "tcpdump -i tpa" in ts and "tcpdump -i tqa" in ts and "-Q in udp dst port 5678" in ts
    lines = {c["capability"] for c in backend.capability_lines()}
    assert "loadgen: MoonGen l2-load-latency.lua on DPDK ports" in lines
    # without bb-loadgen on the host, this machine's is copied with scp
    backend.facts["loadgen"]["bb_loadgen"] = ""
    local = backend.host_commands(m, run_dir="RUN")["local"]
    assert any(c.startswith("scp ") and c.endswith("root@192.0.2.1:/w/bin/bb-loadgen") for c in local)
