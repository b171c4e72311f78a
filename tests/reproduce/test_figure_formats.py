"""BENCHBOOK_FIGURE_FORMATS: the formats every figure of a reproduction is saved in (reproduce/outputs.py)."""

from __future__ import annotations

import plotly.graph_objects as go
import pytest

from benchbook.reproduce.outputs import DEFAULT_FORMATS, FORMATS_ENV, figure_formats, save_and_record
from benchbook.reproduce.verdict import Verdict


def test_the_variable_narrows_the_formats_and_must_keep_html(monkeypatch):
    monkeypatch.delenv(FORMATS_ENV, raising=False)
    assert figure_formats() == DEFAULT_FORMATS == ("html", "png", "svg")
    monkeypatch.setenv(FORMATS_ENV, " ")
    assert figure_formats() == DEFAULT_FORMATS
    monkeypatch.setenv(FORMATS_ENV, " HTML , png ")
    assert figure_formats() == ("html", "png")
    monkeypatch.setenv(FORMATS_ENV, "png,svg")
    with pytest.raises(ValueError, match=r"BENCHBOOK_FIGURE_FORMATS='png,svg'.*holds html"):
        figure_formats()


def test_save_and_record_writes_the_listed_formats_only(monkeypatch, tmp_path):
    fig = go.Figure(go.Scatter(x=[1, 2, 3], y=[3, 1, 2]))
    verdict = Verdict("f")
    monkeypatch.setenv(FORMATS_ENV, "html")
    exports = save_and_record(fig, tmp_path, "f", verdict)
    assert exports == {"html": str(tmp_path / "f.html")} and verdict.figures == {"f": exports}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.html", "plotly.min.js"]
    # formats given by the caller win over the variable; an unknown one is named
    monkeypatch.setenv(FORMATS_ENV, "html,gif")
    with pytest.raises(ValueError, match="unknown figure format 'gif'"):
        save_and_record(fig, tmp_path, "g", verdict)
    assert save_and_record(fig, tmp_path, "h", verdict, formats=("html",)) == {"html": str(tmp_path / "h.html")}
