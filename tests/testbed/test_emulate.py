"""`benchbook testbed emulate` / `down` and the ssh backend run for real on the emulated hosts (root).

One emulation serves the module: ssh with the pinned host key works and any other host key is refused; the
fig3 reproduction runs over ssh end to end; a host whose management link goes down mid-run leaves a failed
record with what the other hosts had; `testbed down` leaves nothing (also after a crash)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
import tomllib
from pathlib import Path

import pytest

from benchbook.paths import REPO_ROOT
from benchbook.testbed import emulate as em
from benchbook.testbed.inventory import Inventory
from benchbook.testbed.plan import Measurement
from benchbook.testbed.ssh import SshBackend
from benchbook.tools.host import CommandLog, read_command_log
from conftest import require_program, require_root

pytestmark = [pytest.mark.root, pytest.mark.slow]
BENCHBOOK = str(REPO_ROOT / ".venv" / "bin" / "benchbook")


def _require() -> None:
    require_root()
    for prog in ("sshd", "ssh", "ssh-keygen", "scp", "dpdk-testpmd", "tcpdump", "nsenter"):
        require_program(prog)
    cg = Path("/sys/fs/cgroup")
    if not (cg / "cpuset" / "cpuset.cpus").exists() and not (cg / "cgroup.controllers").exists():
        pytest.skip("no cgroup cpuset hierarchy for the DuT's isolation recipe")


@pytest.fixture(scope="module")
def emulated(tmp_path_factory):
    _require()
    inv = tmp_path_factory.mktemp("emulated") / "inventory.toml"
    tb = em.emulate(inv)
    try:
        yield tb
    finally:
        em.down(inv)
        assert not any(em.leftovers(tb.token).values())


def test_pinned_host_keys_are_checked_strictly(emulated, tmp_path):
    inv = Inventory.from_toml(emulated.inventory)
    assert inv.known_hosts == str(emulated.known_hosts)
    opts = list(inv.connect_options)
    assert opts[:4] == ["-o", "StrictHostKeyChecking=yes", "-o", f"UserKnownHostsFile={emulated.known_hosts}"]
    assert oct(emulated.client_key.stat().st_mode & 0o777) == "0o600"
    for role in ("loadgen", "dut", "timestamper"):
        r = inv.ssh_host(role).run(["sh", "-c", "echo $HOME; ip -o link show mgmt"], timeout_s=30)
        assert r.stdout.startswith(str(emulated.run_dir / role / "home")) and "mgmt" in r.stdout
    dut = emulated.hosts["dut"].address
    # the same address with another key pinned: refused (no trust-on-first-use, no silent replacement)
    other = tmp_path / "other"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    wrong = tmp_path / "known_hosts"
    wrong.write_text(f"{dut} {' '.join(other.with_suffix('.pub').read_text().split()[:2])}\n")
    (tmp_path / "empty").write_text("")
    for kh, why in ((wrong, "REMOTE HOST IDENTIFICATION HAS CHANGED"), (tmp_path / "empty", "No ED25519 host key")):
        text = (f'[testbed]\nknown_hosts = "{kh}"\n' + emulated.inventory.read_text().split("[testbed]", 1)[1]
                .replace(f'known_hosts = "{emulated.known_hosts}"\n', ""))
        bad = Inventory.from_dict(tomllib.loads(text), source="wrong-key")
        r = bad.ssh_host("dut").run(["true"], check=False, timeout_s=30)
        assert r.exit_code == 255 and "Host key verification failed" in r.stderr and why in r.stderr, r.stderr
    assert "UserKnownHostsFile" in " ".join(opts) and "accept-new" not in " ".join(opts)


def test_dask_ssh_cluster_on_the_emulated_hosts(emulated):
    """benchbook.engine's --ssh-cluster: scheduler and workers started over asyncssh with the client key and the
    pinned known_hosts; one worker per host, each in its host's namespace with that host's HOME."""
    pytest.importorskip("asyncssh")
    from benchbook.engine.cluster import DaskEngine

    engine = DaskEngine(ssh_inventory=emulated.inventory)
    try:
        addresses = {h.address for h in emulated.hosts.values()}
        workers = engine.client.run(lambda: os.environ.get("HOME"))
        assert {w.split("//")[1].rsplit(":", 1)[0] for w in workers} == addresses
        assert sorted(workers.values()) == sorted(str(emulated.run_dir / r / "home") for r in emulated.hosts)
        assert engine.client.submit(lambda x: x * 2, 21).result(timeout=30) == 42
    finally:
        engine.close()


def test_reproduce_fig3_over_ssh(emulated, tmp_path):
    t0 = time.monotonic()
    r = subprocess.run([BENCHBOOK, "reproduce", "daichendt-iitm23-fig3", "--runs-dir", str(tmp_path),
                        "-p", "backend=testbed", "-p", f"inventory={emulated.inventory}", "-p", "repetitions=1",
                        "-p", "duration_s=1"], capture_output=True, text=True, timeout=240)
    assert r.returncode in (0, 4), r.stdout[-3000:] + r.stderr[-3000:]
    run = next((tmp_path / "daichendt-iitm23-fig3").iterdir())
    point = run / "raw" / "v1" / "rate10000" / "rep0"
    rec = json.loads((point / "point.json").read_text())
    assert rec["status"] == "complete", rec.get("error")
    raw = point / "raw"
    sent = json.loads((raw / "loadgen" / "loadgen.json").read_text())["sent"]
    assert sent == 10000
    assert "packet forwarding - ports=2" in (raw / "dut" / "testpmd.log").read_text()
    assert (raw / "dut" / "isolation.txt").read_text().startswith("cpuset.cpus=")
    assert (raw / "timestamper" / "pre.pcap").stat().st_size > 24 and (raw / "timestamper" / "post.pcap").exists()
    counts = rec["analysis"]["counts"]
    assert counts["pre"] == rec["captures"]["pre"]["captured"] and 0 < counts["matched"] <= sent
    log = read_command_log(run / "raw")
    targets = {a.split("@", 1)[1] for c in log for a in c["argv"] if a.startswith("root@")}
    assert {h.address for h in emulated.hosts.values()} <= targets
    assert all("StrictHostKeyChecking=yes" in c["argv"] for c in log if c["argv"][0] in ("ssh", "scp"))
    caps = json.loads((run / "capabilities.json").read_text())
    subs = {c["capability"].split(":")[0] for c in caps if c["status"] == "substituted"}
    assert {"loadgen", "dut", "timestamper"} <= subs
    assert any("bb-loadgen" in c["detail"] for c in caps)
    assert time.monotonic() - t0 < 200
    assert not list(Path("/sys/fs/cgroup/cpuset").glob("bbssh-*")), "the DuT's cgroup was not removed"


def test_host_dropping_mid_run_leaves_a_failed_record(emulated, tmp_path):
    backend = SshBackend(emulated.inventory, dry_run=False)
    log = CommandLog(tmp_path / "run" / "raw")
    ts_link = emulated.hosts["timestamper"].mgmt_link
    dropped = threading.Event()

    def drop_when_loading() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if any(r.what.startswith("bb-loadgen") for r in log.records):
                subprocess.run(["ip", "link", "set", ts_link, "down"], check=True)
                dropped.set()
                return
            time.sleep(0.05)

    watcher = threading.Thread(target=drop_when_loading, daemon=True)
    watcher.start()
    try:
        rec = backend.execute(backend.plan(Measurement(run_id="drop", cgroup_mode="v1", rate_pps=5000, duration_s=2,
                                                       token="d0d0d0", run_dir=str(tmp_path / "run"))), log)
    finally:
        watcher.join(timeout=5)
        subprocess.run(["ip", "link", "set", ts_link, "up"], check=False)
    assert dropped.is_set()
    assert rec["status"] == "failed"
    assert rec["error"] and emulated.hosts["timestamper"].address in rec["error"]
    raw = tmp_path / "run" / "raw"
    assert json.loads((raw / "loadgen" / "loadgen.json").read_text())["sent"] > 0
    assert (raw / "dut" / "testpmd.log").exists() and not (raw / "timestamper").exists()
    assert any("timestamper" in x for x in rec["not_collected"])
    assert (raw / "commands.jsonl").exists()
    teardown = [s for s in rec["steps"] if s["role"] == "dut" and "cgroup" in s["note"]]
    assert teardown and teardown[-1]["exit_code"] == 0
    assert not list(Path("/sys/fs/cgroup/cpuset").glob("bbssh-*"))


def test_down_leaves_nothing_and_is_idempotent(emulated):
    r = subprocess.run([BENCHBOOK, "testbed", "down", str(emulated.inventory)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0 and "removed netns" in r.stdout, r.stderr
    assert em.leftovers(emulated.token) == {"netns": [], "links": [], "processes": [], "files": []}
    assert not emulated.inventory.exists()
    r = subprocess.run([BENCHBOOK, "testbed", "down", str(emulated.inventory)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0 and "nothing to remove" in r.stdout


def test_down_after_a_crash(tmp_path):
    """The sshds killed (as when the machine's run crashed): `down --stale` still removes everything."""
    _require()
    tb = em.emulate(tmp_path / "inv.toml")
    try:
        for pid, _start, _what in json.loads((em.run_state.STATE_DIR / f"{tb.token}.json").read_text())["pids"]:
            os.kill(pid, signal.SIGKILL)
        time.sleep(0.2)
        r = subprocess.run([BENCHBOOK, "testbed", "down", "--stale"], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and f"netns bb-{tb.token}-dut" in r.stdout, r.stdout + r.stderr
        assert em.leftovers(tb.token) == {"netns": [], "links": [], "processes": [], "files": []}
    finally:
        em.down_token(tb.token)
