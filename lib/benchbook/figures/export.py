"""Saving figures: interactive HTML that opens offline, and static PNG/SVG/PDF through kaleido.

HTML files reference a shared `plotly.min.js` written once next to them (plotly's
include_plotlyjs="directory"), so a folder of figures opens in a browser without network and
without repeating 4.6 MB of JavaScript per figure. Copy that file along when moving the HTML
(or use html_plotlyjs="embed" for self-contained files).

Static formats are rendered by kaleido 1.x in a headless Chromium (found through the
BROWSER_PATH environment variable or `chromium` on PATH; Debian's /usr/bin/chromium works, and
kaleido runs it with --no-sandbox, which root needs). Rendering needs no network: MathJax is
turned off and plotly.js comes from the installed plotly package. When a static format cannot
be produced, save_figure says so ("unavailable: <reason>") instead of raising, so a run that
measured something never fails on its pictures.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import plotly.graph_objects as go

from benchbook.figures.style import DEFAULT_HEIGHT, DEFAULT_WIDTH

STATIC_FORMATS = ("png", "svg", "pdf", "jpeg", "webp")
_ALIASES = {"jpg": "jpeg", "htm": "html"}
_BROWSER_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")

# Where `plotly.min.js` lives relative to HTML files written with html_plotlyjs="directory".


def find_browser() -> str | None:
    """The Chromium kaleido would use: $BROWSER_PATH if set (and executable), else one on PATH."""
    env = os.environ.get("BROWSER_PATH")
    if env:
        return env if (os.path.isfile(env) and os.access(env, os.X_OK)) else None
    for name in _BROWSER_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


def static_export_status() -> tuple[bool, str]:
    """(True, browser path) if static export can be attempted here, else (False, reason)."""
    try:
        import kaleido  # noqa: F401,PLC0415 the probe: is kaleido importable here
    except ImportError as exc:  # pragma: no cover - kaleido is in the lock
        return False, f"kaleido not importable ({exc})"
    browser = find_browser()
    if browser is None:
        if os.environ.get("BROWSER_PATH"):
            return False, f"BROWSER_PATH={os.environ['BROWSER_PATH']} is not an executable file"
        return False, "no headless Chromium found (install Debian's chromium or set BROWSER_PATH)"
    return True, browser


_keep_browser = False


def keep_browser_open() -> None:
    """From now on in this process, the first static export starts one headless browser that every
    later export reuses; it is stopped when the process exits (a sweep's shared kernel calls this,
    see benchbook.experiment.jupyter_session)."""
    global _keep_browser
    _keep_browser = True


def _start_kept_browser(timeout_s: float) -> None:
    import kaleido  # noqa: PLC0415 kaleido is heavy; only static export needs it

    kaleido.start_sync_server(timeout=timeout_s, mathjax=False, silence_warnings=True)
    atexit.register(kaleido.stop_sync_server, silence_warnings=True)


@contextlib.contextmanager
def export_session(timeout_s: float = 90.0) -> Iterator[None]:
    """Keep one headless browser running for all save_figure calls inside the block (saves ~3 s
    of browser start-up per figure). Without it each save_figure call starts its own."""
    ok, _ = static_export_status()
    if not ok:
        yield
        return
    import kaleido  # noqa: PLC0415 kaleido is heavy; only static export needs it

    kaleido.start_sync_server(timeout=timeout_s, mathjax=False, silence_warnings=True)
    try:
        yield
    finally:
        kaleido.stop_sync_server(silence_warnings=True)


def save_figure(
    fig: go.Figure,
    out_dir: str | os.PathLike,
    stem: str,
    formats: Sequence[str] = ("html", "png"),
    html_plotlyjs: str = "directory",
    width: int | None = None,
    height: int | None = None,
    scale: float = 2.0,
    timeout_s: float = 90.0,
) -> dict[str, str]:
    """Write `fig` as <out_dir>/<stem>.<format> for each format.

    Returns format -> path written, or format -> "unavailable: <reason>" for a static format
    that could not be rendered (no browser, render error, timeout). Never raises for an export
    failure; raises ValueError for an unknown format name and OSError if out_dir cannot be made.
    html_plotlyjs: "directory" (shared plotly.min.js beside the file; offline), "embed"
        (self-contained file), or "cdn" (small file, needs network).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    fmts: list[str] = []
    for f in formats:
        f = _ALIASES.get(f.lower().lstrip("."), f.lower().lstrip("."))
        if f != "html" and f not in STATIC_FORMATS:
            raise ValueError(f"unknown figure format {f!r}: expected html or one of {STATIC_FORMATS}")
        if f not in fmts:
            fmts.append(f)
    result: dict[str, str] = {}
    if "html" in fmts:
        include = {"directory": "directory", "embed": True, "cdn": "cdn"}.get(html_plotlyjs)
        if include is None:
            raise ValueError(f"html_plotlyjs must be 'directory', 'embed' or 'cdn', not {html_plotlyjs!r}")
        path = out / f"{stem}.html"
        fig.write_html(
            path,
            include_plotlyjs=include,
            include_mathjax=False,
            full_html=True,
            config={"displaylogo": False, "responsive": True},
            div_id=f"bb-{stem}",   # plotly's default is a random uuid: same figure, same bytes
        )
        result["html"] = str(path)
    static = [f for f in fmts if f != "html"]
    if static:
        result.update(_write_static(fig, out, stem, static, width, height, scale, timeout_s))
    return result


def _write_static(
    fig: go.Figure,
    out: Path,
    stem: str,
    fmts: list[str],
    width: int | None,
    height: int | None,
    scale: float,
    timeout_s: float,
) -> dict[str, str]:
    ok, why = static_export_status()
    if not ok:
        return {f: f"unavailable: {why}" for f in fmts}
    import kaleido  # noqa: PLC0415 kaleido is heavy; only static export needs it

    w = width or fig.layout.width or DEFAULT_WIDTH
    h = height or fig.layout.height or DEFAULT_HEIGHT
    result: dict[str, str] = {}
    # Render into a private temporary folder, then move into place: no half-written files.
    tmp = Path(tempfile.mkdtemp(prefix=f".{stem}.", dir=out))
    try:
        specs = [
            {
                "fig": fig,
                "path": str(tmp / f"{stem}.{f}"),
                "opts": {"format": f, "width": int(w), "height": int(h), "scale": float(scale)},
            }
            for f in fmts
        ]
        errors: Sequence[BaseException] = ()
        try:
            if _keep_browser and not kaleido._global_server.is_running():
                _start_kept_browser(timeout_s)
            if kaleido._global_server.is_running():  # an export_session() or a kept browser is open
                errors = kaleido.write_fig_from_object_sync(specs, cancel_on_error=False) or ()
            else:
                errors = kaleido.write_fig_from_object_sync(
                    specs,
                    kopts={"timeout": timeout_s, "mathjax": False},
                    cancel_on_error=False,
                ) or ()
        except Exception as exc:  # browser failed to start, protocol error, timeout ...
            reason = f"{type(exc).__name__}: {exc}".strip().splitlines()[0][:300]
            return {f: f"unavailable: static export failed ({reason})" for f in fmts}
        err_text = "; ".join(f"{type(e).__name__}: {e}".splitlines()[0][:200] for e in errors)
        for spec, f in zip(specs, fmts, strict=True):
            src = Path(spec["path"])
            if src.is_file() and src.stat().st_size > 0:
                dst = out / f"{stem}.{f}"
                os.replace(src, dst)
                result[f] = str(dst)
            else:
                result[f] = f"unavailable: kaleido wrote no {f} file" + (f" ({err_text})" if err_text else "")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return result
