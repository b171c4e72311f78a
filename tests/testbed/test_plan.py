"""The plan executor (benchbook.testbed.plan) on this machine's real shell: steps in order, run-time values from
the steps that produce them, after a failure only the `always` steps, every teardown step whatever happened
(also on Ctrl-C, raised again afterwards), and every command in the one command log. No root needed."""

from __future__ import annotations

import pytest

from benchbook.testbed.plan import PlanError, Step, StepEnv, execute, substitute
from benchbook.tools.host import CommandLog, Host, LocalHost


class _Here(StepEnv):
    """Every role is this machine (a LocalHost named after the role)."""

    def __init__(self, log: CommandLog) -> None:
        self.log = log
        self.restored: list[tuple[str, str]] = []

    def host(self, role: str) -> Host:
        return LocalHost(name=role or "local", log=self.log)

    def note_restore(self, path: str, value: str) -> None:
        self.restored.append((path, value))


def _sh(script: str) -> list[str]:
    return ["sh", "-c", script]


def test_values_flow_from_producer_to_later_steps(tmp_path):
    env = _Here(CommandLog(tmp_path / "raw"))
    out = tmp_path / "out.txt"
    steps = [Step("run", "a", ["echo", "4242"], produces=("DUT_PID",)),
             Step("run", "b", _sh(f"echo pid=DUT_PID > {out}"), options={"restore": ("/x", "DUT_PID")}),
             Step("run", "a", ["echo", "done"], name="last")]
    ex = execute(steps, env)
    assert ex.status == "complete" and ex.error is None
    assert ex.values == {"DUT_PID": "4242"} and out.read_text() == "pid=4242\n"
    assert env.restored == [("/x", "4242")]
    assert ex.outputs["last"]["stdout"] == "done\n"
    assert [r.argv for r in env.log.records] == [["echo", "4242"], _sh(f"echo pid=4242 > {out}"), ["echo", "done"]]
    assert [e["commands"] for e in ex.steps] == [[1], [2], [3]]
    assert substitute("a DUT_PIDS DUT_PID", {"DUT_PID": "7"}) == "a DUT_PIDS 7", "whole words only"


def test_after_a_failure_only_always_then_every_teardown(tmp_path):
    env = _Here(CommandLog(tmp_path / "raw"))
    mark = tmp_path / "marks"
    steps = [Step("run", "a", ["true"], produces=("SINK_MAC",)),
             Step("run", "a", _sh("echo broken >&2; exit 3"), note="fails"),
             Step("run", "a", _sh(f"echo skipped >> {mark}")),
             Step("run", "a", _sh(f"echo collected >> {mark}"), always=True, check=False),
             Step("run", "a", _sh(f"echo torn-down >> {mark}"), teardown=True, check=False),
             Step("run", "a", _sh(f"echo never DUT_PID >> {mark}"), teardown=True, check=False),
             Step("run", "a", _sh("exit 1"), teardown=True, check=False, note="a cleanup that fails")]
    ex = execute(steps, env)
    assert ex.status == "failed" and ex.error.startswith("step 2 (sh -c") and "exit 3: broken" in ex.error
    assert mark.read_text() == "collected\ntorn-down\n"
    skipped = [e for e in ex.steps if "skipped" in e]
    assert len(skipped) == 1 and "DUT_PID" in skipped[0]["skipped"], "no value: the step is skipped, not run"
    assert len(ex.cleanup_problems) == 1 and "exit 1" in ex.cleanup_problems[0]
    assert len(env.log.records) == 5


def test_ctrl_c_runs_always_and_teardown_then_raises(tmp_path):
    env = _Here(CommandLog(tmp_path / "raw"))
    mark = tmp_path / "marks"
    steps = [Step("run", "a", _sh("kill -INT $PPID; sleep 5"), note="Ctrl-C arrives"),
             Step("run", "a", _sh(f"echo measured >> {mark}")),
             Step("wait", seconds=0.01, always=True),
             Step("run", "a", _sh(f"echo stopped >> {mark}"), always=True),
             Step("run", "a", _sh(f"echo torn-down >> {mark}"), teardown=True, check=False)]
    with pytest.raises(KeyboardInterrupt):
        execute(steps, env)
    assert mark.read_text() == "stopped\ntorn-down\n"


def test_start_and_stop_a_process(tmp_path):
    env = _Here(CommandLog(tmp_path / "raw"))
    steps = [Step("start", "a", _sh("trap 'echo bye; exit 0' INT; echo up; while :; do sleep 0.05; done"), name="p",
                  produces=("DUT_PID",), options={"ready": ("stdout", "up")}),
             Step("run", "a", _sh("kill -0 DUT_PID")),
             Step("stop", "a", name="p", always=True)]
    ex = execute(steps, env)
    assert ex.status == "complete", ex.error
    assert ex.values["DUT_PID"] == str(ex.outputs["p"]["pid"]) and ex.outputs["p"]["exit_code"] == 0
    assert env.log.records[0].exit_code == 0
    with pytest.raises(PlanError, match="step kind 'go'"):
        Step("go")
