"""`benchbook latency PRE POST -o DIR`: per-packet latency from a pre-DuT and a post-DuT capture."""

from __future__ import annotations

import sys
from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    """Add this module's command(s) to the benchbook app."""
    app.command("latency")(latency)


def latency(
    pre: Path = typer.Argument(..., help="capture before the device under test (pcap/pcapng, .zst ok)"),
    post: Path = typer.Argument(..., help="capture after the device under test"),
    out: Path = typer.Option(..., "-o", "--out", help="output directory"),
    id_offset: int | None = typer.Option(None, "--id-offset", help="frame offset of the packet id"),
    id_width: int = typer.Option(8, "--id-width", help="id width in bytes (1..8)"),
    id_big_endian: bool = typer.Option(False, "--id-big-endian", help="id is big-endian (default little)"),
    content_key: bool = typer.Option(False, "--content-key", help="MoonSniff/pos key: bytes 12-64, checksums zeroed"),
    max_latency_ms: float = typer.Option(5000.0, "--max-latency-ms", help="latencies must be below this"),
    window: int = typer.Option(1 << 18, "--window", help="matching window in pre packets (power of two)"),
    no_html: bool = typer.Option(False, "--no-html", help="skip hdr.html"),
) -> None:
    """Match PRE and POST; write latencies.parquet, latency.hlog, hdr.html and summary.json to DIR."""
    _hide_scipy_from_numba()
    if (id_offset is None) == (not content_key):
        raise typer.BadParameter("give exactly one of --id-offset N or --content-key")
    from benchbook.analysis.latency import ContentKey, IdKey
    from benchbook.analysis.latency_report import analyze_captures, format_summary
    from benchbook.capture import CaptureFormatError

    try:
        key = ContentKey() if content_key else IdKey(id_offset, id_width, "big" if id_big_endian else "little")
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    for p in (pre, post):
        if not p.is_file():
            typer.echo(f"error: {p}: no such file", err=True)
            raise typer.Exit(2)
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            summary = analyze_captures(
                pre, post, out, key, max_latency_ns=int(max_latency_ms * 1e6), window_packets=window,
                html=not no_html,
            )
        except CaptureFormatError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(1) from None
    for w in caught:
        typer.echo(f"warning: {w.message}", err=True)
    typer.echo(format_summary(summary))
    typer.echo(f"wrote {out}/: latencies.parquet latency.hlog summary.json" + ("" if no_html else " hdr.html"))
    if summary["matched"] == 0:
        raise typer.Exit(1)


def _hide_scipy_from_numba() -> None:
    """numba imports SciPy eagerly, for np.linalg/BLAS support (about 0.3 s of this command's
    start-up here); the matching kernels use neither, so the one-shot command process hides SciPy
    before numba loads (numba then just records that BLAS is absent). Only when neither is loaded
    yet: inside a notebook or any process that already uses them, nothing changes."""
    if "scipy" not in sys.modules and "numba" not in sys.modules:
        sys.modules["scipy"] = None  # type: ignore[assignment]  # `import scipy` raises ImportError
