"""SHA256SUMS verification of published datasets: the shipped one passes, damage is named."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from benchbook.paths import REPO_ROOT
from benchbook.reproduce.datasets import DatasetError, dataset_path, read_sums, verify_dataset, write_sums

NAME = "containerized-low-latency"
SHIPPED = dataset_path(NAME)
VICTIM = ("measurements/vm/rt-optimized/"
          "latencies-pre-rate1000000-repeat0.pcap.zst.trim_ms0.percentiles.csv.zst")


@pytest.fixture()
def copy(tmp_path):
    assert SHIPPED.is_dir(), f"{SHIPPED} missing: the dataset ships with the repository"
    dst = tmp_path / "published" / NAME
    shutil.copytree(SHIPPED, dst)
    for p in dst.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return dst


def test_shipped_dataset_verifies():
    ds = verify_dataset(NAME)
    assert ds.n_files == 4062
    sums = read_sums(SHIPPED / "SHA256SUMS")
    assert "SOURCES.md" in sums and "gh-pages_table_details.html" in sums


def test_changed_byte_is_named(copy):
    victim = copy / VICTIM
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0x01
    victim.write_bytes(bytes(data))
    with pytest.raises(DatasetError, match="percentiles.csv.zst: SHA-256 mismatch"):
        verify_dataset(copy)


def test_missing_and_unlisted_files_are_named(copy):
    (copy / VICTIM).unlink()
    with pytest.raises(DatasetError, match="percentiles.csv.zst: listed in .*SHA256SUMS but missing"):
        verify_dataset(copy)
    write_sums(copy)
    verify_dataset(copy)
    (copy / "extra.csv").write_text("x\n")
    with pytest.raises(DatasetError, match="extra.csv: not listed in"):
        verify_dataset(copy)


def test_malformed_sums_line(copy):
    sums = copy / "SHA256SUMS"
    lines = sums.read_text().splitlines()
    lines[2] = "not-a-digest  gh-pages_table_evt.html"
    sums.write_text("\n".join(lines) + "\n")
    with pytest.raises(DatasetError, match=r"SHA256SUMS:3: expected '<64 lowercase hex>  <path>'"):
        verify_dataset(copy)


def test_reproduce_refuses_a_corrupted_dataset(copy, tmp_path):
    """`benchbook reproduce` verifies the dataset before running the notebook and names the file."""
    victim = copy / VICTIM
    data = bytearray(victim.read_bytes())
    data[10] ^= 0xFF
    victim.write_bytes(bytes(data))
    env = dict(os.environ, BENCHBOOK_PUBLISHED=str(copy.parent), BENCHBOOK_RUNS=str(tmp_path / "runs"),
               COLUMNS="250")
    proc = subprocess.run([sys.executable, "-m", "benchbook.cli", "reproduce", "wiedner-itc23-table3"],
                          capture_output=True, text=True, env=env, cwd=REPO_ROOT, timeout=120)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 5, out  # outcome "failed"
    assert "dataset verification failed" in out
    assert "latencies-pre-rate1000000-repeat0.pcap.zst.trim_ms0.percentiles.csv.zst" in out.replace("\n", "")
    assert "SHA-256 mismatch" in out
    assert not (tmp_path / "runs").exists()  # nothing ran
