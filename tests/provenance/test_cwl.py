"""benchbook's steps as CWL documents: cwltool accepts every exported file, each tool mirrors the options of
its command, the environment hints carry the pins of this checkout, pair files are read strictly."""

from __future__ import annotations

import io
import json

import pytest
import typer.main
import yaml
from cwltool.main import main as cwltool_main

from benchbook.cli import app
from benchbook.paths import REPO_ROOT
from benchbook.provenance.checksums import sha256_file
from benchbook.provenance.cwl import (
    TOOLS,
    WORKFLOWS,
    CwlExportError,
    documents,
    latency_job,
    pinned_environment,
    read_pairs,
    write_documents,
)
from benchbook.provenance.cwl_crate import CrateConversionError, convert
from benchbook.provenance.environment import guix_channel_commit


@pytest.mark.slow
def test_cwltool_validate_accepts_every_exported_file(tmp_path):
    written = write_documents(tmp_path)
    names = sorted(p.name for p in written if p.suffix == ".cwl")
    assert names == sorted([*TOOLS, *WORKFLOWS])
    for name in names:
        out, err = io.StringIO(), io.StringIO()
        code = cwltool_main(argsl=["--validate", str(tmp_path / name)], stdout=out, stderr=err)
        assert code == 0, f"{name}: {err.getvalue()[-2000:]}"
        assert f"{name} is valid CWL" in out.getvalue() + err.getvalue()
        assert "Warning" not in err.getvalue() and "WARNING" not in err.getvalue(), err.getvalue()[-2000:]


def _command_options(name: str) -> set[str]:
    """Every long option of `benchbook NAME` (from the CLI itself), without --help."""
    group = typer.main.get_command(app)
    cmd = group.commands[name]
    opts = {o for p in cmd.params for o in p.opts if o.startswith("--")}
    return opts - {"--help"}


@pytest.mark.parametrize("command", ["latency", "tcp", "fairness", "hist", "perf"])
def test_each_tool_offers_every_option_of_its_command(command):
    tool = documents()[f"{command}.cwl"]
    assert tool["baseCommand"] == ["benchbook", command]
    bindings = [i.get("inputBinding", {}) for i in tool["inputs"].values()]
    bindings += [t["inputBinding"] for i in tool["inputs"].values() for t in i["type"]  # a prefix per array item
                 if isinstance(i["type"], list) and isinstance(t, dict) and "inputBinding" in t]
    prefixes = {b["prefix"].rstrip("=") for b in bindings if "prefix" in b}
    # where a command's tasks run, and batch modes (many pairs / one analysis per capture): a CWL runner
    # schedules the steps and a workflow scatters over the inputs itself
    options = _command_options(command) - {"--engine", "--scheduler", "--ssh-cluster", "--pairs", "--each"}
    assert options - {"--out"} <= prefixes, f"options of benchbook {command} missing in {command}.cwl"
    assert prefixes - {"-o"} <= options, prefixes - options


def test_environment_hints_name_the_pins_of_this_checkout():
    env = pinned_environment()
    assert env.guix_commit == guix_channel_commit()
    assert env.lock_sha256 == sha256_file(REPO_ROOT / "manifests" / "requirements.lock")
    for name, doc in documents(env).items():
        hints = {h["class"]: h for h in doc["hints"]}
        packages = {p["package"]: p for p in hints["SoftwareRequirement"]["packages"]}
        assert packages["python-next"]["version"] == ["3.12.2"], name  # manifests/guix-index-093f2fb8.tsv
        assert all(env.guix_commit in s for p in packages.values() for s in p.get("specs", [])), name
        assert "benchbook" in packages
        pinned = hints["benchbook:PinnedEnvironment"]
        assert pinned["pip_lock_sha256"] == env.lock_sha256
        assert pinned["guix_channel_commit"] == env.guix_commit
        assert not any(r["class"] == "DockerRequirement" for r in doc.get("requirements", []))


def test_documents_are_yaml_data_with_the_cwl_runner_shebang(tmp_path):
    for p in write_documents(tmp_path):
        if p.suffix != ".cwl":
            continue
        text = p.read_text()
        assert text.startswith("#!/usr/bin/env cwl-runner\n")
        doc = yaml.safe_load(text)
        assert doc["cwlVersion"] == "v1.2" and doc["$schemas"] == ["benchbook.ttl"]
    assert "benchbook:PinnedEnvironment a rdfs:Class" in (tmp_path / "benchbook.ttl").read_text()


def test_latency_pipeline_scatters_over_pairs():
    wf = documents()["latency-pipeline.cwl"]
    step = wf["steps"]["latency"]
    assert step["scatter"] == ["pre", "post", "name"] and step["scatterMethod"] == "dotproduct"
    assert {"class": "ScatterFeatureRequirement"} in wf["requirements"]
    merge = wf["steps"]["merge"]
    assert merge["run"] == "hist.cwl" and merge["in"]["files"] == "latency/hlog"
    assert merge["in"]["pair_names"] == "names" and merge["in"]["max_latency_ms"] == "max_latency_ms"
    assert {k: wf["outputs"][k]["outputSource"] for k in ("merged_hlog", "merged_json")} == {
        "merged_hlog": "merge/merged_hlog", "merged_json": "merge/merged_json"}
    hist = documents()["hist.cwl"]
    assert hist["outputs"]["merged_hlog"]["outputBinding"]["glob"] == "$(inputs.merged_dir)/merged.hlog"
    assert hist["inputs"]["pair_names"]["type"][1]["inputBinding"] == {"prefix": "--pair-name"}


def test_read_pairs_and_the_job(tmp_path):
    for n in ("a", "b"):
        (tmp_path / f"{n}.pre").write_bytes(b"x")
        (tmp_path / f"{n}.post").write_bytes(b"x")
    csv = tmp_path / "pairs.csv"
    csv.write_text("pre,post,name\na.pre,a.post,one\n\nb.pre,b.post,two\n")
    pairs = read_pairs(csv)
    job = latency_job(pairs, {"id_offset": 42, "window": None})
    assert job["names"] == ["one", "two"] and job["id_offset"] == 42 and "window" not in job
    assert job["pre"][1]["location"] == (tmp_path / "b.pre").resolve().as_uri()
    json.dumps(job)


@pytest.mark.parametrize("text, message", [
    ("pre;post;name\n", "line 1: expected the header 'pre,post,name'"),
    ("pre,post,name\na.pre,a.post\n", "line 2: expected 3 cells"),
    ("pre,post,name\na.pre,a.post,x\na.pre,a.post,x\n", "line 3: name 'x' given twice"),
    ("pre,post,name\na.pre,a.post,../x\n", "line 2: name '../x': expected one folder name"),
    ("pre,post,name\na.pre,a.post,merged.json\n", "line 2: name 'merged.json': expected one folder name"),
    ("pre,post,name\na.pre,missing.post,x\n", "missing.post: no such file"),
    ("pre,post,name\n", "no pairs after the header line"),
])
def test_read_pairs_refuses_bad_files_by_line(tmp_path, text, message):
    (tmp_path / "a.pre").write_bytes(b"x")
    (tmp_path / "a.post").write_bytes(b"x")
    csv = tmp_path / "pairs.csv"
    csv.write_text(text)
    with pytest.raises(CwlExportError, match=str(csv)) as info:
        read_pairs(csv)
    assert message in str(info.value)


def test_latency_job_refuses_unknown_options(tmp_path):
    with pytest.raises(CwlExportError, match="unknown latency option"):
        latency_job([], {"id_ofset": 42})


def test_convert_refuses_a_directory_that_is_no_research_object(tmp_path):
    with pytest.raises(CrateConversionError, match="not a CWLProv research object"):
        convert(tmp_path, tmp_path / "crate")
