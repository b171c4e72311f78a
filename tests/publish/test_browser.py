"""The published site in a real browser (Playwright + Debian's chromium): the index loads cleanly
and filters, every figure page draws its plotly figures with data, hovering shows a label, the
provenance panel is there, every internal link resolves, and the site also reads from file://.
Screenshots of the index and one figure page go to build/test-artifacts/publish/."""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from html.parser import HTMLParser

import pytest

from publish.browser import ARTIFACTS_DIR, PageWatch

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def _only_local(urls: list[str], base: str) -> list[str]:
    host = urllib.parse.urlsplit(base).netloc
    return [u for u in urls if not u.startswith(("data:", "blob:")) and urllib.parse.urlsplit(u).netloc != host]


def test_index_loads_without_errors_and_filters(browser, served_site, site):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    watch = PageWatch(page)
    page.goto(served_site, wait_until="networkidle")
    page.wait_for_selector(".pagefind-ui__search-input", timeout=15_000)
    assert watch.errors == [], watch.errors
    assert watch.failed == [], watch.failed
    assert _only_local(watch.urls, served_site) == []
    cards = page.locator(".bb-card")
    assert cards.count() == 2
    assert page.locator(".bb-card img").count() == 2
    assert page.locator(".bb-card .bb-badge").first.inner_text().strip()
    page.select_option("#filter-paper", "wiedner-itc23")
    assert page.locator(".bb-card:visible").count() == 1
    assert "wiedner-itc23-table3" in page.locator(".bb-card:visible").inner_text()
    page.select_option("#filter-paper", "")
    page.select_option("#filter-outcome", "reproduced")
    assert page.locator(".bb-card:visible").count() == 2
    page.fill(".pagefind-ui__search-input", "latency")
    page.wait_for_selector(".pagefind-ui__result", timeout=15_000)
    assert page.locator(".pagefind-ui__result").count() >= 1
    page.fill(".pagefind-ui__search-input", "")
    ARTIFACTS_DIR.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS_DIR / "index.png"), full_page=True)
    assert watch.errors == [] and watch.failed == []
    page.close()


def _hover_label(page, plot) -> bool:
    """Move the mouse over the plot area until plotly shows a hover label."""
    box = plot.locator(".nsewdrag").first.bounding_box()
    for fx in (0.5, 0.3, 0.7, 0.1, 0.9, 0.2, 0.4, 0.6, 0.8, 0.05, 0.95):
        for fy in (0.5, 0.2, 0.8, 0.95, 0.05):
            page.mouse.move(box["x"] + fx * box["width"], box["y"] + fy * box["height"])
            page.wait_for_timeout(60)
            if plot.locator(".hoverlayer .hovertext").count() > 0:
                return True
    return False


def test_every_figure_page_draws_its_plots(browser, served_site, site):
    manifest = json.loads((site / "site.json").read_text())
    for i, run in enumerate(manifest["runs"]):
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        watch = PageWatch(page)
        page.goto(served_site + run["page"], wait_until="networkidle")
        page.wait_for_selector(".js-plotly-plot .main-svg", timeout=20_000)
        plots = page.locator(".js-plotly-plot")
        assert plots.count() == run["plots"], run["page"]
        points = page.evaluate("""() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(
            el => (el._fullData || []).reduce((n, t) => n + (t._length || 0), 0))""")
        assert all(n > 0 for n in points), f"{run['page']}: a figure without data: {points}"
        assert page.locator(".js-plotly-plot .main-svg").count() >= run["plots"]
        provenance = page.locator("#provenance")
        assert provenance.is_visible()
        text = provenance.inner_text()
        assert "guix time-machine" in text and "benchbook reproduce" in text and "verified" in text
        plot = plots.first
        plot.scroll_into_view_if_needed()
        assert _hover_label(page, plot), f"{run['page']}: no hover label over the first figure"
        assert (plot.locator(".hoverlayer .hovertext").first.text_content() or "").strip()
        assert watch.errors == [], (run["page"], watch.errors)
        assert watch.failed == [], (run["page"], watch.failed)
        assert _only_local(watch.urls, served_site) == []
        if i == len(manifest["runs"]) - 1:
            ARTIFACTS_DIR.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ARTIFACTS_DIR / "figure-page.png"), full_page=False)
            plot.screenshot(path=str(ARTIFACTS_DIR / "figure-hover.png"))
        page.close()


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        for key in ("href", "src"):
            if a.get(key) and tag in ("a", "link", "script", "img"):
                self.links.append(a[key])


def test_every_internal_link_resolves(served_site):
    seen: set[str] = set()
    todo = [served_site]
    fragments: list[tuple[str, str]] = []
    ids: dict[str, set[str]] = {}
    while todo:
        url = todo.pop()
        if url in seen:
            continue
        seen.add(url)
        with urllib.request.urlopen(url, timeout=20) as resp:
            assert resp.status == 200, url
            ctype = resp.headers.get("Content-Type", "")
            body = resp.read()
        if not ctype.startswith("text/html"):
            continue
        parser = _Links()
        parser.feed(body.decode("utf-8"))
        ids[url] = parser.ids
        for link in parser.links:
            if link.startswith(("http://", "https://", "//", "mailto:", "data:")):
                continue
            target, _, frag = urllib.parse.urljoin(url, link).partition("#")
            if frag:
                fragments.append((target or url, frag))
            if target and target not in seen:
                todo.append(target)
    assert len(seen) > 20
    for page_url, frag in fragments:
        assert frag in ids.get(page_url, set()), f"{page_url}#{frag}: no element with that id"


def test_site_reads_from_file_url(browser, site):
    manifest = json.loads((site / "site.json").read_text())
    page = browser.new_page()
    watch = PageWatch(page)
    page.goto((site / "index.html").as_uri(), wait_until="load")
    assert page.locator("#search-note").is_visible()
    page.locator(".bb-card a").first.click()
    page.wait_for_selector(".js-plotly-plot .main-svg", timeout=20_000)
    assert page.url.startswith("file://")
    assert watch.errors == [] and watch.failed == [], (watch.errors, watch.failed)
    assert page.locator(".js-plotly-plot").count() == next(
        r["plots"] for r in manifest["runs"] if page.url.endswith(r["page"]))
    page.close()
