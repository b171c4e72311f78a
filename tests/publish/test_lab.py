"""`make lab`: JupyterLab serves the paper folders (as root too), prints its URL with the token, a
paper notebook opens in the browser and its kernel starts; the server is stopped afterwards."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.request

import pytest

from benchbook.paths import REPO_ROOT
from publish.browser import ARTIFACTS_DIR

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
NOTEBOOK = "wiedner-itc23/wiedner-itc23.ipynb"
START_TIMEOUT_S = 120


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _sessions(base: str, token: str) -> list[dict]:
    with urllib.request.urlopen(f"{base}api/sessions?token={token}", timeout=10) as resp:
        return json.loads(resp.read())


def test_make_lab_serves_opens_a_paper_notebook_and_starts_its_kernel(browser):
    notebook_before = (REPO_ROOT / "notebooks" / NOTEBOOK).read_bytes()
    checkpoints = (REPO_ROOT / "notebooks" / NOTEBOOK).parent / ".ipynb_checkpoints"
    had_checkpoints = checkpoints.exists()
    port = _free_port()
    # as a user types it: not inside make test's jobserver (a make under `make -j` prints a jobserver warning first)
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    proc = subprocess.Popen(["make", "-s", "lab", f"LAB_PORT={port}", "LAB_ARGS=--no-browser"], cwd=REPO_ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
                            env=env)
    try:
        line = proc.stdout.readline()
        m = re.search(r"(http://127\.0\.0\.1:(\d+)/lab/tree/)\?token=([0-9a-f]+)", line)
        assert m, f"make lab printed no URL with a token: {line!r}"
        assert int(m.group(2)) == port and "wiedner-itc23/" in line
        base, token = m.group(1).replace("lab/tree/", ""), m.group(3)
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                _sessions(base, token)
                break
            except OSError:
                assert proc.poll() is None, f"jupyter lab exited {proc.returncode}: {proc.stdout.read()[-2000:]}"
                assert time.monotonic() < deadline, "JupyterLab did not answer within 120 s"
                time.sleep(1)
        with urllib.request.urlopen(f"{base}api/contents?token={token}", timeout=10) as resp:
            names = {c["name"] for c in json.loads(resp.read())["content"]}
        assert {"wiedner-itc23", "benchbook-demo", "reusable"} <= names
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        try:
            page.goto(f"{base}lab/tree/{NOTEBOOK}?token={token}", timeout=90_000)
            page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=90_000)
            kernel = None
            while time.monotonic() < deadline + 60:
                ours = [s for s in _sessions(base, token) if s.get("path") == NOTEBOOK]
                kernel = ours[0]["kernel"] if ours else None
                if kernel and kernel.get("execution_state") == "idle":
                    break
                time.sleep(1)
            assert kernel is not None, "the browser opened no session for the notebook"
            assert kernel["execution_state"] == "idle", f"kernel did not start: {kernel}"
            ARTIFACTS_DIR.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ARTIFACTS_DIR / "lab-notebook.png"))
        finally:
            page.close()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        if not had_checkpoints:  # JupyterLab checkpoints a notebook it opens
            shutil.rmtree(checkpoints, ignore_errors=True)
    with pytest.raises(OSError):
        _sessions(base, token)
    assert (REPO_ROOT / "notebooks" / NOTEBOOK).read_bytes() == notebook_before, "opening the notebook rewrote it"
