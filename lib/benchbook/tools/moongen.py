"""MoonGen (libmoon): build its command lines and run it.

Its outputs are read by :mod:`benchbook.tools.moongen_histogram` (``hist:save()`` files) and
:mod:`benchbook.tools.moongen_output` (throughput and summary lines on stdout); its own summary
statistics are recomputed by :mod:`benchbook.analysis.moongen_stats`.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchbook.tools.host import TIMEOUT_EXIT, Host
from benchbook.tools.moongen_output import parse_histogram_summaries, parse_throughput

PROGRAM = "MoonGen"


@dataclass(frozen=True)
class ScriptSpec:
    """How one MoonGen script takes its arguments (libmoon's argparse `configure(parser)`)."""

    path: str                                  # relative to the MoonGen checkout
    positional: tuple[str, ...] = ()           # names, in order; a list value expands in place
    options: Mapping[str, str] = field(default_factory=dict)  # name -> flag taking a value
    flags: Mapping[str, str] = field(default_factory=dict)    # name -> flag without value
    required: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()              # what it writes (documentation for the backend)


SCRIPTS: dict[str, ScriptSpec] = {
    # examples/l2-load-latency.lua: CBR load on dev1 with hardware rate control, PTP timestamped
    # latency probes from dev1 to dev2; prints stats lines, then hist:print(); saves the histogram.
    "l2-load-latency": ScriptSpec(
        path="examples/l2-load-latency.lua",
        positional=("dev1", "dev2"),
        options={"rate": "--rate", "file": "--file"},      # rate in Mbit/s; file default histogram.csv
        required=("dev1", "dev2"),
        outputs=("histogram CSV (--file, default histogram.csv)", "stdout: stats + summary"),
    ),
    "l3-load-latency": ScriptSpec(
        path="examples/l3-load-latency.lua",
        positional=("tx_dev", "rx_dev"),
        options={"rate": "--rate", "flows": "--flows", "size": "--size"},
        required=("tx_dev", "rx_dev"),
        outputs=("histogram.csv", "stdout: stats + summary"),
    ),
    # MoonSniff (examples/moonsniff): the timestamper capturing pre- and post-DuT copies.
    "moonsniff-sniffer": ScriptSpec(
        path="examples/moonsniff/sniffer.lua",
        positional=("devs",),                              # two port numbers: pre, post
        options={"output": "--output", "runtime": "--runtime"},
        flags={"binary": "--binary", "live": "--live", "fast": "--fast", "capture": "--capture",
               "debug": "--debug"},
        required=("devs",),
        outputs=("<output>-pre.mscap/-post.mscap, or -pre.pcap/-post.pcap with capture",
                 "<output>-stats.csv (CSV stats)"),
    ),
    "moonsniff-traffic-gen": ScriptSpec(
        path="examples/moonsniff/traffic-gen.lua",
        positional=("devs",),
        required=("devs",),
        outputs=("stdout: stats",),
    ),
    "moonsniff-post-processing": ScriptSpec(
        path="examples/moonsniff/post-processing.lua",
        options={"input": "--input", "second_input": "--second-input", "output": "--output",
                 "nrbuckets": "--nrbuckets"},
        flags={"binary": "--binary", "debug": "--debug"},
        required=("input", "second_input"),
        outputs=("<output>.csv histogram (default hist.csv)",),
    ),
}


def _arg_text(name: str, value: Any) -> str:
    if isinstance(value, bool):
        raise ValueError(f"argument {name!r}: a boolean is not a value (use a flag)")
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = str(value)
    if not text or any(ch in text for ch in "\n\r\0"):
        raise ValueError(f"argument {name!r}: value {text!r} is empty or has control characters")
    return text


def build_command(
    script: str,
    args: Mapping[str, Any] | Sequence[str] = (),
    moongen: str = "./build/MoonGen",
    moongen_options: Sequence[str] = (),
) -> list[str]:
    """The argv list that runs a MoonGen script.

    script: a name from SCRIPTS ("l2-load-latency", "moonsniff-sniffer", ...) whose arguments are
        given by name in `args` (validated: unknown or missing names are errors), or a path to
        any other .lua script, whose `args` are a sequence of strings passed verbatim.
    moongen: the MoonGen binary (relative to its checkout by default; the backend runs it there).
    moongen_options: options for MoonGen itself, placed before the script (e.g.
        ["--dpdk-config=/etc/dpdk-conf.lua"]).

    >>> build_command("l2-load-latency", {"dev1": 0, "dev2": 1, "rate": 1000, "file": "h.csv"})
    ['./build/MoonGen', 'examples/l2-load-latency.lua', '0', '1', '--rate', '1000', '--file', 'h.csv']
    """
    cmd = [moongen, *map(str, moongen_options)]
    spec = SCRIPTS.get(script)
    if spec is None:
        if not script.endswith(".lua"):
            raise ValueError(f"unknown MoonGen script {script!r}: known are {sorted(SCRIPTS)}, "
                             f"or give a path to a .lua script")
        if isinstance(args, Mapping):
            raise ValueError(f"{script}: arguments of an unregistered script must be a list of strings")
        return cmd + [script] + [_arg_text(script, a) for a in args]
    if not isinstance(args, Mapping):
        raise ValueError(f"{script}: give the arguments by name, one of "
                         f"{sorted([*spec.positional, *spec.options, *spec.flags])}")
    known = set(spec.positional) | set(spec.options) | set(spec.flags)
    unknown = sorted(set(args) - known)
    if unknown:
        raise ValueError(f"{script}: unknown argument(s) {unknown}; known are {sorted(known)}")
    missing = [r for r in spec.required if args.get(r) is None]
    if missing:
        raise ValueError(f"{script}: missing required argument(s) {missing}")
    cmd.append(spec.path)
    for name in spec.positional:
        value = args.get(name)
        if value is None:
            continue
        if isinstance(value, (list, tuple)):
            cmd.extend(_arg_text(name, v) for v in value)
        else:
            cmd.append(_arg_text(name, value))
    for name, flag in spec.options.items():
        if args.get(name) is not None:
            cmd.extend([flag, _arg_text(name, args[name])])
    for name, flag in spec.flags.items():
        value = args.get(name)
        if value is None or value is False:
            continue
        if value is not True:
            raise ValueError(f"{script}: flag {name!r} takes True/False, not {value!r}")
        cmd.append(flag)
    return cmd


@dataclass
class MoonGenRun:
    """What one MoonGen run left: the exact command, exit status, logs, parsed throughput."""

    command: list[str]
    returncode: int
    stdout_path: Path | None            # in the host's command log (None: a log without directory)
    stderr_path: Path | None
    duration_s: float
    throughput: Any = None              # DataFrame from parse_throughput(stdout)
    summaries: list[dict[str, Any]] = field(default_factory=list)
    stdout: str = ""
    stderr: str = ""

    @property
    def command_line(self) -> str:
        return shlex.join(self.command)


def run_moongen(host: Host, command: Sequence[str], cwd: str | os.PathLike | None = None,
                timeout_s: float | None = None, name: str = "moongen") -> MoonGenRun:
    """Run a MoonGen command (from :func:`build_command`) on ``host`` and keep everything it printed.

    The command goes into the host's command log; its stdout and stderr are written to the log's
    files as they are produced, so a crash or timeout loses nothing already printed. A timeout
    kills the process and is reported as return code -9 with a note at the end of stderr.
    """
    cmd = [str(c) for c in command]
    t0 = time.monotonic()
    running = host.start(cmd, what=name, cwd=str(cwd) if cwd is not None else None)
    note = ""
    try:
        rc = running.wait(timeout_s)
    except subprocess.TimeoutExpired:
        running.kill()
        rc = TIMEOUT_EXIT
        note = f"\n[benchbook] killed after timeout of {timeout_s} s\n"
    except BaseException:
        running.kill()
        raise
    stdout_path = host.log.path(running.record.stdout)
    stderr_path = host.log.path(running.record.stderr)
    if note and stderr_path is not None:
        with open(stderr_path, "a") as fh:
            fh.write(note)
    out, err = running.output("stdout"), running.output("stderr") + note
    run = MoonGenRun(cmd, rc, stdout_path, stderr_path, time.monotonic() - t0, stdout=out, stderr=err)
    run.throughput = parse_throughput(out, source=f"{name} stdout")
    run.summaries = parse_histogram_summaries(out)
    return run


__all__ = ["PROGRAM", "SCRIPTS", "MoonGenRun", "ScriptSpec", "build_command", "run_moongen"]
