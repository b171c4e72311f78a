"""`benchbook calibrate`: the minimum detectable effect of an A/A calibration on runs generated with known truth
(its size follows the run-to-run noise and the run count; an effect twice the MDE is detected, a quarter of it
rarely; bounded statistics as differences), end to end on a notebook with fixed values (no root), and (root) on
a short Stemplinger entry through its own notebook, stored with the host fingerprint where the judge reads it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchbook.analysis.bootstrap import DEFAULT_SEED, RESAMPLES, bootstrap_delta
from benchbook.analysis.intervals import MIN_RUNS
from benchbook.reproduce.calibration import aa_noise_floors, scale_of
from benchbook.reproduce.noise_floor import host_key, load_noise_floors, read_calibration
from conftest import REPO_ROOT, require_program, require_root

PAPER = REPO_ROOT / "tests" / "data" / "sequential-paper"


def aa_table(a: np.ndarray, b: np.ndarray, statistic: str = "p99_ms", unit: str = "ms",
             arm: str = "cubic") -> pd.DataFrame:
    """The runner's per-run table of an A/A plan: runs of ``arm`` and of its copy ``arm@aa``."""
    rows = [{"arm": name, "statistic": statistic, "run": i + 1, "position": 2 * i + j + 1, "value": float(v),
             "n": 1000, "unit": unit, "definition": "d", "valid": True}
            for j, (name, values) in enumerate(((arm, a), (f"{arm}@aa", b))) for i, v in enumerate(values)]
    return pd.DataFrame(rows)


def mde(a: np.ndarray, b: np.ndarray, **kw) -> float:
    floors, missing = aa_noise_floors(aa_table(a, b, **kw), {"cubic@aa": "cubic"}, seed=3, resamples=2000)
    assert not missing, missing
    return floors[f"cubic:{kw.get('statistic', 'p99_ms')}"]["mde"]


def test_the_mde_follows_the_noise_and_the_runs_and_means_a_detectable_effect() -> None:
    rng = np.random.default_rng(7)

    def runs(sigma: float, r: int) -> np.ndarray:       # per-run p99 of one configuration: 2 ms, lognormal noise
        return 2.0 * np.exp(sigma * rng.standard_normal(r))

    small = [mde(runs(0.02, 10), runs(0.02, 10)) for _ in range(40)]
    large = [mde(runs(0.08, 10), runs(0.08, 10)) for _ in range(40)]
    more = [mde(runs(0.08, 40), runs(0.08, 40)) for _ in range(40)]
    ratio = np.median(large) / np.median(small)
    assert 3.0 < ratio < 5.0, ratio                     # 4 x the noise: about 4 x the MDE
    shrink = np.median(large) / np.median(more)
    assert 1.5 < shrink < 2.8, shrink                   # 4 x the runs: about half the MDE (1/sqrt(runs))
    # what "detectable" means: a true effect of twice the typical MDE between two such configurations is told
    # from none (95 % bootstrap interval of Delta away from 0) nearly always, a quarter of it rarely
    floor = float(np.median(large))
    told = {}
    for factor in (2.0, 0.25):
        hits = 0
        for _ in range(100):
            boot = bootstrap_delta(runs(0.08, 10), runs(0.08, 10) * np.exp(factor * floor), "log-ratio", (0.95,),
                                   2000, int(rng.integers(1 << 30)))
            lo, hi = boot.interval(0.95)
            hits += lo > 0 or hi < 0
        told[factor] = hits / 100
    assert told[2.0] >= 0.9 and told[0.25] <= 0.2, told


def test_scales_bounded_statistics_and_too_few_runs() -> None:
    assert scale_of(np.array([0.7, 0.9]), "") == "difference"        # Jain's index, shares, R^2
    assert scale_of(np.array([3.0, 5.0]), "") == "log-ratio"         # counts
    assert scale_of(np.array([0.5, 0.9]), "ms") == "log-ratio"       # a latency below 1 ms
    assert scale_of(np.array([0.0, 2.0]), "segments") == "difference"   # a count that can be 0
    rng = np.random.default_rng(1)
    jain = np.clip(0.9 + 0.02 * rng.standard_normal((2, 8)), 0.5, 1.0)
    floors, _ = aa_noise_floors(aa_table(jain[0], jain[1], "jain", ""), {"cubic@aa": "cubic"}, resamples=2000)
    f = floors["cubic:jain"]
    assert f["scale"] == "difference" and 0 < f["mde"] < 0.1 and f["runs"] == [8, 8]
    assert f["mde"] == pytest.approx(max(abs(f["ci95"][0]), abs(f["ci95"][1])))
    floors, missing = aa_noise_floors(aa_table(jain[0][:5], jain[1][:5], "jain", ""), {"cubic@aa": "cubic"})
    assert floors == {} and f"an interval needs at least {MIN_RUNS} per arm" in missing["cubic:jain"]


def test_calibrate_end_to_end_stores_the_floor_where_the_judge_reads_it(tmp_path: Path) -> None:
    env = dict(os.environ, BENCHBOOK_RUNS=str(tmp_path / "runs"), BENCHBOOK_CALIBRATION=str(tmp_path / "cal"),
               COLUMNS="200")
    r = subprocess.run([sys.executable, "-m", "benchbook.cli", "calibrate", "sequential-demo", "--papers",
                        str(PAPER), "--runs", "6", "--arm", "y"], cwd=REPO_ROOT, env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (path,) = (tmp_path / "cal" / "sequential-demo").glob("*.json")
    data = read_calibration(path)
    (run,) = (tmp_path / "runs" / "sequential-demo").iterdir()
    record = json.loads((run / "run.json").read_text())
    assert "-aa-" in run.name and record["parameters"]["calibrate"] == "y" and record["parameters"]["repetitions"] == 6
    assert path.stem == host_key(record["host"]) == data["host_key"] and data["fingerprint"] == record["host"]
    plan = json.loads((run / "repetitions.json").read_text())["plan"]
    assert list(plan["arms"]) == ["y", "y@aa"] and plan["calibration"] == {"y@aa": "y"}
    floor = data["statistics"]["y:rate"]
    # both arms ran the same values, fixed by the repetition number (85, 115, then 100): Delta_AA is 0, and the
    # bootstrap over those runs (resampled within each arm) gives the MDE the analysis core computes for them
    values = [85.0, 115.0, 100.0, 100.0, 100.0, 100.0]
    lo, hi = bootstrap_delta(values, values, "log-ratio", (0.95,), RESAMPLES, DEFAULT_SEED).interval(0.95)
    assert floor["estimate"] == 0 and floor["mde"] == pytest.approx(max(-lo, hi))
    assert 0 < floor["mde"] < np.log(115 / 85)
    assert floor["scale"] == "log-ratio" and floor["runs"] == [6, 6]
    assert data["runs"] == {"y": 6, "y@aa": 6} and isinstance(data["seed"], int)
    floors = load_noise_floors("sequential-demo", tmp_path / "cal", fingerprint=record["host"])
    assert floors.get("y", "rate").mde == floor["mde"] and floors.get("x", "rate") is None
    assert "y:rate" in r.stdout and str(path) in r.stdout.replace("\n", "")
    r = subprocess.run([sys.executable, "-m", "benchbook.cli", "calibrate", "wiedner-itc23-table3"], cwd=REPO_ROOT,
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "benchbook calibrate applies to measured entries" in r.stdout


@pytest.mark.root
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_calibrate_a_short_stemplinger_entry_through_its_notebook(tmp_path: Path) -> None:
    require_root()
    require_program("iperf3")
    require_program("tcpdump")
    env = dict(os.environ, BENCHBOOK_RUNS=str(tmp_path / "runs"), BENCHBOOK_CALIBRATION=str(tmp_path / "cal"),
               COLUMNS="200")
    r = subprocess.run([sys.executable, "-m", "benchbook.cli", "calibrate", "stemplinger-iitm19-fig3", "--runs", "6",
                        "-p", "duration_s=2"], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (path,) = (tmp_path / "cal" / "stemplinger-iitm19-fig3").glob("*.json")
    data = read_calibration(path)
    (run,) = (tmp_path / "runs" / "stemplinger-iitm19-fig3").iterdir()
    summary = json.loads((run / "repetitions.json").read_text())
    assert summary["plan"]["calibration"] == {"cubic@aa": "cubic"} and summary["counts"]["valid"] == 12
    assert [o["arm"] for o in summary["order"]].count("cubic@aa") == 6
    ack = data["statistics"]["cubic:ack_interarrival_median_ms"]
    assert ack["scale"] == "log-ratio" and 0 <= ack["mde"] < 1.0 and ack["runs"] == [6, 6]
    assert data["statistics"]["cubic:end_score"]["scale"] == "difference"
    assert data["fingerprint"]["hostname"] and path.stem == host_key(data["fingerprint"])
    assert not (run / "verdict.json").exists()          # an A/A run judges nothing: no verdict, no figures
