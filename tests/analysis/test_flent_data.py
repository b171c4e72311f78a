"""Flent data files of data-format versions 1 to 4 (issue 22), read and upgraded as Flent's loader does, and
their flows' fairness. Files: written here by netperf-wrapper 0.9.1 and Flent 0.12.4, 1.1.1, 2.3.0
(tests/data/flent/make.sh) and the ten real runs Flent ships in its sdist (fetched with a pinned SHA-256,
tests/data/flent/fetch_sdist.py). Reference: what Flent 2.3.0's own loader made of every file
(tests/data/flent/flent-2.3.0-loaded.json, written by flent_loaded.py) and Flent's own per-step
"TCP upload fairness" series."""

from __future__ import annotations

import gzip
import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from benchbook.analysis.fairness import flent_series, per_interval_jain, summarize
from benchbook.analysis.flent_data import FlentFormatError, load_flent
from benchbook.cli import app

DATA = Path(__file__).resolve().parents[1] / "data" / "flent"
REFERENCE = json.loads((DATA / "flent-2.3.0-loaded.json").read_text())
assert REFERENCE["flent"] == "2.3.0"
OURS = {"netperf-wrapper-0.9.1-udp_flood.json.gz": 1, "flent-0.12.4-udp_flood.flent.gz": 2,
        "flent-1.1.1-ping.flent.gz": 3, "flent-2.3.0-udp_flood.flent.gz": 4}
SDIST = sorted(n for n in REFERENCE["files"] if n.startswith("test-"))
runner = CliRunner()


@pytest.fixture(scope="module")
def sdist_dir() -> Path:
    spec = importlib.util.spec_from_file_location("fetch_sdist", DATA / "fetch_sdist.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    why = mod.fetch()
    if why:
        pytest.skip(f"Flent's sdist data files not available: {why}")
    return mod.DEFAULT_DEST


def _path(name: str, sdist_dir: Path | None) -> Path:
    return DATA / name if name in OURS else sdist_dir / name  # type: ignore[operator]


def _stats(values):
    vals = [v for v in values if v is not None]
    return {"n": len(vals), "sum": math.fsum(vals), "first": vals[0] if vals else None}


def _agree_with_flent(name: str, path: Path) -> None:
    ref = REFERENCE["files"][name]
    data = load_flent(path)
    assert data.version == ref["written_version"]
    meta = data.metadata
    assert meta.get("FLENT_VERSION") == ref["FLENT_VERSION"]
    assert meta.get("FAKE_RAW_VALUES", False) == ref["FAKE_RAW_VALUES"]
    assert meta.get("TOTAL_LENGTH") == ref["TOTAL_LENGTH"]
    assert len(data.x_values) == ref["x_values"]
    assert set(data.results) == set(ref["series"])
    for series, want in ref["series"].items():
        assert (meta.get("SERIES_META", {}).get(series) or {}).get("UNITS") == want["units"], series
        assert _stats(data.results[series]) == want["results"], series
        raw = [r.get("val") for r in data.raw_values.get(series, []) if isinstance(r.get("val"), (int, float))]
        got = _stats(raw)
        assert (got["n"], got["first"]) == (want["raw"]["n"], want["raw"]["first"]), series
        assert got["sum"] == pytest.approx(want["raw"]["sum"], rel=1e-12), series


@pytest.mark.parametrize("name", sorted(OURS))
def test_files_written_here_load_as_flent_loads_them(name):
    _agree_with_flent(name, DATA / name)
    assert load_flent(DATA / name).version == OURS[name]


@pytest.mark.parametrize("name", SDIST)
def test_flent_sdist_files_load_as_flent_loads_them(name, sdist_dir):
    _agree_with_flent(name, sdist_dir / name)


def test_every_version_is_in_the_corpus(sdist_dir):
    versions = {load_flent(_path(n, sdist_dir)).version for n in list(OURS) + SDIST}
    assert versions == {1, 2, 3, 4}


def test_version_1_upgrade():
    data = load_flent(DATA / "netperf-wrapper-0.9.1-udp_flood.json.gz")
    assert "NETPERF_WRAPPER_VERSION" not in data.metadata and data.metadata["FLENT_VERSION"] == "0.9.1"
    # no raw values stored: made from the results at T0 + x, as Flent does
    with gzip.open(DATA / "netperf-wrapper-0.9.1-udp_flood.json.gz", "rt") as fh:
        written = json.load(fh)
    assert "raw_values" not in written and "version" not in written
    raw = data.raw_values["UDP upload"]
    assert [r["val"] for r in raw] == written["results"]["UDP upload"]
    assert raw[1]["t"] - raw[0]["t"] == pytest.approx(written["x_values"][1] - written["x_values"][0])
    assert data.units_of("UDP upload") == ("bits/s", True) and data.units_of("Ping (ms) ICMP") == (None, False)


def test_bits_per_second_relabelled_as_flent_does_results_kept_in_bits(tmp_path):
    """Flent's upgrade of versions < 4 turns UNITS bits/s with a MEAN_VALUE into Mbits/s and divides MEAN_VALUE,
    leaving the results in bit/s. benchbook applies the same upgrade to the metadata but scales the results by
    the unit they were written in (documented difference: Flent would read them as Mbit/s)."""
    with gzip.open(DATA / "flent-0.12.4-udp_flood.flent.gz", "rt") as fh:
        doc = json.load(fh)
    udp = [v for v in doc["results"]["UDP upload"] if v is not None]
    doc["metadata"]["SERIES_META"]["UDP upload"]["MEAN_VALUE"] = sum(udp) / len(udp)  # as Flent 1.1's iperf runner
    path = tmp_path / "with-mean.flent.gz"
    with gzip.open(path, "wt") as fh:
        json.dump(doc, fh)
    data = load_flent(path)
    sm = data.metadata["SERIES_META"]["UDP upload"]
    assert sm["UNITS"] == "Mbits/s" and sm["MEAN_VALUE"] == pytest.approx(sum(udp) / len(udp) / 1e6)
    assert data.results["UDP upload"] == doc["results"]["UDP upload"]     # Flent changes no results
    assert data.units_of("UDP upload") == ("bits/s", False)                # the deviation
    s = flent_series(path)
    assert np.nanmax(s.bps) == max(udp)                                   # about 20 Mbit/s, not 2e13
    assert max(udp) == pytest.approx(20e6, rel=0.05)


def test_too_new_and_not_flent(tmp_path):
    p = tmp_path / "v5.flent.gz"
    with gzip.open(p, "wt") as fh:
        json.dump({"version": 5, "metadata": {}, "x_values": [], "results": {}}, fh)
    with pytest.raises(FlentFormatError, match="v5.flent.gz: Flent data-format version 5 is newer"):
        load_flent(p)
    p = tmp_path / "x.flent.gz"
    p.write_bytes(b"\x1f\x8bnot gzip")
    with pytest.raises(FlentFormatError, match="x.flent.gz: not a Flent data file"):
        load_flent(p)


def test_rtt_fair_version_2_per_step_index_is_flents(sdist_dir):
    """Flent's own FairnessRunner series ('TCP upload fairness', Jain's index of the four flows at every step)
    against benchbook's per-interval index: equal wherever all four flows have a value; where one has none
    Flent takes the index of the others and benchbook counts no index (documented difference)."""
    path = sdist_dir / "test-rtt-fair.flent.gz"
    s = flent_series(path)
    assert s.flows == [f"TCP upload BE{i} testserv-0{i}" for i in range(1, 5)] and s.meta["version"] == 2
    left = {x["flow"]: x["reason"] for x in s.left_out}
    assert "aggregate" in left["TCP upload fairness"] and "aggregate" in left["TCP upload sum"]
    assert left["Ping (ms) ICMP1 testserv-01"].startswith("unit 'ms'")
    flent = np.array([math.nan if v is None else v for v in load_flent(path).results["TCP upload fairness"]])
    ours = per_interval_jain(s)
    both = np.isfinite(ours)
    assert both.sum() > 2900
    assert np.abs(ours[both] - flent[both]).max() < 1e-12
    partial = ~both & np.isfinite(flent) & np.isfinite(s.bps).any(axis=1)
    assert partial.sum() == 10  # steps with some but not all flows: Flent's index of fewer flows, benchbook none


@pytest.mark.parametrize("name", ["test-tcp_nup.flent.gz", "test-rrul.flent.gz", "test-rrul_be-socket_stats.flent.gz",
                                  "test-rtt-fair.flent.gz"])
def test_jain_of_means_from_flents_loaded_results(name, sdist_dir):
    """Jain's index of per-flow means of the results as Flent's loader gives them (sum/n per flow)."""
    out = summarize(flent_series(sdist_dir / name))
    ref = REFERENCE["files"][name]["series"]
    means = [ref[f["flow"]]["results"]["sum"] / ref[f["flow"]]["results"]["n"] for f in out["flows"]]
    assert out["jain_of_means"] == pytest.approx(sum(means) ** 2 / (len(means) * sum(m * m for m in means)),
                                                 abs=1e-12)
    assert [f["mean_bps"] for f in out["flows"]] == pytest.approx([m * 1e6 for m in means], rel=1e-12)


@pytest.mark.parametrize("name", sorted(OURS))
def test_fairness_command_reads_every_version(name):
    r = runner.invoke(app, ["fairness", "--json", str(DATA / name)])
    if name == "flent-1.1.1-ping.flent.gz":
        assert r.exit_code == 1 and "no per-flow throughput series" in r.output and "Ping (ms) ICMP: unit 'ms'" in \
            r.output
        return
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert [f["flow"] for f in out["flows"]] == ["UDP upload"]
    assert out["left_out"][0]["flow"] == "Ping (ms) ICMP"
    assert 18e6 < out["flows"][0]["mean_bps"] < 20.5e6  # the 20 Mbit/s bottleneck, in every version


@pytest.mark.parametrize("change", [
    lambda d: d["metadata"]["SERIES_META"]["UDP upload"].update(UNITS=["bits/s", "Mbits/s"]),  # a computed series
    lambda d: d.update(x_values=["a"] * len(d["x_values"])),
    lambda d: d.update(x_values=[float("inf")] * len(d["x_values"])),
    lambda d: d["metadata"].update(STEP_SIZE="fast"),
    lambda d: d["results"].update({"UDP upload": "none"}),
    lambda d: d.update(results=[]),
    lambda d: d.pop("metadata"),
])
def test_odd_flent_documents_end_in_an_error_naming_the_file(change, tmp_path):
    with gzip.open(DATA / "flent-0.12.4-udp_flood.flent.gz", "rt") as fh:
        doc = json.load(fh)
    change(doc)
    p = tmp_path / "odd.flent.gz"
    with gzip.open(p, "wt") as fh:
        json.dump(doc, fh)
    r = runner.invoke(app, ["fairness", str(p)])
    assert r.exit_code == 1 and r.exception is None or isinstance(r.exception, SystemExit), r.exception
    assert f"benchbook fairness: error: {p}" in r.output
