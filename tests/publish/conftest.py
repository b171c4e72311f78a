"""Fixtures of the publish tests: real runs made by `benchbook reproduce` in a temporary runs
directory (a published-data table and the latency demo twice, so one figure has a history), and
the site `benchbook publish` builds from them; a second site of one measured entry judged across runs
(tests/data/measured-paper, passed with --papers: no registered paper); one headless chromium for all."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchbook.publish.serve import make_server
from benchbook.publish.site import build_site
from conftest import ALL_FIGURE_FORMATS
from publish.browser import launch, sync_playwright

BENCHBOOK = [sys.executable, "-m", "benchbook.cli"]
# (entry id, -p overrides): fast entries; the demo runs twice with different sizes
RUNS = [("wiedner-itc23-table3", []), ("benchbook-latency-demo", ["-p", "n_packets=12000"]),
        ("benchbook-latency-demo", ["-p", "n_packets=8000"])]
# A paper folder of the tests: one measured entry whose runs a seeded generator draws with known truth (no root,
# no network); its verdict holds every row status and claim verdict. Exit status 1: the entry is a mismatch.
MEASURED_PAPER = Path(__file__).resolve().parents[1] / "data" / "measured-paper"
MEASURED_ENTRY = "measured-intervals"


@pytest.fixture(scope="session")
def runs_dir(tmp_path_factory) -> Path:
    runs = tmp_path_factory.mktemp("publish-runs") / "runs"
    for entry, extra in RUNS:
        proc = subprocess.run([*BENCHBOOK, "reproduce", entry, "--runs-dir", str(runs), *extra],
                              capture_output=True, text=True, timeout=280,
                              env=dict(os.environ, **ALL_FIGURE_FORMATS))  # the site's thumbnails are PNGs
        assert proc.returncode == 0, f"benchbook reproduce {entry} exited {proc.returncode}:\n{proc.stdout[-3000:]}"
    return runs


@pytest.fixture(scope="session")
def site(runs_dir, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("publish-site") / "site"
    build_site(out, all_runs=True, runs_dir=runs_dir)
    return out


@contextlib.contextmanager
def _serving(site: Path) -> Iterator[str]:
    """``site`` behind `benchbook serve`'s server on a free port of 127.0.0.1: its base URL."""
    server = make_server(site, port=0, quiet=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.fixture(scope="session")
def served_site(site):
    """The site behind `benchbook serve`'s server on a free port of 127.0.0.1: its base URL."""
    with _serving(site) as url:
        yield url


@pytest.fixture(scope="session")
def measured_run(tmp_path_factory) -> Path:
    """The run directory of `benchbook reproduce measured-intervals --papers tests/data/measured-paper`."""
    runs = tmp_path_factory.mktemp("measured-runs") / "runs"
    proc = subprocess.run([*BENCHBOOK, "reproduce", MEASURED_ENTRY, "--papers", str(MEASURED_PAPER),
                           "--runs-dir", str(runs)], capture_output=True, text=True, timeout=280)
    assert proc.returncode == 1, f"reproduce {MEASURED_ENTRY} exited {proc.returncode}:\n{proc.stdout[-3000:]}"
    (run_dir,) = (p.parent for p in runs.glob(f"{MEASURED_ENTRY}/*/run.json"))
    return run_dir


@pytest.fixture(scope="session")
def measured_site(measured_run, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("measured-site") / "site"
    build_site(out, all_runs=True, runs_dir=measured_run.parent.parent, papers=[MEASURED_PAPER])
    return out


@pytest.fixture(scope="session")
def served_measured_site(measured_site):
    with _serving(measured_site) as url:
        yield url


@pytest.fixture(scope="session")
def browser():
    """One headless chromium for the session's browser tests (they share the xdist group "publish")."""
    with sync_playwright() as p:
        b = launch(p)
        try:
            yield b
        finally:
            b.close()
