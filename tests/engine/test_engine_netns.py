"""The dask engine across network namespaces: the scheduler (and the client) in one, two workers in two
others, joined by a bridge; cutting the link of the worker running a task (ip link set down) gets the task
rescheduled on the other worker within the scheduler's worker TTL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchbook.testbed import state
from benchbook.testbed.names import make_name, new_token
from conftest import require_program, require_root

REPO = Path(__file__).resolve().parents[2]
PORT = 8786
WORKER_TTL_S = 3

CLIENT = """
import json, sys, time
from pathlib import Path
from benchbook.engine import Task, run_installing
from benchbook.engine.cluster import DaskEngine
from engine_tasks import slow_first_start
from distributed import Client
out, log = Path(sys.argv[2]), sys.argv[3]
with Client(sys.argv[1], timeout=30) as c:  # both workers registered before the engine checks their versions
    c.wait_for_workers(2, timeout=60)
eng = DaskEngine(scheduler=sys.argv[1], connect_timeout_s=30)
t0 = time.monotonic()
outcomes = list(run_installing(eng, [Task("t", slow_first_start, (str(out / "t"), log, "t", 120.0, 0.2))],
                               {"t": out / "t"}, ("first.txt", "done.txt")))
print(json.dumps({"ok": outcomes[0].ok, "error": outcomes[0].error, "worker": outcomes[0].worker,
                  "elapsed_s": time.monotonic() - t0, "workers": eng.describe()["workers"]}))
eng.close()
"""


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


@pytest.mark.root
@pytest.mark.slow
@pytest.mark.timeout(150)
def test_link_cut_reschedules_the_task_on_the_other_worker(tmp_path):
    require_root()
    require_program("ip")
    token = new_token()
    sch, ws = make_name(token, "dsch"), [make_name(token, f"dw{i}") for i in (1, 2)]
    addr = {"s": "10.77.0.1", ws[0]: "10.77.0.2", ws[1]: "10.77.0.3"}
    env = dict(os.environ, PYTHONPATH=f"{REPO / 'tests'}:{REPO / 'lib'}",
               DASK_DISTRIBUTED__SCHEDULER__WORKER_TTL=f"{WORKER_TTL_S}s")
    procs: list[subprocess.Popen] = []
    made: list[str] = []
    state.acquire(token)  # an owner record: other runs' leftover sweeps leave these namespaces alone
    try:
        for ns in (sch, *ws):
            ip("netns", "add", ns)
            made.append(ns)
            ip("-n", ns, "link", "set", "lo", "up")
        br = make_name(token, "br", interface=True)
        ip("-n", sch, "link", "add", br, "type", "bridge")
        ip("-n", sch, "addr", "add", f"{addr['s']}/24", "dev", br)
        ip("-n", sch, "link", "set", br, "up")
        links = {}
        for i, w in enumerate(ws, start=1):
            a, b = make_name(token, f"s{i}", interface=True), make_name(token, f"w{i}", interface=True)
            ip("link", "add", a, "netns", sch, "type", "veth", "peer", "name", b, "netns", w)
            ip("-n", sch, "link", "set", a, "master", br)
            ip("-n", sch, "link", "set", a, "up")
            ip("-n", w, "addr", "add", f"{addr[w]}/24", "dev", b)
            ip("-n", w, "link", "set", b, "up")
            links[w] = b
        scheduler = f"tcp://{addr['s']}:{PORT}"
        # the scheduler's namespace has no default route: without --host it would advertise 127.0.0.1
        procs.append(subprocess.Popen(
            ["ip", "netns", "exec", sch, sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", addr["s"],
             "--port", str(PORT), "--no-dashboard"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        workers = {}
        for w in ws:
            p = subprocess.Popen(
                ["ip", "netns", "exec", w, sys.executable, "-m", "distributed.cli.dask_worker", scheduler,
                 "--nthreads", "1", "--no-nanny", "--host", addr[w], "--name", w, "--no-dashboard"],
                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            procs.append(p)
            workers[p.pid] = w  # `ip netns exec` execs: the worker's pid
        out, log = tmp_path / "out", tmp_path / "starts.log"
        client = subprocess.Popen(["ip", "netns", "exec", sch, sys.executable, "-c", CLIENT, scheduler, str(out),
                                   str(log)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        procs.append(client)
        deadline = time.monotonic() + 90
        while not (log.exists() and log.read_text().endswith("\n")):  # a whole "key pid" line, not half a write
            assert client.poll() is None, client.communicate()
            assert time.monotonic() < deadline, "the task did not start"
            time.sleep(0.1)
        first_pid = int(log.read_text().split()[1])
        first = workers[first_pid]
        ip("-n", first, "link", "set", links[first], "down")
        cut = time.monotonic()
        stdout, stderr = client.communicate(timeout=60)
        waited_s = time.monotonic() - cut
        assert client.returncode == 0, stderr
        res = json.loads(stdout.strip().splitlines()[-1])
        other = next(w for w in ws if w != first)
        assert res["ok"], res
        assert res["workers"] == 2
        assert res["worker"] == f"tcp://{addr[other]}:" + res["worker"].rsplit(":", 1)[1]
        assert waited_s < 10 * WORKER_TTL_S
        starts = [line.split() for line in log.read_text().splitlines()]
        assert [k for k, _ in starts] == ["t", "t"] and workers[int(starts[1][1])] == other
        assert (out / "t" / "done.txt").read_text() == "t"
        assert [p.name for p in out.iterdir()] == ["t"]  # the cut-off worker's attempt removed
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
                p.wait()
        for ns in made:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        state.release(token)
        left = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        assert token not in left
