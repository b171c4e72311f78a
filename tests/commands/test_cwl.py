"""`benchbook cwl export|job|run`: the exported latency workflow, run by cwltool without containers on generated
capture pairs, writes per pair and merged.hlog/merged.json exactly what `benchbook latency --pairs` writes; the
run record links the CWLProv research object and its Workflow Run RO-Crate, which reads back with rocrate."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rocrate.rocrate import ROCrate

from benchbook.analysis.hdr import HdrHistogram
from benchbook.analysis.hlog import HlogWriter
from benchbook.capture.synth import LatencyModel, make_capture_pair
from benchbook.experiment.record import read_record
from conftest import require_program, require_root

BENCHBOOK = [sys.executable, "-m", "benchbook.cli"]
# summary.json fields that name paths: where the captures were read from (cwltool stages its inputs in a
# temporary directory) and where hdr.html was written (-o as given)
PATH_FIELDS = ("pre_file", "post_file", "hdr_html")


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(BENCHBOOK + list(args), capture_output=True, text=True, cwd=cwd, timeout=280)


def comparable(f: Path) -> bytes | dict:
    """The bytes of f; for summary.json its JSON without the path fields (cwltool stages inputs elsewhere)."""
    if f.name == "summary.json":
        doc = json.loads(f.read_text())
        for k in PATH_FIELDS:
            assert k in doc["details"], k
            doc["details"].pop(k)
        return doc
    return f.read_bytes()


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_cwltool_runs_the_latency_workflow_as_the_cli_does(tmp_path):
    caps = tmp_path / "caps"
    caps.mkdir()
    for i in range(2):
        make_capture_pair(caps / f"pre{i}.pcap", caps / f"post{i}.pcap", 1500, rate_pps=1000,
                          latency=LatencyModel(base_ns=8000 + 2000 * i, tail_mean_ns=2000, spike_prob=0.002,
                                               spike_ns=300_000), loss=0.01, seed=60 + i)
    (tmp_path / "pairs.csv").write_text("pre,post,name\n" + "".join(
        f"caps/pre{i}.pcap,caps/post{i}.pcap,pair{i}\n" for i in range(2)))

    options = ["--id-offset", "42", "--max-latency-ms", "400"]  # the merged histogram's layout ends at 400 ms
    for args in (["cwl", "export", "-o", "cwl"],
                 ["cwl", "job", "--pairs", "pairs.csv", *options, "-o", "job.json"],
                 ["latency", "--pairs", "pairs.csv", *options, "-o", "cli"]):
        done = run(*args, cwd=tmp_path)
        assert done.returncode == 0, f"{args}: {done.stderr}"
    done = run("cwl", "run", "cwl/latency-pipeline.cwl", "job.json", "--runs-dir", "runs", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    (run_dir,) = (tmp_path / "runs" / "cwl").iterdir()
    outputs = run_dir / "outputs"

    for name in ("pair0", "pair1"):
        cli_files = sorted(p.relative_to(tmp_path / "cli" / name) for p in (tmp_path / "cli" / name).rglob("*"))
        cwl_files = sorted(p.relative_to(outputs / name) for p in (outputs / name).rglob("*"))
        assert cwl_files == cli_files and len(cli_files) == 5, (cwl_files, cli_files)
        for rel in cli_files:
            assert comparable(outputs / name / rel) == comparable(tmp_path / "cli" / name / rel), f"{name}/{rel}"
        for rel in ("latencies.parquet", "latency.hlog"):
            assert (outputs / name / rel).read_bytes() == (tmp_path / "cli" / name / rel).read_bytes()

    for rel in ("merged.hlog", "merged.json"):
        assert (outputs / rel).read_bytes() == (tmp_path / "cli" / rel).read_bytes(), rel
    assert sorted(p.name for p in outputs.iterdir()) == ["merged.hgrm", "merged.hlog", "merged.json", "pair0",
                                                         "pair1"]
    merged = json.loads((outputs / "merged.json").read_text())
    assert merged["pairs"] == {n: json.loads((outputs / n / "summary.json").read_text())["matched"]
                               for n in ("pair0", "pair1")}
    hgrm = (outputs / "merged.hgrm").read_text()
    assert hgrm.startswith("#[StartTime:") and f"Total count    = {merged['count']:>12d}" in hgrm

    record = read_record(run_dir)
    assert record["status"] == "complete" and record["error"] is None
    assert record["cwl_provenance"]["research_object"] == "provenance"
    assert record["cwl_provenance"]["crate"] == "crate"
    assert any(e["path"] == "crate/ro-crate-metadata.json" for e in record["outputs"])
    assert json.loads((run_dir / "outputs.json").read_text())["merged_json"]["basename"] == "merged.json"

    crate = ROCrate(run_dir / "crate")
    assert "ComputationalWorkflow" in crate.mainEntity.type
    actions = {e.get("name").rsplit("#", 1)[-1]: e for e in crate.get_entities() if "CreateAction" in e.type}
    assert set(actions) == {"main", "main/latency", "main/latency_2", "main/merge", "main/merge_text"}
    results = {r.id for r in actions["main"].get("result")}
    for rel in ("merged.hlog", "merged.json"):
        sha1 = hashlib.sha1((outputs / rel).read_bytes()).hexdigest()
        assert sha1 in results, rel
        assert (run_dir / "crate" / sha1).read_bytes() == (outputs / rel).read_bytes(), rel


def test_cwl_job_needs_a_key_option(tmp_path):
    (tmp_path / "pairs.csv").write_text("pre,post,name\n")
    done = run("cwl", "job", "--pairs", "pairs.csv", "-o", "job.json", cwd=tmp_path)
    assert done.returncode == 2
    assert "give exactly one of --id-offset N or --content-key" in done.stderr
    assert not (tmp_path / "job.json").exists()


def test_cwl_run_refuses_a_missing_job(tmp_path):
    (tmp_path / "w.cwl").write_text("cwlVersion: v1.2\n")
    done = run("cwl", "run", "w.cwl", "nojob.yml", "--runs-dir", "runs", cwd=tmp_path)
    assert done.returncode == 2
    assert "nojob.yml: job not found" in done.stderr
    assert not (tmp_path / "runs").exists()


def _write_hlog(path: Path, values: list[int], start_s: float) -> None:
    h = HdrHistogram(1, 10**9, 3)
    h.record(values)
    with HlogWriter(path, start_time=start_s, comments=["test"]) as w:
        w.write_interval(0.0, 1.0, h)


@pytest.mark.root
@pytest.mark.slow
@pytest.mark.timeout(400)
def test_cwl_run_over_ssh_on_an_emulated_host(tmp_path):
    """cwltool runs on an emulated testbed host over ssh (per-run key, host key pinned, a real login as the
    readiness check); its result equals the local command's byte for byte; a wrong pin is refused."""
    require_root()
    for prog in ("ssh", "scp", "sshd", "ip"):
        if prog == "sshd":
            if not Path("/usr/sbin/sshd").exists():
                pytest.skip("/usr/sbin/sshd not installed (make deps installs openssh-server as root)")
        else:
            require_program(prog)
    _write_hlog(tmp_path / "a.hlog", [5000 + 7 * i for i in range(800)], 1_700_000_000.0)
    _write_hlog(tmp_path / "b.hlog", [9000 + 13 * i for i in range(500)], 1_700_000_001.0)
    job = {"files": [{"class": "File", "location": (tmp_path / n).as_uri()} for n in ("a.hlog", "b.hlog")],
           "report_name": "merged.hgrm"}
    (tmp_path / "job.json").write_text(json.dumps(job))
    assert run("cwl", "export", "-o", "cwl", cwd=tmp_path).returncode == 0
    local = run("hist", "a.hlog", "b.hlog", cwd=tmp_path)
    assert local.returncode == 0, local.stderr

    up = run("testbed", "emulate", "-o", "inv.toml", cwd=tmp_path)
    assert up.returncode == 0, up.stderr
    try:
        inventory = (tmp_path / "inv.toml").read_text()
        key = re.search(r'identity_file = "([^"]+)"', inventory).group(1)
        assert Path(key).stat().st_mode & 0o077 == 0, "the per-run key is readable by others"
        done = run("cwl", "run", "cwl/hist.cwl", "job.json", "--runs-dir", "runs", "--inventory", "inv.toml",
                   "--role", "dut", cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        (run_dir,) = (tmp_path / "runs" / "cwl").iterdir()
        assert (run_dir / "outputs" / "merged.hgrm").read_bytes() == local.stdout.encode()
        assert "1300" in local.stdout  # 800 + 500 values merged
        record = read_record(run_dir)
        host = record["cwl_provenance"]["host"]
        assert host["role"] == "dut" and host["known_hosts"] in inventory
        assert record["cwl_provenance"]["crate"] == "crate" and (run_dir / "crate" / "ro-crate-metadata.json").is_file()
        logged = [json.loads(line) for line in (run_dir / "raw" / "commands.jsonl").read_text().splitlines()]
        assert logged[0]["what"] == "ready" and logged[0]["argv"][0] == "ssh"
        assert all("StrictHostKeyChecking=yes" in r["argv"] for r in logged)

        (tmp_path / "empty_known_hosts").write_text("")
        (tmp_path / "wrong.toml").write_text(inventory.replace(re.search(r'known_hosts = "([^"]+)"', inventory)
                                                               .group(1), str(tmp_path / "empty_known_hosts")))
        refused = run("cwl", "run", "cwl/hist.cwl", "job.json", "--runs-dir", "runs-wrong", "--inventory",
                      "wrong.toml", "--role", "dut", "--ready-timeout", "1", cwd=tmp_path)
        assert refused.returncode == 1
        assert "no ssh login within 1 s" in refused.stderr
        assert "Host key verification failed" in refused.stderr
    finally:
        down = run("testbed", "down", "inv.toml", cwd=tmp_path)
    assert down.returncode == 0, down.stderr
    token = re.search(r'token = "([0-9a-f]+)"', inventory).group(1)
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert f"bb-{token}-" not in netns
