"""Stemplinger & Bauer (IITM WS 2018/19) Figs. 2 and 3: bro-tcp's cumulative retransmission score from an
interval table with hand-computed values, and (root) a short reproduction whose sender-side capture counts
what the kernel retransmitted and which leaves nothing behind."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pandas as pd
import pytest

from benchbook.commands.reproduce import EXIT_INCONCLUSIVE, EXIT_MISMATCH
from benchbook.testbed.cleanup import leftovers
from conftest import reproduce_cli, require_program, require_root

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT / "notebooks" / "stemplinger-iitm19"))
import bro_metrics  # noqa: E402


def test_cumulative_score_is_logged_only_for_bins_with_packets(tmp_path: Path) -> None:
    bin_ns = 100_000_000
    rows = [  # flow 1, orig: payload and retransmitted bytes per 0.1 s; bin 2 carries no packet
        (1, "orig", 0, 3, 1000, 0, 0), (1, "orig", 1, 3, 1000, 500, 0), (1, "orig", 2, 0, 0, 0, 0),
        (1, "orig", 3, 2, 2000, 0, 0), (1, "resp", 0, 4, 0, 0, 4), (0, "orig", 0, 9, 9000, 9000, 0)]
    df = pd.DataFrame(rows, columns=["flow", "direction", "bin", "packets", "payload_bytes", "retransmitted_bytes",
                                     "advancing_acks"])
    df["start_time_ns"] = 5 * bin_ns + df["bin"] * bin_ns
    df["ack_interarrival_mean_ns"] = [float("nan")] * 4 + [2e6, float("nan")]
    (tmp_path / "tcp").mkdir()
    df.to_parquet(tmp_path / "tcp" / "intervals.parquet")
    s = bro_metrics.bro_series(tmp_path, 1)
    cum = s["orig"]["cumulative_score"]
    assert cum[0] == 0.0 and cum[1] == 0.25 and math.isnan(cum[2]) and cum[3] == 500 / 4000
    assert list(s["orig"]["t_s"]) == [0.0, 0.1, 0.2, 0.3]
    assert s["resp"]["ack_interarrival_ms"][0] == 2.0
    shape = bro_metrics.score_shape(s["orig"])
    assert shape == {"first_retransmission_s": 0.1, "peak_score": 0.25, "peak_s": 0.1, "end_score": 0.125}
    assert bro_metrics.ack_continuity(s, "orig") == (3, 1)   # payload in bins 0, 1, 3; the receiver ACKs in bin 0


@pytest.mark.root
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_fig3_short_reproduction_counts_what_the_kernel_retransmitted(tmp_path: Path) -> None:
    require_root()
    require_program("iperf3")
    require_program("tcpdump")

    r = reproduce_cli(tmp_path, "stemplinger-iitm19-fig3", "-p", "duration_s=3", "-p", "repetitions=1",
                      timeout_s=300)
    assert r.returncode in (EXIT_INCONCLUSIVE, EXIT_MISMATCH), r.stdout[-3000:] + r.stderr[-3000:]
    (run,) = sorted((tmp_path / "stemplinger-iitm19-fig3").iterdir())
    verdict = json.loads((run / "verdict.json").read_text())
    assert verdict["schema"] == "benchbook.verdict/2" and verdict["kind"] == "measured"
    rows = {row["name"]: row for row in verdict["rows"]}
    first = rows["Fig. 3: time without retransmissions before the spike"]
    assert first["status"] == "not comparable" and first["values"] and 0 <= first["estimate"] < 3, first
    (falls,) = verdict["claims"]          # one run: no interval yet, and the claim says how many runs would decide
    assert falls["id"] == "score-falls-after-the-spike" and falls["principal"] and falls["runs"] == 1
    assert falls["values_a"][0] < falls["values_b"][0], falls
    assert falls["verdict"] == "inconclusive" and falls["runs_needed"] >= 6, falls
    assert rows["Fig. 3: retransmission score over the connection, every 0.1 s"]["status"] == "figure redrawn"
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["tcpdump"]["dropped_by_kernel"] == 0
    capture = rows["retransmitted segments in the capture (zeek rule)"]
    assert capture["computed"] > 0, "the FIFO dropped nothing: no retransmission to compare"
    assert abs(capture["computed"] - metrics["kernel_retransmits"]) <= 1, capture
    assert "equal within 1: yes" in capture["note"]
    score = "retransmission score (cumulative) at its "
    peak, end = rows[score + "peak"]["computed"], rows[score + "end of the connection"]["computed"]
    assert 0 < end <= peak < 1
    rep1 = run / "raw" / "cubic" / "rep1"
    assert (rep1 / "tcp" / "intervals.parquet").is_file() and (run / "fig3-score.html").is_file()
    record = json.loads((rep1 / "repetition.json").read_text())
    assert record["status"] == "complete" and record["valid"] and record["metrics"]["token"] == metrics["token"]
    stats = {s["name"]: s for s in record["statistics"]}
    assert stats["retransmissions_zeek"]["value"] == capture["computed"]
    assert stats["flow1.retransmits"]["value"] == metrics["kernel_retransmits"]
    assert stats["end_score"]["value"] == pytest.approx(end) and stats["end_score"]["n"] > 10
    assert falls["values_a"] == pytest.approx([end]) and falls["values_b"] == pytest.approx([peak])
    acked, data_bins = stats["data_bins_acked"]["value"], stats["data_bins"]["value"]
    assert 20 <= data_bins <= 40 and 0.9 * data_bins <= acked <= data_bins   # 3 s of data in 0.1 s bins, all ACKed
    assert 0 < stats["receiver_advancing_acks"]["value"] <= stats["advancing_acks"]["value"]
    assert leftovers({metrics["token"]}) == leftovers(set())
