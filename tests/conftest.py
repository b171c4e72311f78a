"""Shared fixtures: where the real test data lives, and honest skips for privileged tests."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from benchbook.paths import SHARED_DATASETS
from benchbook.reproduce.registry import load_entry
from benchbook.testbed.rootfs import is_built


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test marked ``root`` skips with the reason when not running as root (its fixtures may also call
    require_root; the marker lets ``pytest -m "not root"`` select the unprivileged tests)."""
    if item.get_closest_marker("root") is not None and os.geteuid() != 0:
        pytest.skip("needs root (network namespaces, cgroups, LXC, sshd)")


@pytest.fixture(scope="session")
def shared_datasets() -> Path:
    if not SHARED_DATASETS.is_dir():
        pytest.skip(f"shared datasets not found at {SHARED_DATASETS} (set BENCHBOOK_SHARED)")
    return SHARED_DATASETS


REPO_ROOT = Path(__file__).resolve().parents[1]


def reproduce_cli(runs_dir: Path, entry: str, *args: str, timeout_s: float = 900) -> subprocess.CompletedProcess:
    """`benchbook reproduce ENTRY ARGS...` as a user runs it from the repository root, its runs under runs_dir."""
    env = dict(os.environ, BENCHBOOK_RUNS=str(runs_dir))
    return subprocess.run([sys.executable, "-m", "benchbook.cli", "reproduce", entry, *args], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout_s)


# `benchbook reproduce --all --paper FOLDER` for the paper folders holding every published-data entry (and the
# latency demo): what `make reproduce` runs for them, done once per session for every test that reads its runs.
# Those tests carry SHARES_REPRODUCTIONS: under pytest-xdist with --dist loadgroup they run on one worker.
REPRODUCED_FOLDERS = ("wiedner-itc23", "scheerer-iitm23", "benchbook-demo")
SHARES_REPRODUCTIONS = pytest.mark.xdist_group("published-reproductions")


@dataclass
class Reproductions:
    runs_dir: Path
    outputs: dict[str, str] = field(default_factory=dict)  # paper folder -> stdout + stderr of its --all
    exit_codes: dict[str, int] = field(default_factory=dict)  # paper folder -> exit status of its --all

    def folder_of(self, figure_id: str) -> str:
        return load_entry(figure_id).folder.name

    def output_of(self, figure_id: str) -> str:
        return self.outputs[self.folder_of(figure_id)]

    def run_dir(self, figure_id: str) -> Path:
        """The one run directory of the entry."""
        (run_dir,) = (self.runs_dir / figure_id).iterdir()
        return run_dir


@pytest.fixture(scope="session")
def published_reproductions(tmp_path_factory) -> Reproductions:
    """Every published-data entry and the latency demo reproduced once by the CLI into a session runs directory
    (tests using it take several minutes on their first use: give them @pytest.mark.timeout(1200))."""
    done = Reproductions(tmp_path_factory.mktemp("reproduced") / "runs")
    for folder in REPRODUCED_FOLDERS:
        proc = reproduce_cli(done.runs_dir, "--all", "--paper", folder, timeout_s=1100)
        done.outputs[folder], done.exit_codes[folder] = proc.stdout + proc.stderr, proc.returncode
    return done


def require_root() -> None:
    """Skip (with a reason pytest -ra prints) unless running as root."""
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces, cgroups, LXC)")


def require_program(name: str) -> str:
    """Skip unless `name` is on PATH; return its path."""
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} not installed (make deps installs it as root)")
    return path


def require_rootfs(recipe) -> None:
    """Skip unless the cached root file system of ``recipe`` (benchbook.testbed.rootfs.RootfsRecipe) exists or
    can be built here: building needs root, debootstrap and network to the recipe's Debian mirror. Anything
    else that goes wrong while building is a failure of the test, not a skip."""
    if is_built(recipe):
        return
    require_root()
    require_program("debootstrap")
    url = f"{recipe.mirror.rstrip('/')}/dists/{recipe.suite}/Release"
    try:
        with urllib.request.urlopen(url, timeout=15) as r:
            r.read(1)
    except OSError as exc:
        pytest.skip(f"root file system '{recipe.name}' not built and no network to the Debian mirror ({url}: {exc})")
