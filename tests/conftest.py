"""Shared fixtures: where the real test data lives, honest skips for privileged tests, and how the suite runs
in parallel (pytest-xdist: which tests share host state and so run one after another, and set-ups built once
for all workers)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from xdist.scheduler import LoadScopeScheduling

from benchbook.filelock import FileLock
from benchbook.paths import SHARED_DATASETS
from benchbook.reproduce.outputs import DEFAULT_FORMATS, FORMATS_ENV
from benchbook.reproduce.registry import load_entry
from benchbook.testbed.rootfs import is_built

# --- parallel runs ------------------------------------------------------------------------------------------
# `make test` runs `pytest -n <cores> --dist loadgroup`: every test is a unit of work for whichever worker is
# free, except the tests of one group, which one worker runs one after another in collection order
# (docs/testing.md, "Running in parallel"). A test's group: its @pytest.mark.xdist_group, else its file's in
# GROUP_OF_FILE, else "host" for a test marked root. Root tests change or judge state of the whole machine (the
# CPU isolation recipes move every task of the root cpuset and switch the root's load balancing off; LXC
# containers, cgroups, the tracefs mount, sshds; "nothing of the run left" read from the host's lists) and
# measure rates, queues and RTTs through qdiscs and delay lines, which a second measurement would distort.
GROUP_OF_FILE = {
    # two TCG guest boots, each asserting that no qemu of any guest and no /tmp/bb-guest-* directory is left
    "testbed/test_kvm_guest.py": "kvm",
    # one set of reproduced runs, one site built from them, one browser (publish/conftest.py)
    "publish/test_browser.py": "publish",
    "publish/test_measured_site.py": "publish",
    "publish/test_site.py": "publish",
    "publish/test_lab.py": "publish",
}
HOST_GROUP = "host"
# Tests that start an LXC container or boot a guest need a DuT root file system, which `make test` builds beside
# the tests on a fresh machine: they come last in collection order, and the kvm group goes out last.
NEEDS_ROOTFS = ("testbed/test_lxc_dut.py", "testbed/test_kvm_guest.py")
LAST_GROUPS = ("kvm",)
# xdist 3.8 carries a test's group to the controller as a suffix of its node id, which pytest 9.2 no longer lets
# a plugin change, so its loadgroup silently runs every test alone (pytest-dev/pytest-xdist#1386). Here each
# worker writes the groups it collected into this directory, and GroupScheduling reads them.
GROUPS_DIR_ENV = "BENCHBOOK_XDIST_GROUPS"


def _test_file(item: pytest.Item) -> str:
    """The test's file relative to tests/."""
    return Path(str(item.path)).resolve().relative_to(Path(__file__).resolve().parent).as_posix()


def xdist_group_of(item: pytest.Item) -> str | None:
    """The group of a collected test, None for a test any worker may run."""
    marks = [m.args[0] if m.args else m.kwargs.get("name", "default") for m in item.iter_markers("xdist_group")]
    if marks:
        return "_".join(sorted(set(map(str, marks))))
    rel = _test_file(item)
    if rel in GROUP_OF_FILE:
        return GROUP_OF_FILE[rel]
    return HOST_GROUP if item.get_closest_marker("root") is not None else None


# The reproductions tests run save their figures as HTML only: a PNG and an SVG cost seconds of headless Chromium
# each (a third of a short measured reproduction) and only the tests given ALL_FIGURE_FORMATS assert them (the
# published site's thumbnails, Table III's exports). BENCHBOOK_FIGURE_FORMATS set before pytest starts wins.
ALL_FIGURE_FORMATS = {FORMATS_ENV: ",".join(DEFAULT_FORMATS)}


def pytest_configure(config: pytest.Config) -> None:
    os.environ.setdefault(FORMATS_ENV, "html")  # subprocesses and notebook kernels inherit it
    # A suite started in the background by a non-interactive shell (`make test &`, `nohup ... &`) inherits SIGINT
    # ignored, and so would every process the tests start: the tests that deliver Ctrl-C to a measurement and
    # assert its clean-up need the disposition a terminal gives (a fresh-clone run in the background failed five).
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if config.getvalue("dist") == "loadgroup" and not os.environ.get("PYTEST_XDIST_WORKER"):
        os.environ[GROUPS_DIR_ENV] = tempfile.mkdtemp(prefix="bb-xdist-groups-")  # the workers inherit it


def pytest_unconfigure(config: pytest.Config) -> None:
    if not os.environ.get("PYTEST_XDIST_WORKER") and os.environ.get(GROUPS_DIR_ENV):
        shutil.rmtree(os.environ.pop(GROUPS_DIR_ENV), ignore_errors=True)


@pytest.hookimpl(trylast=True)  # after deselection: the node ids the worker reports to the controller
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: _test_file(item) in NEEDS_ROOTFS)  # stable: otherwise the order stays
    worker, groups_dir = os.environ.get("PYTEST_XDIST_WORKER"), os.environ.get(GROUPS_DIR_ENV)
    if worker and groups_dir:
        groups = {item.nodeid: g for item in items if (g := xdist_group_of(item)) is not None}
        part = Path(groups_dir) / f".{worker}.json"
        part.write_text(json.dumps(groups))
        part.rename(part.with_name(f"{worker}.json"))


class GroupScheduling(LoadScopeScheduling):
    """xdist's loadgroup scheduling with the groups the workers wrote (xdist_group_of): a group is one unit of work,
    every other test a unit of its own; groups go out first, the largest first, except LAST_GROUPS."""

    def __init__(self, config: pytest.Config, log=None) -> None:
        super().__init__(config, log)
        self._groups: dict[str, str] | None = None

    def _assign_work_unit(self, node) -> None:
        if not self.assigned_work:  # the first assignment: the queue is complete
            for group in LAST_GROUPS:
                if group in self.workqueue:
                    self.workqueue.move_to_end(group)
        super()._assign_work_unit(node)

    def _split_scope(self, nodeid: str) -> str:
        if self._groups is None:  # asked first once every worker has collected
            self._groups = {}
            for part in Path(os.environ[GROUPS_DIR_ENV]).glob("*.json"):
                self._groups.update(json.loads(part.read_text()))
        if nodeid.rfind("@") > nodeid.rfind("]"):  # a group xdist itself carried (a pytest it works with)
            return nodeid.rsplit("@", 1)[1]
        return self._groups.get(nodeid, nodeid)


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log) -> GroupScheduling | None:
    return GroupScheduling(config, log) if config.getvalue("dist") == "loadgroup" else None


def shared_dir(tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]) -> Path:
    """A directory made once per test run and shared by every xdist worker (a session fixture alone runs once
    per worker): the first worker that needs it calls build(dir) under a file lock, the others wait for it and
    reuse it. A build that raised leaves nothing marked complete, so the next test to need it builds it again
    (and fails the same way, with its own traceback)."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the run's directory, above each worker's own
    target = base / "shared" / name
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(target.parent / f"{name}.lock", description=f"building the shared test set-up {name}"):
        if not (target / ".complete").is_file():
            if target.exists():
                shutil.rmtree(target)
            target.mkdir()
            build(target)
            (target / ".complete").write_text("")
    return target


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


def reproduce_cli(runs_dir: Path, entry: str, *args: str, timeout_s: float = 900,
                  all_figure_formats: bool = False) -> subprocess.CompletedProcess:
    """`benchbook reproduce ENTRY ARGS...` as a user runs it from the repository root, its runs under runs_dir
    (figures as HTML only unless all_figure_formats)."""
    env = dict(os.environ, BENCHBOOK_RUNS=str(runs_dir), **(ALL_FIGURE_FORMATS if all_figure_formats else {}))
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
        # -v: these tests read the verdict tables, which reproduce --all prints only with -v
        proc = reproduce_cli(done.runs_dir, "--all", "--paper", folder, "-v", timeout_s=1100, all_figure_formats=True)
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
