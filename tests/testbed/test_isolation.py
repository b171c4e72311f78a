"""cgroup isolation recipes: v1 applied (read back) and restored; v2 detected, never faked."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchbook.testbed.cleanup import remove_cgroup, sweep_leftovers
from benchbook.testbed.isolation import NotRunnable, isolation, mode_status, v2_cpuset_status
from benchbook.testbed.names import new_token
from benchbook.tools import cgroups as cg
from conftest import require_root


def _v1_root() -> Path:
    require_root()
    root = cg.v1_hierarchy("cpuset")
    if root is None:
        pytest.skip("no cgroup v1 cpuset hierarchy on this host")
    if len(cg.online_cpus()) < 2:
        pytest.skip("needs two CPUs")
    return root


def _my_cpuset() -> str:
    return Path("/proc/self/cpuset").read_text().strip()


@pytest.mark.root
def test_v1_recipe_applied_and_restored():
    root = _v1_root()
    before_lb = cg.read(root / "cpuset.sched_load_balance")
    before_dirs = sorted(p.name for p in root.iterdir() if p.is_dir())
    start_cpuset = _my_cpuset()
    token = new_token()
    with isolation("v1", token, dut_cpu=1) as info:
        r = info.report
        assert r["dut_sched_load_balance"] == "0" and r["root_sched_load_balance"] == "0"
        assert r["dut_cpus"] == "1" and r["housekeeping_cpus"] == "0"
        assert r["tasks_moved"] > 0
        assert r["tasks_verified_in_housekeeping"] + r["tasks_exited_since_move"] == r["tasks_moved"]
        assert r["left_in_root_user_tasks"] == 0, "every user task of the root cpuset must have moved"
        assert r["init_kept_in_root"] == 1
        if start_cpuset == "/":
            assert _my_cpuset() == f"/bb-{token}-hk", "this process is a movable task: it is in housekeeping"
            assert os.sched_getaffinity(0) == {0}
        assert (root / f"bb-{token}-dut").is_dir() and info.dut_procs_file.exists()
    assert cg.read(root / "cpuset.sched_load_balance") == before_lb
    assert sorted(p.name for p in root.iterdir() if p.is_dir()) == before_dirs
    assert _my_cpuset() == start_cpuset
    assert not (Path("/run/benchbook") / f"{token}.json").exists()
    assert info.report["restore_problems"] == []


@pytest.mark.root
def test_v1_restored_when_body_raises():
    root = _v1_root()
    before_lb = cg.read(root / "cpuset.sched_load_balance")
    token = new_token()
    with pytest.raises(KeyError):
        with isolation("v1", token):
            raise KeyError("inside")
    assert cg.read(root / "cpuset.sched_load_balance") == before_lb
    assert not any(token in p.name for p in root.iterdir())


@pytest.mark.root
def test_v2_detected_not_faked():
    require_root()
    ok, why = v2_cpuset_status()
    if len(cg.online_cpus()) < 2:
        assert mode_status("v2") == (False, "needs at least two online CPUs")
    else:
        assert mode_status("v2") == (ok, why)
    if ok:
        pytest.skip("this host has the v2 cpuset controller; the not-runnable path does not apply")
    assert "cpuset" in why
    with pytest.raises(NotRunnable, match="cpuset"):
        with isolation("v2", new_token()):
            pass
    assert not any(p.name.startswith("bb-") for p in (cg.v2_root() or Path("/nonexistent")).glob("bb-*"))


@pytest.mark.root
def test_v2_recipe_applied_and_restored():
    """Where cgroup v2 has the cpuset controller: the DuT cgroup becomes a root partition on the DuT CPU,
    and afterwards it is gone and the root's controllers are as before."""
    require_root()
    ok, why = v2_cpuset_status()
    if not ok:
        pytest.skip(f"cgroup v2 has no usable cpuset controller on this host: {why}")
    if len(cg.online_cpus()) < 2:
        pytest.skip("needs two CPUs")
    root = cg.v2_root()
    subtree_before = cg.read(root / "cgroup.subtree_control")
    token = new_token()
    with isolation("v2", token, dut_cpu=1) as info:
        d = Path(info.report["dut_cgroup"])
        assert d.is_dir() and d.parent == root
        assert cg.read(d / "cpuset.cpus") == "1"
        assert info.report["partition"].startswith("root"), info.report
        assert cg.read(d / "cpuset.cpus.partition").startswith("root")
    assert not d.exists()
    assert not any(token in p.name for p in root.iterdir())
    assert cg.read(root / "cgroup.subtree_control") == subtree_before
    assert not (Path("/run/benchbook") / f"{token}.json").exists()


def test_unknown_mode():
    with pytest.raises(NotRunnable, match="unknown isolation mode"):
        isolation("v3", new_token())
    assert mode_status("v3")[0] is False


@pytest.mark.root
def test_sigkilled_recipe_is_undone_by_the_sweep():
    root = _v1_root()
    before_lb = cg.read(root / "cpuset.sched_load_balance")
    code = ("import time\n"
            "from benchbook.testbed.isolation import isolation\n"
            "from benchbook.testbed.names import new_token\n"
            "with isolation('v1', new_token()) as info:\n"
            "    print(info.report['housekeeping_cgroup'], flush=True)\n"
            "    time.sleep(300)\n")
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    hk = Path(child.stdout.readline().strip())
    assert hk.is_dir() and cg.read(root / "cpuset.sched_load_balance") == "0"
    child.kill()
    child.wait()
    assert hk.is_dir(), "SIGKILL cannot undo: the recipe is still applied"
    rep = sweep_leftovers()
    assert not hk.exists() and not (root / hk.name.replace("-hk", "-dut")).exists()
    assert cg.read(root / "cpuset.sched_load_balance") == before_lb
    assert any("sched_load_balance" in r for r in rep.removed)
    assert not _my_cpuset().startswith(f"/{hk.name}"), "moved tasks are back in the root cpuset"


def _child_cpuset(root: Path, role: str) -> Path:
    """A benchbook-named cpuset under the root, on the root's CPUs and memory nodes (removed by the test)."""
    d = root / f"bb-{new_token()}-{role}"
    d.mkdir()
    try:
        (d / "cpuset.cpus").write_text((root / "cpuset.cpus").read_text())
        (d / "cpuset.mems").write_text((root / "cpuset.mems").read_text())
    except OSError:
        d.rmdir()
        raise
    return d


def test_remove_retries_while_a_forking_task_keeps_the_cgroup_busy():
    """A task forked inside a cgroup after its tasks were moved out keeps it busy (rmdir: EBUSY); remove_argv
    moves and removes again until it is empty. Here a shell in the cgroup forks a short-lived child every
    10 ms, so a single move-then-rmdir races with it; the step must still remove the cgroup. A cgroup that can
    never empty (a child cgroup in it) ends in rmdir's own error after the attempts."""
    root = _v1_root()
    d = _child_cpuset(root, "rm")
    try:
        forker = subprocess.Popen(["sh", "-c", f"echo $$ > {d}/tasks; while :; do /bin/true; sleep 0.01; done"])
        try:
            deadline = time.monotonic() + 5
            while not (d / "tasks").read_text().split() and time.monotonic() < deadline:
                time.sleep(0.01)
            assert (d / "tasks").read_text().split(), "the forking shell never entered the cgroup"
            done = subprocess.run(cg.remove_argv(d, root), capture_output=True, text=True, timeout=30)
            assert done.returncode == 0, done.stderr
            assert not d.exists()
        finally:
            forker.kill()
            forker.wait()
        busy = root / f"bb-{new_token()}-rm"
        (busy / "child").mkdir(parents=True)
        try:
            failed = subprocess.run(cg.remove_argv(busy, root, attempts=3), capture_output=True, text=True, timeout=30)
            assert failed.returncode != 0 and "Device or resource busy" in failed.stderr
        finally:
            (busy / "child").rmdir()
            busy.rmdir()
    finally:
        if d.exists():
            subprocess.run(cg.remove_argv(d, root), timeout=30)


@pytest.mark.root
def test_the_sweep_removes_a_cgroup_that_a_forking_task_keeps_busy():
    """The sweep's own removal (cleanup.remove_cgroup) races with tasks forked inside the cgroup as the recipes'
    teardown does: a SIGKILLed recipe leaves every task of the machine in its housekeeping cpuset, and one
    move-then-rmdir failed with EBUSY when any of them forked meanwhile (seen in a fresh-clone `make test`).
    Here eight shells in the cgroup start a 50 ms child every millisecond or so (one pass lost this race);
    the sweep must still remove the cgroup."""
    root = _v1_root()
    d = _child_cpuset(root, "hk")
    try:
        forkers = [subprocess.Popen(["sh", "-c", f"echo $$ > {d}/tasks; while :; do sleep 0.05 & sleep 0.001; done"])
                   for _ in range(8)]
        try:
            deadline = time.monotonic() + 5
            while len(set((d / "tasks").read_text().split()) & {str(f.pid) for f in forkers}) < len(forkers):
                assert time.monotonic() < deadline, "the forking shells never entered the cgroup"
                time.sleep(0.01)
            remove_cgroup(d)
            assert not d.exists()
        finally:
            for f in forkers:
                f.kill()
                f.wait()
    finally:
        if d.exists():
            subprocess.run(cg.remove_argv(d, root), timeout=30)
