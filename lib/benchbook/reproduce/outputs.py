"""Outputs of a reproduction notebook: figures exported through benchbook.figures.save_figure and recorded in
the verdict (what was produced, or why a format could not be). (The name of a dry run's command list is
benchbook.experiment.runner.DRY_RUN_FILE: a CLI process judging runs needs it without plotly.)"""

from __future__ import annotations

import os
from pathlib import Path

from benchbook.figures import save_figure
from benchbook.figures.export import keep_browser_open

DEFAULT_FORMATS = ("html", "png", "svg")
# Fewer formats for every figure of a run: a comma-separated list that holds html (e.g. "html": no static images,
# each of which costs seconds of headless Chromium).
FORMATS_ENV = "BENCHBOOK_FIGURE_FORMATS"


def figure_formats() -> tuple[str, ...]:
    """The formats of a reproduction's figures: DEFAULT_FORMATS, or those $BENCHBOOK_FIGURE_FORMATS lists."""
    value = os.environ.get(FORMATS_ENV, "")
    if not value.strip():
        return DEFAULT_FORMATS
    formats = tuple(f.strip().lower() for f in value.split(",") if f.strip())
    if "html" not in formats:
        raise ValueError(f"{FORMATS_ENV}={value!r}: expected a comma-separated list of figure formats that holds "
                         f"html (the interactive figure every run keeps), e.g. 'html' or 'html,png'")
    return formats


def save_and_record(fig, output_dir: Path | str, stem: str, verdict, formats=None) -> dict[str, str]:
    """Save `fig` as <output_dir>/<stem>.<fmt> for each format (default: figure_formats()); never raises for
    export failures.

    Returns format -> path, or format -> "unavailable: <reason>", and adds it to verdict.figures.
    """
    formats = figure_formats() if formats is None else formats
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    # a notebook's figures share one headless browser: the first static export starts it, the process's
    # exit stops it (a browser per figure costs seconds of start-up each)
    keep_browser_open()
    exports = {k: str(v) for k, v in save_figure(fig, out, stem, formats=tuple(formats)).items()}
    verdict.add_figure(stem, exports)
    return exports
