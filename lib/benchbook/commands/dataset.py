"""`benchbook dataset sums DIR` and `benchbook dataset verify DIR|NAME`: a dataset's SHA256SUMS.

    benchbook dataset sums other-paper/data       (re)write DIR/SHA256SUMS over every file in DIR
    benchbook dataset verify containerized-low-latency   check a dataset (a folder, or a name under
                                                  data/published/) against its SHA256SUMS

verify exits 1 naming the first missing, changed or unlisted file.
"""

from __future__ import annotations

from pathlib import Path

import typer

dataset_app = typer.Typer(help="Published datasets: write and verify SHA256SUMS.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    """Add this module's command(s) to the benchbook app."""
    app.add_typer(dataset_app, name="dataset")


@dataset_app.command("sums")
def sums(folder: Path = typer.Argument(..., help="dataset folder")) -> None:
    """Write FOLDER/SHA256SUMS over every file below FOLDER (sha256sum format); FOLDER/SOURCES.md must exist."""
    from benchbook.reproduce.datasets import write_sums

    if not folder.is_dir():
        typer.echo(f"benchbook: {folder}: not a directory", err=True)
        raise typer.Exit(2)
    if not (folder / "SOURCES.md").is_file():
        typer.echo(f"benchbook: {folder / 'SOURCES.md'}: missing; a dataset says where every file came from and "
                   "under which licence before its sums are written", err=True)
        raise typer.Exit(2)
    out = write_sums(folder)
    n = sum(1 for line in out.read_text(encoding="utf-8").splitlines() if line.strip())
    typer.echo(f"wrote {out} ({n} files)")


@dataset_app.command("verify")
def verify(dataset: str = typer.Argument(..., help="dataset folder, or a name under data/published/")) -> None:
    """Check every file of DATASET against its SHA256SUMS."""
    from benchbook.reproduce.datasets import DatasetError, verify_dataset

    try:
        ok = verify_dataset(dataset)
    except DatasetError as exc:
        typer.echo(f"benchbook: {exc}", err=True)
        raise typer.Exit(1) from None
    typer.echo(f"{ok.path}: {ok.n_files} files, {ok.n_bytes} bytes: every SHA-256 matches SHA256SUMS")
