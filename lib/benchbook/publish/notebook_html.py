"""An executed notebook as HTML for the published site, converted in memory (the .ipynb on disk,
whose SHA-256 the run record holds, is only read).

nbconvert's HTML exporter drops plotly's ``application/vnd.plotly.v1+json`` outputs (the only form
plotly writes under ipykernel); ``PlotlyHtmlPreprocessor`` renders each as an HTML div with
``plotly.io.to_html(include_plotlyjs=False, full_html=False)`` that the page's one shared
plotly.min.js draws. ``CapTextPreprocessor`` shortens long text outputs. The ``benchbook``
template (templates/benchbook) takes every script and stylesheet from the site's assets/.
"""

from __future__ import annotations

import copy
import functools
import re
from pathlib import Path

import nbformat
import plotly.io as pio
from nbconvert import HTMLExporter
from nbconvert.preprocessors import Preprocessor
from plotly.offline import get_plotlyjs

TEMPLATES_DIR = Path(__file__).with_name("templates")
PLOTLY_MIME = "application/vnd.plotly.v1+json"
MAX_TEXT_LINES = 200
MAX_TEXT_CHARS = 20_000


class PlotlyHtmlPreprocessor(Preprocessor):
    """Give every plotly output a text/html rendering drawn by the page's shared plotly.js."""

    def preprocess_cell(self, cell, resources, index):
        for out in cell.get("outputs", []):
            data = out.get("data")
            if not data or PLOTLY_MIME not in data:
                continue
            fig = data.pop(PLOTLY_MIME)
            data["text/html"] = pio.to_html(fig, include_plotlyjs=False, include_mathjax=False, full_html=False,
                                            validate=False, config={"responsive": True})
            resources.setdefault("bb_plotly_count", 0)
            resources["bb_plotly_count"] += 1
        return cell, resources


def cap_text(text: str, max_lines: int = MAX_TEXT_LINES, max_chars: int = MAX_TEXT_CHARS) -> str:
    """``text`` cut to ``max_lines`` lines and ``max_chars`` characters, with a line saying how much was left out."""
    lines = text.splitlines(keepends=True)
    kept = "".join(lines[:max_lines])
    if len(kept) > max_chars:
        kept = kept[:max_chars]
    if len(kept) == len(text):
        return text
    rest = text[len(kept):]
    n_lines = rest.count("\n") + (0 if rest.endswith("\n") else 1)
    return (kept.rstrip("\n") + f"\n[... {len(rest):,} more characters ({n_lines:,} lines) left out here; the full "
            f"output is in the executed notebook under Downloads]\n")


class CapTextPreprocessor(Preprocessor):
    """Shorten stream and text/plain outputs longer than MAX_TEXT_LINES lines or MAX_TEXT_CHARS characters."""

    def preprocess_cell(self, cell, resources, index):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                text = out.get("text", "")
                text = "".join(text) if isinstance(text, list) else text
                out["text"] = cap_text(text)
            data = out.get("data")
            if data and "text/plain" in data:
                text = data["text/plain"]
                text = "".join(text) if isinstance(text, list) else text
                data["text/plain"] = cap_text(text)
        return cell, resources


@functools.lru_cache(maxsize=1)
def _exporter():
    exporter = HTMLExporter(template_name="benchbook", extra_template_basedirs=[str(TEMPLATES_DIR)],
                            exclude_input_prompt=False, exclude_output_prompt=False)
    exporter.register_preprocessor(PlotlyHtmlPreprocessor(), enabled=True)
    exporter.register_preprocessor(CapTextPreprocessor(), enabled=True)
    return exporter


def notebook_page(notebook_path: Path, bb: dict[str, str]) -> tuple[str, int]:
    """The HTML page of an executed notebook, and how many plotly figures it holds.

    ``bb`` fills the template: title, assets (relative URL of the site's assets/), header, summary
    and panels (HTML fragments placed above and below the notebook).
    """
    nb = nbformat.read(str(notebook_path), as_version=4)
    nb = copy.deepcopy(nb)
    # The site's fragments go in after conversion, so nbconvert's HTML post-pass (BeautifulSoup)
    # parses only the notebook.
    fragments = {k: bb[k] for k in ("header", "summary", "panels")}
    markers = {k: f"<!--bb-fragment:{k}-->" for k in fragments}
    body, resources = _exporter().from_notebook_node(nb, resources={"bb": {**bb, **markers}})
    for key, marker in markers.items():
        if body.count(marker) != 1:
            raise RuntimeError(f"the benchbook notebook template must place {marker} exactly once")
        body = body.replace(marker, str(fragments[key]))
    return body, int(resources.get("bb_plotly_count", 0))


_STYLE_RE = re.compile(r"<style[^>]*>(.*?)</style>", re.S)


def notebook_css() -> str:
    """The stylesheet nbconvert's lab template inlines into every page (JupyterLab's notebook CSS,
    the light theme, pygments), written once into the site's assets/."""
    body, _ = HTMLExporter(template_name="lab").from_notebook_node(nbformat.v4.new_notebook())
    return "\n".join(m.strip() for m in _STYLE_RE.findall(body)) + "\n"


def plotly_js() -> str:
    """plotly.js as the installed plotly ships it (so it matches the figures' JSON)."""
    return get_plotlyjs()

