"""benchbook's analysis steps as Common Workflow Language (CWL v1.2) documents, built as Python data.

``documents()`` returns {file name: CWL document (dict)} for:

  latency.cwl, tcp.cwl, fairness.cwl, hist.cwl, perf.cwl   CommandLineTools running ``benchbook <command>``
  notebook.cwl                                               a CommandLineTool running papermill on a paper
                                                             notebook with benchbook's notebook parameters
  latency-pipeline.cwl                                       Workflow: capture pairs (scattered) -> latency
                                                             tables, HDR figures, merged.hlog and merged.json
                                                             (as latency --pairs), a merged percentile text
  tcp-pipeline.cwl                                           Workflow: captures -> TCP flows -> Jain fairness

Every document carries, as hints, a ``SoftwareRequirement`` naming the Guix packages of
manifests/analysis.scm (each with the IRI of its defining file at the commit channels.scm pins) and
benchbook itself, and a ``benchbook:PinnedEnvironment`` hint holding the channel commit, the manifest,
the hashed pip lock and its SHA-256. Nothing here needs a container or network access: the tools
run ``benchbook`` (and ``papermill``) from PATH.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import yaml
from rdflib import Graph, Literal, Namespace
from rdflib.namespace import RDF, RDFS

from benchbook.analysis.hlog_merge import pair_name_problem
from benchbook.errors import BenchbookError
from benchbook.paths import REPO_ROOT
from benchbook.provenance.checksums import sha256_file
from benchbook.provenance.environment import guix_channel_commit
from benchbook.provenance.guix_index import GuixIndexError, index_path, read_index
from benchbook.provenance.scheme import SchemeSyntaxError, manifest_specifications, split_spec

CWL_VERSION = "v1.2"
NAMESPACE = "https://benchbook.invalid/cwl#"
GUIX_GIT = "https://git.savannah.gnu.org/cgit/guix.git"
SHEBANG = "#!/usr/bin/env cwl-runner\n"
SCHEMA_FILE = "benchbook.ttl"  # RDF vocabulary of the benchbook: hint, written beside the documents
TCP_RULES = ("zeek", "wireshark", "tcptrace")
HIST_UNITS = ("ns", "us", "ms", "s")
FAIRNESS_METRICS = ("goodput_bps", "throughput_bps")


class CwlExportError(BenchbookError):
    """A CWL document or job could not be built (names the file and what was expected)."""


@dataclass(frozen=True)
class PinnedEnvironment:
    """What the documents say about the environment their commands need."""

    guix_commit: str
    guix_packages: tuple[tuple[str, str, str], ...]  # (name, version, module defining it at the commit)
    manifest: str  # repo-relative
    channels: str
    lock: str
    lock_sha256: str
    benchbook_version: str


def pinned_environment(root: Path = REPO_ROOT) -> PinnedEnvironment:
    """The pinned environment of the checkout at ``root``: channels.scm, manifests/analysis.scm, the Guix
    index of the pinned commit (versions) and manifests/requirements.lock (SHA-256)."""
    root = Path(root)
    channels = root / "channels.scm"
    manifest = root / "manifests" / "analysis.scm"
    lock = root / "manifests" / "requirements.lock"
    try:
        commit = guix_channel_commit(channels)
        specs = manifest_specifications(manifest)
    except (OSError, SchemeSyntaxError) as exc:
        raise CwlExportError(f"cannot read the pinned Guix environment: {exc}") from None
    if commit is None:
        raise CwlExportError(f"{channels}: no channels file (expected the pinned Guix channel)")
    try:
        index = read_index(index_path(root / "manifests", commit))
        rows = index.rows
    except GuixIndexError:
        rows = {}
    packages = []
    for spec in specs:
        name, pinned = split_spec(spec)
        row = rows.get(name)
        packages.append((name, pinned or (row.version if row else ""), row.module if row else ""))
    if not lock.is_file():
        raise CwlExportError(f"{lock}: no pip lock (expected the hashed lock benchbook's Python packages come from)")
    try:
        bb_version = metadata.version("benchbook")
    except Exception:  # running from the tree without an installed distribution
        bb_version = "unknown"
    return PinnedEnvironment(
        guix_commit=commit, guix_packages=tuple(packages), manifest="manifests/analysis.scm",
        channels="channels.scm", lock="manifests/requirements.lock", lock_sha256=sha256_file(lock),
        benchbook_version=bb_version)


def environment_hints(env: PinnedEnvironment) -> list[dict[str, Any]]:
    """The SoftwareRequirement and benchbook:PinnedEnvironment hints every document carries."""
    packages: list[dict[str, Any]] = []
    for name, version, module in env.guix_packages:
        pkg: dict[str, Any] = {"package": name}
        if version:
            pkg["version"] = [version]
        if module:
            pkg["specs"] = [f"{GUIX_GIT}/tree/{module}?id={env.guix_commit}"]
        packages.append(pkg)
    packages.append({"package": "benchbook", "version": [env.benchbook_version]})
    return [
        {"class": "SoftwareRequirement", "packages": packages},
        {
            "class": "benchbook:PinnedEnvironment",
            "guix_channel_commit": env.guix_commit,
            "guix_channel_commit_url": f"{GUIX_GIT}/commit/?id={env.guix_commit}",
            "guix_channels": env.channels,
            "guix_manifest": env.manifest,
            "pip_lock": env.lock,
            "pip_lock_sha256": env.lock_sha256,
            "rebuild": (f"guix time-machine -C {env.channels} -- shell -m {env.manifest} -- sh -c 'python3 -m venv "
                        f".venv && .venv/bin/pip install --require-hashes --no-deps -r {env.lock}'"),
        },
    ]


# -- building blocks -----------------------------------------------------------------------------------


def _input(type_: Any, doc: str, prefix: str | None = None, position: int | None = None,
           default: Any = None, separate: bool = True) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": type_, "doc": doc}
    binding: dict[str, Any] = {}
    if position is not None:
        binding["position"] = position
    if prefix is not None:
        binding["prefix"] = prefix
        if not separate:
            binding["separate"] = False
    if binding:
        entry["inputBinding"] = binding
    if default is not None:
        entry["default"] = default
    return entry


def _flag(prefix: str, doc: str) -> dict[str, Any]:
    return _input("boolean", doc, prefix=prefix, default=False)


def _enum(symbols: Sequence[str], optional: bool = True) -> Any:
    enum = {"type": "enum", "symbols": list(symbols)}
    return ["null", enum] if optional else enum


def _out_file(glob: str, doc: str, optional: bool = False) -> dict[str, Any]:
    return {"type": "File?" if optional else "File", "doc": doc, "outputBinding": {"glob": glob}}


def _tool(base: list[str], label: str, doc: str, inputs: dict[str, Any], outputs: dict[str, Any],
          hints: list[dict[str, Any]], stdout: str | None = None,
          arguments: list[Any] | None = None) -> dict[str, Any]:
    tool: dict[str, Any] = {
        "cwlVersion": CWL_VERSION,
        "class": "CommandLineTool",
        "$namespaces": {"benchbook": NAMESPACE},
        "$schemas": [SCHEMA_FILE],
        "label": label,
        "doc": doc,
        "baseCommand": base,
    }
    if arguments:
        tool["arguments"] = arguments
    tool["inputs"] = inputs
    tool["outputs"] = outputs
    if stdout is not None:
        tool["stdout"] = stdout
    tool["requirements"] = [{"class": "NetworkAccess", "networkAccess": False}]
    tool["hints"] = hints
    return tool


# -- the tools -------------------------------------------------------------------------------------------


def latency_tool(hints: list[dict[str, Any]]) -> dict[str, Any]:
    d = "$(inputs.name)"
    return _tool(
        ["benchbook", "latency"], "benchbook latency: per-packet latency from a pre-DuT and a post-DuT capture",
        "Matches PRE and POST and writes latencies.parquet, latency.hlog, hdr.html and summary.json into the "
        "directory NAME (as `benchbook latency PRE POST -o NAME`). Exit 1 on a capture problem or no matched "
        "packets, 2 on a usage error.",
        {
            "pre": _input("File", "capture before the device under test (pcap/pcapng, .zst ok)", position=1),
            "post": _input("File", "capture after the device under test", position=2),
            "name": _input("string", "name of the output directory", prefix="-o", position=3, default="latency"),
            "id_offset": _input("int?", "frame offset of the packet id", prefix="--id-offset", position=4),
            "id_width": _input("int?", "id width in bytes (1..8; default 8)", prefix="--id-width", position=4),
            "id_big_endian": _flag("--id-big-endian", "id is big-endian (default little)"),
            "content_key": _flag("--content-key", "MoonSniff/pos key: bytes 12-64, checksums zeroed"),
            "max_latency_ms": _input("double?", "latencies must be below this (default 5000)",
                                     prefix="--max-latency-ms", position=4),
            "window": _input("int?", "matching window in pre packets (power of two; default 262144)",
                             prefix="--window", position=4),
            "no_html": _flag("--no-html", "skip hdr.html"),
        },
        {
            "out": {"type": "Directory", "doc": "the output directory NAME", "outputBinding": {"glob": d}},
            "latencies": _out_file(f"{d}/latencies.parquet", "per-packet latency table (Parquet)"),
            "hlog": _out_file(f"{d}/latency.hlog", "HdrHistogram interval log, one interval per second"),
            "summary": _out_file(f"{d}/summary.json", "counts, percentiles and warnings (JSON)"),
            "hdr_html": _out_file(f"{d}/hdr.html", "HDR percentile plot (absent with no_html)", optional=True),
            "report": {"type": "stdout", "doc": "the printed summary"},
        },
        hints, stdout=f"{d}.txt")


def tcp_tool(hints: list[dict[str, Any]]) -> dict[str, Any]:
    d = "$(inputs.name)"
    return _tool(
        ["benchbook", "tcp"], "benchbook tcp: flows, per-interval throughput, retransmissions and RTT of TCP traces",
        "Writes flows.parquet, intervals.parquet, rtt.parquet, report.html and summary.json (and cwnd.parquet "
        "with probe) into the directory NAME (as `benchbook tcp CAPTURE... -o NAME`).",
        {
            "captures": _input("File[]", "pcap/pcapng captures (.zst ok), read in order as one trace", position=1),
            "name": _input("string", "name of the output directory", prefix="-o", position=2, default="tcp"),
            "bin_ms": _input("double?", "interval length in ms (default 100)", prefix="--bin-ms", position=3),
            "rule": _input(_enum(TCP_RULES), "retransmission rule (default zeek)", prefix="--rule", position=3),
            "no_html": _flag("--no-html", "skip report.html"),
            "probe": dict(_input("File?", "the kernel's tcp:tcp_probe records (perf.data or `perf script` text); "
                                 "FILE.clock.json beside it puts them on the capture's clock", prefix="--probe",
                                 position=3),
                          secondaryFiles=[{"pattern": ".clock.json", "required": False}]),
        },
        {
            "out": {"type": "Directory", "doc": "the output directory NAME", "outputBinding": {"glob": d}},
            "flows": _out_file(f"{d}/flows.parquet", "one row per TCP flow (Parquet)"),
            "intervals": _out_file(f"{d}/intervals.parquet", "per-flow, per-interval throughput and goodput"),
            "rtt": _out_file(f"{d}/rtt.parquet", "RTT samples (Parquet)"),
            "cwnd": _out_file(f"{d}/cwnd.parquet", "tcp_probe records matched to the flows (only with probe)",
                              optional=True),
            "summary": _out_file(f"{d}/summary.json", "flows and totals (JSON)"),
            "report_html": _out_file(f"{d}/report.html", "HTML report (absent with no_html)", optional=True),
            "report": {"type": "stdout", "doc": "the printed flow table"},
        },
        hints, stdout=f"{d}.txt")


def fairness_tool(hints: list[dict[str, Any]]) -> dict[str, Any]:
    return _tool(
        ["benchbook", "fairness"], "benchbook fairness: Jain's fairness index from per-flow throughput series",
        "Jain's index of per-flow means and the mean/minimum of per-interval indices, from intervals.parquet "
        "(benchbook tcp), iperf3 -J reports or .flent.gz files; several are aligned by interval.",
        {
            "files": _input("File[]", "intervals.parquet, iperf3 -J reports or .flent.gz files", position=1),
            "json": _flag("--json", "print the result as JSON (default true)") | {"default": True},
            "metric": _input(_enum(FAIRNESS_METRICS), "intervals.parquet column (default goodput_bps)",
                             prefix="--metric", position=2),
            "report_name": {"type": "string", "default": "fairness.json", "doc": "file name of the result"},
        },
        {"report": {"type": "stdout", "doc": "the fairness result (JSON with json=true)"}},
        hints, stdout="$(inputs.report_name)")


def hist_tool(hints: list[dict[str, Any]]) -> dict[str, Any]:
    m = "$(inputs.merged_dir)"
    return _tool(
        ["benchbook", "hist"], "benchbook hist: merged percentile distribution of latency histograms",
        "Merges .hlog interval logs and MoonGen histogram CSVs and prints their percentile distribution "
        "(HistogramLogProcessor style, or JSON with json=true). With merged_dir and pair_names (one per file): "
        "writes merged_dir/merged.hlog and merged_dir/merged.json from pairs' latency.hlog files, as "
        "`benchbook latency --pairs` does, and prints one summary line.",
        {
            "files": _input("File[]", ".hlog interval logs and/or MoonGen histogram CSVs (merged)", position=1),
            "json": _flag("--json", "count, min/max/mean/stddev and percentiles in ns as JSON"),
            "moongen_summary": _flag("--moongen-summary", "MoonGen's own summary line (MoonGen CSVs only)"),
            "unit": _input(_enum(HIST_UNITS), "unit of the printed values (default ms)", prefix="--unit", position=2),
            "tag": _input("string?", "only interval histograms with this tag", prefix="--tag", position=2),
            "all_tags": _flag("--all-tags", "merge interval histograms of every tag"),
            "start": _input("double?", "skip intervals starting before this many seconds after StartTime",
                            prefix="--start=", position=2, separate=False),
            "end": _input("double?", "stop at the first interval starting after this many seconds",
                          prefix="--end=", position=2, separate=False),
            "significant_digits": _input("int?", "accumulate with this many significant digits (1..5)",
                                         prefix="--significant-digits", position=2),
            "ticks_per_half": _input("int?", "percentile ticks per half distance (default 5)",
                                     prefix="--ticks-per-half", position=2),
            "csv": _flag("--csv", "percentile distribution as CSV"),
            "all_percentiles": _flag("--all-percentiles", "every percentile row, also those the sample count "
                                     "cannot resolve, as HistogramLogProcessor prints them"),
            "merged_dir": _input("string?", "write merged.hlog and merged.json into this directory (. for the "
                                 "output directory) instead of printing a distribution", prefix="--merged-dir",
                                 position=2),
            "pair_names": _input(["null", {"type": "array", "items": "string",
                                           "inputBinding": {"prefix": "--pair-name"}}],
                                 "with merged_dir: the pair name of each file, in order", position=2),
            "max_latency_ms": _input("double?", "with merged_dir: the pairs' maximum latency (default 5000)",
                                     prefix="--max-latency-ms", position=2),
            "report_name": {"type": "string", "default": "hist.txt", "doc": "file name of the result"},
        },
        {
            "report": {"type": "stdout", "doc": "the merged distribution (with merged_dir: one summary line)"},
            "merged_hlog": _out_file(f"{m}/merged.hlog", "with merged_dir: the merged histogram (.hlog)",
                                     optional=True),
            "merged_json": _out_file(f"{m}/merged.json", "with merged_dir: its count and percentiles (JSON)",
                                     optional=True),
        },
        hints, stdout="$(inputs.report_name)")


def perf_tool(hints: list[dict[str, Any]]) -> dict[str, Any]:
    return _tool(
        ["benchbook", "perf"], "benchbook perf: counters of perf stat output files",
        "Counters of perf stat outputs, one record per report (a file may hold several: appended runs, shell "
        "logs), each read with its own number format (value, unit, variation over -r runs, enabled %, metric); "
        "<not supported>/<not counted> are missing, never zero. Exit 1 when a report cannot be read (the others "
        "are still printed).",
        {
            "files": _input("File[]", "files perf stat wrote (its stderr or -o FILE)", position=1),
            "json": _flag("--json", "a list of reports with counters and footers as JSON (default true)")
            | {"default": True},
            "decimal": _input("string?", "decimal mark of the numbers in every report, '.' or ',' (default: told "
                              "from each report)", prefix="--decimal", position=2),
            "report_number": _input("int?", "only report N of each file (1-based)", prefix="--report", position=3),
            "report_name": {"type": "string", "default": "perf.json", "doc": "file name of the result"},
        },
        {"report": {"type": "stdout", "doc": "the counters"}},
        hints, stdout="$(inputs.report_name)")


def notebook_tool(hints: list[dict[str, Any]]) -> dict[str, Any]:
    """papermill executing a paper notebook with the parameters `benchbook reproduce` passes."""
    args: list[Any] = []
    position = 10
    for name, value in (("figure_id", "$(inputs.figure_id)"), ("paper_dir", "$(inputs.paper_dir.path)"),
                        ("output_dir", "$(runtime.outdir)/output")):
        for token in ("-p", name, value):
            args.append({"position": position, "valueFrom": token})
            position += 1
    return _tool(
        ["papermill"], "a paper notebook executed by papermill",
        "Executes NOTEBOOK with the parameters benchbook reproduce passes (figure_id, paper_dir = the paper "
        "folder, output_dir = output/) plus a YAML file of further parameters; writes the executed "
        "notebook and everything the notebook writes into output/.",
        {
            "notebook": _input("File", "the notebook (.ipynb)", position=1),
            "executed_name": _input("string", "file name of the executed notebook", position=2,
                                    default="executed.ipynb"),
            "paper_dir": {"type": "Directory", "doc": "the paper folder (notebooks/<paper-id>/)"},
            "figure_id": {"type": "string", "doc": "the entry id (notebooks/<paper-id>/<entry-id>.toml)"},
            "parameters": _input("File?", "YAML file of further notebook parameters (the entry's [parameters])",
                                 prefix="-f", position=3),
            "kernel": _input("string", "Jupyter kernel", prefix="-k", position=4, default="python3"),
        },
        {
            "executed": _out_file("$(inputs.executed_name)", "the executed notebook"),
            "output": {"type": "Directory", "doc": "what the notebook wrote (figures, tables, verdict.json)",
                       "outputBinding": {"glob": "output"}},
        },
        hints, arguments=[{"position": 5, "valueFrom": "--no-progress-bar"}, *args])


# -- the workflows ---------------------------------------------------------------------------------------


def _workflow(label: str, doc: str, inputs: dict[str, Any], outputs: dict[str, Any], steps: dict[str, Any],
              hints: list[dict[str, Any]], requirements: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "cwlVersion": CWL_VERSION,
        "class": "Workflow",
        "$namespaces": {"benchbook": NAMESPACE},
        "$schemas": [SCHEMA_FILE],
        "label": label,
        "doc": doc,
        "requirements": requirements,
        "hints": hints,
        "inputs": inputs,
        "outputs": outputs,
        "steps": steps,
    }


LATENCY_OPTIONS = ("id_offset", "id_width", "id_big_endian", "content_key", "max_latency_ms", "window", "no_html")


def latency_pipeline(hints: list[dict[str, Any]]) -> dict[str, Any]:
    tool = latency_tool([])["inputs"]
    options = {k: _workflow_input(tool[k]) for k in LATENCY_OPTIONS}
    return _workflow(
        "capture pairs -> latency tables, HDR figures and one merged HDR histogram",
        "Runs benchbook latency on every capture pair (scatter, dotproduct over pre, post, names: pair i writes "
        "the directory names[i], as `benchbook latency --pairs` does), then merges the pairs' latency.hlog "
        "interval logs with benchbook hist into merged.hlog and merged.json (the files `benchbook latency "
        "--pairs` writes) and into a percentile distribution (merged.hgrm, HistogramLogProcessor style).",
        {
            "pre": {"type": "File[]", "doc": "pre-DuT captures, one per pair"},
            "post": {"type": "File[]", "doc": "post-DuT captures, same order"},
            "names": {"type": "string[]", "doc": "output directory name of each pair, same order"},
            **options,
            "unit": {"type": _enum(HIST_UNITS), "doc": "unit of the merged percentile distribution (default ms)"},
        },
        {
            "pairs": {"type": "Directory[]", "outputSource": "latency/out", "doc": "one directory per pair"},
            "tables": {"type": "File[]", "outputSource": "latency/latencies", "doc": "latencies.parquet per pair"},
            "summaries": {"type": "File[]", "outputSource": "latency/summary", "doc": "summary.json per pair"},
            "hlogs": {"type": "File[]", "outputSource": "latency/hlog", "doc": "latency.hlog per pair"},
            "figures": {"type": {"type": "array", "items": ["null", "File"]}, "outputSource": "latency/hdr_html",
                        "doc": "hdr.html per pair"},
            "merged_hlog": {"type": "File", "outputSource": "merge/merged_hlog",
                            "doc": "merged.hlog: every interval of every pair's latency.hlog added"},
            "merged_json": {"type": "File", "outputSource": "merge/merged_json",
                            "doc": "merged.json: per-pair counts, count, min, max and percentiles (ns) of merged.hlog"},
            "merged_percentiles": {"type": "File", "outputSource": "merge_text/report",
                                   "doc": "merged.hgrm: percentile distribution of all pairs' histograms merged"},
        },
        {
            "latency": {
                "run": "latency.cwl",
                "scatter": ["pre", "post", "name"],
                "scatterMethod": "dotproduct",
                "in": {"pre": "pre", "post": "post", "name": "names", **{k: k for k in LATENCY_OPTIONS}},
                "out": ["out", "latencies", "hlog", "summary", "hdr_html", "report"],
            },
            "merge": {
                "run": "hist.cwl",
                "in": {"files": "latency/hlog", "pair_names": "names", "max_latency_ms": "max_latency_ms",
                       "merged_dir": {"default": "."}, "report_name": {"default": "merged.txt"}},
                "out": ["merged_hlog", "merged_json"],
            },
            "merge_text": {
                "run": "hist.cwl",
                "in": {"files": "latency/hlog", "unit": "unit", "report_name": {"default": "merged.hgrm"}},
                "out": ["report"],
            },
        },
        hints, [{"class": "ScatterFeatureRequirement"}])


def tcp_pipeline(hints: list[dict[str, Any]]) -> dict[str, Any]:
    return _workflow(
        "TCP captures -> flows, intervals, RTT -> Jain's fairness",
        "Runs benchbook tcp on the captures (read in order as one trace), then benchbook fairness on the "
        "per-interval table it wrote.",
        {
            "captures": {"type": "File[]", "doc": "pcap/pcapng captures (.zst ok), read in order as one trace"},
            "name": {"type": "string", "default": "tcp", "doc": "output directory name"},
            "bin_ms": {"type": "double?", "doc": "interval length in ms (default 100)"},
            "rule": {"type": _enum(TCP_RULES), "doc": "retransmission rule (default zeek)"},
            "metric": {"type": _enum(FAIRNESS_METRICS), "doc": "fairness over this column (default goodput_bps)"},
        },
        {
            "flows_dir": {"type": "Directory", "outputSource": "tcp/out", "doc": "benchbook tcp's output directory"},
            "intervals": {"type": "File", "outputSource": "tcp/intervals", "doc": "intervals.parquet"},
            "fairness_json": {"type": "File", "outputSource": "fairness/report", "doc": "fairness.json"},
        },
        {
            "tcp": {
                "run": "tcp.cwl",
                "in": {"captures": "captures", "name": "name", "bin_ms": "bin_ms", "rule": "rule"},
                "out": ["out", "intervals"],
            },
            "fairness": {
                "run": "fairness.cwl",
                "in": {"files": {"source": ["tcp/intervals"], "linkMerge": "merge_flattened"}, "metric": "metric"},
                "out": ["report"],
            },
        },
        hints, [{"class": "MultipleInputFeatureRequirement"}])


def _workflow_input(tool_input: dict[str, Any]) -> dict[str, Any]:
    """A workflow input passing through to a tool input: same type, doc and default."""
    return {k: v for k, v in tool_input.items() if k in ("type", "doc", "default")}


TOOLS = {
    "latency.cwl": latency_tool,
    "tcp.cwl": tcp_tool,
    "fairness.cwl": fairness_tool,
    "hist.cwl": hist_tool,
    "perf.cwl": perf_tool,
    "notebook.cwl": notebook_tool,
}
WORKFLOWS = {
    "latency-pipeline.cwl": latency_pipeline,
    "tcp-pipeline.cwl": tcp_pipeline,
}


def documents(env: PinnedEnvironment | None = None) -> dict[str, dict[str, Any]]:
    """{file name: CWL document} for every tool and workflow."""
    hints = environment_hints(env if env is not None else pinned_environment())
    return {name: build(hints) for name, build in {**TOOLS, **WORKFLOWS}.items()}


HINT_FIELDS = {
    "guix_channel_commit": "the GNU Guix commit channels.scm pins",
    "guix_channel_commit_url": "that commit in the Guix git repository",
    "guix_channels": "the channels file (repository-relative)",
    "guix_manifest": "the Guix manifest of the analysis environment (repository-relative)",
    "pip_lock": "the hashed pip lock every Python package comes from (repository-relative)",
    "pip_lock_sha256": "SHA-256 of the pip lock",
    "rebuild": "the command that rebuilds the environment",
}


def vocabulary() -> str:
    """benchbook.ttl: the RDF class of the benchbook:PinnedEnvironment hint and its fields (Turtle)."""
    bb = Namespace(NAMESPACE)
    g = Graph()
    g.bind("benchbook", bb)
    g.add((bb.PinnedEnvironment, RDF.type, RDFS.Class))
    g.add((bb.PinnedEnvironment, RDFS.comment, Literal(
        "The pinned software environment a benchbook step runs in: Guix channel commit and manifest, hashed "
        "pip lock. A hint: runners that do not know it run the step in the environment they have.")))
    for name, comment in HINT_FIELDS.items():
        g.add((bb[name], RDF.type, RDF.Property))
        g.add((bb[name], RDFS.domain, bb.PinnedEnvironment))
        g.add((bb[name], RDFS.comment, Literal(comment)))
    return g.serialize(format="turtle")


def dump(doc: dict[str, Any]) -> str:
    """One document as YAML (keys in the order built), after the cwl-runner shebang line."""
    return SHEBANG + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=120)


def write_documents(out_dir: Path, env: PinnedEnvironment | None = None) -> list[Path]:
    """Write every document into ``out_dir`` (created); each file is replaced whole or left as it was."""
    docs = {name: dump(doc) for name, doc in documents(env).items()}
    docs[SCHEMA_FILE] = vocabulary()
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise CwlExportError(f"{out_dir}: exists and is not a directory")
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in docs.items():
        written.append(_write_atomic(out_dir / name, text))
    return written


def _write_atomic(path: Path, text: str) -> Path:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path


# -- job files -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CapturePair:
    pre: Path
    post: Path
    name: str


def read_pairs(path: Path) -> list[CapturePair]:
    """Capture pairs from a CSV file with the columns pre,post,name (a header line naming them first;
    relative paths are relative to the CSV file; names as `benchbook latency --pairs` takes them). Errors name the
    file and line."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CwlExportError(f"{path}: cannot read the pairs file ({exc.strerror or exc})") from None
    rows = list(csv.reader(text.splitlines()))
    if not rows or [c.strip() for c in rows[0]] != ["pre", "post", "name"]:
        raise CwlExportError(f"{path}: line 1: expected the header 'pre,post,name'")
    pairs: list[CapturePair] = []
    seen: set[str] = set()
    for lineno, row in enumerate(rows[1:], 2):
        if not row or not "".join(row).strip():
            continue
        if len(row) != 3:
            raise CwlExportError(f"{path}: line {lineno}: expected 3 cells pre,post,name, got {len(row)}")
        pre, post, name = (c.strip() for c in row)
        if (problem := pair_name_problem(name)) is not None:
            raise CwlExportError(f"{path}: line {lineno}: {problem}")
        if name in seen:
            raise CwlExportError(f"{path}: line {lineno}: name {name!r} given twice")
        seen.add(name)
        base = path.parent
        pairs.append(CapturePair(base / pre if not Path(pre).is_absolute() else Path(pre),
                                 base / post if not Path(post).is_absolute() else Path(post), name))
    if not pairs:
        raise CwlExportError(f"{path}: no pairs after the header line")
    for p in pairs:
        for f in (p.pre, p.post):
            if not f.is_file():
                raise CwlExportError(f"{path}: pair {p.name!r}: {f}: no such file")
    return pairs


def latency_job(pairs: Sequence[CapturePair], options: dict[str, Any]) -> dict[str, Any]:
    """The input object of latency-pipeline.cwl for ``pairs`` (absolute paths) and latency ``options``
    (keys of LATENCY_OPTIONS plus unit; None values left out)."""
    unknown = set(options) - set(LATENCY_OPTIONS) - {"unit"}
    if unknown:
        raise CwlExportError(f"unknown latency option(s): {', '.join(sorted(unknown))}")

    def file(p: Path) -> dict[str, str]:
        return {"class": "File", "location": Path(p).resolve().as_uri()}

    job: dict[str, Any] = {
        "pre": [file(p.pre) for p in pairs],
        "post": [file(p.post) for p in pairs],
        "names": [p.name for p in pairs],
    }
    job.update({k: v for k, v in options.items() if v is not None})
    return job


def dump_job(job: dict[str, Any]) -> str:
    return json.dumps(job, indent=2) + "\n"
