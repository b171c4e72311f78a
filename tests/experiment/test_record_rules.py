"""The rules of run records (benchbook.experiment.record) at their edges, fast and on real files: what validation
says and where, that write_record puts on disk exactly the record it validated (whole or not at all), every way
a run.json can be unreadable and what read_record then names, update_record, how runs are found, the owner of a
record, and every state a killed process can leave a run directory in as mark_abandoned sees it.

Owners that are gone are this process's pid with another start time (deterministic: no pid of an exited child
that the system might hand out again). No test depends on whether the tree has a .git directory."""

from __future__ import annotations

import copy
import errno
import hashlib
import json
import os
import pathlib
import socket
from datetime import UTC, datetime
from pathlib import Path

import pytest

from benchbook.errors import BenchbookError
from benchbook.experiment import record as rr
from benchbook.testbed.state import process_start_ticks

BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
PREFIX = "does not follow run.schema.json (schema version 1): "


def _record(status: str = "complete", **extra) -> dict:
    rec = {"schema_version": 1, "id": "r1", "experiment": "exp", "notebook": "n.ipynb", "parameters": {"rate": 7},
           "repetition": 0, "status": status, "start": "2026-11-22T19:00:00+00:00",
           "end": None if status == "running" else "2026-11-22T19:00:05+00:00"}
    rec.update(extra)
    return rec


def _me() -> dict:
    return rr.record_owner()


def _gone() -> dict:
    """This process's pid with a start time it never had: the process that wrote the record is gone."""
    me = _me()
    return {**me, "start_ticks": me["start_ticks"] + 1}


def _write(run_dir: Path, status: str = "complete", **extra) -> dict:
    run_dir.mkdir(parents=True, exist_ok=True)
    rec = _record(status, id=run_dir.name.lstrip(".") or "r", experiment=run_dir.parent.name or "exp", **extra)
    rr.write_record(run_dir, rec)
    return rec


def _listing(d: Path) -> list[str]:
    return sorted(p.relative_to(d).as_posix() for p in d.rglob("*"))


def _fail_replace(monkeypatch) -> None:
    """The rename that publishes a written file fails (a full or read-only file system)."""
    def refuse(src, dst, *a, **k):
        raise OSError(errno.ENOSPC, "No space left on device", str(dst))
    monkeypatch.setattr(os, "replace", refuse)


# --- schema, validation and its messages ------------------------------------------------------------------

def test_error_type_and_schema_version():
    assert issubclass(rr.RunRecordError, BenchbookError) and issubclass(rr.RunRecordError, ValueError)
    assert rr.SCHEMA_VERSION == 1 and rr.RECORD_NAME == "run.json" and rr.SCHEMA_PATH.name == "run.schema.json"
    s = rr.schema()
    assert s["properties"]["schema_version"] == {"const": rr.SCHEMA_VERSION}
    assert s["title"] == "benchbook run record (run.json)"
    # the schema is parsed, and checked into a validator, once per process, not once per record
    assert rr.schema() is s
    assert rr._validator() is rr._validator()
    assert rr.validation_errors(_record()) == []
    assert rr.validation_errors(_record(schema_version=2)) == ["at schema_version: 1 was expected"]


def test_messages_name_the_source_the_schema_and_the_place():
    rec = _record()
    del rec["id"]
    with pytest.raises(rr.RunRecordError) as err:
        rr.validate_record(rec)
    assert str(err.value) == "run record: " + PREFIX + "at (top level): 'id' is a required property"
    with pytest.raises(rr.RunRecordError) as err:
        rr.validate_record(_record(inputs=[{"path": "x", "sha256": "nothex", "bytes": 1}]), source="here.json")
    assert str(err.value) == "here.json: " + PREFIX + "at inputs.0.sha256: 'nothex' does not match '^[0-9a-f]{64}$'"
    assert rr.validate_record(_record()) is None  # a valid record passes silently


def test_every_error_is_listed_sorted_by_place_and_the_message_holds_the_first_five():
    rec = _record(experiment="", repetition=-1, status="done", start="yesterday", duration_s=-1, warnings=[1],
                  note=5)
    del rec["id"]
    errors = rr.validation_errors(rec)
    assert [e.split(": ")[0] for e in errors] == [
        "at (top level)", "at duration_s", "at experiment", "at note", "at repetition", "at start", "at status",
        "at warnings.0"]
    assert errors[0] == "at (top level): 'id' is a required property"
    assert errors[4] == "at repetition: -1 is less than the minimum of 0"
    assert errors[5] == "at start: 'yesterday' is not a 'date-time'"  # formats are checked
    with pytest.raises(rr.RunRecordError) as err:
        rr.validate_record(rec, source="x")
    assert str(err.value) == "x: " + PREFIX + "; ".join(errors[:5])
    assert "at start" not in str(err.value)


@pytest.mark.parametrize(("start", "ok"), [
    ("2026-11-22T19:00:00Z", True), ("2026-11-22T19:00:00.123456+01:00", True), ("2026-11-22T19:00:00-05:30", True),
    ("2026-11-22T19:00:00", False),  # no offset: not a point in time
    ("2026-11-22 19:00:00+00:00", False), ("2026-13-01T00:00:00Z", False), ("2026-11-22", False), ("", False)])
def test_timestamps_are_rfc3339_date_times(start, ok):
    errors = rr.validation_errors(_record(start=start))
    assert errors == ([] if ok else [f"at start: {start!r} is not a 'date-time'"])
    assert rr.validation_errors(_record(end=start)) == ([] if ok else [f"at end: {start!r} is not a 'date-time'"])


def test_a_record_without_git_state_is_valid():
    """A tree without .git (a release tarball, a copy) records no commit and says why; that is a valid record."""
    env = {"git_commit": None, "git_dirty": None, "git_error": "not a git checkout", "python": "3.12"}
    assert rr.validation_errors(_record(environment=env)) == []
    assert rr.validation_errors(_record(environment={**env, "git_dirty": "yes"})) == [
        "at environment.git_dirty: 'yes' is not of type 'boolean', 'null'"]


# --- writing ----------------------------------------------------------------------------------------------

def test_write_record_puts_on_disk_exactly_the_record_and_reads_it_back(tmp_path):
    rec = _record(note="é ünïcode ✓", environment={"git_commit": None, "git_dirty": None,
                                                    "git_error": "no .git"},
                  duration_s=5.0, owner=_me())
    rr.write_record(tmp_path, rec)
    assert _listing(tmp_path) == ["run.json"]  # nothing else: no temporary file left
    text = (tmp_path / "run.json").read_text(encoding="utf-8")
    assert text == json.dumps(rec, indent=2) + "\n"
    assert rr.read_record(tmp_path) == rec == rr.read_record(tmp_path / "run.json") == rr.read_record(
        str(tmp_path))
    assert list(rr.read_record(tmp_path)) == list(rec)  # the fields exactly, in their order


def test_write_record_validates_what_json_makes_of_the_values(tmp_path):
    """Values JSON cannot hold are written as their str(), tuples as lists, keys as strings: the record is
    validated in that form, so what passed validation is what is on disk."""
    rec = _record(note=Path("/data/x"), warnings=("a", "b"), parameters={1: (1, 2), "p": Path("rel")})
    before = copy.deepcopy(rec)
    rr.write_record(tmp_path, rec)
    assert rec == before  # the caller's record is not changed
    back = rr.read_record(tmp_path)
    assert back["note"] == "/data/x" and back["warnings"] == ["a", "b"]
    assert back["parameters"] == {"1": [1, 2], "p": "rel"}
    # a datetime's str() has a space, not an RFC 3339 "T": refused, and nothing is written
    d = tmp_path / "d"
    d.mkdir()
    when = datetime(2026, 11, 22, 19, 0, tzinfo=UTC)
    with pytest.raises(rr.RunRecordError) as err:
        rr.write_record(d, _record(start=when))
    assert str(err.value) == (f"{d / 'run.json'}: " + PREFIX + "at start: '2026-11-22 19:00:00+00:00' is not a "
                              "'date-time'")
    assert _listing(d) == []


@pytest.mark.parametrize("duration", [float("nan"), float("inf")])
def test_a_duration_json_cannot_hold_is_refused_not_written_as_text(tmp_path, duration):
    """A NaN passes "minimum: 0" as a float, but run.json holds it as the text "NaN" (atomic_write.json_safe), which
    read_record then refused: such a record is refused before it is written."""
    with pytest.raises(rr.RunRecordError, match=r"at duration_s: '(NaN|Infinity)' is not of type 'number', 'null'"):
        rr.write_record(tmp_path, _record(duration_s=duration))
    assert _listing(tmp_path) == []


def test_an_invalid_record_never_replaces_a_valid_one(tmp_path):
    _write(tmp_path / "r1")
    before = (tmp_path / "r1" / "run.json").read_bytes()
    with pytest.raises(rr.RunRecordError, match=rf"^{tmp_path / 'r1' / 'run.json'}: does not follow run\.schema"
                                                r"\.json \(schema version 1\): at status: 'finished' is not one of"):
        rr.write_record(tmp_path / "r1", _record(status="finished"))
    assert (tmp_path / "r1" / "run.json").read_bytes() == before
    assert _listing(tmp_path / "r1") == ["run.json"]


def test_a_failed_write_leaves_the_previous_record_whole_or_none(tmp_path, monkeypatch):
    first = _write(tmp_path / "r1", "running", owner=_me())
    before = (tmp_path / "r1" / "run.json").read_bytes()
    (tmp_path / "r2").mkdir()
    _fail_replace(monkeypatch)
    with pytest.raises(OSError, match=r"No space left on device") as err:
        rr.write_record(tmp_path / "r1", dict(first, status="complete", end="2026-11-22T19:01:00Z"))
    assert err.value.filename == str(tmp_path / "r1" / "run.json")
    with pytest.raises(OSError):
        rr.write_record(tmp_path / "r2", _record(id="r2"))
    monkeypatch.undo()
    assert (tmp_path / "r1" / "run.json").read_bytes() == before  # the old record, whole
    assert _listing(tmp_path / "r1") == ["run.json"] and _listing(tmp_path / "r2") == []  # no partial file
    assert rr.read_record(tmp_path / "r1") == first
    assert list(rr.iter_run_dirs(tmp_path)) == [tmp_path / "r1"]  # the run without a record is no run


# --- reading: every way a run.json can be unreadable ------------------------------------------------------

def _read_error(path) -> str:
    with pytest.raises(rr.RunRecordError) as err:
        rr.read_record(path)
    # no chained internal error (a traceback shows the message, not the OSError or JSONDecodeError behind it)
    assert err.value.__cause__ is None and (err.value.__context__ is None or err.value.__suppress_context__)
    return str(err.value)


def test_missing_record(tmp_path):
    d = tmp_path / "r"
    d.mkdir()
    assert _read_error(d) == f"{d / 'run.json'}: no run record (expected a run.json written by benchbook)"
    assert _read_error(d / "other.json") == (f"{d / 'other.json'}: no run record (expected a run.json written by "
                                             "benchbook)")


def test_run_json_that_is_a_directory(tmp_path):
    (tmp_path / "r" / "run.json").mkdir(parents=True)
    assert _read_error(tmp_path / "r") == (f"{tmp_path / 'r' / 'run.json'}: is a directory, expected a run.json "
                                           "file written by benchbook")


def test_run_json_that_cannot_be_read(tmp_path):
    (tmp_path / "file").write_text("x")
    p = tmp_path / "file" / "run.json"
    assert _read_error(p) == f"{p}: cannot be read: Not a directory"
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    assert _read_error(tmp_path / "loop") == f"{tmp_path / 'loop'}: cannot be read: Too many levels of symbolic links"
    with pytest.raises(ValueError):  # a path no file can have (RunRecordError is a ValueError too)
        rr.read_record(str(tmp_path / "a\0b"))


def test_run_json_that_is_not_utf8(tmp_path):
    p = tmp_path / "run.json"
    p.write_bytes(b'{"id": "\xff"}')
    assert _read_error(p) == f"{p}: byte 8: not UTF-8 text (invalid start byte)"
    p.write_bytes('{"note": "é"}'.encode()[:-3])  # cut inside a character
    assert _read_error(tmp_path) == f"{p}: byte 10: not UTF-8 text (unexpected end of data)"


@pytest.mark.parametrize("text", [
    "",  # created, never written
    "\n",
    '{\n  "schema_version": 1,\n  "id": "r1",\n  "sta',  # truncated by a writer that is not atomic
    '{"status": "running", ',
    "run: 1\n",  # not JSON at all
    '{"a": 1,}',
    "\ufeff{}",  # a byte-order mark
])
def test_run_json_that_is_not_json(tmp_path, text):
    p = tmp_path / "run.json"
    p.write_text(text, encoding="utf-8")
    with pytest.raises(json.JSONDecodeError) as want:
        json.loads(text)
    e = want.value
    assert _read_error(tmp_path) == (f"{p}: line {e.lineno} column {e.colno} (byte {e.pos}): not valid JSON: "
                                     f"{e.msg}")


def test_run_json_positions_are_exact(tmp_path):
    p = tmp_path / "run.json"
    p.write_text('{\n  "schema_version": 1,\n  "id": "r1",\n  "sta')
    assert _read_error(p) == f"{p}: line 4 column 3 (byte 41): not valid JSON: Unterminated string starting at"
    p.write_text("")
    assert _read_error(p) == f"{p}: line 1 column 1 (byte 0): not valid JSON: Expecting value"


@pytest.mark.parametrize("text", ["[]", "[1]", '"run"', "null", "1", "true"])
def test_run_json_that_is_not_an_object(tmp_path, text):
    (tmp_path / "run.json").write_text(text)
    assert _read_error(tmp_path) == f"{tmp_path / 'run.json'}: expected a JSON object at byte 0"


def test_run_json_of_the_wrong_schema(tmp_path):
    p = tmp_path / "run.json"
    p.write_text("{}")
    msg = _read_error(tmp_path)
    assert msg.startswith(f"{p}: " + PREFIX + "at (top level): 'schema_version' is a required property; ")
    assert msg.count("; ") == 4  # five of the ten missing fields
    p.write_text(json.dumps(_record(schema_version=2, owner={"host": "h", "pid": "1"})))
    assert _read_error(p) == (f"{p}: " + PREFIX + "at owner.pid: '1' is not of type 'integer'; "
                              "at schema_version: 1 was expected")


# --- update_record ----------------------------------------------------------------------------------------

def test_update_record_sets_exactly_the_fields_given(tmp_path):
    rec = _write(tmp_path / "r1", note="first")
    seq = {"rule": "obf", "alpha": 0.05, "looks_planned": 2, "alpha_per_look": [0.01, 0.04], "runs_per_look": [3, 6],
           "looks": [{"runs": 3}], "stopped": "decisive"}
    got = rr.update_record(tmp_path / "r1", sequential=seq, note="second")
    assert got == {**rec, "sequential": seq, "note": "second"}
    assert rr.read_record(tmp_path / "r1") == got
    assert rr.update_record(str(tmp_path / "r1")) == got  # no fields: the record as it is
    before = (tmp_path / "r1" / "run.json").read_bytes()
    with pytest.raises(rr.RunRecordError, match=r"at sequential: 'stopped' is a required property"):
        rr.update_record(tmp_path / "r1", sequential={k: v for k, v in seq.items() if k != "stopped"})
    assert (tmp_path / "r1" / "run.json").read_bytes() == before
    with pytest.raises(rr.RunRecordError, match=r"no run record"):
        rr.update_record(tmp_path / "none", note="x")
    assert not (tmp_path / "none").exists()


# --- finding runs -----------------------------------------------------------------------------------------

def test_iter_run_dirs_yields_sorted_visible_directories_with_a_record(tmp_path):
    exp = tmp_path / "exp"
    names = ["r07", "r02", "r11", "r03", "r10", "r01", "r09", "r05", "r12", "r04", "r08", "r06"]
    for n in names:
        _write(exp / n)
    _write(exp / ".attempts" / "r01")  # aside: hidden
    _write(exp / ".hidden")
    (exp / "no-record").mkdir()  # killed before its first record
    (exp / "tmp-only").mkdir()  # killed while writing its first record
    (exp / "tmp-only" / ".run.json.123.tmp").write_text('{"sta')
    (exp / "run.json").write_text("{}")  # a file, not a run directory
    (exp / "zz-file").write_text("x")
    got = list(rr.iter_run_dirs(str(exp)))
    assert got == [exp / n for n in sorted(names)]
    # a run whose record is broken is still a run: read_record says what is wrong with it
    (exp / "r00").mkdir()
    (exp / "r00" / "run.json").write_text("")
    (exp / "r99" / "run.json").mkdir(parents=True)
    assert list(rr.iter_run_dirs(exp)) == [exp / "r00", *got, exp / "r99"]
    assert list(rr.iter_run_dirs(exp / "r01")) == []  # a run directory holds no runs
    assert list(rr.iter_run_dirs(exp / "zz-file")) == []
    assert list(rr.iter_run_dirs(tmp_path / "none")) == []


def test_find_run_by_path_experiment_and_id(tmp_path, monkeypatch):
    runs = tmp_path / "runs"
    for exp, rid in (("a", "r1"), ("b", "r2"), ("c", "r2"), ("d", "r3")):
        _write(runs / exp / rid)
    elsewhere = tmp_path / "elsewhere" / "r3"
    _write(elsewhere)
    assert rr.find_run(elsewhere, runs) == elsewhere
    assert rr.find_run(str(elsewhere), runs) == elsewhere
    assert rr.find_run("a/r1", runs) == runs / "a" / "r1"
    assert rr.find_run(Path("d/r3"), runs) == runs / "d" / "r3"
    assert rr.find_run("r1", runs) == runs / "a" / "r1"
    assert rr.find_run("r3", runs) == runs / "d" / "r3"
    monkeypatch.chdir(tmp_path / "elsewhere")  # a path relative to the working directory comes first
    assert rr.find_run("r3", runs) == Path("r3")
    with pytest.raises(rr.RunRecordError) as err:
        rr.find_run("r2", runs)
    assert str(err.value) == f"run id r2 is ambiguous under {runs}: {runs / 'b' / 'r2'}, {runs / 'c' / 'r2'}"
    with pytest.raises(rr.RunRecordError) as err:
        rr.find_run("x/r9", runs)
    assert str(err.value) == f"x/r9: no run record found (looked for x/r9/run.json and under {runs})"
    # "<experiment>/<run-id>" and paths mean that run only: r1 of experiment b is not r1 of a (it returned a/r1)
    for ref in ("b/r1", str(tmp_path / "gone" / "r1")):
        with pytest.raises(rr.RunRecordError, match=r": no run record found \(looked for "):
            rr.find_run(ref, runs)
    # a directory named run.json is no record: r7 of f stays the only r7 (it was ambiguous)
    (runs / "e" / "r7" / "run.json").mkdir(parents=True)
    _write(runs / "f" / "r7")
    assert rr.find_run("r7", runs) == runs / "f" / "r7"


# --- owners -----------------------------------------------------------------------------------------------

def test_record_owner_is_this_process():
    me = rr.record_owner()
    assert list(me) == ["host", "boot_id", "pid", "start_ticks"]
    assert me["host"] == socket.gethostname() and me["pid"] == os.getpid()
    assert me["start_ticks"] == process_start_ticks(os.getpid()) and isinstance(me["start_ticks"], int)
    assert me["boot_id"] == (BOOT_ID.read_text().strip() if BOOT_ID.exists() else None)
    if me["boot_id"] is not None:
        assert me["boot_id"] == me["boot_id"].strip() and len(me["boot_id"]) == 36
    assert rr.validation_errors(_record("running", owner=me)) == []


def test_owner_gone_edges():
    me = _me()
    assert not rr.owner_gone({"owner": me}) and rr.owner_gone({"owner": _gone()})
    assert not rr.owner_gone({"owner": None}) and not rr.owner_gone({"owner": [me]})
    assert not rr.owner_gone({"owner": {k: v for k, v in me.items() if k != "host"}})  # host unknown: not ours
    assert not rr.owner_gone({"owner": {**_gone(), "host": me["host"] + ".other"}})
    # no start time recorded: the pid alone decides
    assert not rr.owner_gone({"owner": {**me, "start_ticks": None}})
    assert not rr.owner_gone({"owner": {"host": me["host"], "pid": os.getpid()}})
    # a pid written as 1234.0 is an integer to the schema, and the same process
    assert rr.validation_errors(_record("running", owner={**me, "pid": float(os.getpid())})) == []
    assert not rr.owner_gone({"owner": {**me, "pid": float(os.getpid())}})
    assert rr.owner_gone({"owner": {**_gone(), "pid": float(os.getpid())}})
    assert not rr.owner_gone({"owner": {**me, "pid": str(os.getpid())}})
    if me["boot_id"]:
        assert not rr.owner_gone({"owner": {**me, "boot_id": ""}})  # an empty boot id says nothing
        assert rr.owner_gone({"owner": {**me, "boot_id": me["boot_id"][:-1] + "x"}})


@pytest.mark.parametrize("error", [FileNotFoundError(errno.ENOENT, "No such file or directory"),
                                   PermissionError(errno.EACCES, "Permission denied")])
def test_owner_gone_when_this_boot_is_unknown(monkeypatch, error):
    """Without /proc/sys/kernel/random/boot_id (a container, another kernel) no boot can be told from another:
    the pid and its start time decide."""
    read_text = pathlib.Path.read_text

    def no_boot_id(self, *a, **k):
        if str(self) == str(BOOT_ID):
            raise error
        return read_text(self, *a, **k)

    me = _me()
    monkeypatch.setattr(pathlib.Path, "read_text", no_boot_id)
    assert rr.record_owner() == {**me, "boot_id": None}
    assert not rr.owner_gone({"owner": {**me, "boot_id": "another-boot"}})
    assert rr.owner_gone({"owner": {**_gone(), "boot_id": "another-boot"}})


# --- mark_abandoned: what a killed process leaves ---------------------------------------------------------

def test_mark_abandoned_rewrites_exactly_status_error_note_and_outputs(tmp_path):
    exp = tmp_path / "exp"
    gone = _gone()
    rec = _write(exp / "r1", "running", owner=gone, parameters={"rate": 3}, note="was running",
                 error="an earlier warning", outputs=[], environment={"git_commit": None, "git_error": "no .git"},
                 sweep={"experiment": "exp", "point": 2, "repetition": 1})
    (exp / "r1" / "raw").mkdir()
    (exp / "r1" / "raw" / "b.pcap").write_bytes(b"\x00\x01" * 50)
    (exp / "r1" / "a.txt").write_text("measured\n")
    (exp / "r1" / ".run.json.999.tmp").write_text('{"status": "comp')  # its killed writer's temporary file
    assert rr.mark_abandoned(exp) == [exp / "r1"]
    got = rr.read_record(exp / "r1")
    changed = {"status", "error", "note", "outputs"}
    assert {k: v for k, v in got.items() if k not in changed} == {k: v for k, v in rec.items() if k not in changed}
    assert list(got) == list(rec)
    assert got["status"] == "interrupted" and got["end"] is None
    assert got["error"] == (f"interrupted: the process running it (pid {gone['pid']} on {gone['host']}) ended without "
                            "finishing the record (killed, e.g. by SIGKILL, or the machine stopped); its raw data "
                            "are as that process left them")
    assert got["note"] == "found abandoned and marked interrupted"
    assert got["outputs"] == [
        {"path": "a.txt", "sha256": hashlib.sha256(b"measured\n").hexdigest(), "bytes": 9},
        {"path": "raw/b.pcap", "sha256": hashlib.sha256(b"\x00\x01" * 50).hexdigest(), "bytes": 100}]
    # nothing deleted, not even the temporary file; the record is whole JSON
    assert _listing(exp / "r1") == [".run.json.999.tmp", "a.txt", "raw", "raw/b.pcap", "run.json"]
    assert rr.mark_abandoned(exp, noticed_by="x") == []


def test_mark_abandoned_leaves_every_other_state_as_it_is(tmp_path):
    exp = tmp_path / "exp"
    me, gone = _me(), _gone()
    _write(exp / "complete-says-running", owner=gone, parameters={"mode": "running"}, note="running")
    _write(exp / "failed", "failed", owner=gone, error='"running"')
    _write(exp / "interrupted", "interrupted", owner=gone)
    _write(exp / "alive", "running", owner=me)
    _write(exp / "no-owner", "running")
    _write(exp / "other-host", "running", owner={**gone, "host": "other.invalid"})
    for name, data in (("empty", b""), ("truncated", b'{\n  "status": "running",\n  "id": "tr'),
                       ("not-utf8", b'{"status": "running", "note": "\xff"}'),
                       ("wrong-schema", b'{"status": "running", "owner": {"host": "%s", "pid": %d, "start_ticks": %d}}'
                        % (gone["host"].encode(), gone["pid"], gone["start_ticks"])),
                       ("a-list", b'["running"]')):
        (exp / name).mkdir()
        (exp / name / "run.json").write_bytes(data)
    (exp / "dir-record" / "run.json").mkdir(parents=True)  # a directory where run.json should be
    (exp / "dir-record" / "run.json" / "running").write_text('"running"')
    (exp / "no-record").mkdir()  # killed before the first record
    before = {d: _listing(d) for d in exp.iterdir()}
    texts = {d: (d / "run.json").read_bytes() for d in exp.iterdir() if (d / "run.json").is_file()}
    assert rr.mark_abandoned(exp, noticed_by="t") == []
    assert {d: _listing(d) for d in exp.iterdir()} == before
    assert {d: (d / "run.json").read_bytes() for d in exp.iterdir() if (d / "run.json").is_file()} == texts
    # and the one gone owner's record among them is still found
    _write(exp / "killed", "running", owner=gone)
    assert rr.mark_abandoned(str(exp), noticed_by="t") == [exp / "killed"]
    assert rr.read_record(exp / "killed")["note"] == "found abandoned and marked interrupted by t"


def test_mark_abandoned_whose_write_fails_leaves_the_running_record_whole(tmp_path, monkeypatch):
    exp = tmp_path / "exp"
    rec = _write(exp / "r1", "running", owner=_gone())
    before = (exp / "r1" / "run.json").read_bytes()
    _fail_replace(monkeypatch)
    with pytest.raises(OSError, match="No space left on device"):
        rr.mark_abandoned(exp)
    monkeypatch.undo()
    assert (exp / "r1" / "run.json").read_bytes() == before and _listing(exp / "r1") == ["run.json"]
    assert rr.read_record(exp / "r1") == rec
    assert rr.mark_abandoned(exp) == [exp / "r1"]  # the next look finishes it


# --- faults found by review (each failed before its fix) ---------------------------------------------------------

def test_errors_under_keys_of_mixed_types_sort_and_list_indices_sort_as_numbers():
    """A record built in Python may carry non-string keys: sorting the error paths compared 1 with 'a' (TypeError)."""
    rec = _record(environment_files={1: 2, "a": 3, 0: None}, warnings=["ok"] * 10 + [10, "ok", 12])
    assert rr.validation_errors(rec) == [
        "at environment_files.0: None is not of type 'string'", "at environment_files.1: 2 is not of type 'string'",
        "at environment_files.a: 3 is not of type 'string'", "at warnings.10: 10 is not of type 'string'",
        "at warnings.12: 12 is not of type 'string'"]


@pytest.mark.parametrize("ref", ["r1\0", "exp/\0r1", "\0"])
def test_a_reference_with_a_nul_byte_is_a_run_record_error(tmp_path, ref):
    """os.stat raised a bare ValueError ('embedded null byte') out of find_run and read_record."""
    _write(tmp_path / "runs" / "exp" / "r1")
    with pytest.raises(rr.RunRecordError) as exc:
        rr.find_run(ref, tmp_path / "runs")
    assert str(exc.value) == f"{ref!r}: a run reference with a NUL byte names no run"
    with pytest.raises(rr.RunRecordError) as exc:
        rr.read_record(tmp_path / ref)
    assert str(exc.value) == f"{str(tmp_path / ref)!r}: a path with a NUL byte names no run record"
