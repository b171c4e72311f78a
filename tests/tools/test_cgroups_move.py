"""The v1 recipe's task move (tools/cgroups.move_tasks_argv) counts a moved task that has exited but is not yet
reaped (a zombie: it has left its cgroup but keeps its /proc entry) as exited, not as lost. Run on plain files
standing in for the cgroup `tasks` files (a write to a plain file always succeeds and keeps only the last pid),
with a real zombie, a live process and this process."""

from __future__ import annotations

import os
import subprocess
import time

from benchbook.tools import cgroups


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as fh:
        return fh.read().rsplit(") ", 1)[1][0]


def test_a_zombie_counts_as_exited_and_a_live_task_elsewhere_as_neither(tmp_path):
    zombie = subprocess.Popen(["true"])
    live = subprocess.Popen(["sleep", "30"])
    try:
        for _ in range(200):
            if _state(zombie.pid) == "Z":
                break
            time.sleep(0.01)
        assert _state(zombie.pid) == "Z"
        root, dest = tmp_path / "root", tmp_path / "dest"
        root.mkdir()
        dest.mkdir()
        (root / "tasks").write_text(f"{zombie.pid}\n{live.pid}\n{os.getpid()}\n")
        (dest / "tasks").write_text("")
        out = subprocess.run(cgroups.move_tasks_argv(root, dest, passes=1), capture_output=True, text=True,
                             check=True).stdout
        r = cgroups.move_report(out)
        # dest/tasks keeps the last pid written (this process): verified; the zombie: exited; the live sleep is in
        # neither place, as a task moved back by someone else would be
        assert (r["tasks_moved"], r["tasks_verified_in_housekeeping"], r["tasks_exited_since_move"]) == (3, 1, 1)
    finally:
        live.kill()
        live.wait()
        zombie.wait()
