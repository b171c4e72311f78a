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
    statuses = {r["name"]: r["status"] for r in verdict["rows"]}
    # 20,000 packets resolve up to p99.9 (3,688 needed); p99.99 and p99.999 are not printed, so not judged
    unresolved = {"p99.99 latency", "p99.999 latency"}
    assert statuses and {s for n, s in statuses.items() if n not in unresolved} == {"match"}, verdict["rows"]
    for r in verdict["rows"]:
        if r["name"] in unresolved:
            assert r["status"] == "info" and r["computed"] is None and "not resolvable at N = " in r["note"], r
    assert {"hdr-exact", "worst-n", "histogram", "ccdf"} <= set(verdict["figures"])
    for name in ("latencies.parquet", "latency.hlog", "summary.json", "hdr.html"):
        assert (run.run_dir / name).is_file(), name
