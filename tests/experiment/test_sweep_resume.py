"""The sweep-resume rule without running notebooks (fast): every state a killed or failed point can leave on disk,
what `--resume` makes of it, and the checks before anything runs. Records are written by the record module's own
validated writer, as the runner writes them; the slow SIGKILL test in test_sweep.py runs the real thing."""

from __future__ import annotations

import inspect
import json
import os
import re
from pathlib import Path

import pytest
import typer

from benchbook.atomic_write import write_json_atomic
from benchbook.commands import run as run_cmd
from benchbook.experiment.record import RunRecordError, read_record, write_record
from benchbook.experiment.sweep import (
    ATTEMPTS_DIR,
    SWEEP_NAME,
    SweepError,
    SweepOutcome,
    _reconcile,
    check_experiment_name,
    expand,
    parse_grid,
    parse_value,
    run_sweep,
    split_values,
)
from benchbook.provenance.checksums import sha256_file

NOTEBOOK = Path(__file__).resolve().parents[1] / "data" / "sweep_point.ipynb"


def _record(run_dir: Path, status: str, **extra) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    rec = {"schema_version": 1, "id": run_dir.name, "experiment": run_dir.parent.name, "notebook": str(NOTEBOOK),
           "parameters": {}, "repetition": 0, "status": status, "start": "2026-01-02T03:04:05+00:00",
           "end": None if status == "running" else "2026-01-02T03:04:09+00:00", **extra}
    write_record(run_dir, rec)


def test_resume_reconciles_every_state_a_point_can_be_left_in(tmp_path):
    exp = tmp_path / "exp"
    exp.mkdir()
    points = expand({"rate": [1, 2, 3, 4, 5, 6, 7, 8, 9]}, 1)
    p = {q["parameters"]["rate"]: q for q in points}
    # 1: never started (the manifest may say running if the sweep died while writing it); no run id
    p[1]["status"] = "running"
    # 2: its directory vanished (deleted by hand)
    p[2].update(run_id="r2", status="running")
    # 3: complete
    _record(exp / "r3", "complete")
    p[3].update(run_id="r3", status="complete")
    # 4: killed mid-run: the record still says running, raw data written
    _record(exp / "r4", "running")
    (exp / "r4" / "raw").mkdir()
    (exp / "r4" / "raw" / "capture.pcap").write_bytes(b"raw bytes")
    p[4].update(run_id="r4", status="running")
    # 5: failed (its error kept)
    _record(exp / "r5", "failed", error="cell In [3]: ValueError")
    p[5].update(run_id="r5", status="failed")
    # 6: killed before the first record was written: a directory without run.json
    (exp / "r6" / "raw").mkdir(parents=True)
    p[6].update(run_id="r6", status="running")
    # 7: a record that does not parse (not benchbook's writer: it writes whole files or none)
    (exp / "r7").mkdir()
    (exp / "r7" / "run.json").write_text('{"status": "runn')
    p[7].update(run_id="r7", status="running")
    # 8: killed while rewriting its record: the old record and the writer's temporary file
    _record(exp / "r8", "running")
    (exp / "r8" / f".run.json.{os.getpid()}.tmp").write_text('{"half')
    p[8].update(run_id="r8", status="running")
    # 9: interrupted by SIGTERM (the runner recorded it), an earlier attempt of the same id already aside
    _record(exp / "r9", "interrupted", error="SIGTERM")
    (exp / ATTEMPTS_DIR / "r9").mkdir(parents=True)
    (exp / ATTEMPTS_DIR / "r9.2").mkdir(parents=True)
    p[9].update(run_id="r9", status="interrupted")
    manifest = {"points": points}
    outcome = SweepOutcome(exp, manifest)
    _reconcile(exp, manifest, outcome)

    status = {r: (q["status"], q["run_id"]) for r, q in p.items()}
    assert status == {1: ("pending", None), 2: ("pending", None), 3: ("complete", "r3"), 4: ("pending", None),
                      5: ("pending", None), 6: ("pending", None), 7: ("pending", None), 8: ("pending", None),
                      9: ("pending", None)}
    assert outcome.moved_aside == ["r4", "r5", "r6", "r7", "r8", "r9"]
    assert p[1]["attempts"] == [] and p[3]["attempts"] == []
    assert p[2]["attempts"] == [{"run_id": "r2", "status": "vanished", "moved_to": None}]
    attempts = {r: p[r]["attempts"] for r in range(4, 10)}
    assert attempts[4] == [{"run_id": "r4", "status": "running", "moved_to": ".attempts/r4"}]
    assert attempts[5] == [{"run_id": "r5", "status": "failed", "moved_to": ".attempts/r5"}]
    assert attempts[6][0]["status"].startswith("unreadable (") and "no run record" in attempts[6][0]["status"]
    assert attempts[7][0]["status"].startswith("unreadable (") and "not valid JSON" in attempts[7][0]["status"]
    assert attempts[8] == [{"run_id": "r8", "status": "running", "moved_to": ".attempts/r8"}]
    assert attempts[9] == [{"run_id": "r9", "status": "interrupted", "moved_to": ".attempts/r9.3"}]
    # nothing deleted: every attempt's directory is aside with its data; the complete one stays
    aside = exp / ATTEMPTS_DIR
    assert sorted(d.name for d in aside.iterdir()) == ["r4", "r5", "r6", "r7", "r8", "r9", "r9.2", "r9.3"]
    assert (aside / "r4" / "raw" / "capture.pcap").read_bytes() == b"raw bytes"
    assert read_record(exp / "r3")["status"] == "complete" and not (exp / "r4").exists()
    # the killed run's record now says what happened; a failed or interrupted one keeps its own error
    r4 = read_record(aside / "r4")
    assert r4["status"] == "interrupted" and r4["error"] == "the sweep process ended while this run was in progress"
    assert r4["note"].startswith("moved aside by sweep resume at ") and r4["note"].endswith(
        "(status was running); the point is run again")
    r5 = read_record(aside / "r5")
    assert (r5["status"], r5["error"]) == ("failed", "cell In [3]: ValueError") and "status was failed" in r5["note"]
    r9 = read_record(aside / "r9.3")
    assert (r9["status"], r9["error"]) == ("interrupted", "SIGTERM")
    assert read_record(aside / "r8")["status"] == "interrupted"
    assert (aside / "r7" / "run.json").read_text() == '{"status": "runn'  # moved as it was
    assert not (aside / "r6" / "run.json").exists() and (aside / "r6" / "raw").is_dir()


def test_a_killed_record_keeps_an_error_it_already_had(tmp_path):
    exp = tmp_path / "exp"
    _record(exp / "r1", "running", error="No space left on device: '/x'")
    points = expand({}, 1)
    points[0].update(run_id="r1", status="running")
    manifest = {"points": points}
    _reconcile(exp, manifest, SweepOutcome(exp, manifest))
    rec = read_record(exp / ATTEMPTS_DIR / "r1")
    assert (rec["status"], rec["error"]) == ("interrupted", "No space left on device: '/x'")


def _complete_sweep(tmp_path: Path, grid: dict, repeat: int = 1) -> tuple[Path, dict]:
    """A sweep whose points all ran, as run_sweep leaves it (sweep.json and complete records)."""
    exp = tmp_path / "runs" / "done"
    points = expand(grid, repeat)
    for q in points:
        q.update(run_id=f"run-{q['key']}", status="complete")
        _record(exp / q["run_id"], "complete")
    manifest = {"sweep_version": 1, "experiment": "done", "notebook": str(NOTEBOOK.resolve()),
                "notebook_sha256": sha256_file(NOTEBOOK), "grid": grid, "repeat": repeat, "shuffle": False,
                "seed": None, "order": [q["key"] for q in points], "created": "2026-01-02T03:04:05+00:00",
                "updated": "2026-01-02T03:04:05+00:00", "points": points}
    write_json_atomic(exp / SWEEP_NAME, manifest)
    return exp, manifest


def test_resuming_a_finished_sweep_runs_nothing_and_notes_the_resume(tmp_path):
    grid = {"rate": [1, 2], "mode": ["a"]}
    exp, _ = _complete_sweep(tmp_path, grid, repeat=2)
    out = run_sweep(NOTEBOOK, grid, repeat=2, experiment="done", runs_dir=tmp_path / "runs", resume=True,
                    progress=False)
    assert out.ran == [] and out.moved_aside == []
    assert out.skipped == ["p0000r000", "p0000r001", "p0001r000", "p0001r001"]
    assert out.count("complete") == 4 and out.count("pending") == 0
    saved = json.loads((exp / SWEEP_NAME).read_text())
    assert len(saved["resumed"]) == 1 and saved["updated"] >= saved["created"]
    # the resume is the sweep's latest change: updated moves on from what the finished sweep said
    assert "2026-01-02T03:04:05+00:00" < saved["updated"] <= saved["resumed"][0]
    assert not list(exp.rglob("*.tmp")) and not (exp / ATTEMPTS_DIR).exists()


@pytest.mark.parametrize("change", ["grid", "repeat", "notebook", "order of values"])
def test_resume_refuses_a_different_sweep_before_touching_anything(tmp_path, change):
    grid = {"rate": [1, 2]}
    exp, manifest = _complete_sweep(tmp_path, grid)
    kw = {"grid": grid, "repeat": 1}
    nb = NOTEBOOK
    if change == "grid":
        kw["grid"] = {"rate": [1, 3]}
    elif change == "repeat":
        kw["repeat"] = 2
    elif change == "order of values":
        kw["grid"] = {"rate": [2, 1]}
    else:
        nb = tmp_path / "other.ipynb"
        nb.write_bytes(NOTEBOOK.read_bytes())
    before = (exp / SWEEP_NAME).read_bytes()
    with pytest.raises(SweepError, match=r"sweep\.json: the recorded sweep differs from this command"):
        run_sweep(nb, kw["grid"], repeat=kw["repeat"], experiment="done", runs_dir=tmp_path / "runs", resume=True,
                  progress=False)
    assert (exp / SWEEP_NAME).read_bytes() == before


def test_a_sweep_json_that_does_not_parse_is_named_with_its_position(tmp_path):
    exp, _ = _complete_sweep(tmp_path, {"rate": [1]})
    (exp / SWEEP_NAME).write_text('{\n  "points": [,\n')
    with pytest.raises(SweepError, match=r"sweep\.json: line 2 column 14: not valid JSON"):
        run_sweep(NOTEBOOK, {"rate": [1]}, experiment="done", runs_dir=tmp_path / "runs", resume=True,
                  progress=False)


def test_an_existing_sweep_needs_resume_and_a_missing_notebook_is_named(tmp_path):
    _complete_sweep(tmp_path, {"rate": [1]})
    with pytest.raises(SweepError, match=r"experiment 'done' already has a sweep; add --resume"):
        run_sweep(NOTEBOOK, {"rate": [1]}, experiment="done", runs_dir=tmp_path / "runs", progress=False)
    missing = tmp_path / "nope.ipynb"
    with pytest.raises(SweepError, match=rf"{missing}: notebook not found"):
        run_sweep(missing, {"rate": [1]}, runs_dir=tmp_path / "runs", progress=False)


def test_expand_order_keys_and_repeat_bounds():
    pts = expand({"a": [1, 2], "b": ["x", "y", "z"]}, 2)
    assert [q["key"] for q in pts[:3]] == ["p0000r000", "p0000r001", "p0001r000"]
    assert [(q["parameters"], q["repetition"]) for q in pts[:4]] == [
        ({"a": 1, "b": "x"}, 0), ({"a": 1, "b": "x"}, 1), ({"a": 1, "b": "y"}, 0), ({"a": 1, "b": "y"}, 1)]
    assert len(pts) == 12 and pts[-1]["key"] == "p0005r001" and pts[-1]["point"] == 5
    assert all(q["status"] == "pending" and q["run_id"] is None and q["attempts"] == [] for q in pts)
    one = expand({}, 1)
    assert [(q["key"], q["parameters"]) for q in one] == [("p0000r000", {})]
    assert len(expand({"a": [1]}, 1)) == 1
    with pytest.raises(SweepError, match=r"--repeat must be at least 1 \(got 0\)"):
        expand({"a": [1]}, 0)


def test_parse_value_spellings():
    assert [parse_value(v) for v in ("TRUE", "False", "None", "NULL", " 7 ", "-0.5", '"x"', "x y")] == [
        True, False, None, None, 7, -0.5, "x", "x y"]
    for bad in ("+inf", "-NaN", "Infinity"):
        with pytest.raises(SweepError, match=rf"-p value '{re.escape(bad)}': NaN and infinity cannot be recorded"):
            parse_value(bad)
    assert split_values('"a\\",b",c') == ['"a\\",b"', "c"]  # an escaped quote inside quotes
    assert split_values("]],1") == ["]]", "1"]  # unbalanced closers do not go below depth 0
    assert split_values("") == [""]


def test_read_record_names_every_way_a_record_is_unreadable(tmp_path):
    d = tmp_path / "r"
    d.mkdir()
    with pytest.raises(RunRecordError, match=r"no run record \(expected a run\.json written by benchbook\)"):
        read_record(d)
    (d / "run.json").write_bytes(b"\xff\xfe")
    with pytest.raises(RunRecordError, match=r"byte 0: not UTF-8 text"):
        read_record(d)
    (d / "run.json").write_text("[1]")
    with pytest.raises(RunRecordError, match=r"expected a JSON object at byte 0"):
        read_record(d)


@pytest.mark.parametrize("text, parts", [
    ('"",x', ['""', "x"]),                      # the first character inside the first quotes is not escaped
    ('"\\\\",x', ['"\\\\"', "x"]),              # an escaped backslash ends its escape: the quote after it closes
    ("[[1,2],3],4", ["[[1,2],3]", "4"]),        # nested brackets: the comma splits only back at depth 0
    ("{[1],{2,3}},5", ["{[1],{2,3}}", "5"]),
    ("X,Y", ["X", "Y"]),                        # letters open and close nothing
    ("[X,1],2", ["[X,1]", "2"]),
    ("a,,b,", ["a", "", "b", ""]),             # empty values are kept where they stand
])
def test_split_values_depth_quotes_and_escapes(text, parts):
    assert split_values(text) == parts


def test_parse_grid_names_the_argument_by_its_place_from_1():
    with pytest.raises(SweepError, match=r"^-p argument 2 'rate': expected NAME=VALUE"):
        parse_grid(["mode=a", "rate"])
    with pytest.raises(SweepError, match=r"^-p argument 3: parameter 'a' given twice$"):
        parse_grid(["a=1", "b=2", "a=3"])


def test_parse_grid_keeps_text_values_and_an_empty_list_is_one_empty_string():
    assert parse_grid(["x="]) == {"x": [""]}
    for text in ("fast", "XXXX", "a b"):  # any other text is read as its value, not taken for an empty list
        assert parse_grid([f"mode={text}"]) == {"mode": [text]}


@pytest.mark.parametrize("name", ["run.1", "v2.0-final", "XX.XX", "a_b-c"])
def test_experiment_names_with_a_dot_inside_are_one_folder_name(name):
    assert check_experiment_name(name) == name


def test_experiment_names_up_to_200_characters():
    assert check_experiment_name("e" * 200) == "e" * 200
    with pytest.raises(SweepError, match="experiment name"):
        check_experiment_name("e" * 201)


def test_a_fresh_outcome_has_nothing_ran_skipped_or_moved(tmp_path):
    out = SweepOutcome(tmp_path, {})
    assert (out.ran, out.skipped, out.moved_aside, out.stale_lock) == ([], [], [], None)
    assert out.skipped is not out.ran  # each list its own


def test_attempts_of_one_run_id_are_numbered_from_2(tmp_path):
    exp = tmp_path / "exp"
    dests = []
    for attempt in range(3):
        _record(exp / "r1", "failed", error=f"attempt {attempt}")
        points = expand({}, 1)
        points[0].update(run_id="r1", status="failed")
        manifest = {"points": points}
        _reconcile(exp, manifest, SweepOutcome(exp, manifest))
        dests.append(points[0]["attempts"][0]["moved_to"])
    assert dests == [".attempts/r1", ".attempts/r1.2", ".attempts/r1.3"]
    assert [read_record(exp / d)["error"] for d in dests] == ["attempt 0", "attempt 1", "attempt 2"]


def test_a_complete_run_the_manifest_still_calls_running_is_complete(tmp_path):
    # killed after the runner wrote its complete record but before the sweep rewrote sweep.json
    exp = tmp_path / "exp"
    _record(exp / "r1", "complete")
    points = expand({}, 1)
    points[0].update(run_id="r1", status="running")
    manifest = {"points": points}
    outcome = SweepOutcome(exp, manifest)
    _reconcile(exp, manifest, outcome)
    assert (points[0]["status"], points[0]["run_id"], points[0]["attempts"]) == ("complete", "r1", [])
    assert outcome.moved_aside == [] and read_record(exp / "r1")["status"] == "complete"


def test_run_sweep_defaults_are_the_command_lines():
    """A notebook calling run_sweep gets what `benchbook run` does without flags: a progress bar and one kernel
    shared by the points (its --no-progress and --fresh-kernel default to off)."""
    app = typer.Typer()
    run_cmd.register(app)
    options = {p.name: p.default for p in inspect.signature(app.registered_commands[0].callback).parameters.values()}
    defaults = {n: p.default for n, p in inspect.signature(run_sweep).parameters.items()}
    assert options["no_progress"].default is False and options["fresh_kernel"].default is False
    assert (defaults["progress"], defaults["shared_kernel"]) == (True, True)
