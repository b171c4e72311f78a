"""What the site says of a run: outcome and badge from run status and verdict counts, run selection."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchbook.publish import pages
from benchbook.publish.runs import FigureInfo, PublishedRun, PublishError, select_runs
from benchbook.reproduce.verdict import Verdict
from benchbook.reproduce.verdict_rows import ClaimResult, MeasuredRow


def _run(status: str = "complete", counts: dict | None = None, outcome: str | None = None,
         mode: str = "published-data") -> PublishedRun:
    verdict = None if counts is None else {"outcome": outcome, "counts": counts}
    record = {"id": "r1", "experiment": "e", "status": status, "start": "2026-11-22T16:00:00.000+00:00"}
    return PublishedRun(run_dir=Path("."), record=record, verdict=verdict, figure=FigureInfo(id="e", mode=mode))


@pytest.mark.parametrize(("status", "counts", "outcome", "mode", "want_outcome", "want_badge"), [
    ("complete", {"match": 8}, "reproduced", "published-data", "reproduced", "8/8 values match"),
    ("complete", {"match": 5, "not derivable": 3}, "partial", "published-data", "partial",
     "partial: 5/8 match, 3 not derivable"),
    ("complete", {"match": 2, "mismatch": 3, "not derivable": 7}, "mismatch", "local-measurement", "mismatch",
     "mismatch: 3 of 12 differ"),
    # v1 files (no schema here) said "reproduced" when nothing was compared: counted apart, as /2 counts them
    ("complete", {"figure only": 2}, "reproduced", "published-data", "figure redrawn", "figure redrawn"),
    ("complete", {"figure redrawn": 2}, "figure redrawn", "published-data", "figure redrawn", "figure redrawn"),
    ("complete", {"info": 26}, "reproduced", "published-data", "figure redrawn", "figure redrawn"),
    ("complete", {"info": 26}, "figure redrawn", "published-data", "figure redrawn", "figure redrawn"),
    ("failed", {"match": 8}, "reproduced", "published-data", "failed", "failed"),
    ("complete", None, None, "published-data", "failed", "failed"),
    ("failed", None, None, "", "failed", "failed"),
    ("complete", None, None, "", "complete", "ran (no verdict)"),
    ("interrupted", None, None, "", "interrupted", "interrupted"),
])
def test_outcome_and_badge(status, counts, outcome, mode, want_outcome, want_badge):
    run = _run(status, counts, outcome, mode)
    assert run.outcome == want_outcome
    assert run.badge == want_badge


def test_selection_errors_name_what_is_wrong(tmp_path):
    with pytest.raises(PublishError, match="not both"):
        select_runs(["x"], True, tmp_path)
    with pytest.raises(PublishError, match="not both"):
        select_runs([], False, tmp_path)
    with pytest.raises(PublishError, match=f"{tmp_path / 'nowhere'}: no runs directory"):
        select_runs([], True, tmp_path / "nowhere")
    with pytest.raises(PublishError, match="no-such-run"):
        select_runs(["no-such-run"], False, tmp_path)
    (tmp_path / "runs").mkdir()
    with pytest.raises(PublishError, match="--since 'yesterday'"):
        select_runs([], True, tmp_path / "runs", since="yesterday")


@pytest.mark.parametrize(("outcome", "multiplicity", "claims", "badge"), [
    ("reproduced", {"k": 3, "m": 3, "expected_mismatches": 0.15}, {"holds": 2, "fails": 0},
     "3 of 3 reproduced, m·α = 0.15 mismatches expected, 2 of 2 claims hold"),
    ("inconclusive", {"k": 1, "m": 3, "expected_mismatches": 0.15}, {"holds": 0, "inconclusive": 1},
     "inconclusive: 1 of 3 reproduced, m·α = 0.15 mismatches expected, 0 of 1 claims hold"),
    ("mismatch", {"k": 0, "m": 2, "alpha": 0.01}, {}, "mismatch: 0 of 2 reproduced, m·α = 0.02 mismatches expected"),
    ("partial", None, {"holds": 1}, "partial: 1 of 1 claims hold"),
    ("figure redrawn", None, {}, "figure redrawn"),
])
def test_measured_badge_from_a_v2_verdict(outcome, multiplicity, claims, badge):
    verdict = {"schema": "benchbook.verdict/2", "kind": "measured", "outcome": outcome, "counts": {},
               "multiplicity": multiplicity, "claim_counts": claims}
    record = {"id": "r1", "experiment": "e", "status": "complete", "start": "2026-11-22T16:00:00.000+00:00"}
    run = PublishedRun(run_dir=Path("."), record=record, verdict=verdict,
                       figure=FigureInfo(id="e", mode="local-measurement"))
    assert run.outcome == outcome and run.badge == badge


def test_a_measured_v2_verdict_renders_on_a_run_page():
    """The site reads verdict.json /2 of a measured entry: badge, claim, and each row drawn against its margin
    (the band around the published value in the value's unit) beside its numbers."""
    v = Verdict("m-fig", kind="measured", claim_text="a is faster")
    v.rows = [MeasuredRow("a rate", 100.0, 99.2, "Mbit/s", 6, "reproduced", tolerance="±5 % (paper spread)",
                          margin={"delta": 0.0488, "scale": "log-ratio", "text": "±5 %", "sources": ["paper spread"]},
                          values=[98.0, 99.0, 99.1, 99.3, 99.9, 100.4], n_per_run=[500] * 6, estimate=99.2,
                          ci90_value=[99.0, 99.9], ci95_value=[98.0, 100.4]),
              MeasuredRow("b rate", 100.0, 80.1, "Mbit/s", 6, "inconclusive", reason="below the noise floor")]
    v.claims = [ClaimResult("faster", "a is faster", True, "a > b", "holds")]
    record = {"id": "r1", "experiment": "m-fig", "status": "complete", "start": "2026-11-22T16:00:00.000+00:00"}
    run = PublishedRun(run_dir=Path("."), record=record, verdict=v.to_dict(),
                       figure=FigureInfo(id="m-fig", mode="local-measurement"))
    assert run.outcome == "inconclusive"
    assert run.badge == "inconclusive: 1 of 2 reproduced, m·α = 0.1 mismatches expected, 1 of 1 claims hold"
    html = pages.summary_html(run)
    assert 'class="bb-badge bb-inconclusive"' in html and "median 99.2 Mbit/s" in html and "from paper spread" in html
    assert "band [95.24, 105] Mbit/s" in html and "90 %: [99, 99.9] Mbit/s" in html  # 100 e^-+0.0488
    assert "bb-claim-reproduced" in html and "a is faster" in html and "below the noise floor" in html
    assert html.count('<svg xmlns="http://www.w3.org/2000/svg" class="bb-interval"') == 3  # 2 rows, 1 claim
    assert html.count('class="bb-run"') == 6 and "1 of 2 reproduced; m·α = 0.1 mismatches expected" in html
