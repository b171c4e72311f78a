"""Fixtures of the publish tests: real runs made by `benchbook reproduce` in a temporary runs
directory (a published-data table and the latency demo twice, so one figure has a history), and
the site `benchbook publish` builds from them."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from benchbook.publish.serve import make_server
from benchbook.publish.site import build_site
from conftest import ALL_FIGURE_FORMATS

BENCHBOOK = [sys.executable, "-m", "benchbook.cli"]
# (entry id, -p overrides): fast entries; the demo runs twice with different sizes
RUNS = [("wiedner-itc23-table3", []), ("benchbook-latency-demo", ["-p", "n_packets=12000"]),
        ("benchbook-latency-demo", ["-p", "n_packets=8000"])]


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


@pytest.fixture(scope="session")
def served_site(site):
    """The site behind `benchbook serve`'s server on a free port of 127.0.0.1: its base URL."""
    server = make_server(site, port=0, quiet=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
