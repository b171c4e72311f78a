"""`benchbook publish`: build time and size of the site of every shipped figure, against the budget
(30 s, 100 MB without raw data) and against stock nbconvert on the same executed notebooks.

Runs come from data/runs when `make reproduce` has left some there, else from
benchmarks/work/publish-runs, made once by `benchbook reproduce --all` (quick: two fast entries
only) and reused by later runs of the benchmark.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import warnings
from pathlib import Path

import nbformat
from nbconvert import HTMLExporter

from benchbook.paths import REPO_ROOT, RUNS_DIR
from benchbook.publish.site import build_site

WORK = REPO_ROOT / "benchmarks" / "work"
BUDGET_S = 30.0
BUDGET_MB = 100.0
QUICK_ENTRIES = (("wiedner-itc23-table3", []), ("benchbook-latency-demo", ["-p", "n_packets=20000"]))


def _runs_dir(quick: bool) -> Path:
    if not quick and any(RUNS_DIR.glob("*/*/run.json")):
        return RUNS_DIR
    runs = WORK / ("publish-runs-quick" if quick else "publish-runs")
    if not any(runs.glob("*/*/run.json")):
        cmd = [sys.executable, "-m", "benchbook.cli", "reproduce"]
        batches = [[e, "--runs-dir", str(runs), *extra] for e, extra in QUICK_ENTRIES] if quick else \
            [["--all", "--runs-dir", str(runs)]]
        for args in batches:
            proc = subprocess.run(cmd + args, capture_output=True, text=True)
            if proc.returncode not in (0, 4):  # partial entries still leave a run to publish
                print(proc.stdout[-2000:], file=sys.stderr)
    return runs


def _stock_nbconvert_s(notebooks: list[Path]) -> tuple[float, int]:
    """Seconds for nbconvert's stock lab HTML export of the same notebooks, and how many plotly
    outputs it kept (it drops application/vnd.plotly.v1+json)."""
    exporter = HTMLExporter(template_name="lab")
    kept = 0
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for nb in notebooks:
            body, _ = exporter.from_notebook_node(nbformat.read(str(nb), as_version=4))
            kept += body.count("Plotly.newPlot")
    return time.perf_counter() - t0, kept


def run(quick: bool) -> list[dict]:
    runs = _runs_dir(quick)
    out = WORK / "publish-site"
    shutil.rmtree(out, ignore_errors=True)
    # inputs may have been edited since the runs (the paper folders are inputs): they are still
    # re-hashed, and marked changed on the pages instead of stopping the build
    build_site(out, all_runs=True, runs_dir=runs, search=False, allow_changed_inputs=True)  # warm: imports
    rep = build_site(out, all_runs=True, runs_dir=runs, allow_changed_inputs=True)
    manifest = json.loads((out / "site.json").read_text())
    notebooks = [Path(runs) / r["experiment"] / r["run_id"] / json.loads(
        (Path(runs) / r["experiment"] / r["run_id"] / "run.json").read_text())["executed_notebook"]
        for r in manifest["runs"]]
    notebooks = [nb for nb in notebooks if nb.is_file()]
    stock_s, stock_plots = _stock_nbconvert_s(notebooks)
    where = "data/runs" if runs == RUNS_DIR else runs.relative_to(REPO_ROOT).as_posix()
    rows = [
        {"name": f"`benchbook publish --all` ({rep.n_runs} runs of {rep.n_figures} figures, --raw none)",
         "benchbook": rep.seconds, "other": BUDGET_S, "other_tool": "budget", "unit": "s",
         "ratio": BUDGET_S / rep.seconds,
         "note": f"runs from {where}; re-hashes every output and input, renders {rep.n_plots} interactive plotly "
                 f"figures, RO-Crate zip per run, pagefind index (search {'built' if rep.search else 'absent'})"},
        {"name": "site size without raw data", "benchbook": rep.bytes / 1e6, "other": BUDGET_MB,
         "other_tool": "budget", "unit": "MB", "ratio": BUDGET_MB / (rep.bytes / 1e6),
         "note": f"{rep.n_runs} pages, one shared plotly.min.js and notebook.css; ratio = budget / size"},
        {"name": f"HTML of the {len(notebooks)} executed notebooks alone", "benchbook": rep.n_plots,
         "other": stock_plots, "other_tool": "nbconvert --to html (stock lab template)", "unit": "plots drawn",
         "ratio": float("nan") if stock_plots == 0 else rep.n_plots / stock_plots,
         "note": f"stock nbconvert took {stock_s:.1f} s and drops every application/vnd.plotly.v1+json output "
                 f"(0 figures) while inlining ~270 KB of CSS per page; benchbook's pages keep all of them"},
    ]
    if not quick:
        raw_out = WORK / "publish-site-raw"
        shutil.rmtree(raw_out, ignore_errors=True)
        raw = build_site(raw_out, all_runs=True, runs_dir=runs, raw="copy", search=False, allow_changed_inputs=True)
        rows.append({"name": "site size with raw data (--raw copy)", "benchbook": raw.bytes / 1e6,
                     "other": rep.bytes / 1e6, "other_tool": "--raw none", "unit": "MB",
                     "ratio": rep.bytes / raw.bytes,
                     "note": f"built in {raw.seconds:.1f} s; raw captures copied into the site and the RO-Crate zips"})
        shutil.rmtree(raw_out, ignore_errors=True)
    return rows
