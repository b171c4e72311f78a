"""Sweep edges the other sweep tests leave out: a shuffled sweep without --seed draws and records its seed; the
per-point callback on both paths (the plain loop and an engine); Ctrl-C during a point (a real SIGINT while its
notebook runs) records the point "interrupted", releases the lock and leaves no kernel, and --resume then redoes
it; the progress bar (total, points already done at a resume, one step per point, a 60-character description,
stopped at the end; none when disabled or empty)."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from benchbook.engine.local import LocalEngine
from benchbook.experiment import sweep
from benchbook.experiment.record import read_record
from benchbook.experiment.sweep import ATTEMPTS_DIR, SWEEP_NAME, _Bar, expand, run_sweep
from benchbook.paths import REPO_ROOT
from benchbook.provenance.checksums import sha256_file

NOTEBOOK = Path(__file__).resolve().parents[1] / "data" / "sweep_point.ipynb"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _hold_notebook(path: Path) -> Path:
    """A point notebook that, given ``hold`` (a file), says it started (``<hold>.started``, holding its kernel's
    pid) and then waits while the file exists (at most 60 s)."""
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell("hold = ''\noutput_dir = '.'")
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell(
        "import os, pathlib, time\n"
        "if hold:\n"
        "    pathlib.Path(hold + '.started').write_text(str(os.getpid()))\n"
        "    deadline = time.monotonic() + 60\n"
        "    while pathlib.Path(hold).exists() and time.monotonic() < deadline:\n"
        "        time.sleep(0.05)\n"
        "(pathlib.Path(output_dir) / 'raw' / 'done.txt').write_text('done')")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


@pytest.fixture
def recorded_bars(monkeypatch):
    """Make run_sweep's progress bars inspectable: each one it builds is appended to the list; any left running
    (a bar that close() did not stop) is stopped afterwards so that it cannot take over the test's output."""
    bars: list[_Bar] = []

    class RecordingBar(_Bar):
        def __init__(self, total: int, done: int, enabled: bool) -> None:
            super().__init__(total, done, enabled)
            bars.append(self)

    monkeypatch.setattr(sweep, "_Bar", RecordingBar)
    yield bars
    for bar in bars:
        if bar.progress is not None:
            bar.progress.stop()


def _stopped(bar: _Bar) -> bool:
    """Whether close() stopped the bar; stops it either way (a bar left running would take over the output)."""
    started = bar.progress.live.is_started
    bar.progress.stop()
    return not started


def test_shuffle_without_a_seed_draws_32_random_bits_and_records_them(tmp_path, monkeypatch):
    drawn: list[tuple[int, int]] = []
    real_randbits = sweep.secrets.randbits

    def randbits(k: int) -> int:
        value = real_randbits(k)
        drawn.append((k, value))
        return value

    monkeypatch.setattr(sweep.secrets, "randbits", randbits)
    calls = []
    grid = {"rate": [1, 2, 3]}
    out = run_sweep(NOTEBOOK, grid, repeat=2, experiment="shuf", runs_dir=tmp_path, shuffle=True, progress=False,
                    on_point=lambda p, result: calls.append((p["key"], result.status, result.run_dir)))
    saved = json.loads((tmp_path / "shuf" / SWEEP_NAME).read_text())
    assert len(drawn) == 1 and drawn[0][0] == 32
    seed = saved["seed"]
    assert type(seed) is int and 0 <= seed < 2**32 and seed == drawn[0][1]
    assert saved["shuffle"] is True and out.manifest["seed"] == seed
    keys = [p["key"] for p in expand(grid, 2)]
    expected = list(keys)
    random.Random(seed).shuffle(expected)
    assert saved["order"] == expected and sorted(saved["order"]) == keys
    # the plain loop calls on_point once per point, as each ends, in the recorded order
    by_key = {p["key"]: p for p in saved["points"]}
    assert calls == [(k, "complete", tmp_path / "shuf" / by_key[k]["run_id"]) for k in expected]
    assert out.ran == expected and out.count("complete") == 6
    assert [read_record(tmp_path / "shuf" / by_key[k]["run_id"])["sweep"]["order"] for k in expected] == list(
        range(6))


def test_a_given_seed_draws_nothing_and_an_unshuffled_sweep_has_no_seed(tmp_path, monkeypatch):
    monkeypatch.setattr(sweep.secrets, "randbits", lambda k: pytest.fail("a seed was drawn"))
    keys = [p["key"] for p in expand({"rate": [1, 2, 3, 4]}, 1)]
    expected = list(keys)
    random.Random(11).shuffle(expected)
    out = run_sweep(NOTEBOOK, {"rate": [1, 2, 3, 4]}, experiment="given", runs_dir=tmp_path, shuffle=True, seed=11,
                    progress=False)
    assert out.manifest["seed"] == 11 and out.manifest["order"] == expected and out.ran == expected
    out = run_sweep(NOTEBOOK, {"rate": [1, 2, 3, 4]}, experiment="plain", runs_dir=tmp_path, progress=False)
    assert out.manifest["seed"] is None and out.manifest["order"] == keys and out.manifest["shuffle"] is False
    assert out.ran == keys


def test_on_point_is_called_for_each_point_an_engine_runs(tmp_path):
    calls = []
    out = run_sweep(NOTEBOOK, {"rate": [4]}, experiment="eng", runs_dir=tmp_path, progress=False,
                    engine=LocalEngine(), on_point=lambda p, result: calls.append((p["key"], result.status,
                                                                                   result.run_dir)))
    (p,) = out.manifest["points"]
    assert calls == [("p0000r000", "complete", tmp_path / "eng" / p["run_id"])]
    assert out.ran == ["p0000r000"] and p["status"] == "complete"
    assert read_record(tmp_path / "eng" / p["run_id"])["engine"]["engine"] == "local"
    # sweep.json's header, as docs/runs.md lists it: what was asked for (notebook and its digest, grid, repeat,
    # order and seed), when, and nothing else (a key spelt otherwise would be a field no reader knows)
    saved = json.loads((tmp_path / "eng" / SWEEP_NAME).read_text())
    assert set(saved) == {"sweep_version", "experiment", "notebook", "notebook_sha256", "grid", "repeat", "shuffle",
                          "seed", "order", "created", "updated", "points", "resumed"}
    assert saved["notebook_sha256"] == sha256_file(NOTEBOOK) and saved["notebook"] == str(NOTEBOOK.resolve())
    assert (saved["grid"], saved["repeat"], saved["order"]) == ({"rate": [4]}, 1, ["p0000r000"])
    assert saved["created"] <= saved["updated"] and saved["resumed"] == []


_CHILD = """
import sys
from pathlib import Path
from benchbook.experiment.sweep import run_sweep
nb, flag, runs = sys.argv[1:4]
run_sweep(Path(nb), {"hold": ["", flag]}, experiment="intr", runs_dir=Path(runs), progress=True)
"""


@pytest.mark.timeout(180)
def test_sigint_during_a_point_records_it_interrupted_then_resume_redoes_it(tmp_path, recorded_bars):
    """Ctrl-C as a terminal sends it: SIGINT to a sweep process (a child: a KeyboardInterrupt raised inside a
    compile() leaves CPython 3.11.7's AST validator broken for the rest of the process, pytest's included)."""
    nb = _hold_notebook(tmp_path / "hold.ipynb")
    flag = tmp_path / ("hold-flag-with-a-long-name-so-the-progress-description-is-cut-" + "x" * 20)
    flag.write_text("hold")
    started = Path(str(flag) + ".started")
    grid = {"hold": ["", str(flag)]}
    runs, exp = tmp_path / "runs", tmp_path / "runs" / "intr"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "lib"), os.environ.get("PYTHONPATH", "")]),
           "COLUMNS": "200"}
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(nb), str(flag), str(runs)], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (started.exists() and started.read_text()) and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert started.exists() and started.read_text(), "the second point never started"
        kernel_pid = int(started.read_text())
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    assert child.returncode != 0 and "KeyboardInterrupt" in err, err[-2000:]
    # sweep.json on disk: the first point complete, the one running at the SIGINT interrupted
    saved = json.loads((exp / SWEEP_NAME).read_text())
    first, second = saved["points"]
    assert (first["key"], first["status"]) == ("p0000r000", "complete")
    assert (second["key"], second["status"]) == ("p0001r000", "interrupted") and second["run_id"]
    assert saved["updated"] >= saved["created"]
    assert saved["sweep_version"] == 1  # the file's format: a reader of another version knows it is not its own
    assert read_record(exp / second["run_id"])["status"] == "interrupted"
    assert not (exp / second["run_id"] / "raw" / "done.txt").exists()
    # the bar, drawn once as it stopped (stderr is no terminal): both points, the first counted, the second
    # described in 60 characters
    text = f"p0001r000 {{'hold': '{flag}'}}"
    assert len(text) > 60
    final = [ANSI.sub("", line).rstrip() for line in err.splitlines() if line.startswith("sweep ")]
    assert final and " 1/2 " in final[-1] and final[-1].endswith(text[:60]), final
    # the lock is released and the kernel is gone
    assert (exp / ".lock").read_text() == ""
    deadline = time.monotonic() + 15
    while Path(f"/proc/{kernel_pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not Path(f"/proc/{kernel_pid}").exists(), "the notebook kernel outlived the interrupted sweep"
    bars = recorded_bars

    # --resume: the lock is free, the interrupted point is moved aside and run again; the bar starts at 1 of 2
    flag.unlink()
    calls = []
    out = run_sweep(nb, grid, experiment="intr", runs_dir=runs, resume=True, progress=True,
                    on_point=lambda p, result: calls.append((p["key"], result.status)))
    assert calls == [("p0001r000", "complete")]
    assert out.skipped == ["p0000r000"] and out.ran == ["p0001r000"] and out.moved_aside == [second["run_id"]]
    redone = out.manifest["points"][1]
    assert redone["status"] == "complete" and redone["attempts"] == [
        {"run_id": second["run_id"], "status": "interrupted", "moved_to": f"{ATTEMPTS_DIR}/{second['run_id']}"}]
    (bar,) = bars
    task = bar.progress.tasks[0]
    assert (task.total, task.completed, task.description) == (2, 2, text[:60])
    assert task.finished and _stopped(bar)


def test_the_bar_shows_total_done_steps_and_a_cut_description_then_stops(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    for var in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(var, raising=False)
    bar = _Bar(5, 2, enabled=True)
    progress = bar.progress
    assert progress is not None
    try:
        assert progress.live.is_started
        (task,) = progress.tasks
        assert (task.total, task.completed, task.description) == (5, 2, "")
        bar.describe("d" * 59 + "e" + "f" * 40)
        assert task.description == "d" * 59 + "e"
        bar.describe("short")
        assert task.description == "short"
        bar.advance()
        assert task.completed == 3
        bar.advance()
        assert task.completed == 4
        bar.close()
        assert not progress.live.is_started and task.completed == 4 and not task.finished
    finally:
        progress.stop()  # a no-op unless close() left it running
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = [ANSI.sub("", line).rstrip() for line in captured.err.splitlines() if line.strip()]
    assert re.fullmatch(r"sweep [━╸╺ ]+ 4/5 \d+:\d\d:\d\d ETA (-:--:--|\d+:\d\d:\d\d) short", lines[-1]), lines


@pytest.mark.parametrize(("total", "done", "enabled"), [(5, 2, False), (0, 0, True), (0, 0, False)])
def test_no_bar_when_disabled_or_without_points(capsys, total, done, enabled):
    bar = _Bar(total, done, enabled=enabled)
    assert bar.progress is None
    bar.describe("p0000r000 {}")
    bar.advance()
    bar.close()
    assert capsys.readouterr() == ("", "")
