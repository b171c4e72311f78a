"""Paper-folder entries whose notebook lies outside the paper folder are refused; the parameters
cell tells path parameters from the rest; -p overrides are checked against it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchbook.reproduce.notebook_params import (
    ParameterError,
    is_path_parameter,
    notebook_parameters,
    prepare_parameters,
)
from benchbook.reproduce.registry import RegistryError, load_entry_file

ENTRY = '''id = "demo"
title = "t"
citation = "c"
notebook = "{nb}"
mode = "published-data"
'''


@pytest.mark.parametrize("nb", ["../../elsewhere.ipynb", "/tmp/elsewhere.ipynb", "sub/../../x.ipynb",
                                "benchbook:../x.ipynb", "benchbook:"])
def test_notebook_outside_the_paper_folder_refused(tmp_path, nb):
    folder = tmp_path / "paper"
    folder.mkdir()
    src = folder / "demo.toml"
    src.write_text(ENTRY.format(nb=nb))
    with pytest.raises(RegistryError, match="notebook") as info:
        load_entry_file(src)
    assert str(src) in str(info.value)


@pytest.mark.parametrize("nb", ["x.ipynb", "sub/x.ipynb", "benchbook:evaluator-table.ipynb"])
def test_notebook_inside_the_paper_folder_accepted(tmp_path, nb):
    src = tmp_path / "demo.toml"
    src.write_text(ENTRY.format(nb=nb))
    assert load_entry_file(src).notebook == nb


def notebook(tmp_path: Path, source: str) -> Path:
    nb = {"cells": [{"cell_type": "code", "metadata": {"tags": ["parameters"]}, "source": source,
                     "outputs": [], "execution_count": None}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    p = tmp_path / "nb.ipynb"
    p.write_text(json.dumps(nb))
    return p


SOURCE = '''rate_pps = 1000
title = "README.md"  # the figure title
capture = ""  # pre-DuT capture
inventory = None  # testbed: host inventory TOML
out_dir = "."
sizes = [64, 1500]
'''


def test_path_parameters_are_the_declared_ones(tmp_path):
    kinds = {p.name: is_path_parameter(p) for p in notebook_parameters(notebook(tmp_path, SOURCE))}
    assert kinds == {"rate_pps": False, "title": False, "capture": True, "inventory": True, "out_dir": True,
                     "sizes": False}


def test_prepare_parameters(tmp_path, monkeypatch):
    nb = notebook(tmp_path, SOURCE)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "README.md").write_text("x")
    (tmp_path / "pre.pcap").write_bytes(b"")
    got = prepare_parameters(nb, {"title": "README.md", "capture": "pre.pcap", "sizes": [1, 2]})
    assert got == {"title": "README.md", "capture": str(tmp_path / "pre.pcap"), "sizes": [1, 2]}
    with pytest.raises(ParameterError, match="no parameter named 'rat'.*rate_pps, title, capture"):
        prepare_parameters(nb, {"rat": 1})
    with pytest.raises(ParameterError, match="NaN and infinity"):
        prepare_parameters(nb, {"sizes": [1.0, float("inf")]})
    assert prepare_parameters(nb, {"figure_id": "x"}, injected=["figure_id"]) == {"figure_id": "x"}
