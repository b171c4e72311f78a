"""save_figure: offline HTML, PNG/SVG through kaleido + headless Chromium, honest 'unavailable'."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import kaleido
import numpy as np
import pytest

from benchbook.figures import export_session, find_browser, hdr_percentile_plot, save_figure


def small_fig():
    return hdr_percentile_plot({"a": (np.array([0.0, 50.0, 99.0, 99.9]), np.array([4000, 5000, 8000, 20000]))},
                               title="export test")


def test_html_is_offline(tmp_path: Path) -> None:
    out = save_figure(small_fig(), tmp_path, "hdr", formats=("html",))
    html = Path(out["html"]).read_text()
    assert 'src="plotly.min.js"' in html
    assert "cdn.plot.ly" not in html
    js = tmp_path / "plotly.min.js"
    assert js.is_file() and js.stat().st_size > 1_000_000
    emb = save_figure(small_fig(), tmp_path / "e", "hdr", formats=("html",), html_plotlyjs="embed")
    assert Path(emb["html"]).stat().st_size > 1_000_000
    assert not (tmp_path / "e" / "plotly.min.js").exists()


def test_png_and_svg_export(tmp_path: Path) -> None:
    if find_browser() is None:
        pytest.skip("no headless Chromium (apt-get install chromium, or set BROWSER_PATH)")
    out = save_figure(small_fig(), tmp_path, "hdr", formats=("png", "svg"))
    png = Path(out["png"])
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert png.stat().st_size > 5000
    svg = Path(out["svg"]).read_text()
    assert "<svg" in svg[:500] and "99.9 %" in svg
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hdr.png", "hdr.svg"]  # no temp left


def test_export_session_reuses_one_browser(tmp_path: Path) -> None:
    if find_browser() is None:
        pytest.skip("no headless Chromium (apt-get install chromium, or set BROWSER_PATH)")

    with export_session():
        outs = [save_figure(small_fig(), tmp_path, f"f{i}", formats=("png",)) for i in range(2)]
    for out in outs:
        assert Path(out["png"]).read_bytes()[:4] == b"\x89PNG"

    assert not kaleido._global_server.is_running()  # closed again


def test_unavailable_browser_is_reported_not_raised(tmp_path: Path) -> None:
    # A real subprocess with BROWSER_PATH pointing nowhere: the static format is reported as
    # unavailable with the reason, the HTML is still written.
    code = (
        "import json,sys,numpy as np\n"
        "from benchbook.figures import hdr_percentile_plot, save_figure\n"
        "f=hdr_percentile_plot({'a':(np.array([0.0,50.0]),np.array([1,2]))})\n"
        "print(json.dumps(save_figure(f, sys.argv[1], 'x', formats=('html','png'))))\n"
    )
    env = dict(os.environ, BROWSER_PATH=str(tmp_path / "no-such-chromium"))
    res = subprocess.run([sys.executable, "-c", code, str(tmp_path)], env=env,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr

    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["png"].startswith("unavailable: ")
    assert "no-such-chromium" in out["png"]
    assert Path(out["html"]).is_file()
    assert not (tmp_path / "x.png").exists()


def test_unknown_format_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown figure format"):
        save_figure(small_fig(), tmp_path, "x", formats=("bmp",))
