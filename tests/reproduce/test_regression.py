"""`benchbook reproduce --all` (what `make reproduce` runs) gives every published-data entry, and the latency demo,
the verdicts recorded before the reproduce service moved into the library (tests/data/reproduce-verdicts.json,
made on 04debb3 by `benchbook reproduce ID` per entry; its rows equal those recorded before the earlier
paper-folder move): per entry the exit status, outcome, ok, summary and claim status; per row the name, the
computed value, the computed value as the verdict table prints it, and the status."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from benchbook.commands.reproduce import EXIT_CODES
from benchbook.reproduce.registry import load_registry
from conftest import SHARES_REPRODUCTIONS

SNAPSHOT = Path(__file__).resolve().parents[1] / "data" / "reproduce-verdicts.json"
BEFORE = json.loads(SNAPSHOT.read_text(encoding="utf-8"))["entries"]
SEVERITY = ("reproduced", "figure redrawn", "partial", "inconclusive", "mismatch", "failed")


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, (int, float)) and not isinstance(b, bool):
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=0.0)
    return a == b


def test_snapshot_covers_every_published_data_entry():
    published = {k for k, e in load_registry(use_env=False).items() if e.mode == "published-data"}
    assert len(published) == 8
    assert set(BEFORE) == published | {"benchbook-latency-demo"}
    assert sum(len(v["rows"]) for v in BEFORE.values()) == 69
    assert all(v["exit"] == EXIT_CODES[v["outcome"]] for v in BEFORE.values())


@pytest.mark.slow
@pytest.mark.timeout(1200)
@SHARES_REPRODUCTIONS
@pytest.mark.parametrize("figure_id", sorted(BEFORE))
def test_same_verdict_rows_as_before(figure_id, published_reproductions):
    before = BEFORE[figure_id]
    out = published_reproductions.output_of(figure_id)
    assert f"{figure_id}: {before['outcome']} - {before['summary']}" in out, out[-3000:]
    verdict = json.loads((published_reproductions.run_dir(figure_id) / "verdict.json").read_text(encoding="utf-8"))
    assert (verdict["outcome"], verdict["ok"], verdict["summary"], verdict["claim"]["status"]) == \
        (before["outcome"], before["ok"], before["summary"], before["claim"])
    assert [r["name"] for r in verdict["rows"]] == [r["name"] for r in before["rows"]]
    for now, then in zip(verdict["rows"], before["rows"], strict=True):
        assert now["status"] == then["status"], now["name"]
        assert _same(now["computed"], then["computed"]), (now["name"], now["computed"], then["computed"])
        assert then["computed_text"] in out, (now["name"], then["computed_text"])  # as the table prints it


@pytest.mark.slow
@pytest.mark.timeout(1200)
@SHARES_REPRODUCTIONS
def test_each_folder_exits_with_its_worst_outcome(published_reproductions):
    for folder, code in published_reproductions.exit_codes.items():
        outcomes = [v["outcome"] for k, v in BEFORE.items() if published_reproductions.folder_of(k) == folder]
        assert code == EXIT_CODES[max(outcomes, key=SEVERITY.index)], published_reproductions.outputs[folder][-3000:]
