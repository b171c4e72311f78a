"""`benchbook synth pair` then `benchbook latency` from the shell: the latency command finds the
generator's truth (a step of the README's tour)."""

from __future__ import annotations

import json
import subprocess
import sys

BENCHBOOK = [sys.executable, "-m", "benchbook.cli"]


def test_synth_pair_then_latency_finds_the_truth(tmp_path):
    out = tmp_path / "pair"
    made = subprocess.run([*BENCHBOOK, "synth", "pair", "-o", str(out), "--packets", "20000", "--loss", "0.01",
                           "--duplicate", "0.002", "--reorder", "0.001", "--seed", "3"],
                          capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stderr
    truth = json.loads((out / "truth.json").read_text())
    assert truth["counts"]["pre"] == 20000
    assert truth["counts"]["lost"] > 0 and truth["counts"]["duplicates"] > 0
    assert not list(out.glob(".*.part"))
    ran = subprocess.run([*BENCHBOOK, "latency", str(out / "pre.pcap"), str(out / "post.pcap"), "-o",
                          str(out / "latency"), "--id-offset", str(truth["id_offset"]), "--no-html"],
                         capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr
    summary = json.loads((out / "latency" / "summary.json").read_text())
    for key, value in truth["counts"].items():
        assert summary[key] == value, key
    assert summary["min_ns"] >= truth["latency_model"]["base_ns"]


def test_synth_pair_refuses_a_file_as_output(tmp_path):
    target = tmp_path / "file"
    target.write_text("x")
    ran = subprocess.run([*BENCHBOOK, "synth", "pair", "-o", str(target)], capture_output=True, text=True,
                         timeout=120)
    assert ran.returncode == 2
    assert f"{target}: exists and is not a directory" in ran.stderr
    assert target.read_text() == "x"
