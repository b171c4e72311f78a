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
    """Match PRE and POST; write latencies.parquet, latency.hlog, hdr.html and summary.json to DIR.

    DIR is replaced as a whole only when the analysis succeeds (a failed run leaves it as it was).
    Exit status: 0 ok, 1 a capture problem or no matched packets, 2 a usage error."""
    _hide_scipy_from_numba()
    problem = _check_options(id_offset, id_width, content_key, max_latency_ms, window, out)
    if problem:
        typer.echo(f"benchbook latency: error: {problem}", err=True)
        raise typer.Exit(2)
    from benchbook.analysis.latency import ContentKey, IdKey
    from benchbook.analysis.latency_report import analyze_captures, format_summary
    from benchbook.capture import CaptureFormatError
    from benchbook.capture.errors import CaptureFileError
    from benchbook.capture.source import check_capture_file

    try:
        key = ContentKey() if content_key else IdKey(id_offset, id_width, "big" if id_big_endian else "little")
    except ValueError as exc:
        typer.echo(f"benchbook latency: error: {exc}", err=True)
        raise typer.Exit(2) from None
    for p in (pre, post):
        try:
            check_capture_file(p)
        except CaptureFileError as exc:
            typer.echo(f"benchbook latency: error: {exc}", err=True)
            raise typer.Exit(2) from None
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # every warning is kept in summary.json and printed below
        try:
            summary = analyze_captures(
                pre, post, out, key, max_latency_ns=round(max_latency_ms * 1e6), window_packets=window,
                html=not no_html,
            )
        except CaptureFormatError as exc:
            typer.echo(f"benchbook latency: error: {exc} ({out} left unchanged)", err=True)
            raise typer.Exit(1) from None
    for w in summary["details"]["warnings"]:
        typer.echo(f"warning: {w}", err=True)
    typer.echo(format_summary(summary))
    typer.echo(f"wrote {out}/: latencies.parquet latency.hlog summary.json" + ("" if no_html else " hdr.html"))
    if summary["matched"] == 0:
        raise typer.Exit(1)


MAX_LATENCY_MS_LIMIT = 1e9  # about 11.6 days: far beyond any DuT, well inside int64 nanoseconds


def _check_options(id_offset: int | None, id_width: int, content_key: bool, max_latency_ms: float, window: int,
                   out: Path) -> str | None:
    """What is wrong with the options (one line), or None."""
    import math

    if (id_offset is None) == (not content_key):
        return "give exactly one of --id-offset N or --content-key"
    if id_offset is not None and id_offset < 0:
        return f"--id-offset {id_offset}: expected a frame offset >= 0"
    if not 1 <= id_width <= 8:
        return f"--id-width {id_width}: expected 1..8 bytes"
    if not math.isfinite(max_latency_ms) or max_latency_ms <= 0 or max_latency_ms > MAX_LATENCY_MS_LIMIT:
        return (f"--max-latency-ms {max_latency_ms}: expected a number > 0 and at most {MAX_LATENCY_MS_LIMIT:.0f} "
                "(ms)")
    if round(max_latency_ms * 1e6) < 2:
        return f"--max-latency-ms {max_latency_ms}: below 2 ns, no latency could be kept"
    if window < 2 or window & (window - 1):
        return f"--window {window}: expected a power of two >= 2 (e.g. {1 << max(1, window.bit_length())})"
    if out.exists() and not out.is_dir():
        return f"-o {out}: exists and is not a directory"
    return None


def _hide_scipy_from_numba() -> None:
    """numba imports SciPy eagerly, for np.linalg/BLAS support (about 0.3 s of this command's
    start-up here); the matching kernels use neither, so the one-shot command process hides SciPy
    before numba loads (numba then just records that BLAS is absent). Only when neither is loaded
    yet: inside a notebook or any process that already uses them, nothing changes."""
    if "scipy" not in sys.modules and "numba" not in sys.modules:
        sys.modules["scipy"] = None  # type: ignore[assignment]  # `import scipy` raises ImportError
