"""`benchbook fairness` on iperf3 reports, Flent data files and intervals.parquet (hand-computed indices)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from benchbook.cli import app

DATA = Path(__file__).resolve().parents[1] / "data" / "tcp"
runner = CliRunner()


def _flent(path: Path, version: int = 4) -> Path:
    """A Flent data file of the tcp_2up shape: a: 2, 2, 4 and b: 2, 0, 0 Mbit/s every 0.2 s (plus the
    aggregate, a ping series and a sub-series that must not count as flows)."""
    meta = {"NAME": "tcp_2up", "STEP_SIZE": 0.2, "SERIES_META": {
        "TCP upload::1": {"UNITS": "Mbits/s"}, "TCP upload::2": {"UNITS": "Mbits/s"},
        "TCP upload sum": {"UNITS": "Mbits/s"}, "Ping (ms) ICMP": {"UNITS": "ms"},
        "TCP upload::1::tcp_cwnd": {}}}
    doc = {"version": version, "metadata": meta, "x_values": [0.0, 0.2, 0.4],
           "results": {"TCP upload::1": [2, 2, 4], "TCP upload::2": [2, 0, 0], "TCP upload sum": [4, 2, 4],
                       "Ping (ms) ICMP": [1.0, None, 3.0], "TCP upload::1::tcp_cwnd": [10, 20, 30]},
           "raw_values": {}}
    with gzip.open(path, "wt") as fh:
        json.dump(doc, fh)
    return path


def test_flent_file_hand_computed(tmp_path: Path) -> None:
    r = runner.invoke(app, ["fairness", "--json", str(_flent(tmp_path / "run.flent.gz"))])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert [f["flow"] for f in out["flows"]] == ["TCP upload::1", "TCP upload::2"]
    assert out["jain_of_means"] == pytest.approx(100 / 136, abs=1e-12)
    assert out["jain_mean_of_intervals"] == pytest.approx(2 / 3, abs=1e-12)
    assert out["jain_min_interval"] == 0.5
    assert [iv["start_ns"] for iv in out["intervals"]] == [0, 200_000_000, 400_000_000]
    assert out["intervals"][0]["bps"] == [2e6, 2e6]


def test_older_flent_format_is_read_and_left_out_series_named(tmp_path: Path) -> None:
    """Data-format version 3 (Flent 0.13-1.1) reads as version 4 does (issue 22: it was refused); every series
    not counted as a flow is named with the reason, in JSON and in the text."""
    v4 = json.loads(runner.invoke(app, ["fairness", "--json", str(_flent(tmp_path / "new.flent.gz"))]).output)
    r = runner.invoke(app, ["fairness", "--json", str(_flent(tmp_path / "old.flent.gz", version=3))])
    assert r.exit_code == 0, r.output
    v3 = json.loads(r.output)
    assert v3["jain_of_means"] == v4["jain_of_means"] and v3["flows"] == v4["flows"]
    assert {x["flow"]: x["reason"].split(" ")[0] for x in v3["left_out"]} == {
        "TCP upload sum": "a", "Ping (ms) ICMP": "unit", "TCP upload::1::tcp_cwnd": "a"}
    text = runner.invoke(app, ["fairness", str(tmp_path / "old.flent.gz")]).output
    assert "left out (3, not counted as competing flows):" in text
    assert "  TCP upload sum: a Flent aggregate of other series (sum, avg, fairness), not a flow" in text


def test_iperf3_report_table_and_json() -> None:
    f = DATA / "iperf3-cubic-2streams.json"
    r = runner.invoke(app, ["fairness", str(f)])
    assert r.exit_code == 0, r.output
    assert "cubic#5" in r.output and "mean of per-interval Jain's indices" in r.output
    out = json.loads(runner.invoke(app, ["fairness", "--json", str(f)]).output)
    # 1 s in 0.3 s bins: 3 complete bins (the last 0.1 s is a partial bin and left out)
    assert len(out["intervals"]) == 3 and out["intervals_counted"] == 3
    # first bin: 830996480 B sent evenly over [0, 0.30002) and 823132160 B over [0, 0.300024)
    a, b = 830996480 * 8 / 0.30002, 823132160 * 8 / 0.300024
    assert out["intervals"][0]["bps"] == pytest.approx([a, b], rel=1e-12)
    assert out["intervals"][0]["jain"] == pytest.approx((a + b) ** 2 / (2 * (a * a + b * b)), rel=1e-12)


def test_two_reports_are_aligned_by_interval(tmp_path: Path) -> None:
    doc = json.loads((DATA / "iperf3-cubic-2streams.json").read_text())
    doc["end"]["sender_tcp_congestion"] = "bbr"
    for iv in doc["intervals"]:
        iv["streams"] = iv["streams"][:1]
        iv["streams"][0]["bytes"] //= 4
        iv["streams"][0]["bits_per_second"] /= 4
    other = tmp_path / "bbr.json"
    other.write_text(json.dumps(doc))
    out = json.loads(runner.invoke(app, ["fairness", "--json", str(DATA / "iperf3-cubic-2streams.json"),
                                         str(other)]).output)
    assert [f["flow"] for f in out["flows"]] == ["cubic#5", "cubic#7", "bbr#5"]
    x = out["intervals"][1]["bps"]
    assert out["intervals"][1]["jain"] == pytest.approx(sum(x) ** 2 / (3 * sum(v * v for v in x)), rel=1e-12)


def test_intervals_parquet_bulk_flows_both_directions(tmp_path: Path) -> None:
    rows = []
    for k, (a, b) in enumerate([(3e6, 1e6), (2e6, 2e6)]):
        t = 1_000_000_000 + k * 100_000_000
        rows += [(0, "orig", t, a - 1e5), (0, "resp", t, 1e5), (1, "orig", t, b), (2, "orig", t, 10.0)]
    pd.DataFrame(rows, columns=["flow", "direction", "start_time_ns", "goodput_bps"]).to_parquet(
        tmp_path / "intervals.parquet")
    (tmp_path / "summary.json").write_text(json.dumps({"bin_ms": 100}))
    out = json.loads(runner.invoke(app, ["fairness", "--json", str(tmp_path / "intervals.parquet")]).output)
    assert [f["flow"] for f in out["flows"]] == ["flow 0", "flow 1"]     # flow 2 carries < 1 %: not a competitor
    share = 100 * 20 / (3e6 + 1e6 + 2e6 + 2e6 + 20)
    assert out["left_out"] == [{"flow": "flow 2", "reason": f"{share:.3g} % of all goodput_bps (summed over "
                                "intervals), below the 1 % bulk share"}]
    text = runner.invoke(app, ["fairness", str(tmp_path / "intervals.parquet")]).output
    assert text.splitlines()[0].startswith("2 flows") and f"  flow 2: {share:.3g} % of all goodput_bps" in text
    assert out["intervals"][0]["bps"] == [3e6, 1e6]
    assert out["jain_mean_of_intervals"] == pytest.approx((16 / 20 + 1.0) / 2, abs=1e-12)
    assert out["jain_of_means"] == pytest.approx(16 / 17, abs=1e-12)   # means 2.5 and 1.5 Mbit/s


def test_bad_input_names_the_file(tmp_path: Path) -> None:
    p = tmp_path / "notes.txt"
    p.write_text("hello")
    r = runner.invoke(app, ["fairness", str(p)])
    assert r.exit_code == 1 and "notes.txt: neither Parquet, gzip nor JSON" in r.output
    r = runner.invoke(app, ["fairness", str(DATA / "iperf3-refused.json")])
    assert r.exit_code == 1 and "Connection refused" in r.output
    r = runner.invoke(app, ["fairness", str(tmp_path / "missing.json")])
    assert r.exit_code == 1 and "missing.json" in r.output


def test_benchbook_tcp_intervals_agree_with_its_summary(tmp_path: Path, shared_datasets: Path) -> None:
    cap = shared_datasets / "tcpdump-tcp-tests" / "mptcp-v0.pcap"
    r = runner.invoke(app, ["tcp", str(cap), "-o", str(tmp_path / "out")])
    assert r.exit_code == 0, r.output
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    out = json.loads(runner.invoke(app, ["fairness", "--json", str(tmp_path / "out" / "intervals.parquet")]).output)
    assert len(out["flows"]) == 2
    assert out["interval_ns"] == int(summary["bin_ms"] * 1e6)
    assert out["jain_of_means"] == pytest.approx(summary["jain_of_means"], abs=1e-12)
    assert out["jain_mean_of_intervals"] == pytest.approx(summary["jain_mean_of_intervals"], abs=1e-12)
