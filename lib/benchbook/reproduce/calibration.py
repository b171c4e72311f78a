"""The noise floor of this testbed for a measured entry: an A/A calibration (statistics-rules V7;
``benchbook calibrate ENTRY``).

    result = calibrate_entry(entry, runs=10)     # runs the entry's notebook with calibrate=<arm>
    result.path                                  # data/calibration/<entry>/<host key>.json
    floors = aa_noise_floors(table, {"cubic@aa": "cubic"})   # from a run-statistics table alone

**A/A.** The entry's own notebook runs with ``calibrate`` set to one arm (default: the first of its plan) and
``repetitions`` to the runs per arm: its repetition runner runs that arm's configuration as two arms, ``x`` and
``x@aa``, interleaved in the seeded order, and nothing else (benchbook.experiment.repetitions). Both arms are the
same configuration, so any difference between them is the testbed's noise.

**Minimum detectable effect.** Per statistic of the calibrated arm, Delta_AA between the valid runs of ``x`` and
``x@aa`` -- ln(median x@aa / median x) for rates, latencies and counts, median x@aa - median x for bounded
statistics (a dimensionless statistic whose every run lies in [0, 1]: Jain's index, shares, R^2; or any
statistic with a value <= 0) -- and its 95 % percentile interval from the seeded bootstrap over runs
(benchbook.analysis.bootstrap, 10,000 resamples). The MDE is the larger |bound| of that interval: a true effect
of that size could not be told from none with these runs. A margin delta below the MDE cannot be decided on
this testbed with this many runs, so the judge makes such a row ``inconclusive: below the noise floor``
(benchbook.reproduce.judge). The MDE shrinks about as 1/sqrt(runs): calibrate with the runs per arm the entry
is judged with (default: the entry's plan, at least MIN_RUNS). A statistic with fewer than MIN_RUNS valid runs
in either arm gets no MDE (listed under "not_calibrated" with why).

The file (benchbook.reproduce.noise_floor's format, under the host key of the fingerprint the calibration run
recorded) holds per "<arm>:<statistic>": mde, scale, estimate, ci95, runs, method, plus the run directory.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from benchbook.analysis.bootstrap import DEFAULT_SEED, RESAMPLES, Scale, bootstrap_delta
from benchbook.analysis.intervals import MIN_RUNS, NoInterval
from benchbook.experiment.record import read_record
from benchbook.experiment.repetitions import SUMMARY_FILE, TABLE_FILE
from benchbook.experiment.runner import new_run_id, run_notebook
from benchbook.reproduce.noise_floor import write_calibration
from benchbook.reproduce.registry import FigureEntry
from benchbook.reproduce.run import Progress, ProgressFn, planned_runs, prepare_entry, refuse_runs

LEVEL = 0.95


class CalibrationFailed(RuntimeError):
    """The A/A runs did not give a noise floor (the message says why and where the run is)."""


def scale_of(values: np.ndarray, unit: str) -> Scale:
    """The scale of Delta for a statistic: a difference for a bounded one (dimensionless with every value in
    [0, 1], or any value <= 0), else the log ratio."""
    if np.any(values <= 0) or (unit.strip() in ("", "1") and np.all((values >= 0) & (values <= 1))):
        return "difference"
    return "log-ratio"


def aa_noise_floors(table: pd.DataFrame, calibration: Mapping[str, str], seed: int = DEFAULT_SEED,
                    resamples: int = RESAMPLES) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """Per "<arm>:<statistic>" of each A/A pair (``calibration``: copy -> arm, as repetitions.json's plan keeps
    it) the minimum detectable effect from the valid runs of ``table`` (the runner's run-statistics table), and
    per statistic that got none the reason."""
    valid = table[table["valid"].astype(bool) & table["value"].notna()]
    floors: dict[str, dict[str, Any]] = {}
    missing: dict[str, str] = {}
    for copy, arm in calibration.items():
        stats = sorted(set(valid.loc[valid["arm"].isin([arm, copy]), "statistic"].astype(str)))
        for stat in stats:
            key = f"{arm}:{stat}"
            rows = valid[valid["statistic"] == stat]
            a = rows.loc[rows["arm"] == arm, "value"].to_numpy(dtype=np.float64)
            b = rows.loc[rows["arm"] == copy, "value"].to_numpy(dtype=np.float64)
            if min(a.size, b.size) < MIN_RUNS:
                missing[key] = (f"{a.size} and {b.size} valid runs with a value: an interval needs at least "
                                f"{MIN_RUNS} per arm")
                continue
            units = sorted(set(rows["unit"].astype(str)))
            scale = scale_of(np.concatenate([a, b]), units[0] if len(units) == 1 else "?")
            boot = bootstrap_delta(a, b, scale, (LEVEL,), resamples, seed)
            if isinstance(boot, NoInterval):   # not reached: the run counts were checked
                missing[key] = boot.reason
                continue
            lo, hi = boot.interval(LEVEL)
            floors[key] = {"mde": max(abs(lo), abs(hi)), "scale": scale, "estimate": boot.estimate,
                           "ci95": [lo, hi], "runs": [int(a.size), int(b.size)], "unit": ", ".join(units),
                           "method": f"A/A: {arm} against its copy {copy}; max |bound| of the 95 % interval of "
                                     f"Delta, {boot.method}"}
    return floors, missing


@dataclass
class CalibrationResult:
    """What ``calibrate_entry`` did: the run, the noise floors, the file (None when nothing was calibrated)."""

    entry: str
    run_dir: Path | None
    floors: dict[str, dict[str, Any]] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)
    path: Path | None = None
    runs: int = 0


def calibrate_entry(entry: FigureEntry, runs: int | None = None, arm: str | None = None,
                    runs_dir: Path | None = None, root: Path | None = None, seed: int = DEFAULT_SEED,
                    overrides: Mapping[str, Any] | None = None,
                    progress: ProgressFn | None = None) -> CalibrationResult:
    """Run the entry's notebook as an A/A calibration of ``arm`` (default: its plan's first arm) with ``runs``
    per arm (default: the entry's plan; raised to MIN_RUNS, the fewest that give an interval) into a new run
    under ``runs_dir``, and store the noise floors for this host under ``root`` (default data/calibration).
    NotMeasured for a published-data entry; CalibrationFailed when the runs give no noise floor."""
    refuse_runs(entry, "benchbook calibrate")
    per_arm = max(runs if runs is not None else (planned_runs(entry) or MIN_RUNS), MIN_RUNS)
    params_in = {**dict(overrides or {}), "calibrate": arm if arm else True, "repetitions": per_arm}
    result, params, inputs = prepare_entry(entry, params_in, progress=progress)
    if params is None:
        raise CalibrationFailed(f"{entry.id}: {result.outcome}: {result.detail}")
    (progress or (lambda _: None))(Progress("executing", f"A/A calibration: executing {entry.notebook_path} with "
                                                         f"{per_arm} runs per arm ...", entry.id))
    run = run_notebook(entry.notebook_path, params, experiment=entry.id, runs_dir=runs_dir, inputs=inputs,
                       run_id=new_run_id("aa"))
    out = CalibrationResult(entry.id, run.run_dir, runs=per_arm)
    if run.status != "complete":
        raise CalibrationFailed(f"{entry.id}: the calibration run {run.status}: {run.error} (outputs: {run.run_dir})")
    summary_path, table_path = run.run_dir / SUMMARY_FILE, run.run_dir / TABLE_FILE
    if not summary_path.is_file() or not table_path.is_file():
        raise CalibrationFailed(f"{run.run_dir}: no {SUMMARY_FILE} and {TABLE_FILE}: the notebook ran no repeated "
                                "runs (does it pass calibrate to its runner?)")
    plan = json.loads(summary_path.read_text(encoding="utf-8"))["plan"]
    calibration = plan.get("calibration") or {}
    if not calibration:
        raise CalibrationFailed(f"{summary_path}: the plan is not an A/A calibration (no \"calibration\"): the "
                                "notebook does not pass its calibrate parameter to the runner")
    out.floors, out.missing = aa_noise_floors(pd.read_parquet(table_path), calibration, seed)
    if not out.floors:
        raise CalibrationFailed(f"{entry.id}: no statistic could be calibrated ("
                                + "; ".join(f"{k}: {v}" for k, v in list(out.missing.items())[:3])
                                + f"); outputs: {run.run_dir}")
    counts = pd.read_parquet(table_path).drop_duplicates(["arm", "run"])
    valid = counts[counts["valid"].astype(bool)].groupby("arm")["run"].count().to_dict()
    fingerprint = read_record(run.run_dir).get("host") or {}
    for floor in out.floors.values():
        floor["run_dir"] = str(run.run_dir)
    out.path = write_calibration(entry.id, fingerprint, out.floors, {k: int(v) for k, v in valid.items()},
                                 seed=plan.get("seed"), root=root)
    return out


__all__ = ["LEVEL", "CalibrationFailed", "CalibrationResult", "aa_noise_floors", "calibrate_entry", "scale_of"]
