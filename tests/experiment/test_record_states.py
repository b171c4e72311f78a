"""Run records in every state a killed or finished process can leave them (benchbook.experiment.record): which
records mark_abandoned rewrites and which it must leave, how runs are found, and what read_record says of a
directory. Records are written with the module's own validated writer; owners are real processes (this one, and
one that has exited)."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from benchbook.experiment import record as rr


def _write(run_dir: Path, status: str, owner: dict | None, **extra) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    rec = {"schema_version": 1, "id": run_dir.name.lstrip("."), "experiment": run_dir.parent.name,
           "notebook": "n.ipynb", "parameters": {}, "repetition": 0, "status": status,
           "start": "2026-11-22T19:00:00+00:00",
           "end": None if status == "running" else "2026-11-22T19:00:05+00:00", **extra}
    if owner is not None:
        rec["owner"] = owner
    rr.write_record(run_dir, rec)


@pytest.fixture(scope="module")
def gone_pid() -> int:
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def test_mark_abandoned_rewrites_only_running_records_of_gone_owners(tmp_path, gone_pid):
    me = rr.record_owner()
    assert me["pid"] == os.getpid() and me["start_ticks"] is not None
    cases = {
        "gone": ("running", {**me, "pid": gone_pid, "start_ticks": None}),
        "reused-pid": ("running", {**me, "start_ticks": me["start_ticks"] + 1}),  # our pid, another process
        "other-boot": ("running", {**me, "boot_id": "00000000-0000-0000-0000-000000000000"}),
        "alive": ("running", me),
        "other-host": ("running", {**me, "host": "another-host.invalid", "pid": gone_pid}),
        "no-owner": ("running", None),
        "complete": ("complete", {**me, "pid": gone_pid}),
        "failed": ("failed", {**me, "pid": gone_pid}),
    }
    exp = tmp_path / "exp"
    for name, (status, owner) in cases.items():
        _write(exp / name, status, owner)
        (exp / name / "raw").mkdir()
        (exp / name / "raw" / "cap.pcap").write_bytes(name.encode() * 10)
    (exp / "unreadable").mkdir()
    (exp / "unreadable" / "run.json").write_text('{"status": "running", ')
    hidden = exp / ".attempts" / "old"
    _write(hidden, "running", {**me, "pid": gone_pid})
    marked = rr.mark_abandoned(exp, noticed_by="benchbook test")
    assert marked == [exp / "gone", exp / "other-boot", exp / "reused-pid"]
    for name in ("gone", "other-boot", "reused-pid"):
        rec = rr.read_record(exp / name)
        owner = cases[name][1]
        assert rec["status"] == "interrupted"
        assert rec["error"] == (f"interrupted: the process running it (pid {owner['pid']} on {owner['host']}) ended "
                                f"without finishing the record (killed, e.g. by SIGKILL, or the machine stopped); "
                                f"its raw data are as that process left them")
        assert rec["note"] == "found abandoned and marked interrupted by benchbook test"
        data = name.encode() * 10
        assert rec["outputs"] == [{"path": "raw/cap.pcap", "sha256": hashlib.sha256(data).hexdigest(),
                                   "bytes": len(data)}]  # run.json itself is not an output
    for name in ("alive", "other-host", "no-owner", "complete", "failed"):
        assert rr.read_record(exp / name)["status"] == cases[name][0], name
    assert rr.read_record(hidden)["status"] == "running"
    assert (exp / "unreadable" / "run.json").read_text() == '{"status": "running", '
    assert rr.mark_abandoned(exp) == []  # nothing left to do
    _write(exp / "late", "running", {**me, "pid": gone_pid, "start_ticks": None})
    assert rr.mark_abandoned(exp) == [exp / "late"]
    assert rr.read_record(exp / "late")["note"] == "found abandoned and marked interrupted"
    assert rr.mark_abandoned(tmp_path / "no-such-experiment") == []


def test_owner_gone_edges(gone_pid):
    me = rr.record_owner()
    assert not rr.owner_gone({}) and not rr.owner_gone({"owner": "pid 5"})
    assert not rr.owner_gone({"owner": me})
    assert rr.owner_gone({"owner": {**me, "pid": gone_pid}})
    assert not rr.owner_gone({"owner": {**me, "boot_id": None}})  # an unknown boot says nothing
    assert rr.owner_gone({"owner": {**me, "boot_id": "another-boot"}})


def test_finding_runs_by_path_id_and_experiment(tmp_path):
    runs = tmp_path / "runs"
    for exp, rid in (("a", "r1"), ("b", "r2"), ("c", "r2")):
        _write(runs / exp / rid, "complete", None)
    (runs / "a" / "no-record").mkdir()
    (runs / "a" / ".hidden").mkdir()
    _write(runs / "a" / ".hidden", "complete", None)
    assert rr.find_run(str(runs / "a" / "r1"), runs) == runs / "a" / "r1"
    assert rr.find_run("a/r1", runs) == runs / "a" / "r1"
    assert rr.find_run("r1", runs) == runs / "a" / "r1"
    with pytest.raises(rr.RunRecordError, match=rf"run id r2 is ambiguous under {runs}: {runs / 'b' / 'r2'}, "
                                                rf"{runs / 'c' / 'r2'}"):
        rr.find_run("r2", runs)
    with pytest.raises(rr.RunRecordError, match=r"r9: no run record found \(looked for r9/run.json and under"):
        rr.find_run("r9", runs)
    assert list(rr.iter_run_dirs(runs / "a")) == [runs / "a" / "r1"]
    assert list(rr.iter_run_dirs(runs / "none")) == []


def test_read_record_of_a_directory_named_run_json(tmp_path):
    (tmp_path / "r" / "run.json").mkdir(parents=True)
    with pytest.raises(rr.RunRecordError, match=r"r/run\.json: is a directory, expected a run\.json file"):
        rr.read_record(tmp_path / "r")
