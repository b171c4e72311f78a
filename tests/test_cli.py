"""benchbook.cli.main: a BenchbookError a command leaves unhandled is printed as one line, no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from benchbook import cli
from benchbook.analysis.hist_report import HistInputError
from benchbook.errors import BenchbookError
from benchbook.tools.moongen_histogram import MoonGenFormatError, read_moongen_histogram

PROGRAM = """
import sys
from benchbook import cli
from benchbook.tools.moongen_histogram import read_moongen_histogram

@cli.app.command("read-moongen")
def read_moongen(path: str) -> None:
    print(read_moongen_histogram(path).count)

cli.main(sys.argv[1:])
"""


def test_unhandled_benchbook_error_prints_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "h.csv"
    bad.write_text("100,1\n200,x\n300,1\n")
    r = subprocess.run([sys.executable, "-c", PROGRAM, "read-moongen", str(bad)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr
    assert r.stderr.startswith(f"benchbook: {bad}: line 2 (byte offset 6): count 'x' is not a non-negative integer")
    assert r.stderr.count("\n") == 1
    good = tmp_path / "g.csv"
    good.write_text("100,1\n200,4\n")
    r = subprocess.run([sys.executable, "-c", PROGRAM, "read-moongen", str(good)], capture_output=True, text=True,
                       timeout=120)
    assert (r.returncode, r.stdout) == (0, "5\n")


def test_error_classes_keep_their_second_base(tmp_path: Path) -> None:
    bad = tmp_path / "h.csv"
    bad.write_text("1.1234567890123,5\n")  # more decimal places than are kept exactly
    with pytest.raises(MoonGenFormatError, match="more than 12 decimal places") as info:
        read_moongen_histogram(bad)
    assert isinstance(info.value, BenchbookError) and isinstance(info.value, ValueError)
    assert issubclass(HistInputError, BenchbookError) and issubclass(HistInputError, ValueError)


CRASHING = """
import sys
from benchbook import cli

@cli.app.command("crash")
def crash() -> None:
    {}.get("a")["b"]  # an unexpected TypeError inside a command

cli.main(sys.argv[1:])
"""


def test_unexpected_exception_is_one_line_and_a_log_file(tmp_path: Path) -> None:
    env = dict(os.environ, BENCHBOOK_LOG_DIR=str(tmp_path / "logs"))
    r = subprocess.run([sys.executable, "-c", CRASHING, "crash"], capture_output=True, text=True, timeout=120,
                       env=env)
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith("benchbook: unexpected error: TypeError: 'NoneType' object is not subscriptable")
    logs = list((tmp_path / "logs").glob("crash-*.log"))
    assert len(logs) == 1 and str(logs[0]) in r.stderr
    text = logs[0].read_text()
    assert text.startswith("benchbook crash\n") and "Traceback" in text and "TypeError" in text


def test_each_command_module_registers_the_command_of_its_name() -> None:
    """The start-up shortcut builds an app from the module named like the command: every module must register
    exactly that one top-level name, and the whole app exactly the modules' names."""
    for name in cli.COMMAND_MODULES:
        group = typer.main.get_command(cli.build_app((name,)))
        assert sorted(group.commands) == [name], name
    assert sorted(typer.main.get_command(cli.app).commands) == sorted(cli.COMMAND_MODULES)


RUNNING = """
import atexit, sys, threading, time
from pathlib import Path
from benchbook import cli

out = Path(sys.argv[1])

@cli.app.command("work")
def work(code: int, thread: bool = False) -> None:
    atexit.register(lambda: (out / "atexit").write_text("ran"))
    if thread:
        threading.Thread(target=lambda: (time.sleep(0.3), (out / "thread").write_text("done"))).start()
    sys.stdout.write("x" * 200_000)
    if code:
        raise SystemExit(code)

sys.argv[1:2] = []
cli.run()
"""


@pytest.mark.parametrize("code", [0, 3])
@pytest.mark.parametrize("thread", [False, True])
def test_console_exit_keeps_output_atexit_and_threads(tmp_path: Path, code: int, thread: bool) -> None:
    r = subprocess.run([sys.executable, "-c", RUNNING, str(tmp_path), "work", str(code),
                        "--thread" if thread else "--no-thread"], capture_output=True, text=True, timeout=120)
    assert r.returncode == code, r.stderr
    assert r.stdout == "x" * 200_000  # a pipe: the buffered output was flushed before leaving
    assert (tmp_path / "atexit").read_text() == "ran"
    # a non-daemon thread still running gets Python's normal exit, which waits for it
    assert (tmp_path / "thread").exists() == thread


def test_console_script_runs_one_command_and_reports_usage_errors(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("benchbook")
    if not script.exists():
        pytest.skip(f"no console script beside {sys.executable} (package not installed in this environment)")
    r = subprocess.run([str(script), "tcp", str(tmp_path / "missing.pcap"), "-o", str(tmp_path / "o")],
                       capture_output=True, text=True, timeout=120)
    assert (r.returncode, r.stderr) == (2, f"error: {tmp_path / 'missing.pcap'}: no such file\n")
    r = subprocess.run([str(script), "nosuch"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "No such command 'nosuch'" in r.stderr
    r = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and all(name in r.stdout for name in ("tcp", "latency", "reproduce", "kernels"))
