"""`benchbook testbed emulate` / `down` and the ssh backend run for real on the emulated hosts (root).

One emulation serves the module: ssh with the pinned host key works and any other host key is refused; the
fig3 reproduction runs over ssh end to end; the same experiment run on the local backend and over ssh runs
exactly the commands its dry run printed; a host whose management link goes down mid-run leaves a failed
record with what the other hosts had; `testbed down` leaves nothing (also after a crash)."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import threading
import time
import tomllib
from pathlib import Path

import pytest

from benchbook.engine.cluster import DaskEngine
from benchbook.experiment import cgroup_latency as lp
from benchbook.paths import REPO_ROOT
from benchbook.testbed import emulate as em
from benchbook.testbed.inventory import Inventory
from benchbook.testbed.local import JOINS
from benchbook.testbed.plan import DRY_RUN_DIR, DRY_RUN_TOKEN, RUNTIME_VALUES, Measurement
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
    point = run / "raw" / "v1-rate10000" / "rep1"
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
    log = read_command_log(point)   # the run's own command log
    targets = {a.split("@", 1)[1] for c in log for a in c["argv"] if a.startswith("root@")}
    assert {h.address for h in emulated.hosts.values()} <= targets
    assert all("StrictHostKeyChecking=yes" in c["argv"] for c in log if c["argv"][0] in ("ssh", "scp"))
    caps = json.loads((run / "capabilities.json").read_text())
    subs = {c["capability"].split(":")[0] for c in caps if c["status"] == "substituted"}
    assert {"loadgen", "dut", "timestamper"} <= subs
    assert any("bb-loadgen" in c["detail"] for c in caps)
    assert time.monotonic() - t0 < 200
    assert not list(Path("/sys/fs/cgroup/cpuset").glob("bbssh-*")), "the DuT's cgroup was not removed"


def _printed_commands(dry_run: Path) -> dict[str, list[str]]:
    """Per host, the command lines a dry run printed: comments left out, a file the plan writes here (a heredoc
    `cat > FILE <<'EOF' ... EOF`: Python writes it, no command runs) left out, the cgroup a started process
    enters (a trailing comment) left out."""
    out: dict[str, list[str]] = {}
    for host, lines in lp.read_dry_run(dry_run).items():
        keep, in_file = [], False
        for line in lines:
            if in_file:
                in_file = line != "EOF"
            elif line.startswith("cat > ") and line.endswith("<<'EOF'"):
                in_file = True
            elif not line.startswith("#"):
                keep.append(line.split(JOINS)[0])
        out[host] = keep
    return out


def _executed_commands(run: Path, point: str, token: str) -> dict[str, list[str]]:
    """Per host, the command lines of the point's commands.jsonl in the order they started (a remote host: what
    its shell ran; this machine's scp: the whole line), the run token and the output directory written as a dry
    run writes them. The probe of the hosts (read-only, once per experiment, before any plan) is not a step."""
    out: dict[str, list[str]] = {}
    for rec in sorted(read_command_log(run / point), key=lambda r: r["n"]):
        if rec["what"].startswith("probe "):
            continue
        argv = rec["argv"]
        host, line = (rec["host"], argv[-1]) if argv[0] == "ssh" else \
            ("local" if argv[0] == "scp" else rec["host"], shlex.join(argv))
        out.setdefault(host, []).append(line.replace(str(run), DRY_RUN_DIR).replace(token, DRY_RUN_TOKEN))
    return out


def _same_modulo_runtime_values(printed: dict[str, list[str]], executed: dict[str, list[str]]) -> None:
    """Every host ran exactly the printed lines, in order; a run-time placeholder (DUT_PID, ...) stands for one
    word (a pid, a MAC, a cgroup setting)."""
    names = "|".join(RUNTIME_VALUES)
    assert {h for h, c in printed.items() if c} == set(executed)
    for host, lines in executed.items():
        assert len(lines) == len(printed[host]), (host, len(lines), len(printed[host]))
        for got, want in zip(lines, printed[host], strict=True):
            pattern = re.sub(rf"\b({names})\b", r"[^\\s'\"]+", re.escape(want))
            assert re.fullmatch(pattern, got), (host, want, got)


def test_executed_commands_are_the_printed_plan_on_both_backends(emulated, tmp_path):
    """The same experiment on the local backend (namespaces here) and on the emulated hosts over ssh: what each
    host ran (commands.jsonl) is what the dry run printed (dry-run.txt), up to the run token, the output
    directory and the documented run-time values."""
    common = {"rates_pps": [5000], "repetitions": 1, "isolation_modes": ["v1"], "duration_s": 1.0, "perf_repeats": 1,
              "settle_s": 0.3}
    for name, extra in (("local", {}), ("testbed", {"inventory": str(emulated.inventory), "probe": True})):
        dry, run = tmp_path / f"{name}-dry", tmp_path / name
        lp.run_experiment(lp.ExperimentParams(backend=name, dry_run=True, **common, **extra), dry)
        result = lp.run_experiment(lp.ExperimentParams(backend=name, **common, **extra), run)
        (point,) = result["points"]
        assert point["status"] == "complete", point.get("error")
        token = point["execution"]["measurement"]["token"] if name == "testbed" else point["testbed"]["token"]
        printed, executed = _printed_commands(dry / lp.DRY_RUN_FILE), _executed_commands(run, point["dir"], token)
        _same_modulo_runtime_values(printed, executed)
        assert sum(len(c) for c in executed.values()) > 20, name
        # the point is one run of the repetition runner, with its own record
        summary = json.loads((run / "repetitions.json").read_text())
        assert summary["plan"]["seed"] == result["repetitions"]["seed"]
        assert [s["dir"] for s in summary["order"]] == [point["dir"]] == ["raw/v1-rate5000/rep1"]
        rec = json.loads((run / point["dir"] / "repetition.json").read_text())
        assert rec["status"] == "complete" and rec["valid"] is True
        assert {"loss_fraction", "p50_latency", "max_latency"} <= {s["name"] for s in rec["statistics"]}
        assert any("tcpdump" in c for cs in executed.values() for c in cs)


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
