"""`benchbook dataset sums` and `verify` from the shell on a copy of shipped evaluator files."""

from __future__ import annotations

import shutil
import subprocess
import sys

from benchbook.paths import PUBLISHED_DIR

BENCHBOOK = [sys.executable, "-m", "benchbook.cli"]
SOURCE = PUBLISHED_DIR / "containerized-low-latency" / "measurements" / "vm" / "rt-optimized"


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*BENCHBOOK, "dataset", *args], capture_output=True, text=True, timeout=120)


def test_sums_then_verify_then_a_changed_byte_is_named(tmp_path):
    data = tmp_path / "data"
    files = sorted(SOURCE.glob("latencies-pre-rate1000000-repeat*.pcap.zst.trim_ms0.percentiles.csv.zst"))
    assert len(files) == 3
    for f in files:
        dest = data / "measurements" / "vm" / "rt-optimized" / f.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(f, dest)
    refused = _cli("sums", str(data))
    assert refused.returncode == 2 and "SOURCES.md: missing" in refused.stderr
    assert not (data / "SHA256SUMS").exists()
    (data / "SOURCES.md").write_text("Wiedner et al. ITC'23 evaluator outputs (MIT), copied from data/published\n")
    made = _cli("sums", str(data))
    assert made.returncode == 0, made.stderr
    assert "(4 files)" in made.stdout
    lines = (data / "SHA256SUMS").read_text().splitlines()
    assert [line.split("  ")[1] for line in lines] == [
        "SOURCES.md", *(f"measurements/vm/rt-optimized/{f.name}" for f in files)]
    ok = _cli("verify", str(data))
    assert ok.returncode == 0, ok.stderr
    assert "4 files" in ok.stdout
    victim = data / "measurements" / "vm" / "rt-optimized" / files[1].name
    raw = bytearray(victim.read_bytes())
    raw[-2] ^= 0x01
    victim.write_bytes(bytes(raw))
    bad = _cli("verify", str(data))
    assert bad.returncode == 1
    assert files[1].name in bad.stderr and "Traceback" not in bad.stderr


def test_verify_the_shipped_dataset_by_name():
    ok = _cli("verify", "containerized-low-latency")
    assert ok.returncode == 0, ok.stderr
    assert "every SHA-256 matches" in ok.stdout


def test_sums_of_a_missing_folder_is_a_usage_error(tmp_path):
    r = _cli("sums", str(tmp_path / "nope"))
    assert r.returncode == 2
    assert "nope: not a directory" in r.stderr
