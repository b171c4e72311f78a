"""The engines on a real Dask LocalCluster: faults (a SIGKILLed worker, a task that kills every worker), the
rules (measurements never run twice, finished tasks never recomputed, no partial directory), versions, TLS,
and `benchbook latency --pairs` giving the same bytes on both engines."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from distributed.security import Security

from benchbook.capture.synth import LatencyModel, make_capture_pair
from benchbook.engine import EngineError, Task, engine_spec, open_engine, run_installing
from benchbook.engine.cluster import DaskEngine, known_hosts_file, ssh_cluster_arguments
from benchbook.engine.local import LocalEngine, environment_versions
from benchbook.engine.options import TLS_ENV, security_from_env
from engine_tasks import exit_worker, write_slowly

REPO = Path(__file__).resolve().parents[2]
BENCHBOOK = [sys.executable, "-m", "benchbook.cli"]


def starts(log: Path) -> list[tuple[str, int]]:
    if not log.exists():
        return []
    return [(k, int(p)) for k, p in (line.split() for line in log.read_text().splitlines())]


def kill_when_started(log: Path, key: str, timeout_s: float = 60.0) -> threading.Thread:
    """SIGKILL the process that runs `key` as soon as the log shows it started."""
    def watch() -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for k, pid in starts(log):
                if k == key:
                    time.sleep(0.3)  # inside its sleep: half its output written
                    os.kill(pid, signal.SIGKILL)
                    return
            time.sleep(0.05)

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    return t


@pytest.fixture(scope="module")
def cluster():
    """Two single-threaded worker processes; one worker loss per task is tolerated, the second ends it."""
    eng = DaskEngine(n_workers=2, allowed_failures=1)
    try:
        yield eng
    finally:
        eng.close()


def no_attempts(root: Path) -> list[str]:
    return [p.name for p in root.iterdir() if ".attempt-" in p.name]


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_sigkilled_worker_analysis_reruns_once_and_finished_tasks_are_not_recomputed(cluster, tmp_path):
    out, log = tmp_path / "out", tmp_path / "starts.log"
    keys = ["victim"] + [f"k{i}" for i in range(5)]
    finals = {k: out / k for k in keys}
    tasks = [Task(k, write_slowly, (str(finals[k]), str(log), k, 3.0 if k == "victim" else 0.2)) for k in keys]
    killer = kill_when_started(log, "victim")
    outcomes = {o.key: o for o in run_installing(cluster, tasks, finals, ("first.txt", "done.txt"))}
    killer.join(1)
    assert all(o.ok for o in outcomes.values()), {k: o.error for k, o in outcomes.items()}
    for k in keys:  # complete exactly once: each final holds one whole attempt
        assert sorted(p.name for p in finals[k].iterdir()) == ["done.txt", "first.txt"]
        assert (finals[k] / "done.txt").read_text() == k
    assert no_attempts(out) == []
    started = [k for k, _ in starts(log)]
    assert started.count("victim") == 2  # killed mid-task, run again on a live worker
    assert all(started.count(k) == 1 for k in keys[1:]), started  # finished tasks were not recomputed
    assert len({pid for k, pid in starts(log) if k == "victim"}) == 2


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_sigkilled_worker_measurement_is_not_started_again(cluster, tmp_path):
    out, log = tmp_path / "out", tmp_path / "starts.log"
    keys = ["victim", "other"]
    finals = {k: out / k for k in keys}
    tasks = [Task(k, write_slowly, (str(finals[k]), str(log), k, 3.0 if k == "victim" else 0.2),
                  kind="measurement", claim=tmp_path / "claims" / k) for k in keys]
    killer = kill_when_started(log, "victim")
    outcomes = {o.key: o for o in run_installing(cluster, tasks, finals, ())}
    killer.join(1)
    assert outcomes["other"].ok
    assert not outcomes["victim"].ok
    assert outcomes["victim"].error.startswith("MeasurementAlreadyStarted: victim: started before (")
    assert [k for k, _ in starts(log)].count("victim") == 1  # the rerun refused before measuring
    assert not finals["victim"].exists() and no_attempts(out) == []
    assert (tmp_path / "claims" / "victim").is_file()


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_task_that_kills_every_worker_ends_as_killed_worker(cluster, tmp_path):
    outcomes = list(cluster.run([Task("killer", exit_worker)]))
    assert len(outcomes) == 1 and not outcomes[0].ok
    assert re.fullmatch(r"KilledWorker: killer: the worker running it died, 2 time\(s\) \(the last: "
                        r"tcp://127\.0\.0\.1:\d+\); not started again", outcomes[0].error), outcomes[0].error
    # the cluster recovers: nannies restart the workers
    assert [o.ok for o in cluster.run([Task("after", os.getpid)])] == [True]


def test_versions_of_every_worker_are_recorded(cluster):
    d = cluster.describe()
    assert d["engine"] == "dask" and d["cluster"] == "local" and d["workers"] == 2
    assert d["versions"]["scheduler"] == d["versions"]["client"] == environment_versions()
    assert all(v == environment_versions() for v in d["versions"]["workers"].values())
    assert set(environment_versions()) == {"python", "benchbook", "dask", "distributed"}


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_worker_of_another_benchbook_version_is_refused(cluster, tmp_path):
    """A real worker process whose benchbook says another version joins the scheduler: joining fails."""
    code = ("import benchbook, sys; benchbook.__version__ = '0.0.0-other'; "
            "from distributed.cli.dask_worker import main; sys.exit(main())")
    w = subprocess.Popen([sys.executable, "-c", code, cluster.scheduler_address, "--nthreads", "1", "--no-nanny",
                          "--name", "other-version"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while len(cluster.client.scheduler_info(n_workers=-1)["workers"]) < 3:
            assert time.monotonic() < deadline, "the other worker did not join"
            time.sleep(0.2)
        with pytest.raises(EngineError, match=r"mismatched environments .*'benchbook': '0.0.0-other'"):
            DaskEngine(scheduler=cluster.scheduler_address).close()
    finally:
        w.terminate()
        try:
            w.wait(10)
        except subprocess.TimeoutExpired:
            w.kill()
            w.wait()


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_tls_from_the_environment_with_a_temporary_ca(tmp_path):
    """A CA and a certificate made for the test (Security.temporary), written to PEM files and named by
    BENCHBOOK_TLS_*: the local cluster and the client speak TLS only."""
    made = Security.temporary()
    env = {}
    for var, pem in zip(TLS_ENV, (made.tls_ca_file, made.tls_client_cert, made.tls_client_key), strict=True):
        (tmp_path / var).write_text(pem)
        env[var] = str(tmp_path / var)
    sec = security_from_env(env)
    assert sec.require_encryption and sec.tls_ca_file == str(tmp_path / "BENCHBOOK_TLS_CA_FILE")
    with open_engine(engine_spec("dask", None, None, {}), n_workers=1, security=sec) as eng:
        assert eng.scheduler_address.startswith("tls://")
        assert [o.ok for o in eng.run([Task("t", os.getpid)])] == [True]
        assert all(w.startswith("tls://") for w in eng.describe()["versions"]["workers"])


def test_local_engine_runs_in_order_and_reports_errors():
    outcomes = list(LocalEngine().run([Task("a", int, ("7",)), Task("b", int, ("x",)), Task("c", os.getpid)]))
    assert [(o.key, o.ok) for o in outcomes] == [("a", True), ("b", False), ("c", True)]
    assert outcomes[0].value == 7 and outcomes[2].value == os.getpid()
    assert outcomes[1].error == "ValueError: invalid literal for int() with base 10: 'x'"


def test_engine_options(tmp_path):
    assert engine_spec(None, None, None, {}).engine == "local"
    assert engine_spec(None, None, None, {"BENCHBOOK_SCHEDULER": "tcp://h:1"}).scheduler is None
    assert engine_spec("dask", None, None, {"BENCHBOOK_SCHEDULER": "tcp://h:1"}).scheduler == "tcp://h:1"
    assert engine_spec(None, "tcp://h:2", None, {}).engine == "dask"
    for args, msg in [(("gpu", None, None), "--engine gpu"), (("local", "tcp://h:2", None), "with --engine dask"),
                      ((None, None, tmp_path / "none.toml"), "no such inventory")]:
        with pytest.raises(EngineError, match=msg):
            engine_spec(*args, {})
    with pytest.raises(EngineError, match="BENCHBOOK_TLS_KEY missing"):
        security_from_env({"BENCHBOOK_TLS_CA_FILE": str(tmp_path), "BENCHBOOK_TLS_CERT": str(tmp_path)})
    assert security_from_env({}) is None


def test_ssh_cluster_arguments_from_an_inventory(tmp_path):
    text = (REPO / "examples" / "testbed.toml").read_text()
    known = tmp_path / "known_hosts"
    known.write_text("")
    text = re.sub(r"(?m)^ssh_options = .*$",
                  f'ssh_options = ["-o", "BatchMode=yes", "-o", "UserKnownHostsFile={known}"]', text)
    text = re.sub(r"(?m)^(role = \"dut\".*)$", r'\1\nidentity_file = "/keys/id_dut"', text, count=1)
    inv = tmp_path / "inv.toml"
    inv.write_text(text)
    args = ssh_cluster_arguments(inv, remote_python="/opt/py/bin/python3")
    assert len(args["hosts"]) == 4 and args["hosts"][0] == args["hosts"][1]  # scheduler + a worker per host
    assert all(o["known_hosts"] == str(known) for o in args["connect_options"])
    assert sum(o.get("client_keys") == ["/keys/id_dut"] for o in args["connect_options"][1:]) == 1
    assert args["remote_python"] == "/opt/py/bin/python3"
    assert args["worker_options"] == {"nthreads": 1, "n_workers": 1}
    assert known_hosts_file(["-oUserKnownHostsFile=/k"]) == "/k"
    known.unlink()
    with pytest.raises(EngineError, match="known hosts file .* not found; host keys are always checked"):
        ssh_cluster_arguments(inv)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_latency_pairs_same_bytes_on_both_engines(tmp_path):
    """Byte for byte, every file (figure divs have fixed ids). summary.json names the report folder, so both
    engines write the same folder."""
    for i in range(3):
        make_capture_pair(tmp_path / f"pre{i}.pcap", tmp_path / f"post{i}.pcap", 1500, rate_pps=1000,
                          latency=LatencyModel(base_ns=9000 + 700 * i, tail_mean_ns=2500), loss=0.01, seed=60 + i)
    csv = tmp_path / "pairs.csv"
    csv.write_text("pre,post,name\n" + "".join(f"pre{i}.pcap,post{i}.pcap,n{i}\n" for i in range(3)))
    trees = {}
    for eng in ("local", "dask"):
        out = tmp_path / "out"
        r = subprocess.run(BENCHBOOK + ["latency", "--pairs", str(csv), "-o", str(out), "--content-key",
                                        "--engine", eng], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert f"engine: {eng}" in r.stderr
        trees[eng] = {str(f.relative_to(out)): f.read_bytes() for f in sorted(out.rglob("*")) if f.is_file()}
        shutil.rmtree(out)
    assert trees["local"].keys() == trees["dask"].keys()
    assert len(trees["local"]) == 2 + 3 * 5  # merged.hlog, merged.json; 5 files per pair
    differ = [name for name in trees["local"] if trees["local"][name] != trees["dask"][name]]
    assert differ == []
