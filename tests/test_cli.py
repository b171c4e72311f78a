"""benchbook.cli.main: a BenchbookError a command leaves unhandled is printed as one line, no traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

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
    import os

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
