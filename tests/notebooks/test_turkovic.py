"""Turković Table 5.1 entry: the registry holds the printed numbers; a short reproduction as root runs the
dumbbell, shows the published and measured values side by side, and leaves nothing behind."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from benchbook.commands.reproduce import EXIT_MISMATCH, EXIT_PARTIAL, EXIT_REPRODUCED
from benchbook.reproduce.registry import load_entry
from benchbook.testbed.capabilities import probe_netem
from benchbook.testbed.cleanup import leftovers
from conftest import reproduce_cli, require_program, require_root

ENTRY = "turkovic-diss-table5-1"
CLAIM = ["Cubic vs BBR: Cubic average throughput", "Cubic vs BBR: BBR average throughput",
         "Cubic vs BBR: average Jain index"]


def test_registry_holds_the_printed_numbers() -> None:
    entry = load_entry(ENTRY)
    values = {p.name: p.value for p in entry.published}
    assert [values[n] for n in CLAIM] == [85.05, 7.89, 0.59]
    assert values["Cubic vs Cubic: average Jain index"] == 0.95
    assert values["BBR vs BBR: average Jain index"] == 0.86
    assert all(p.tolerance_abs is not None and p.note for p in entry.published if p.name in CLAIM)
    assert list(entry.claim_rows) == CLAIM


def test_dry_run_lists_the_commands_and_measures_nothing(tmp_path: Path) -> None:
    r = reproduce_cli(tmp_path, ENTRY, "--dry-run")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "iperf3 -c 198.19.0.1 -p 5202 -t 30 -i 0.3 -C cubic -J" in r.stdout
    assert "pfifo limit 1000" in r.stdout and "htb rate 100000000bit" in r.stdout


@pytest.mark.root
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_short_reproduction_shows_published_beside_measured_and_leaves_nothing(tmp_path: Path) -> None:
    require_root()
    require_program("iperf3")

    allowed = Path("/proc/sys/net/ipv4/tcp_allowed_congestion_control").read_text()
    r = reproduce_cli(tmp_path, ENTRY, "-p", "duration_s=5", "-p", "repetitions=1")
    assert r.returncode in (EXIT_REPRODUCED, EXIT_MISMATCH, EXIT_PARTIAL), r.stdout[-3000:] + r.stderr[-3000:]
    (run,) = sorted((tmp_path / ENTRY).iterdir())
    verdict = json.loads((run / "verdict.json").read_text())
    rows = {row["name"]: row for row in verdict["rows"]}
    for name in CLAIM:
        assert rows[name]["published"] is not None and rows[name]["computed"] is not None, rows[name]
        assert rows[name]["status"] in ("match", "mismatch") and rows[name]["tolerance"]
    assert rows["Cubic vs BBR: Cubic average throughput"]["computed"] > rows["Cubic vs BBR: BBR average throughput"][
        "computed"] > 0
    vegas = [row for row in verdict["rows"] if "Vegas" in row["name"]]
    if "vegas" not in Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split():
        assert vegas and all(row["status"] == "not derivable" and "tcp_vegas" in row["note"] for row in vegas)
        assert verdict["outcome"] in ("partial", "mismatch")
    metrics = json.loads((run / "metrics.json").read_text())
    tokens = {m["token"] for m in metrics["runs"]}
    assert tokens and None not in tokens
    assert leftovers(tokens) == leftovers(set())
    assert Path("/proc/sys/net/ipv4/tcp_allowed_congestion_control").read_text() == allowed
    assert metrics["link_emulation"]["congestion_control"]["allowed_before"] == allowed.strip()


@pytest.mark.root
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_figure_entry_draws_the_mixed_pair_and_marks_vegas_not_derivable(tmp_path: Path) -> None:
    require_root()
    require_program("iperf3")
    r = reproduce_cli(tmp_path, "turkovic-diss-fig5-5", "-p", "duration_s=3", timeout_s=600)
    assert r.returncode in (EXIT_REPRODUCED, EXIT_PARTIAL), r.stdout[-3000:] + r.stderr[-3000:]
    (run,) = sorted((tmp_path / "turkovic-diss-fig5-5").iterdir())
    verdict = json.loads((run / "verdict.json").read_text())
    rows = {row["name"]: row for row in verdict["rows"]}
    assert rows["Cubic vs BBR over time"]["status"] == "figure redrawn"
    assert {"cubic-bbr-throughput", "cubic-bbr-jain"} <= set(verdict["figures"])
    assert (run / "cubic-bbr-jain.html").is_file()
    if "vegas" not in Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split():
        assert rows["Cubic vs Vegas over time"]["status"] == "not derivable"


def test_table5_2_registry_and_dry_run_use_the_delay_line_where_netem_is_missing(tmp_path: Path) -> None:
    entry = load_entry("turkovic-diss-table5-2")
    values = {p.name: p.value for p in entry.published}
    assert values["Cubic(0ms) vs Cubic(200ms): Cubic(0ms) average throughput"] == 67.88
    assert values["BBR(0ms) vs BBR(200ms): BBR(200ms) average throughput"] == 82.1
    r = reproduce_cli(tmp_path, "turkovic-diss-table5-2", "--dry-run", timeout_s=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]

    if probe_netem().ok:
        assert "netem delay 200ms" in r.stdout
    elif os.geteuid() == 0:
        assert "bb-delayline bb-000000-d2a bb-000000-d2b 200000 0 100000" in r.stdout


def test_table5_3_and_fig6_1_registry_hold_the_printed_numbers() -> None:
    t53 = {p.name: p.value for p in load_entry("turkovic-diss-table5-3").published}
    cubic = "Cubic(50ms) vs Cubic(100ms) vs Cubic(150ms) vs Cubic(200ms)"
    bbr = "BBR(50ms) vs BBR(100ms) vs BBR(150ms) vs BBR(200ms)"
    assert t53[f"{cubic}: Cubic(50ms) average throughput"] == 49.59
    assert t53[f"{cubic}: average Jain index"] == 0.69
    assert t53[f"{bbr}: BBR(200ms) average throughput"] == 44.7 and t53[f"{bbr}: average Jain index"] == 0.63
    a = {p.name: p.value for p in load_entry("turkovic-diss-fig6-1a").published}
    assert (a["Cubic vs New Reno: Jain index"], a["Cubic vs BBR: Jain index"], a["BBR vs Vegas: Jain index"]) == (
        0.97, 0.58, 0.65)
    b = load_entry("turkovic-diss-fig6-1b")
    values = {p.name: p.value for p in b.published}
    assert len(values) == 14 * 4
    assert (values["+0 ms, BBR: Jain index"], values["+260 ms, Cubic: Jain index"]) == (0.94, 0.69)
    assert all(p.tolerance_abs and (p.note or "Vegas" in p.name) for p in b.published)


@pytest.mark.root
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_fig6_1b_short_run_compares_the_runnable_cells_and_names_what_is_not_derivable(tmp_path: Path) -> None:
    require_root()
    require_program("iperf3")

    r = reproduce_cli(tmp_path, "turkovic-diss-fig6-1b", "-p", "duration_s=3", "-p", "rtt_deltas_ms=100")
    assert r.returncode in (EXIT_MISMATCH, EXIT_PARTIAL), r.stdout[-3000:] + r.stderr[-3000:]
    (run,) = sorted((tmp_path / "turkovic-diss-fig6-1b").iterdir())
    verdict = json.loads((run / "verdict.json").read_text())
    rows = {row["name"]: row for row in verdict["rows"]}
    for cca in ("Cubic", "New Reno", "BBR"):
        row = rows[f"+100 ms, {cca}: Jain index"]
        assert row["status"] in ("match", "mismatch") and 0.5 <= row["computed"] <= 1.0, row
        assert rows[f"+100 ms, {cca}: throughput ratio short-RTT / long-RTT flow"]["computed"] > 0
        assert rows[f"+200 ms, {cca}: Jain index"]["status"] == "not derivable"
        assert "rtt_deltas_ms" in rows[f"+200 ms, {cca}: Jain index"]["note"]
    if "vegas" not in Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split():
        assert rows["+100 ms, Vegas: Jain index"]["status"] == "not derivable"
        assert "tcp_vegas" in rows["+100 ms, Vegas: Jain index"]["note"]
    assert "fig6-1b" in verdict["figures"] and (run / "fig6-1b.html").is_file()
    metrics = json.loads((run / "metrics.json").read_text())
    delays = metrics["link_emulation"]["delay"]
    assert delays["per_flow_ms"] == {"1": 100.0, "2": 200.0}
    if delays["mode"] == "delay-line":
        assert delays["delay_lines"]["2"]["configured_delay_ms"] == 200.0
        assert delays["delay_lines"]["2"]["calibration_lateness"]
    tokens = {m["token"] for m in metrics["runs"]}
    assert len(tokens) == 3 and None not in tokens
    assert leftovers(tokens) == leftovers(set())
