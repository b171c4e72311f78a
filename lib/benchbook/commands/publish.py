"""`benchbook publish [ID|RUN ...|--all] -o SITE [--raw copy|link|none]`: a static site of runs.

    benchbook publish --all -o SITE                 every finished run under the runs directory
    benchbook publish FIGURE_ID -o SITE             every run of that figure (history included)
    benchbook publish RUN_DIR ... -o SITE           chosen runs (directory, <experiment>/<run-id>, run id)
    --since 2026-11-22T16:00:00Z                    only runs started at or after that time
    --raw copy|link|none                            raw data (raw/, captures): copied, symlinked, or
                                                    left out (default; their SHA-256 are still listed)

Every recorded output is re-hashed first; a changed or missing file is an error naming it (so is
a changed input, unless --allow-changed-inputs). The site is written to a temporary folder and
renamed into place; serve it with `benchbook serve SITE` (search needs http) or open
SITE/index.html.
"""

from __future__ import annotations

from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    """Add `benchbook publish` to the app."""

    @app.command("publish")
    def publish(
        refs: list[str] = typer.Argument(None, help="figure ids / experiments, run directories or run ids"),
        out: Path = typer.Option(..., "-o", "--output", help="site folder to write (replaced if it is a site)"),
        all_: bool = typer.Option(False, "--all", help="every finished run under the runs directory"),
        raw: str = typer.Option("none", "--raw", help="raw data: copy | link | none"),
        runs_dir: Path | None = typer.Option(None, "--runs-dir", help="where run directories are (default "
                                             "data/runs or BENCHBOOK_RUNS)"),
        since: str | None = typer.Option(None, "--since", help="only runs started at or after this ISO time"),
        papers: list[Path] = typer.Option([], "--papers", help="add a paper folder for titles and citations"),
        allow_changed_inputs: bool = typer.Option(False, "--allow-changed-inputs",
                                                  help="publish runs whose inputs changed, marked as such"),
        no_search: bool = typer.Option(False, "--no-search", help="do not build the pagefind search index"),
    ) -> None:
        """Publish executed notebooks with verdicts, provenance, downloads and history as a static site."""
        from benchbook.publish.site import build_site

        rep = build_site(out, refs=refs or [], all_runs=all_, runs_dir=runs_dir, raw=raw, papers=papers,
                         since=since, allow_changed_inputs=allow_changed_inputs, search=not no_search)
        for note in rep.notes:
            typer.echo(f"note: {note}")
        typer.echo(f"site: {rep.n_runs} runs of {rep.n_figures} figures, {rep.n_plots} interactive plots, "
                   f"{rep.bytes / 1e6:.1f} MB, built in {rep.seconds:.1f} s; search "
                   f"{'indexed' if rep.search else 'absent'}")
        typer.echo(f"site: {rep.site / 'index.html'}  (or: benchbook serve {rep.site})")
