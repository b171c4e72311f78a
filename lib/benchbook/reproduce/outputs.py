"""Outputs of a reproduction notebook: figures exported through benchbook.figures.save_figure and recorded in
the verdict (what was produced, or why a format could not be); the name of a dry run's command list."""

from __future__ import annotations

from pathlib import Path

from benchbook.figures import save_figure

DEFAULT_FORMATS = ("html", "png", "svg")
# What a notebook run with dry_run=True writes into its output directory instead of measuring: every command
# each host would run.
DRY_RUN_FILE = "dry-run.txt"


def save_and_record(fig, output_dir: Path | str, stem: str, verdict, formats=DEFAULT_FORMATS) -> dict[str, str]:
    """Save `fig` as <output_dir>/<stem>.<fmt> for each format; never raises for export failures.

    Returns format -> path, or format -> "unavailable: <reason>", and adds it to verdict.figures.
    """
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    exports = {k: str(v) for k, v in save_figure(fig, out, stem, formats=tuple(formats)).items()}
    verdict.add_figure(stem, exports)
    return exports
