"""The emulation waits for each sshd's pid file; sshd creates the file before it writes the number into it.

CI once read the file in that gap (empty text) and the set-up died with an IndexError instead of waiting."""

from __future__ import annotations

import threading
import time

from benchbook.testbed import emulate as em


def test_empty_pid_file_means_not_yet_written(tmp_path):
    pid_file = tmp_path / "sshd.pid"
    pid_file.write_text("")

    def write_later() -> None:
        time.sleep(0.3)
        pid_file.write_text("4242\n")

    t = threading.Thread(target=write_later)
    t.start()
    try:
        assert em._read_pid(pid_file, timeout_s=5.0) == 4242
    finally:
        t.join()


def test_pid_file_that_stays_empty_gives_none(tmp_path):
    pid_file = tmp_path / "sshd.pid"
    pid_file.write_text("")
    assert em._read_pid(pid_file, timeout_s=0.3) is None
