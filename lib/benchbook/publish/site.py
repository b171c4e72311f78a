"""Build the static site of published runs (the work of `benchbook publish`).

Layout (every link relative, so the folder can move and be read from file://)::

    SITE/index.html                       papers and their figures, filter by paper and outcome
    SITE/assets/                          one plotly.min.js, notebook.css, site.css, site.js
    SITE/runs/<experiment>/<run-id>/      index.html: the executed notebook with summary, provenance,
                                          downloads and history; files/: the downloads
    SITE/pagefind/                        the search index (pagefind; works over http only)
    SITE/site.json                        what was published (runs, outcomes, pages)

The site is built in a temporary folder beside SITE and renamed into place; an existing SITE is
replaced only when it is a benchbook site (it holds site.json) or empty.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchbook.paths import RUNS_DIR
from benchbook.publish import notebook_html, pages
from benchbook.publish.files import RAW_MODES, crate_zip, is_download, is_raw, place_file
from benchbook.publish.runs import PublishedRun, PublishError, select_runs
from benchbook.publish.verify import HashCache, verify_inputs, verify_outputs

ASSETS_DIR = Path(__file__).with_name("assets")
SITE_MANIFEST = "site.json"
PAGEFIND_TIMEOUT_S = 120


@dataclass
class SiteReport:
    site: Path
    n_runs: int
    n_figures: int
    n_plots: int
    seconds: float
    bytes: int
    search: bool
    notes: list[str] = field(default_factory=list)


def _run_path(run: PublishedRun) -> str:
    return f"runs/{run.experiment}/{run.run_id}/"


def _dir_bytes(root: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            p = Path(dirpath) / name
            if not p.is_symlink():
                total += p.stat().st_size
    return total


_WHAT = {".hlog": "HdrHistogram interval log", ".parquet": "Parquet table", ".ipynb": "executed notebook",
         ".png": "figure (PNG)", ".svg": "figure (SVG)", ".json": "JSON", ".scm": "Guix (pinned environment)",
         ".csv": "CSV table", ".txt": "text"}


def _publish_run(run: PublishedRun, page_dir: Path, cache: HashCache, raw: str, history: list[PublishedRun],
                 allow_changed_inputs: bool) -> dict[str, Any]:
    """Write one run's page and files; returns its entry of site.json."""
    outputs = verify_outputs(run, cache)
    inputs = verify_inputs(run, cache, allow_changed=allow_changed_inputs)
    files = page_dir / "files"
    files.mkdir(parents=True)
    downloads: list[dict[str, str]] = []
    output_rows: list[dict[str, Any]] = []
    n_raw, raw_bytes = 0, 0
    for checked in outputs:
        rel = checked.entry["path"]
        href = None
        if is_download(rel):
            place_file(run.run_dir / rel, files / rel)
            href = f"files/{rel}"
            downloads.append({"name": rel, "href": href, "what": _WHAT.get(Path(rel).suffix.lower(), "")})
        elif is_raw(rel):
            n_raw += 1
            raw_bytes += checked.entry["bytes"]
            if raw != "none":
                place_file(run.run_dir / rel, files / rel, mode=raw)
                href = f"files/{rel}"
                downloads.append({"name": rel, "href": href, "what": f"raw data ({raw})"})
        output_rows.append({"entry": checked.entry, "status": checked.status, "href": href})
    shutil.copyfile(run.run_dir / "run.json", files / "run.json")
    downloads.insert(0, {"name": "run.json", "href": "files/run.json", "what": "run record"})
    crate = crate_zip(run.run_dir, files / f"{run.run_id}.crate.zip", include_raw=raw != "none")
    crate_what = "Workflow Run RO-Crate (zip)" + ("" if raw != "none" else ", raw data described only")
    downloads.insert(1, {"name": crate.name, "href": f"files/{crate.name}", "what": crate_what})
    raw_note = ""
    if n_raw and raw == "none":
        raw_note = (f"{n_raw} raw files ({raw_bytes / 1e6:.1f} MB) are not published here (--raw none); their SHA-256 "
                    f"are listed under Outputs.")
    thumb = None
    for exports in ((run.verdict or {}).get("figures") or {}).values():
        png = exports.get("png", "")
        name = Path(png).name if png and not png.startswith("unavailable") else ""
        if name and (files / name).is_file():
            thumb = f"files/{name}"
            break
    hist_rows = [{"run_id": h.run_id, "date": h.date, "outcome": h.outcome, "badge": h.badge,
                  "environment": h.environment_text, "current": h is run,
                  "href": f"../{h.run_id}/index.html"} for h in sorted(history, key=lambda h: h.start, reverse=True)]
    root = "../../../"
    frags = pages.run_fragments(run, root, inputs, output_rows, downloads, hist_rows, raw_note)
    bb = {"title": f"{run.experiment} {run.run_id}", "assets": root + "assets", **frags}
    n_plots = 0
    nb = run.executed_notebook
    if nb is not None:
        html, n_plots = notebook_html.notebook_page(nb, bb)
    else:
        html = pages.render("bare_page", bb=bb)
    (page_dir / "index.html").write_text(html, encoding="utf-8")
    return {"experiment": run.experiment, "run_id": run.run_id, "page": _run_path(run) + "index.html",
            "outcome": run.outcome, "badge": run.badge, "start": run.start, "plots": n_plots,
            "thumbnail": _run_path(run) + thumb if thumb else None, "paper": run.figure.paper_id,
            "downloads": [_run_path(run) + d["href"] for d in downloads]}


def _index(runs: list[PublishedRun], entries: dict[tuple[str, str], dict[str, Any]], search: bool) -> str:
    by_exp: dict[str, list[PublishedRun]] = defaultdict(list)
    for r in runs:
        by_exp[r.experiment].append(r)
    papers: dict[str, dict[str, Any]] = {}
    for exp, exp_runs in by_exp.items():
        exp_runs.sort(key=lambda r: r.start, reverse=True)
        newest = exp_runs[0]
        p = papers.setdefault(newest.figure.paper_id, {"id": newest.figure.paper_id,
                                                       "title": newest.figure.paper_title, "figures": []})
        entry = entries[(exp, newest.run_id)]
        earlier = exp_runs[1:]
        counts: dict[str, int] = defaultdict(int)
        for r in earlier:
            counts[r.outcome] += 1
        p["figures"].append({"run": newest, "href": entry["page"], "thumb": entry["thumbnail"],
                             "n_earlier": len(earlier),
                             "earlier_outcomes": ", ".join(f"{n} {o}" for o, n in sorted(counts.items()))})
    ordered = sorted(papers.values(), key=lambda p: (p["id"] == "other runs", p["id"]))
    # the figures by the outcome of their newest run (what the cards show and the filter selects), "figure
    # redrawn" apart from "reproduced"
    newest = [f["run"].outcome for p in ordered for f in p["figures"]]
    counts = [(o, newest.count(o)) for o in sorted(set(newest), key=lambda o: pages.OUTCOME_CLASSES.index(o)
                                                   if o in pages.OUTCOME_CLASSES else 99)]
    published = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return pages.render("index", papers=ordered, counts=counts, n_figures=len(by_exp),
                        n_runs=len(runs), published=published, search=search)


def _pagefind(site: Path) -> tuple[bool, str]:
    """Index the site with pagefind (PyPI pagefind[bin]); (False, why) when it cannot run."""
    try:
        proc = subprocess.run([sys.executable, "-m", "pagefind", "--site", str(site)], capture_output=True,
                              text=True, timeout=PAGEFIND_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"search index not built: pagefind could not run ({exc})"
    if proc.returncode != 0 or not (site / "pagefind" / "pagefind-ui.js").is_file():
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return False, ("search index not built: `python -m pagefind` exited with status "
                       f"{proc.returncode}: {' | '.join(tail)} (install the pagefind[bin] package)")
    return True, ""


def _check_target(site: Path) -> None:
    if site.exists() and not site.is_dir():
        raise PublishError(f"{site}: exists and is not a directory")
    if site.is_dir() and any(site.iterdir()) and not (site / SITE_MANIFEST).is_file():
        raise PublishError(f"{site}: a non-empty directory that is not a benchbook site (no {SITE_MANIFEST}); "
                           f"refusing to replace it")


def build_site(site: Path, refs: list[str] = (), all_runs: bool = False, runs_dir: Path | None = None,
               raw: str = "none", papers: list[Path] = (), since: str | None = None,
               allow_changed_inputs: bool = False, search: bool = True) -> SiteReport:
    """Publish the selected runs (see runs.select_runs) as a static site at ``site``."""
    started = time.monotonic()
    if raw not in RAW_MODES:
        raise PublishError(f"--raw {raw!r}: expected one of {', '.join(RAW_MODES)}")
    site = Path(site).absolute()
    _check_target(site)
    runs = select_runs(list(refs), all_runs, Path(runs_dir) if runs_dir else RUNS_DIR, list(papers), since)
    site.parent.mkdir(parents=True, exist_ok=True)
    tmp = site.with_name(f".{site.name}.tmp-{os.getpid()}")
    if tmp.exists():
        shutil.rmtree(tmp)
    notes: list[str] = []
    try:
        assets = tmp / "assets"
        assets.mkdir(parents=True)
        (assets / "plotly.min.js").write_text(notebook_html.plotly_js(), encoding="utf-8")
        (assets / "notebook.css").write_text(notebook_html.notebook_css(), encoding="utf-8")
        for name in ("site.css", "site.js"):
            shutil.copyfile(ASSETS_DIR / name, assets / name)
        cache = HashCache()
        by_exp: dict[str, list[PublishedRun]] = defaultdict(list)
        for r in runs:
            by_exp[r.experiment].append(r)
        entries: dict[tuple[str, str], dict[str, Any]] = {}
        for r in runs:
            page_dir = tmp / _run_path(r)
            entries[(r.experiment, r.run_id)] = _publish_run(r, page_dir, cache, raw, by_exp[r.experiment],
                                                             allow_changed_inputs)
        searchable = False
        if search:
            (tmp / "index.html").write_text(_index(runs, entries, False), encoding="utf-8")
            searchable, why = _pagefind(tmp)
            if why:
                notes.append(why)
        (tmp / "index.html").write_text(_index(runs, entries, searchable), encoding="utf-8")
        manifest = {"schema": "benchbook.site/1", "published": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
                    "raw": raw, "search": searchable, "runs": list(entries.values())}
        (tmp / SITE_MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
        old = site.with_name(f".{site.name}.old-{os.getpid()}")
        if site.exists():
            os.rename(site, old)
        os.rename(tmp, site)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return SiteReport(site=site, n_runs=len(runs), n_figures=len(by_exp),
                      n_plots=sum(e["plots"] for e in entries.values()), seconds=time.monotonic() - started,
                      bytes=_dir_bytes(site), search=searchable, notes=notes)
