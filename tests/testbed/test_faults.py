"""Faults during a latency measurement on the local testbed: the load generator or the DuT killed mid-run,
the capture directory full, and `benchbook reproduce` killed with SIGKILL while it measures.

Each must end in a record that names the cause, keep the raw data measured so far, and leave nothing of the
run on the host (namespaces, links, cgroups, DPDK files, processes, state file); the SIGKILL case through the
cleanup of dead runs' tokens and the next run of the experiment."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from benchbook.commands.reproduce import EXIT_FAILED, EXIT_REPRODUCED
from benchbook.experiment import cgroup_latency as lp
from benchbook.experiment import record as rr
from benchbook.experiment.record import read_record
from benchbook.paths import REPO_ROOT
from benchbook.testbed import state as run_state
from benchbook.testbed.cleanup import leftovers, sweep_leftovers
from benchbook.tools.host import read_command_log
from testbed.test_e2e import _empty_leftovers, _needs

ENTRY = "daichendt-iitm23-fig3"
RATE_PPS = 2000


def _wait(cond: Callable[[], Any], timeout_s: float, what: str) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        got = cond()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")


def _parent_pid(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat[stat.rfind(")") + 2:].split()[1])


def _token_owned_by(owner: Callable[[int], bool], with_pid_of: str | None = None) -> tuple[str, dict] | None:
    """(token, state) of the run whose owner process satisfies ``owner`` (optionally once it tracks a
    process called ``with_pid_of``)."""
    for token, data in run_state.load_all().items():
        if owner(int(data.get("owner_pid", -1))) and (
                with_pid_of is None or any(w == with_pid_of for _, _, w in data.get("pids", []))):
            return token, data
    return None


def _pcap_with_packets(root: Path) -> Path | None:
    """The point's pre.pcap once it holds packets (24 B header + at least 10 records)."""
    for p in root.glob(f"**/raw/*-rate{RATE_PPS}/rep1/pre.pcap"):
        if p.stat().st_size > 24 + 10 * 76:
            return p
    return None


def _processes_of(token: str) -> list[str]:
    """Command lines of live processes naming the run's namespaces or interfaces."""
    found = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if f"bb-{token}-" in cmd:
                found.append(f"{d.name}: {cmd}")
    return found


def _assert_nothing_left(token: str) -> None:
    assert leftovers({token}) == _empty_leftovers()
    assert _processes_of(token) == []
    assert not (run_state.STATE_DIR / f"{token}.json").exists(), "the run's state file is removed"


def _loadgen_pid(token: str) -> int | None:
    r = subprocess.run(["ip", "netns", "pids", f"bb-{token}-lg"], capture_output=True, text=True)
    for pid in r.stdout.split():
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == "bb-loadgen":
                return int(pid)
        except OSError:
            continue
    return None


def _kill_in_background(find: Callable[[], int | None], timeout_s: float = 60.0) -> dict[str, Any]:
    """SIGKILL the pid ``find`` returns once it returns one (unless out["stop"] is set first); what happened
    lands in the returned dict ``out``."""
    out: dict[str, Any] = {"stop": threading.Event()}

    def run() -> None:
        try:
            out["pid"] = _wait(lambda: out["stop"].is_set() or find(), timeout_s, "the process to kill")
            if out["pid"] is True:
                raise AssertionError("the run ended before the process to kill was found")
            os.kill(out["pid"], signal.SIGKILL)
        except BaseException as exc:  # reported by the test
            out["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    out["thread"] = t
    return out


def _params(**kw: Any):
    return lp.ExperimentParams(**{"rates_pps": [RATE_PPS], "repetitions": 1, "isolation_modes": ["none"],
                                  "perf_repeats": 1, "settle_s": 0.2, **kw})


def _check_failed_point(out: Path, token: str, *causes: str) -> dict[str, Any]:
    """The point is failed with a reason naming ``causes`` in latency-points.json and metrics.json;
    the pre capture measured before the fault is kept."""
    result = json.loads((out / "latency-points.json").read_text())
    (p,) = result["points"]
    assert p["status"] == "failed" and all(c in p["error"] for c in causes), p.get("error")
    m = json.loads((out / "metrics.json").read_text())["latency_points"]
    assert m["points"][0]["status"] == "failed" and all(c in m["points"][0]["reason"] for c in causes)
    assert m["leftovers_after"] == _empty_leftovers()
    pre = out / p["dir"] / "pre.pcap"
    assert pre.is_file() and pre.stat().st_size > 24 + 10 * 76, "raw data measured before the fault is kept"
    assert (out / p["dir"] / "post.pcap").is_file()
    _assert_nothing_left(token)
    return p


@pytest.mark.root
def test_loadgen_killed_mid_run(tmp_path):
    _needs("dpdk-testpmd")

    mine = os.getpid()

    def loadgen_sending() -> int | None:
        found = _token_owned_by(lambda pid: pid == mine, "dpdk-testpmd")
        return _loadgen_pid(found[0]) if found and _pcap_with_packets(tmp_path) else None

    killer = _kill_in_background(loadgen_sending)
    try:
        with pytest.raises(lp.MeasurementFailed) as err:
            lp.run_experiment(_params(duration_s=4.0), tmp_path)
    finally:
        killer["stop"].set()
        killer["thread"].join(5)
    assert "error" not in killer, killer.get("error")
    cause = "bb-loadgen failed (killed by signal SIGKILL (9))"
    assert cause in str(err.value) and "none @ 2000 pkt/s repetition 1" in str(err.value)
    token = json.loads((tmp_path / "latency-points.json").read_text())["points"][0]["testbed"]["token"]
    p = _check_failed_point(tmp_path, token, cause)
    assert json.loads((tmp_path / p["dir"] / "point.json").read_text())["error"] == p["error"]
    log = {r["what"]: r for r in read_command_log(tmp_path / p["dir"])}   # the run's own command log
    assert log["bb-loadgen"]["exit_code"] == -signal.SIGKILL
    assert log["dpdk-testpmd"]["exit_code"] == 0, "the DuT was stopped as usual after the load generator died"


class _TokenWatch:
    """The run tokens this process owns while a block runs (their state files go at teardown)."""

    def __enter__(self) -> set[str]:
        self.tokens: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()
        return self.tokens

    def _watch(self) -> None:
        mine = os.getpid()
        while not self._stop.wait(0.02):
            found = _token_owned_by(lambda pid: pid == mine)
            if found:
                self.tokens.add(found[0])

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)


@pytest.mark.root
@pytest.mark.parametrize("full", ["capture directory", "output directory"])
def test_disk_full(tmp_path, full):
    """tcpdump 4.99 counts packets it could not write as captured and exits 0: the full file system is what
    tells. A 1 MiB tmpfs is mounted as the capture directory (raw/none-rate2000, the arm's: the experiment's
    other records are on the normal disk and name the cause) or as the whole output directory (then nothing can
    be recorded there: the error names the file that could not be written); either way the teardown completes
    and the capture is kept."""
    _needs()

    out = tmp_path / "out"
    mnt = out / "raw" / f"none-rate{RATE_PPS}" if full == "capture directory" else out
    mnt.mkdir(parents=True)
    thread_errors: list[Any] = []
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "bb-faults-test", str(mnt)], check=True)
    hook, threading.excepthook = threading.excepthook, thread_errors.append
    try:
        with _TokenWatch() as tokens, pytest.raises((lp.MeasurementFailed, OSError)) as err:
            lp.run_experiment(_params(duration_s=4.0, dut_kind="ip-forward"), out)
        threading.excepthook = hook
        pre = out / "raw" / f"none-rate{RATE_PPS}" / "rep1" / "pre.pcap"
        assert pre.stat().st_size > 24 + 10 * 76, "the capture written before the disk filled is kept"
        if full == "capture directory":
            assert isinstance(err.value, lp.MeasurementFailed) and "No space left on device" in str(err.value)
            (token,) = tokens
            p = _check_failed_point(out, token, f"{pre}: [Errno 28] No space left on device")
            assert p["point_file_error"] == f"{out / p['dir'] / 'point.json'}: No space left on device"
            assert p["captures"]["pre"]["fs_free_bytes"] < 64 * 1024
        else:
            assert isinstance(err.value, OSError) and err.value.errno == errno.ENOSPC
            assert err.value.filename == str(out / "latency-points.json")
        assert thread_errors == [], "no thread of the command log died on the full disk"
        assert len(tokens) == 1
        _assert_nothing_left(*tokens)
    finally:
        threading.excepthook = hook
        subprocess.run(["umount", str(mnt)], check=True)
    assert str(mnt) not in Path("/proc/self/mounts").read_text()


def _reproduce(runs: Path, *args: str) -> subprocess.Popen:
    env = dict(os.environ, BENCHBOOK_RUNS=str(runs))
    cmd = [sys.executable, "-m", "benchbook.cli", "reproduce", ENTRY, "-p", "repetitions=1",
           "-p", f"rates_pps=[{RATE_PPS}]", "-p", 'isolation_modes=["none"]', *args]
    return subprocess.Popen(cmd, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _run_dir(runs: Path) -> Path:
    (d,) = (runs / ENTRY).iterdir()
    return d


@pytest.mark.root
@pytest.mark.slow
def test_dut_killed_mid_run_fails_the_reproduction(tmp_path):
    _needs("dpdk-testpmd")

    proc = _reproduce(tmp_path, "-p", "duration_s=3")
    try:
        found = _wait(lambda: _pcap_with_packets(tmp_path) and _token_owned_by(
            lambda pid: _parent_pid(pid) == proc.pid, "dpdk-testpmd"), 90, "the kernel's point to forward")
        token, state = found
        (testpmd,) = [pid for pid, _, what in state["pids"] if what == "dpdk-testpmd"]
        os.kill(testpmd, signal.SIGKILL)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == EXIT_FAILED, out[-3000:]
    run = _run_dir(tmp_path)
    rec = read_record(run)
    cause = f"dpdk-testpmd (pid {testpmd}) ended during the measurement (killed by signal SIGKILL (9))"
    assert rec["status"] == "failed" and "MeasurementFailed" in rec["error"], rec["error"]
    assert f"{cause}; its output: {run}/raw/none-rate{RATE_PPS}/rep1/cmd/" in rec["error"], rec["error"]  # its log
    assert cause in " ".join(out.split()), "reproduce prints the reason"
    _check_failed_point(run, token, cause)
    assert any(o["path"] == "raw/none-rate2000/rep1/pre.pcap" for o in rec["outputs"]), "raw data kept and hashed"


@pytest.mark.root
@pytest.mark.slow
def test_sigkill_of_reproduce_is_cleaned_up_and_recorded_interrupted(tmp_path):
    """SIGKILL of `benchbook reproduce` while it measures: the kernel it started exits (ipykernel notices its
    parent is gone), nothing runs a teardown. The cleanup of dead runs' tokens removes what the run left, and
    the next reproduce of the entry records the killed run as interrupted."""
    _needs("dpdk-testpmd")

    proc = _reproduce(tmp_path, "-p", "duration_s=30")
    try:
        token, _ = _wait(lambda: _pcap_with_packets(tmp_path) and _token_owned_by(
            lambda pid: _parent_pid(pid) == proc.pid, "dpdk-testpmd"), 90, "the kernel's point to measure")
        kernels = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    _wait(lambda: not any(Path(f"/proc/{k}").exists() for k in kernels), 30, "the orphaned kernel to exit")
    run = _run_dir(tmp_path)
    assert read_record(run)["status"] == "running", "nothing could finish the record"
    sweep_leftovers()  # what the next measurement on this host does first (the run's tcpdumps wrote until now)
    _assert_nothing_left(token)
    pre = run / "raw" / f"none-rate{RATE_PPS}" / "rep1" / "pre.pcap"
    size = pre.stat().st_size

    nxt = _reproduce(tmp_path, "--dry-run")
    out, _ = nxt.communicate(timeout=120)
    assert nxt.returncode == EXIT_REPRODUCED, out[-3000:]
    rec = read_record(run)
    assert rec["status"] == "interrupted", rec
    assert f"pid {proc.pid}" in rec["error"] and "SIGKILL" in rec["error"]
    assert pre.stat().st_size == size > 24, "the raw capture is kept as the killed run left it"
    assert any(o["path"] == "raw/none-rate2000/rep1/pre.pcap" and o["bytes"] == size for o in rec["outputs"])
    (new,) = [d for d in (tmp_path / ENTRY).iterdir() if d != run]
    assert any(run.name in w and "interrupted" in w for w in read_record(new)["warnings"])


def test_mark_abandoned_only_touches_runs_whose_owner_is_gone(tmp_path):
    """A "running" record whose owner process ended becomes "interrupted"; one whose owner lives, or that
    another host wrote, stays "running"."""
    gone = subprocess.Popen(["true"])
    gone.wait()
    owners = {"gone": {**rr.record_owner(), "pid": gone.pid},
              "alive": rr.record_owner(),
              "elsewhere": {**rr.record_owner(), "host": "another-host.invalid", "pid": gone.pid}}
    for name, owner in owners.items():
        (tmp_path / name / "raw").mkdir(parents=True)
        (tmp_path / name / "raw" / "pre.pcap").write_bytes(b"x" * 100)
        rr.write_record(tmp_path / name, {"schema_version": 1, "id": name, "experiment": "e", "notebook": "n",
                                          "parameters": {}, "repetition": 0, "status": "running",
                                          "start": "2026-11-22T19:00:00.000+00:00", "end": None, "owner": owner})
    assert rr.mark_abandoned(tmp_path, noticed_by="the test") == [tmp_path / "gone"]
    rec = rr.read_record(tmp_path / "gone")
    assert rec["status"] == "interrupted" and f"pid {gone.pid}" in rec["error"]
    assert rec["outputs"] == [{"path": "raw/pre.pcap", "sha256": hashlib.sha256(b"x" * 100).hexdigest(), "bytes": 100}]
    assert [rr.read_record(tmp_path / n)["status"] for n in ("alive", "elsewhere")] == ["running", "running"]
