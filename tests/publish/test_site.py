"""benchbook publish on real runs: what the site holds, hashes verified, nothing rewritten, atomic."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from rocrate.rocrate import ROCrate

from benchbook.publish.notebook_html import cap_text
from benchbook.publish.runs import PublishError
from benchbook.publish.site import build_site

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _run_dirs(runs_dir: Path) -> list[Path]:
    return sorted(p.parent for p in runs_dir.glob("*/*/run.json"))


def test_site_has_index_pages_assets_and_one_plotly(site, runs_dir):
    manifest = json.loads((site / "site.json").read_text())
    assert len(manifest["runs"]) == 3
    assert {r["experiment"] for r in manifest["runs"]} == {"wiedner-itc23-table3", "benchbook-latency-demo"}
    for r in manifest["runs"]:
        assert (site / r["page"]).is_file()
        assert r["plots"] >= 1, f"{r['page']}: no plotly figure rendered"
        assert r["thumbnail"] and (site / r["thumbnail"]).is_file()
    table = next(r for r in manifest["runs"] if r["experiment"] == "wiedner-itc23-table3")
    assert table["outcome"] == "reproduced" and table["badge"] == "8/8 values match"
    assert sorted(p.relative_to(site).as_posix() for p in site.rglob("plotly*.js")) == ["assets/plotly.min.js"]
    index = (site / "index.html").read_text()
    assert 'id="filter-paper"' in index and 'id="filter-outcome"' in index
    assert "wiedner-itc23" in index and "benchbook-demo" in index
    assert (site / "pagefind" / "pagefind-ui.js").is_file()


def test_no_page_loads_anything_from_another_host_and_links_are_relative(site):
    for page in site.rglob("*.html"):
        html = page.read_text()
        remote = re.findall(r'(?:src|href)="((?:https?:)?//[^"]*)"', html)
        assert remote == [], f"{page}: loads from another host: {remote[:3]}"
        absolute = re.findall(r'(?:src|href)="(/[^"]*)"', html)
        assert absolute == [], f"{page}: absolute links break relocation: {absolute[:3]}"
        inline_css = sum(len(m) for m in re.findall(r"<style[^>]*>(.*?)</style>", html, re.S))
        assert inline_css < 20_000, f"{page}: inlines {inline_css} B of CSS (the site shares assets/notebook.css)"


def test_run_page_has_verdict_provenance_downloads_history(site):
    manifest = json.loads((site / "site.json").read_text())
    demo = [r for r in manifest["runs"] if r["experiment"] == "benchbook-latency-demo"]
    newest = max(demo, key=lambda r: r["start"])
    html = (site / newest["page"]).read_text()
    for needle in ('id="provenance"', 'id="downloads"', 'id="history"', "benchbook reproduce benchbook-latency-demo",
                   "-p n_packets=8000", "guix time-machine -C channels.scm -- shell -m manifest.scm",
                   "pip install --require-hashes --no-deps -r manifests/requirements.lock",
                   "Guix channel commit", "verified", "latency.hlog", "latencies.parquet", "verdict.json",
                   ".crate.zip", "13/13 values match"):  # 8000 packets: p99.99 and p99.999 not resolvable
        assert needle in html, f"run page lacks {needle!r}"
    for other in demo:
        assert other["run_id"] in html, "history lacks an earlier run of the same figure"
    for href in newest["downloads"]:
        assert (site / href).is_file(), href
    assert not list(site.rglob("*.pcap")), "--raw none published captures"


def test_executed_notebooks_are_not_rewritten(site, runs_dir):
    for run_dir in _run_dirs(runs_dir):
        record = json.loads((run_dir / "run.json").read_text())
        outputs = {o["path"]: o["sha256"] for o in record["outputs"]}
        nb = record["executed_notebook"]
        assert _sha256(run_dir / nb) == outputs[nb]


def test_crate_zip_without_raw_describes_captures_only(site, tmp_path):
    crates = sorted(site.glob("runs/benchbook-latency-demo/*/files/*.crate.zip"))
    assert crates
    with zipfile.ZipFile(crates[0]) as zf:
        names = zf.namelist()
        meta = json.loads(zf.read("ro-crate-metadata.json"))
        zf.extractall(tmp_path / "crate")
    crate = ROCrate(str(tmp_path / "crate"))  # the rocrate package reads it back
    assert crate.mainEntity is not None and crate.mainEntity.id.startswith("workflow/")
    assert "run.json" in names and not any(n.endswith(".pcap") for n in names)
    ids = {e["@id"] for e in meta["@graph"]}
    assert "#output-pre.pcap" in ids and "outputs/pre.pcap" not in ids
    root = next(e for e in meta["@graph"] if e["@id"] == "./")
    assert all(p["@id"] in names or p["@id"].endswith("/") for p in root["hasPart"])


def test_raw_copy_and_link(runs_dir, tmp_path):
    demo = "benchbook-latency-demo"
    copied = build_site(tmp_path / "copy", refs=[demo], runs_dir=runs_dir, raw="copy", search=False)
    pcaps = list(copied.site.rglob("*.pcap"))
    assert len(pcaps) == 4 and not any(p.is_symlink() for p in pcaps)
    linked = build_site(tmp_path / "link", refs=[demo], runs_dir=runs_dir, raw="link", search=False)
    links = list(linked.site.rglob("*.pcap"))
    assert len(links) == 4 and all(p.is_symlink() and p.resolve().is_relative_to(runs_dir.resolve()) for p in links)
    with pytest.raises(PublishError, match="--raw 'zip'"):
        build_site(tmp_path / "bad", refs=[demo], runs_dir=runs_dir, raw="zip")


def test_changed_output_is_an_error_naming_it_and_the_old_site_stays(runs_dir, tmp_path):
    runs = tmp_path / "runs"
    shutil.copytree(runs_dir / "wiedner-itc23-table3", runs / "wiedner-itc23-table3")
    out = tmp_path / "site"
    build_site(out, all_runs=True, runs_dir=runs, search=False)
    before = (out / "site.json").read_text()
    verdict = next(runs.glob("*/*/verdict.json"))
    verdict.write_text(verdict.read_text().replace('"reproduced"', '"mismatch"', 1))
    with pytest.raises(PublishError, match=re.escape(str(verdict))):
        build_site(out, all_runs=True, runs_dir=runs, search=False)
    assert (out / "site.json").read_text() == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_changed_input_is_an_error_unless_allowed(runs_dir, tmp_path):
    runs = tmp_path / "runs"
    shutil.copytree(runs_dir / "wiedner-itc23-table3", runs / "wiedner-itc23-table3")
    run_json = next(runs.glob("*/*/run.json"))
    record = json.loads(run_json.read_text())
    entry = next(e for e in record["inputs"] if e.get("role") == "input")
    entry["sha256"] = "0" * 64  # as if the entry file had been edited since the run
    run_json.write_text(json.dumps(record))
    with pytest.raises(PublishError, match=re.escape(entry["path"])):
        build_site(tmp_path / "site", all_runs=True, runs_dir=runs, search=False)
    build_site(tmp_path / "site", all_runs=True, runs_dir=runs, search=False, allow_changed_inputs=True)
    page = next((tmp_path / "site").glob("runs/*/*/index.html")).read_text()
    assert "Input changed since this run" in page and entry["path"] in page


def test_refuses_to_replace_a_folder_that_is_not_a_site(runs_dir, tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "keep.txt").write_text("mine")
    with pytest.raises(PublishError, match="not a benchbook site"):
        build_site(tmp_path / "notes", all_runs=True, runs_dir=runs_dir, search=False)
    assert (tmp_path / "notes" / "keep.txt").read_text() == "mine"


def test_since_selects_later_runs_and_cli_prints_where(runs_dir, tmp_path):
    starts = sorted(json.loads(p.read_text())["start"] for p in runs_dir.glob("*/*/run.json"))
    out = tmp_path / "site"
    proc = subprocess.run([sys.executable, "-m", "benchbook.cli", "publish", "--all", "--runs-dir", str(runs_dir),
                           "--since", starts[-1], "-o", str(out), "--no-search"], capture_output=True, text=True,
                          timeout=280)
    assert proc.returncode == 0, proc.stderr
    assert f"{out / 'index.html'}" in proc.stdout and "1 runs of 1 figures" in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "benchbook.cli", "publish", "--all", "--runs-dir", str(runs_dir),
                           "--since", "2999-01-01T00:00:00Z", "-o", str(out)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 1 and "no finished runs to publish since 2999" in proc.stderr


def test_cap_text_keeps_short_and_cuts_long_output():
    assert cap_text("a\nb\n") == "a\nb\n"
    long = "".join(f"line {i}\n" for i in range(1000))
    capped = cap_text(long, max_lines=10)
    assert capped.startswith("line 0\n") and "line 9" in capped and "line 10\n" not in capped
    assert "990 lines" in capped and "left out" in capped
    assert len(cap_text("x" * 50_000, max_chars=1000)) < 1200
