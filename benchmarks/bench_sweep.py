"""`benchbook run`: what a sweep point costs beyond the work of its notebook, against a bare
`papermill` run of the same notebook per point (one process per point, as a user would loop).

Overhead per point = (wall time of the whole sweep or loop / points) - (the time the notebook's own
cells took, from the cell timings papermill writes into each executed notebook). Two notebooks: a
trivial one (a parameter doubled) and the reusable latency-from-captures notebook on a generated
2,000-packet capture pair (its cells match packets and write four figures as HTML, PNG and SVG).
benchbook runs the points in one shared kernel (the default) and, as a third side, with
--fresh-kernel (one kernel per point). Best of several rounds; every round is listed in the note.
"""

from __future__ import annotations

import json
import shutil
import sys
from functools import partial
from pathlib import Path

import nbformat

from benchbook.paths import REPO_ROOT
from timing import child_run, row

WORK = REPO_ROOT / "benchmarks" / "work" / "sweep"
BIN = Path(sys.executable).parent
LATENCY_NB = REPO_ROOT / "notebooks" / "reusable" / "latency-from-captures.ipynb"


def _trivial_notebook() -> Path:
    path = WORK / "trivial.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("rate = 1\noutput_dir = '.'", metadata={"tags": ["parameters"]}),
                nbformat.v4.new_code_cell("result = rate * 2\nresult")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


def _cells_s(executed: list[Path]) -> float:
    """Sum of the cell durations papermill recorded in the executed notebooks."""
    return sum(_cell_s(path) for path in executed)


def _cell_s(path: Path) -> float:
    nb = nbformat.read(path, as_version=4)
    return sum(c.metadata.get("papermill", {}).get("duration") or 0.0 for c in nb.cells)


STEADY: dict[str, list[float]] = {}


def _steady_s(executed: list[Path]) -> float:
    """Mean of (run.json duration_s - cells) over the points after the first: what a point costs once
    the kernel is up (the first point also pays the kernel's start)."""
    runs = sorted(((json.loads((p.parent / "run.json").read_text()), p) for p in executed), key=lambda r: r[0]["start"])
    later = [rec["duration_s"] - _cell_s(p) for rec, p in runs[1:]]
    return sum(later) / len(later) if later else float("nan")


def _benchbook(notebook: Path, axis: str, values: list, extra: list[str], tag: str,
               fresh: bool = False) -> tuple[float, float]:
    """(wall s, cell s) of one `benchbook run` sweep over ``values`` of parameter ``axis`` (``fresh``:
    with --fresh-kernel)."""
    runs = WORK / f"runs-{tag}"
    shutil.rmtree(runs, ignore_errors=True)
    grid = ["-p", f"{axis}={','.join(json.dumps(v) for v in values)}", *extra]
    res = child_run([str(BIN / "benchbook"), "run", str(notebook), *grid, "--experiment", "e",
                     "--runs-dir", str(runs), "--no-progress"] + (["--fresh-kernel"] if fresh else []))
    executed = sorted(runs.glob(f"e/*/{notebook.name}"))
    if len(executed) != len(values):
        raise RuntimeError(f"benchbook run left {len(executed)} executed notebooks for {len(values)} points")
    STEADY.setdefault(tag, []).append(_steady_s(executed))
    return res["s"], _cells_s(executed)


def _papermill(notebook: Path, axis: str, values: list, extra: dict, tag: str) -> tuple[float, float]:
    """(wall s, cell s) of a shell-style loop: one `papermill` process per point."""
    out = WORK / f"papermill-{tag}"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    wall, executed = 0.0, []
    for i, v in enumerate(values):
        point = out / f"p{i}"
        point.mkdir()
        args = ["-p", axis, json.dumps(v) if not isinstance(v, str) else v, "-p", "output_dir", str(point)]
        for name, value in extra.items():
            args += ["-p", name, str(value)]
        res = child_run([str(BIN / "papermill"), str(notebook), str(point / notebook.name), *args,
                         "--cwd", str(point), "--no-progress-bar", "--log-level", "ERROR"])
        wall += res["s"]
        executed.append(point / notebook.name)
    return wall, _cells_s(executed)


def _best(fn, rounds: int, points: int) -> tuple[float, float, list[float]]:
    """Best (overhead per point, wall per point) over ``rounds`` and every round's overhead."""
    results = []
    for _ in range(rounds):
        wall, cells = fn()
        results.append(((wall - cells) / points, wall / points))
    best = min(results)
    return best[0], best[1], [r[0] for r in results]


def _spread(values: list[float]) -> str:
    return ", ".join(f"{v:.2f}" for v in values)


def run(quick: bool) -> list[dict]:
    trivial = _trivial_notebook()
    rows = []
    cases = [  # (label, notebook, axis, values, benchbook -p, papermill -p, rounds)
        ("trivial notebook", trivial, "rate", list(range(1, (3 if quick else 8) + 1)), [], {}, 1 if quick else 3),
        ("latency-from-captures, 2,000 packets", LATENCY_NB, "seed", list(range(1, (2 if quick else 3) + 1)),
         ["-p", "n_packets=2000"], {"n_packets": 2000}, 1 if quick else 2),
    ]
    for label, nb, axis, values, bb_extra, pm_extra, rounds in cases:
        n = len(values)
        key = "trivial" if nb == trivial else "latency"
        ours, ours_wall, ours_all = _best(partial(_benchbook, nb, axis, values, bb_extra, key), rounds, n)
        fresh, fresh_wall, fresh_all = _best(partial(_benchbook, nb, axis, values, bb_extra, key + "-fresh", True),
                                             rounds, n)
        bare, bare_wall, bare_all = _best(partial(_papermill, nb, axis, values, pm_extra, key), rounds, n)
        rows.append(row(f"overhead per point, {label}, {n} points", ours, bare, "papermill, one process per point",
                        "s/point", f"best of {rounds}; all rounds: benchbook {_spread(ours_all)}, papermill "
                        f"{_spread(bare_all)}; wall per point {ours_wall:.2f} vs {bare_wall:.2f} s; after the first "
                        f"point a benchbook point costs {min(STEADY[key]):.2f} s beyond its cells (run.json "
                        f"duration_s); benchbook writes a run record per point as well", higher_is_better=False))
        rows.append(row(f"overhead per point, {label}, {n} points", ours, fresh,
                        "benchbook run --fresh-kernel (a kernel per point)", "s/point",
                        f"best of {rounds}; all rounds: shared {_spread(ours_all)}, fresh {_spread(fresh_all)}; "
                        f"wall per point {ours_wall:.2f} vs {fresh_wall:.2f} s; after the first point "
                        f"{min(STEADY[key]):.2f} vs {min(STEADY[key + '-fresh']):.2f} s beyond the cells",
                        higher_is_better=False))
    return rows
