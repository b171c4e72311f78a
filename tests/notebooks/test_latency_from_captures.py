"""notebooks/reusable/latency-from-captures.ipynb through papermill on a small generated pair."""

from __future__ import annotations

import json

import pytest

from benchbook.experiment.runner import run_notebook
from benchbook.paths import NOTEBOOKS_DIR


@pytest.mark.slow
def test_demo_notebook_matches_generator_truth(tmp_path):
    run = run_notebook(
        NOTEBOOKS_DIR / "reusable" / "latency-from-captures.ipynb",
        {"n_packets": 20_000, "rate_pps": 10_000, "key_mode": "content", "figure_id": "benchbook-latency-demo"},
        experiment="latency-demo-test", runs_dir=tmp_path,
    )
    assert run.status == "complete", run.error
    verdict = json.loads((run.run_dir / "verdict.json").read_text())
    statuses = [r["status"] for r in verdict["rows"]]
    assert statuses and set(statuses) == {"match"}, verdict["rows"]
    assert {"hdr-exact", "worst-n", "histogram", "ccdf"} <= set(verdict["figures"])
    for name in ("latencies.parquet", "latency.hlog", "summary.json", "hdr.html"):
        assert (run.run_dir / name).is_file(), name
