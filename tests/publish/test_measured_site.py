"""A measured entry on the published site, read in a real browser (Playwright + Debian's chromium): every measured
row is drawn as its intervals against its +-delta band around the published value, every claim as its interval
against its threshold, at the positions verdict.json gives (read back from the rendered page), with every per-run
value and N, and what redoes the verdict (alpha, runs per arm, seed, order). The entry is tests/data/measured-paper:
runs drawn by a seeded generator with known truth, passed with --papers (no registered paper), so its verdict holds
every row status (reproduced, mismatch, inconclusive twice, not comparable, not derivable) and every claim verdict.
A screenshot of the verdict goes to build/test-artifacts/publish/measured-verdict.png."""

from __future__ import annotations

import json
import math

import pytest

from benchbook.reproduce.registry import builtin_paper_dirs, load_registry
from publish.browser import ARTIFACTS_DIR, PageWatch
from publish.conftest import MEASURED_ENTRY, MEASURED_PAPER

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

# known truth (tests/data/measured-paper/known_truth.ipynb, 8 runs per arm, seed 2026)
ROW_STATUSES = ["reproduced", "mismatch", "inconclusive", "reproduced", "inconclusive", "not comparable",
                "not derivable"]
CLAIM_VERDICTS = {"a-faster": "holds", "a-half-again": "fails", "flows-fair": "inconclusive",
                  "mostly-delivered": "holds", "c-slower": "not derivable"}
PLOT_SLACK_PX = 1.5   # a mark's edge vs its value: rounding to 0.01 of the viewBox and half a stroke

# Each drawing's marks as value spans: screen x of the element's box mapped back through the svg's data-domain
# (the value axis) and data-plot (its x range in the viewBox), and what one screen pixel is worth in value units.
_READ_DRAWINGS = """(svgs) => svgs.map(svg => {
  const r = svg.getBoundingClientRect(), vb = svg.viewBox.baseVal;
  const [lo, hi] = svg.dataset.domain.split(' ').map(Number), [x0, x1] = svg.dataset.plot.split(' ').map(Number);
  const value = sx => lo + ((sx - r.left) * vb.width / r.width - x0) / (x1 - x0) * (hi - lo);
  const span = el => {
    if (!el) return null;
    const b = el.getBoundingClientRect();
    return [value(b.left), value(b.right)];
  };
  const q = s => svg.querySelector(s);
  return {id: svg.id, status: svg.dataset.status, shown: r.width > 0 && r.height > 0,
          perPx: (hi - lo) / ((x1 - x0) * r.width / vb.width),
          band: span(q('.bb-band')), ref: span(q('.bb-ref')), ci90: span(q('.bb-ci90')), ci95: span(q('.bb-ci95')),
          estimate: span(q('.bb-estimate')), runs: svg.querySelectorAll('.bb-run').length,
          note: (q('.bb-nointerval') || {}).textContent || ''};
})"""


@pytest.fixture(scope="module")
def verdict(measured_run) -> dict:
    return json.loads((measured_run / "verdict.json").read_text())


@pytest.fixture(scope="module")
def run_page(measured_site) -> str:
    (run,) = json.loads((measured_site / "site.json").read_text())["runs"]
    return run["page"]


def test_the_test_paper_is_no_registered_paper():
    """make reproduce --all and the site's paper list read the registry: the test folder is not on its path."""
    assert MEASURED_PAPER.resolve() not in [p.resolve() for p in builtin_paper_dirs()]
    assert MEASURED_ENTRY not in load_registry(use_env=False)
    assert MEASURED_ENTRY in load_registry([MEASURED_PAPER], use_env=False)


def test_verdict_json_holds_what_redoes_the_verdict(verdict, measured_site, run_page):
    """Item 9: runs, N per run, alpha, delta and its source, estimator and definition, every per-run value and the
    seed, in the verdict.json the site offers for download (the run's own file, unchanged)."""
    assert [r["status"] for r in verdict["rows"]] == ROW_STATUSES
    assert {c["id"]: c["verdict"] for c in verdict["claims"]} == CLAIM_VERDICTS
    assert verdict["schema"] == "benchbook.verdict/2" and verdict["alpha"] == 0.05
    assert verdict["plan"]["plan"]["seed"] == 2026 and verdict["plan"]["plan"]["repetitions"] == 8
    for row in verdict["rows"]:
        if row["status"] in ("reproduced", "mismatch", "inconclusive"):
            assert row["runs"] == len(row["values"]) == len(row["n_per_run"]) == 8, row["name"]
            assert row["definition"] and row["method"] and row["alpha"] == 0.05
            assert row["margin"]["delta"] > 0 and row["margin"]["sources"], row["name"]
    downloaded = measured_site / run_page.rsplit("/", 1)[0] / "files" / "verdict.json"
    assert json.loads(downloaded.read_text()) == verdict


def _band(row: dict) -> tuple[float, float]:
    d, v = row["margin"]["delta"], row["published"]
    return (v * math.exp(-d), v * math.exp(d)) if row["margin"]["scale"] == "log-ratio" else (v - d, v + d)


def _at(span: list[float] | None, value: float, per_px: float) -> bool:
    """A mark drawn at ``value`` (a line: its middle)."""
    return span is not None and abs((span[0] + span[1]) / 2 - value) <= PLOT_SLACK_PX * per_px


def _spans(span: list[float] | None, pair: list[float], per_px: float) -> bool:
    return span is not None and all(abs(a - b) <= PLOT_SLACK_PX * per_px for a, b in zip(span, pair, strict=True))


def _inside(inner: list[float], outer: list[float], per_px: float) -> bool:
    return inner[0] >= outer[0] - per_px / 2 and inner[1] <= outer[1] + per_px / 2


def _outside(inner: list[float], outer: list[float]) -> bool:
    return inner[1] < outer[0] or inner[0] > outer[1]


def test_every_measured_row_is_drawn_against_its_margin(browser, served_measured_site, run_page, verdict):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    watch = PageWatch(page)
    page.goto(served_measured_site + run_page, wait_until="networkidle")
    rows = page.locator("#measured-rows tbody tr[data-row]")
    assert rows.count() == len(verdict["rows"])
    drawings = page.locator("#measured-rows svg.bb-interval").evaluate_all(_READ_DRAWINGS)
    assert len(drawings) == len(verdict["rows"])
    for i, (row, drawn) in enumerate(zip(verdict["rows"], drawings, strict=True)):
        tr, what, px = rows.nth(i), f"row {i + 1} {row['name']}", drawn["perPx"]
        assert drawn["shown"] and drawn["status"] == row["status"] == tr.get_attribute("data-status"), what
        assert tr.locator(".bb-badge").inner_text().strip() == row["status"]
        text = tr.inner_text()
        assert _at(drawn["ref"], row["published"], px), (what, drawn["ref"])
        if row["status"] != "not comparable":   # its paper value is not this statistic: no margin declared
            assert _spans(drawn["band"], _band(row), px), (what, drawn["band"], _band(row))
            assert row["margin"]["text"] in text and row["margin"]["sources"][0] in text, what
        if row["ci95_value"]:
            assert _spans(drawn["ci95"], row["ci95_value"], px) and _spans(drawn["ci90"], row["ci90_value"], px), what
            assert _at(drawn["estimate"], row["estimate"], px), what
            assert drawn["runs"] == len(row["values"]) and f"N = {row['n_per_run'][0]:,}" in text, what
            # the verdict as seen: reproduced, the 90 % interval inside the band; mismatch, the 95 % wholly outside
            if row["status"] == "reproduced":
                assert _inside(drawn["ci90"], drawn["band"], px), what
            if row["status"] == "mismatch":
                assert _outside(drawn["ci95"], drawn["band"]), what
            if row["status"] == "inconclusive":
                assert not _inside(drawn["ci90"], drawn["band"], px) and not _outside(drawn["ci95"], drawn["band"])
        else:
            assert drawn["ci90"] is drawn["ci95"] is None and drawn["note"], what
        if row["method"].startswith("resolvability"):   # a p99.9 of 1,000 packets: no value printed or drawn
            assert drawn["runs"] == 0 and drawn["estimate"] is None and "not resolvable" in drawn["note"]
            assert "median: not resolvable" in text and f"{row['values'][0]:.4f}"[:5] not in text
        if row["status"] == "not derivable":
            assert drawn["runs"] == 0 and "not derivable" in drawn["note"] and "not in the plan" in text
    # every per-run value with its N, in the row's table
    first = rows.nth(0)
    first.locator(".bb-per-run summary").click()
    cells = first.locator(".bb-per-run tbody tr").evaluate_all("trs => trs.map(t => t.innerText.split('\\t'))")
    assert [(int(c[0]), float(c[1].split()[0]), c[2]) for c in cells] == [
        (r, pytest.approx(v, abs=1e-4), f"{n:,}") for r, v, n in zip(verdict["rows"][0]["run_ids"],
                                                                    verdict["rows"][0]["values"],
                                                                    verdict["rows"][0]["n_per_run"], strict=True)]
    assert watch.errors == [] and watch.failed == [], (watch.errors, watch.failed)
    ARTIFACTS_DIR.mkdir(parents=True, exist_ok=True)
    page.locator("#summary").screenshot(path=str(ARTIFACTS_DIR / "measured-verdict.png"))
    page.close()


def test_every_claim_is_drawn_against_its_threshold(browser, served_measured_site, run_page, verdict):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(served_measured_site + run_page, wait_until="networkidle")
    rows = page.locator("#claims tbody tr[data-claim]")
    drawings = page.locator("#claims svg.bb-interval").evaluate_all(_READ_DRAWINGS)
    assert rows.count() == len(drawings) == len(verdict["claims"])
    for i, (claim, drawn) in enumerate(zip(verdict["claims"], drawings, strict=True)):
        tr, what, px = rows.nth(i), claim["id"], drawn["perPx"]
        assert tr.get_attribute("data-verdict") == drawn["status"] == claim["verdict"], what
        assert claim["text"] in tr.inner_text()
        if claim["verdict"] == "not derivable":
            assert drawn["ci95"] is None and "not derivable" in drawn["note"], what
            continue
        band, ci95 = drawn["band"], drawn["ci95"]
        if claim["test"] == "a > b":         # drawn in percent: 100 (e^Delta - 1) against 0
            assert _at(drawn["ref"], 0.0, px) and _spans(ci95, [math.expm1(x) * 100 for x in claim["ci95"]], px)
            assert (ci95[0] > drawn["ref"][1]) == (claim["verdict"] == "holds"), what
        if claim["test"] == "a / b within":  # the ratio against [x, y]
            assert _spans(band, claim["within"], px) and _spans(ci95, [math.exp(x) for x in claim["ci95"]], px)
            assert _outside(ci95, band) == (claim["verdict"] == "fails"), what
        if claim["test"] == "a ~ b":         # the 90 % interval against the margin, in percent
            d = claim["margin"]["delta"]
            assert _spans(band, [math.expm1(-d) * 100, math.expm1(d) * 100], px), what
            assert drawn["runs"] == claim["runs"] == 8     # paired: each run's Delta
            assert not _inside(drawn["ci90"], band, px) and not _outside(drawn["ci95"], band), what
        if claim["test"] == "share >=":      # the Clopper-Pearson interval of the share against q
            assert _at(drawn["ref"], claim["q"], px) and _spans(ci95, claim["ci95"], px)
            assert (ci95[0] >= claim["q"]) == (claim["verdict"] == "holds"), what
    page.close()


def test_the_redo_panel_and_the_index_count(browser, served_measured_site, run_page, verdict):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(served_measured_site + run_page, wait_until="networkidle")
    redo = page.locator("#redo")
    assert redo.get_attribute("open") is not None
    text = redo.inner_text()
    plan = verdict["plan"]
    assert "seed\t2026" in text and "runs per arm\t8" in text and "α\t0.05 (90 % intervals" in text
    assert page.locator("#redo .bb-rounds li").count() == 8 and "16 planned, 16 complete, 16 valid" in text
    assert plan["plan"]["order_method"] in text
    assert "2 of 5 reproduced; m·α = 0.25 mismatches expected" in page.locator(".bb-multiplicity").inner_text()
    page.goto(served_measured_site, wait_until="networkidle")
    badge = page.locator(".bb-outcome-counts .bb-badge")
    assert badge.count() == 1 and badge.get_attribute("data-outcome") == "mismatch"
    assert badge.get_attribute("data-count") == "1"
    card = page.locator(".bb-card").inner_text()
    assert "2 of 5 reproduced, m·α = 0.25 mismatches expected, 2 of 5 claims hold" in card
    page.close()
