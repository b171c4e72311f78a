"""The reproduce service as a library caller uses it (benchbook.reproduce.run, no CLI module): what an entry's
notebook receives, the outcome of a finished run from the files it left, entries that cannot run here."""

from __future__ import annotations

import json

import pytest

from benchbook.paths import NOTEBOOKS_DIR
from benchbook.reproduce.notebook_params import INJECTED_PARAMETERS, ParameterError
from benchbook.reproduce.registry import load_entry, load_folder
from benchbook.reproduce.run import EntryResult, judge_run, prepare_entry, reproduce_entries
from benchbook.reproduce.verdict import Verdict


def test_the_notebook_receives_the_entry_its_one_paper_folder_and_its_dataset():
    entry = load_entry("wiedner-itc23-table3")
    told = []
    result, params, inputs = prepare_entry(entry, {"repeats": 2}, progress=told.append)
    assert result == EntryResult(id=entry.id, mode="published-data")
    assert params["figure_id"] == entry.id and params["paper_dir"] == str(NOTEBOOKS_DIR / "wiedner-itc23")
    assert params["dataset_dir"] == str(entry.dataset_dir.resolve()) and params["repeats"] == 2
    assert params["statistic"] == "max" and "registry_dir" not in params and "dry_run" not in params
    assert set(params) - set(entry.parameters) <= set(INJECTED_PARAMETERS)
    assert inputs == [entry.source]
    assert [(t.kind, t.entry_id) for t in told] == [("dataset", None)]
    assert str(told[0]).startswith("dataset containerized-low-latency: ") and "SHA256SUMS verified" in str(told[0])
    assert prepare_entry(entry, dry_run=True)[1]["dry_run"] is True
    with pytest.raises(ParameterError, match="no parameter named 'no_such'"):
        prepare_entry(entry, {"no_such": 1})


def _verdict_dir(tmp_path, entry, computed):
    verdict = Verdict.for_entry(entry)
    for pv in entry.published:
        verdict.check(pv, computed)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    verdict.write(run_dir)
    return run_dir


def test_a_run_is_judged_by_its_status_and_the_verdict_it_wrote(tmp_path):
    entry = load_entry("scheerer-iitm23-return-level")
    run_dir = _verdict_dir(tmp_path, entry, 1e9)  # every value far off: mismatch
    res = judge_run(entry, EntryResult(entry.id, entry.mode), run_dir, "complete", None)
    assert res.outcome == "mismatch" and res.run_dir == run_dir and res.verdict.claim_status() == "mismatch"
    assert res.detail.startswith("0/") and "principal claim: mismatch" in res.detail
    res = judge_run(entry, EntryResult(entry.id, entry.mode), run_dir, "failed", "cell In [3] raised KeyError: 'x'")
    assert res.outcome == "failed" and res.detail == "notebook failed: cell In [3] raised KeyError: 'x'"
    assert res.verdict is not None  # what the notebook wrote before it failed is still shown
    (run_dir / "verdict.json").write_text(json.dumps({"schema": "other"}))
    res = judge_run(entry, EntryResult(entry.id, entry.mode), run_dir, "complete", None)
    assert res.outcome == "failed" and "unreadable verdict" in res.detail
    (run_dir / "verdict.json").unlink()
    res = judge_run(entry, EntryResult(entry.id, entry.mode), run_dir, "complete", None)
    assert res.outcome == "failed" and res.detail.startswith("the notebook wrote no verdict.json")
    res = judge_run(entry, EntryResult(entry.id, entry.mode), run_dir, "complete", None, dry_run=True)
    assert res.outcome == "failed" and "wrote no dry-run.txt" in res.detail
    (run_dir / "dry-run.txt").write_text("host a: true\n")
    res = judge_run(entry, EntryResult(entry.id, entry.mode), run_dir, "complete", None, dry_run=True)
    assert res.outcome == "dry run" and res.plan == "host a: true\n"


def test_entries_that_cannot_run_here_are_skipped_without_a_run(tmp_path, monkeypatch):
    folder = tmp_path / "papers" / "tb"
    folder.mkdir(parents=True)
    (folder / "paper.toml").write_text('id = "tb"\ntitle = "t"\ncitation = "c"\n')
    (folder / "tb-fig.toml").write_text('id = "tb-fig"\ntitle = "t"\nnotebook = "absent.ipynb"\n'
                                        'mode = "testbed-measurement"\nrequires = ["testbed"]\n')
    monkeypatch.delenv("BENCHBOOK_TESTBED", raising=False)
    ended = []
    results = reproduce_entries(load_folder(folder), tmp_path / "runs", on_result=ended.append)
    assert [(r.id, r.outcome) for r in results] == [("tb-fig", "skipped")] and not ended
    assert "notebook absent.ipynb" in results[0].detail or "BENCHBOOK_TESTBED" in results[0].detail
    assert not (tmp_path / "runs").exists()


MEASURED_PAPER = NOTEBOOKS_DIR.parent / "tests" / "data" / "measured-paper"
# what differs between any two runs of one entry: when, by whom and under which run id
PER_RUN_FIELDS = {"id", "start", "end", "duration_s", "owner", "outputs"}
RUN_TIMES = {"started", "ended"}  # of each repetition in a verdict's plan


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_entries_in_a_shared_kernel_leave_the_verdicts_and_records_of_fresh_kernels(tmp_path, monkeypatch):
    """--all's shared kernel (reset before each entry) against a kernel per entry: the measured known-truth entry,
    run twice in one session (the second in the kernel the first used), writes the same verdict and the same run
    record, field for field, as run in a fresh kernel (its run directory and the repetitions' times aside); and
    the same outputs, by name."""
    monkeypatch.setenv("BENCHBOOK_FIGURE_FORMATS", "html")
    entries = load_folder(MEASURED_PAPER)
    (entry,) = entries.values()
    shared = reproduce_entries({"a": entry, "b": entry}, tmp_path / "shared")
    (fresh,) = reproduce_entries(entries, tmp_path / "fresh", shared_kernel=False)
    assert [r.outcome for r in shared] == [fresh.outcome] * 2 and fresh.outcome not in ("failed", "skipped")

    def kept(result):
        text = (result.run_dir / "verdict.json").read_text(encoding="utf-8").replace(str(result.run_dir), "RUN")
        verdict = json.loads(text, object_hook=lambda d: {k: v for k, v in d.items() if k not in RUN_TIMES})
        record = json.loads((result.run_dir / "run.json").read_text(encoding="utf-8"))
        outputs = sorted(o["path"] for o in record["outputs"])
        return verdict, {k: v for k, v in record.items() if k not in PER_RUN_FIELDS}, outputs

    first, second, alone = kept(shared[0]), kept(shared[1]), kept(fresh)
    for name, part in (("verdict", 0), ("record", 1), ("outputs", 2)):
        assert first[part] == alone[part], name
        assert second[part] == alone[part], name
