"""What publishing finds when a run's files changed after it was recorded (benchbook.publish.verify): outputs must
be as recorded, inputs may be absent here or, when allowed, changed. The records are made the way the runner makes
them (provenance.checksums' entries of real files); the digests checked are hashlib's, computed in the test."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from benchbook.provenance.checksums import file_entry, hash_tree, tree_entry
from benchbook.publish.runs import FigureInfo, PublishedRun, PublishError
from benchbook.publish.verify import HashCache, verify_inputs, verify_outputs


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


EDITED, RAW, NOTES = b"edited\n", b"raw samples\n", b"edited notes\n"


@pytest.fixture
def run(tmp_path: Path) -> PublishedRun:
    """A run directory with two outputs and three inputs outside it (a file, a directory, a file that stays)."""
    run_dir = tmp_path / "runs" / "exp" / "r1"
    (run_dir / "analysis").mkdir(parents=True)
    (run_dir / "raw.txt").write_bytes(b"raw samples\n")
    (run_dir / "analysis" / "result.csv").write_bytes(b"a,b\n1,2\n")
    inputs = tmp_path / "inputs"
    (inputs / "dataset" / "sub").mkdir(parents=True)
    (inputs / "dataset" / "a.csv").write_bytes(b"1\n")
    (inputs / "dataset" / "sub" / "b.csv").write_bytes(b"2\n")
    (inputs / "notes.txt").write_bytes(b"notes\n")
    (inputs / "stays.txt").write_bytes(b"unchanged\n")
    record = {"id": "r1", "experiment": "exp", "status": "complete",
              "outputs": hash_tree(run_dir),
              "inputs": [file_entry(inputs / "notes.txt", role="parameter:notes"),
                         tree_entry(inputs / "dataset", role="parameter:dataset"),
                         file_entry(inputs / "stays.txt", role="input")]}
    return PublishedRun(run_dir=run_dir, record=record, verdict=None, figure=FigureInfo(id="exp"))


def test_untouched_run_verifies_every_output_and_input(run):
    outs = verify_outputs(run, HashCache())
    assert [(c.entry["path"], c.status) for c in outs] == [(e["path"], "verified") for e in run.record["outputs"]]
    assert sorted(c.entry["path"] for c in outs) == ["analysis/result.csv", "raw.txt"]
    ins = verify_inputs(run, HashCache())
    assert [c.status for c in ins] == ["verified"] * 3
    assert ins[1].entry["kind"] == "directory"


def test_an_output_changed_or_vanished_after_recording_refuses_the_run_naming_each(run):
    (run.run_dir / "raw.txt").write_bytes(EDITED)
    (run.run_dir / "analysis" / "result.csv").unlink()
    with pytest.raises(PublishError) as err:
        verify_outputs(run, HashCache())
    msg = str(err.value)
    assert msg.startswith("refusing to publish a run whose files changed: ")
    missing = f"{run.run_dir / 'analysis' / 'result.csv'}: recorded as an output of run r1 but missing"
    changed = (f"{run.run_dir / 'raw.txt'}: changed since run r1 recorded it (SHA-256 now "
               f"{_sha(EDITED)[:16]}..., recorded {_sha(RAW)[:16]}...)")
    parts = {"raw.txt": changed, "analysis/result.csv": missing}  # named in the record's order
    assert msg == "refusing to publish a run whose files changed: " + "; ".join(
        parts[e["path"]] for e in run.record["outputs"])


def test_an_output_replaced_by_a_directory_is_missing(run):
    (run.run_dir / "raw.txt").unlink()
    (run.run_dir / "raw.txt").mkdir()
    with pytest.raises(PublishError, match="raw.txt: recorded as an output of run r1 but missing"):
        verify_outputs(run, HashCache())


def test_a_run_without_outputs_or_inputs_verifies_nothing(run):
    bare = PublishedRun(run_dir=run.run_dir, record={"id": "r0"}, verdict=None, figure=FigureInfo(id="exp"))
    assert verify_outputs(bare, HashCache()) == [] and verify_inputs(bare, HashCache()) == []


def test_inputs_absent_here_are_listed_not_refused(run):
    notes, dataset, _ = (Path(e["path"]) for e in run.record["inputs"])
    notes.unlink()
    (dataset / "a.csv").unlink()
    (dataset / "sub" / "b.csv").unlink()
    (dataset / "sub").rmdir()
    dataset.rmdir()
    ins = verify_inputs(run, HashCache())
    assert [c.status for c in ins] == ["absent here", "absent here", "verified"]
    assert ins[0].detail == "not on the machine that published the site"


def test_an_input_of_the_other_kind_is_absent_here(run):
    """A recorded file that is now a directory, and a recorded directory that is now a file, are not the input."""
    notes, dataset, _ = (Path(e["path"]) for e in run.record["inputs"])
    notes.unlink()
    notes.mkdir()
    for f in sorted(dataset.rglob("*"), reverse=True):
        f.rmdir() if f.is_dir() else f.unlink()
    dataset.rmdir()
    dataset.write_bytes(b"now a file\n")
    assert [c.status for c in verify_inputs(run, HashCache())] == ["absent here", "absent here", "verified"]


def test_changed_inputs_are_refused_unless_allowed_then_marked_changed(run):
    notes, dataset, _ = (Path(e["path"]) for e in run.record["inputs"])
    notes.write_bytes(NOTES)
    (dataset / "sub" / "b.csv").write_bytes(b"3\n")  # one file deep in the directory
    with pytest.raises(PublishError) as err:
        verify_inputs(run, HashCache())
    msg = str(err.value)
    assert msg.startswith(f"{notes}: input of run r1 changed since the run (SHA-256 now "
                          f"{_sha(NOTES)[:16]}...); {dataset}: input of run r1 changed")
    assert msg.endswith("(reproduce the figure again, or publish with --allow-changed-inputs to show the runs with "
                        "their inputs marked changed)")
    ins = verify_inputs(run, HashCache(), allow_changed=True)
    assert [c.status for c in ins] == ["changed", "changed", "verified"]
    assert ins[0].detail == f"SHA-256 now {_sha(NOTES)}"
    assert ins[1].detail == f"SHA-256 now {tree_entry(dataset)['sha256']}"


def test_an_input_recorded_twice_is_named_once(run):
    notes = Path(run.record["inputs"][0]["path"])
    run.record["inputs"].append(dict(run.record["inputs"][0], role="input"))
    notes.write_bytes(b"edited\n")
    with pytest.raises(PublishError) as err:
        verify_inputs(run, HashCache())
    assert str(err.value).count(f"{notes}: input of run r1 changed") == 1


def test_hash_cache_hashes_a_file_once_per_publish_whatever_path_names_it(tmp_path):
    f = tmp_path / "data.bin"
    f.write_bytes(b"x" * 1000)
    link = tmp_path / "link.bin"
    link.symlink_to(f)
    cache = HashCache()
    first = cache.file(f)
    assert first == _sha(b"x" * 1000)
    f.write_bytes(b"y" * 1000)  # a shared input is read once: the publish sees one state of it
    assert cache.file(link) == first == cache.file(tmp_path / "." / "data.bin")
    assert HashCache().file(link) == _sha(b"y" * 1000)
    d = tmp_path / "tree"
    d.mkdir()
    (d / "a").write_bytes(b"a")
    digest = cache.tree(d)
    assert digest == tree_entry(d)["sha256"]
    (d / "b").write_bytes(b"b")
    assert cache.tree(tmp_path / "tree" / ".." / "tree") == digest != HashCache().tree(d)


def test_outputs_share_the_cache_with_inputs(run):
    """An output the run also read as an input (its own raw file named by a parameter) is hashed once."""
    raw = run.run_dir / "raw.txt"
    run.record["inputs"].append(file_entry(raw, role="input"))
    cache = HashCache()
    verify_outputs(run, cache)
    mtime = os.stat(raw).st_mtime_ns
    raw.write_bytes(b"rewritten after the outputs were checked\n")
    os.utime(raw, ns=(mtime, mtime))
    assert [c.status for c in verify_inputs(run, cache)][-1] == "verified"


def test_a_missing_output_does_not_stop_the_check_of_the_next(run):
    """Both outputs gone: the error names both, in the record's order, not only the first one missing."""
    for e in run.record["outputs"]:
        (run.run_dir / e["path"]).unlink()
    with pytest.raises(PublishError) as err:
        verify_outputs(run, HashCache())
    assert str(err.value) == "refusing to publish a run whose files changed: " + "; ".join(
        f"{run.run_dir / e['path']}: recorded as an output of run r1 but missing" for e in run.record["outputs"])


def test_a_verified_file_carries_no_detail(run):
    assert {c.detail for c in verify_outputs(run, HashCache())} == {""}
    assert {c.detail for c in verify_inputs(run, HashCache())} == {""}
