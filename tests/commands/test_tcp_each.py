"""`benchbook tcp --each CAPTURE... -o DIR`: one report per capture, each what the one-capture command writes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from benchbook.capture.tcp_synth import make_tcp_capture

BENCHBOOK = [sys.executable, "-m", "benchbook.cli"]


def files(root: Path) -> dict[str, bytes]:
    return {str(f.relative_to(root)): f.read_bytes() for f in sorted(root.rglob("*")) if f.is_file()}


def test_each_capture_gets_the_report_the_single_command_writes(tmp_path):
    caps = [tmp_path / "a.pcap", tmp_path / "b.pcap"]
    for i, c in enumerate(caps):
        make_tcp_capture(c, flows=2, segments=800, loss=0.003, seed=20 + i)
    single = tmp_path / "single"
    r = subprocess.run(BENCHBOOK + ["tcp", str(caps[1]), "-o", str(single / "b")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "out"
    r = subprocess.run(BENCHBOOK + ["tcp", "--each", *map(str, caps), "-o", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in out.iterdir()) == ["a", "b"]
    assert files(out / "b") == files(single / "b")
    assert "== a" in r.stdout and "== b" in r.stdout and "engine: local, 2 captures" in r.stderr
    r = subprocess.run(BENCHBOOK + ["tcp", "--each", str(caps[0]), str(caps[0]), "-o", str(tmp_path / "x")],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "share the report name(s) a" in r.stderr
    r = subprocess.run(BENCHBOOK + ["tcp", str(caps[0]), "--engine", "dask", "-o", str(tmp_path / "x")],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "apply to --each" in r.stderr
