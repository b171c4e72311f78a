"""Run records: a real papermill execution of a tiny notebook leaves a complete, schema-valid run.json."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from benchbook.experiment.record import RunRecordError, read_record, validate_record, write_record
from benchbook.experiment.runner import run_notebook
from benchbook.paths import REPO_ROOT
from benchbook.provenance.checksums import sha256_file
from benchbook.provenance.environment import CHANNELS_FILE, LOCK_FILE
from benchbook.reproduce.registry import load_registry
from conftest import SHARES_REPRODUCTIONS

NOTEBOOK = Path(__file__).resolve().parents[1] / "data" / "sweep_point.ipynb"


@pytest.fixture(scope="module")
def complete_run(tmp_path_factory):
    runs = tmp_path_factory.mktemp("runs")
    source = runs / "input.txt"
    source.write_text("an input file named by a parameter\n")
    dataset = runs / "dataset"
    (dataset / "sub").mkdir(parents=True)
    (dataset / "a.csv").write_text("1,2\n")
    (dataset / "sub" / "b.csv").write_text("3,4\n")
    return run_notebook(NOTEBOOK, {"rate": 7, "mode": "b", "fail_flag": str(runs / "no-such-flag"),
                                   "note_file": str(source), "dataset_dir": str(dataset)},
                        "records", runs_dir=runs), source


def test_complete_run_record(complete_run):
    result, source = complete_run
    assert result.status == "complete", result.error
    rec = read_record(result.run_dir)  # validates against run.schema.json
    assert rec["schema_version"] == 1 and rec["status"] == "complete"
    assert rec["parameters"] == {"rate": 7, "mode": "b", "fail_flag": str(source.parent / "no-such-flag"),
                                 "note_file": str(source), "dataset_dir": str(source.parent / "dataset")}
    assert rec["end"] >= rec["start"] and rec["duration_s"] > 0
    # metrics.json and capabilities.json written by the notebook are folded in
    assert rec["metrics"] == {"double_rate": 14, "mode": "b"}
    assert rec["capabilities"] == [{"capability": "netem", "status": "substituted",
                                    "detail": "netem absent: user-space delay line"}]
    # environment: lock hash, Guix channel commit, git state
    env = rec["environment"]
    assert env["lock_sha256"] == sha256_file(LOCK_FILE)
    assert env["guix_channel_commit"] and len(env["guix_channel_commit"]) == 40
    # the git state of the tree the run came from: a checkout, or a copy without .git (a release tarball, the
    # mutation harness's copies), where the record says why there is none
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True) \
        if shutil.which("git") else None
    if head is not None and head.returncode == 0:
        assert env["git_commit"] == head.stdout.strip()
        assert isinstance(env["git_dirty"], bool)
        known = subprocess.run(["git", "cat-file", "-t", env["git_commit"]], cwd=REPO_ROOT, capture_output=True,
                               text=True)
        assert known.stdout.strip() == "commit", f"git_commit {env['git_commit']!r} is not a commit here"
    else:
        assert env["git_commit"] is None and env["git_dirty"] is None
        assert env["git_error"], "a record without a git commit says why"
    # host fingerprint with the probes issue 4 lists, holding this host's values
    host = rec["host"]
    for key in ("kernel", "cpu", "memory", "cgroups", "nics", "tcp", "tools", "capabilities"):
        assert key in host, key
    assert host["kernel"]["release"] == os.uname().release
    assert host["cpu"]["count"] == os.cpu_count()
    assert host["cgroups"]["mode"] in ("v1", "v2", "hybrid", "none") and "lo" in host["nics"]
    assert set(host["tcp"]["available_congestion_control"]) == set(
        Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split())
    # inputs: the notebook and the file a parameter names, with SHA-256
    roles = {i["role"]: i for i in rec["inputs"]}
    assert roles["notebook"]["sha256"] == sha256_file(NOTEBOOK)
    assert roles["parameter:note_file"]["sha256"] == sha256_file(source)
    # a directory is one entry: the SHA-256 of coreutils' sha256sum listing of its files, sorted by path
    tree = roles["parameter:dataset_dir"]
    assert tree["kind"] == "directory" and tree["files"] == 2 and tree["bytes"] == 8
    # the listing in sha256sum's text format ("<hex>  <path>\n"), built here without coreutils
    listing = "".join(f"{hashlib.sha256(text.encode()).hexdigest()}  {name}\n"
                      for name, text in (("a.csv", "1,2\n"), ("sub/b.csv", "3,4\n"))).encode()
    assert tree["sha256"] == hashlib.sha256(listing).hexdigest()
    if shutil.which("sha256sum"):  # and coreutils prints the same listing
        assert subprocess.run(["sha256sum", "a.csv", "sub/b.csv"], cwd=source.parent / "dataset",
                              capture_output=True, check=True).stdout == listing
    # outputs: every file the run wrote, hashes true
    out_paths = {o["path"] for o in rec["outputs"]}
    assert {"raw/samples.txt", "analysis/result.txt", "metrics.json", "sweep_point.ipynb",
            "channels.scm", "manifest.scm"} <= out_paths
    for o in rec["outputs"]:
        assert sha256_file(result.run_dir / o["path"]) == o["sha256"], o["path"]
    assert rec["environment_files"]["manifest_source"] == "analysis.scm"
    assert (result.run_dir / "channels.scm").read_text() == CHANNELS_FILE.read_text()


def test_failed_run_keeps_raw_data(tmp_path):
    flag = tmp_path / "fail-now"
    flag.write_text("x")
    result = run_notebook(NOTEBOOK, {"rate": 3, "fail_flag": str(flag)}, "failing", runs_dir=tmp_path)
    assert result.status == "failed"
    rec = read_record(result.run_dir)
    assert rec["status"] == "failed"
    assert "asked to fail at rate=3" in rec["error"]
    assert (result.run_dir / "raw" / "samples.txt").read_text() == "3 a\n"  # measured before failing: kept
    assert any(o["path"] == "raw/samples.txt" for o in rec["outputs"])
    assert rec["metrics"] == {}


def test_invalid_record_is_never_written(tmp_path, complete_run):
    rec = dict(read_record(complete_run[0].run_dir))
    rec["status"] = "finished"  # not in the schema's enum
    with pytest.raises(RunRecordError, match="status"):
        write_record(tmp_path, rec)
    assert not (tmp_path / "run.json").exists()
    rec2 = dict(rec, status="complete", inputs=[{"path": "x", "sha256": "nothex", "bytes": 1}])
    with pytest.raises(RunRecordError, match="inputs.0.sha256"):
        validate_record(rec2)


def test_read_record_names_file_and_position(tmp_path):
    bad = tmp_path / "run.json"
    bad.write_text('{"id": "x",\n "status": }\n')
    with pytest.raises(RunRecordError) as err:
        read_record(bad)
    assert str(bad) in str(err.value) and "line 2" in str(err.value)
    bad.write_text(json.dumps({"id": "x"}))
    with pytest.raises(RunRecordError, match="required"):
        read_record(tmp_path)


@pytest.mark.slow
@pytest.mark.timeout(1200)
@SHARES_REPRODUCTIONS
def test_reproduce_run_leaves_a_valid_record(published_reproductions):
    """`benchbook reproduce` goes through run_notebook, so its figure runs are full run records."""
    fig = "scheerer-iitm23-return-level"
    assert fig in load_registry(), "a built-in registry entry"
    runs = list(published_reproductions.run_dir(fig).glob("run.json"))
    assert len(runs) == 1, published_reproductions.output_of(fig)
    rec = read_record(runs[0])
    assert rec["experiment"] == fig and rec["status"] == "complete"
    assert rec["parameters"]["figure_id"] == fig and "interactive" not in rec
    assert Path(rec["parameters"]["paper_dir"]).name == "scheerer-iitm23" and "registry_dir" not in rec["parameters"]
    assert any(o["path"] == "verdict.json" for o in rec["outputs"])
    assert rec["environment_files"]["channels"] == "channels.scm" and rec["host"]["kernel"]["release"]
