"""Every published-data entry (and the latency demo) gives the same computed values and statuses as
before the paper-folder move: tests/data/verdicts-before-move.json holds, per entry, the rows
(name, computed, status) of the verdict.json each produced before the move."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from benchbook.reproduce.registry import load_entry
from benchbook.reproduce.run import reproduce_entry

SNAPSHOT = Path(__file__).resolve().parents[1] / "data" / "verdicts-before-move.json"
BEFORE = json.loads(SNAPSHOT.read_text(encoding="utf-8"))


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, (int, float)) and not isinstance(b, bool):
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=0.0)
    return a == b


def test_snapshot_covers_the_entries():
    assert set(BEFORE) == {
        "wiedner-itc23-table3", "wiedner-itc23-fig4", "wiedner-itc23-fig8", "wiedner-itc23-fig9",
        "wiedner-itc23-fig10", "wiedner-itc23-rate", "scheerer-iitm23-return-level",
        "benchbook-evt-wiedner-tails", "benchbook-latency-demo",
    }
    assert sum(len(v["rows"]) for v in BEFORE.values()) == 69


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("figure_id", sorted(BEFORE))
def test_same_values_and_statuses_as_before_the_move(figure_id, tmp_path):
    res = reproduce_entry(load_entry(figure_id), tmp_path / "runs")
    assert res.outcome in ("reproduced", "partial"), res.detail
    rows = [{"name": r.name, "computed": r.computed, "status": r.status} for r in res.verdict.rows]
    before = BEFORE[figure_id]["rows"]
    assert [r["name"] for r in rows] == [r["name"] for r in before]
    for now, then in zip(rows, before, strict=True):
        assert now["status"] == then["status"], now["name"]
        assert _same(now["computed"], then["computed"]), (now["name"], now["computed"], then["computed"])
    assert res.verdict.ok == BEFORE[figure_id]["ok"]
