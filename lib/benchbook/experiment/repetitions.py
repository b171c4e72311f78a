"""Repeated runs of arms: every repetition a fresh set-up, in a seeded interleaved order, one record per run,
resumable after an interruption.

    from benchbook.experiment.repetitions import Rule, RunContext, Statistic, run_repetitions

    def one_run(ctx: RunContext) -> list[Statistic]:
        # ctx.arm, ctx.config (the arm's configuration), ctx.repetition, ctx.position, ctx.directory (this run's
        # own, fresh), ctx.log (a CommandLog writing into it); fill ctx.metrics and ctx.capabilities as it goes;
        # raise NotRunnable when the arm cannot run here
        ...
        return [Statistic("p99", 0.42, n=99_881, unit="ms", definition="smallest value with count >= 0.99 N")]

    result = run_repetitions("out", {"v1": cfg_v1, "v2": cfg_v2}, repetitions=6, run=one_run, seed=None,
                             rules=[Rule("loss", "runs that lost more than 1 % of packets", lambda rec: ...)])
    result.records            # one dict per run, in the order they ran (the layout below)
    result.statistics()       # the tidy table (pandas), also in out/run-statistics.parquet

``run_repetitions(output_dir, arms, repetitions, run, *, seed=None, rules=(), progress=print) -> RepetitionSet``

**Order.** Round r (1..repetitions) runs every arm once, in the order of a permutation of the arms (in the
order ``arms`` lists them) drawn from ``numpy.random.default_rng(seed)``: round 1 uses the first
``rng.permutation(len(arms))``, round 2 the second, and so on. Arms alternate, none keeps a fixed slot, and the
order is recomputable from the seed. ``seed=None`` draws one (``secrets``) unless ``output_dir`` holds a plan,
whose seed is then reused; either way it is recorded.

**Files.** ``output_dir/repetitions.json`` holds the plan (arms with their configuration as JSON, repetitions,
seed, how the order was drawn, the validity rules), the full order, one line per run and the counts; it is
written before the first run and rewritten after each. ``output_dir/run-statistics.parquet`` is the tidy table
of every run's statistics: arm, statistic, run (the repetition, 1-based), position, value, n (packets or samples
behind the value), unit, definition, valid. Each run has its own directory ``output_dir/raw/<arm>/rep<k>/``
with whatever the run function writes there, its command log (commands.jsonl, cmd/) and ``repetition.json``:

    {"schema": "benchbook.repetition/1", "arm", "dir" (relative to output_dir), "config", "repetition",
     "round", "position", "seed",
     "status": "running" | "complete" | "not runnable" | "failed" | "interrupted",
     "reason": why it is not complete (null when it is), "valid": true | false | null (while running),
     "invalid_by": [{"rule", "reason"}], "started", "ended" (ISO 8601 UTC), "duration_s",
     "owner": {"host", "pid"}, "statistics": [{"name", "value", "n", "unit", "definition"}],
     "metrics": {...}, "capabilities": [{"capability", "status", "detail"}],
     "previous_attempts": [{"dir", "status", "reason", "started"}]}

The record is written ("running") before the run function is called and rewritten when it returns; every file
is written atomically (:mod:`benchbook.atomic_write`). A record file that cannot be written (a full disk) does
not stop the runs: the file is named in ``RepetitionSet.write_errors`` and the records stay in the result.

**Validity.** A run is valid when it completed and no rule flags it. Built in: rule "completed" (a run that was
not runnable or failed is invalid; its reason is kept). Each ``Rule`` is a name, a description and a check
called with the finished record; a returned string makes the run invalid with that reason. Rules are part of
the plan; every exclusion is listed in repetitions.json ("excluded") and in the run's record, never silent.
Once a run of an arm is not runnable, that arm's later runs are recorded not runnable with the same reason
without calling the run function (rule "not runnable here").

**Interruptions.** Ctrl-C or SIGTERM inside a run: its record becomes "interrupted" and the exception goes on.
SIGKILL or a crash of the process: the record stays "running"; the next call (which holds the lock of
``output_dir``, so no other process runs this plan) finds it abandoned. Calling ``run_repetitions`` again with
the same arms, configurations, repetitions, seed and rules skips every run that is complete or not runnable,
and redoes runs that were interrupted or failed: their directory is first moved aside to
``raw/<arm>/rep<k>.attempt<a>/`` (kept, listed in the new record's "previous_attempts"). A different plan is
refused with :class:`PlanMismatch`, naming what differs. Runs that failed (the run function raised) are
recorded with the traceback and the other runs go on; :class:`RunsFailed` is raised at the end.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import secrets
import socket
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, is_dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from benchbook.atomic_write import atomic_path, write_json_atomic
from benchbook.errors import BenchbookError
from benchbook.filelock import FileLock
from benchbook.testbed.capabilities import NotRunnable
from benchbook.testbed.signals import terminate_raises
from benchbook.tools.host import CommandLog

SUMMARY_FILE = "repetitions.json"
TABLE_FILE = "run-statistics.parquet"
RECORD_FILE = "repetition.json"
LOCK_FILE = ".repetitions.lock"
SCHEMA = "benchbook.repetitions/1"
RECORD_SCHEMA = "benchbook.repetition/1"
ORDER_METHOD = ("round r of R runs every arm once, in the order of the r-th numpy.random.default_rng(seed)"
                ".permutation(number of arms) applied to the arms as the plan lists them")
FINISHED = ("complete", "not runnable")
ARM_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+=-]*")
TABLE_COLUMNS = ("arm", "statistic", "run", "position", "value", "n", "unit", "definition", "valid")


class PlanMismatch(BenchbookError, ValueError):
    """``output_dir`` holds runs of a different plan (the message names what differs)."""


class RunsFailed(BenchbookError, RuntimeError):
    """Runs whose run function raised; every other run went on and everything is recorded (``result``)."""

    def __init__(self, message: str, result: RepetitionSet) -> None:
        super().__init__(message)
        self.result = result


@dataclass(frozen=True)
class Statistic:
    """One statistic of one run: its value, the number of packets or samples behind it (None when it is not
    an aggregate of samples), its unit and its definition (estimator, what is counted, where)."""

    name: str
    value: float | None
    n: int | None
    unit: str
    definition: str


@dataclass(frozen=True)
class Rule:
    """A validity rule: ``check(record)`` returns why the finished run is invalid, or None."""

    name: str
    description: str
    check: Callable[[dict[str, Any]], str | None]


@dataclass
class RunContext:
    """What a run function gets: the run's place in the plan, its own fresh directory and command log, and the
    metrics and capabilities it fills in (kept in the record whatever the outcome)."""

    arm: str
    config: Any
    repetition: int
    round: int
    position: int
    directory: Path
    log: CommandLog
    metrics: dict[str, Any] = field(default_factory=dict)
    capabilities: list[dict[str, Any]] = field(default_factory=list)


RunFunction = Callable[[RunContext], Sequence[Statistic]]


@dataclass
class RepetitionSet:
    """The outcome of a plan: its summary (the contents of repetitions.json) and every run's record."""

    output_dir: Path
    summary: dict[str, Any]
    records: list[dict[str, Any]]            # in the order of the plan (position 1 first)
    write_errors: list[str] = field(default_factory=list)   # record files that could not be written (a full disk)

    def runs(self, arm: str | None = None, valid: bool | None = True) -> list[dict[str, Any]]:
        """Records of one arm (or all), valid ones by default (``valid=None``: every record)."""
        return [r for r in self.records if (arm is None or r["arm"] == arm) and (valid is None or r["valid"] is valid)]

    def not_runnable(self) -> dict[str, str]:
        """Arm -> why it could not run here (the first such run's reason)."""
        out: dict[str, str] = {}
        for r in self.records:
            if r["status"] == "not runnable":
                out.setdefault(r["arm"], r["reason"])
        return out

    def capabilities(self) -> list[dict[str, Any]]:
        """Every capability line of every run, each once, in order of first appearance."""
        seen, out = set(), []
        for r in self.records:
            for c in r.get("capabilities", []):
                key = json.dumps(c, sort_keys=True, default=str)
                if key not in seen:
                    seen.add(key)
                    out.append(c)
        return out

    def statistics(self) -> pd.DataFrame:
        return statistics_table(self.records)

    def path(self, record: dict[str, Any]) -> Path:
        return self.output_dir / record["dir"]


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds")


def _plain(value: Any) -> Any:
    return asdict(value) if is_dataclass(value) and not isinstance(value, type) else str(value)


def _jsonable(value: Any) -> Any:
    """The arm's configuration as plain JSON (dataclasses as dicts, tuples as lists, anything else as str)."""
    return json.loads(json.dumps(_plain(value) if is_dataclass(value) else value, default=_plain))


def _statistic(s: Statistic) -> dict[str, Any]:
    """A statistic as the record keeps it (numpy numbers as Python ones)."""
    if not isinstance(s, Statistic):
        raise TypeError(f"a run function returns Statistic objects, got {type(s).__name__}: {s!r}")
    return {"name": str(s.name), "value": None if s.value is None else float(s.value),
            "n": None if s.n is None else int(s.n), "unit": str(s.unit), "definition": str(s.definition)}


def interleaved_order(arms: Sequence[str], repetitions: int, seed: int) -> list[dict[str, Any]]:
    """The order of the runs: one permuted block of the arms per round (see the module docstring)."""
    rng = np.random.default_rng(seed)
    order = []
    for rnd in range(1, repetitions + 1):
        for i in rng.permutation(len(arms)):
            order.append({"position": len(order) + 1, "round": rnd, "arm": arms[int(i)], "repetition": rnd,
                          "dir": f"raw/{arms[int(i)]}/rep{rnd}"})
    return order


def _plan(arms: Mapping[str, Any], repetitions: int, seed: int, rules: Sequence[Rule]) -> dict[str, Any]:
    return {"arms": {name: _jsonable(cfg) for name, cfg in arms.items()}, "repetitions": repetitions, "seed": seed,
            "order_method": ORDER_METHOD,
            "rules": [{"name": "completed", "description": "a run that was not runnable or failed is invalid"},
                      {"name": "not runnable here", "description": "once a run of an arm is not runnable, its "
                       "later runs are recorded not runnable with the same reason without running"},
                      *({"name": r.name, "description": r.description} for r in rules)]}


def _differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    out = []
    for key in ("repetitions", "seed"):
        if old.get(key) != new[key]:
            out.append(f"{key} {old.get(key)!r} there, {new[key]!r} here")
    old_arms, new_arms = old.get("arms", {}), new["arms"]
    if list(old_arms) != list(new_arms):
        out.append(f"arms {list(old_arms)} there, {list(new_arms)} here")
    for name in set(old_arms) & set(new_arms):
        a, b = old_arms[name], new_arms[name]
        if a != b:
            keys = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k)) if isinstance(a, dict) and \
                isinstance(b, dict) else []
            what = "; ".join(f"{k}: {a.get(k)!r} there, {b.get(k)!r} here" for k in keys[:4]) or f"{a!r} vs {b!r}"
            out.append(f"arm {name!r} configured differently ({what})")
    if old.get("rules") != new["rules"]:
        out.append(f"validity rules {[r['name'] for r in old.get('rules', [])]} there, "
                   f"{[r['name'] for r in new['rules']]} here")
    return out


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise BenchbookError(f"{path}: line {exc.lineno} column {exc.colno}: not valid JSON ({exc.msg}); "
                             "expected a file written by benchbook's repetition runner") from None
    if not isinstance(data, dict):
        raise BenchbookError(f"{path}: expected a JSON object")
    return data


def _read_record(run_dir: Path) -> dict[str, Any] | None:
    path = run_dir / RECORD_FILE
    return _read_json(path) if path.is_file() else None


def _write_record(run_dir: Path, record: dict[str, Any]) -> None:
    write_json_atomic(run_dir / RECORD_FILE, record)


def statistics_table(records: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """The tidy per-run table: one row per (run, statistic)."""
    rows = [{"arm": r["arm"], "statistic": s["name"], "run": r["repetition"], "position": r["position"],
             "value": s["value"], "n": s["n"], "unit": s["unit"], "definition": s["definition"],
             "valid": bool(r["valid"])} for r in records for s in r.get("statistics", [])]
    df = pd.DataFrame(rows, columns=list(TABLE_COLUMNS))
    return df.astype({"arm": "string", "statistic": "string", "run": "int64", "position": "int64",
                      "value": "float64", "n": "Int64", "unit": "string", "definition": "string", "valid": "bool"})


def _summary(plan: dict[str, Any], order: list[dict[str, Any]], records: list[dict[str, Any] | None]
             ) -> dict[str, Any]:
    runs, excluded = [], []
    counts = {"planned": len(order), "complete": 0, "valid": 0, "not runnable": 0, "failed": 0, "interrupted": 0,
              "running": 0, "pending": 0}
    for slot, rec in zip(order, records, strict=True):
        if rec is None:
            counts["pending"] += 1
            runs.append({**slot, "status": "pending"})
            continue
        counts[rec["status"]] += 1
        counts["valid"] += bool(rec["valid"])
        runs.append({**slot, "status": rec["status"], "valid": rec["valid"], "reason": rec["reason"],
                     "invalid_by": rec["invalid_by"], "started": rec["started"], "ended": rec["ended"],
                     "attempts": 1 + len(rec.get("previous_attempts", []))})
        excluded += [{"arm": rec["arm"], "repetition": rec["repetition"], **x} for x in rec["invalid_by"]]
    return {"schema": SCHEMA, "plan": plan, "order": order, "runs": runs, "counts": counts, "excluded": excluded,
            "statistics_table": TABLE_FILE, "updated": _now()}


class _Runner:
    def __init__(self, out: Path, arms: Mapping[str, Any], plan: dict[str, Any], run: RunFunction,
                 rules: Sequence[Rule], progress: Callable[[str], None] | None) -> None:
        self.out, self.arms, self.plan, self.run_fn, self.rules, self.progress = out, arms, plan, run, rules, progress
        self.order = interleaved_order(list(arms), plan["repetitions"], plan["seed"])
        self.records: list[dict[str, Any] | None] = [_read_record(out / s["dir"]) for s in self.order]
        self.write_errors: list[str] = []

    def write_summary(self) -> None:
        write_json_atomic(self.out / SUMMARY_FILE, _summary(self.plan, self.order, self.records))
        table = statistics_table([r for r in self.records if r is not None])
        with atomic_path(self.out / TABLE_FILE) as tmp:
            table.to_parquet(tmp, index=False)

    def keep_going(self, write: Callable[[], None], what: str) -> None:
        """Write a record file; when that fails (a full disk) the runs go on and the file is named in
        ``write_errors`` (what was measured stays in memory and in the result)."""
        try:
            write()
        except OSError as exc:
            self.write_errors.append(f"{what}: [Errno {exc.errno}] {exc.strerror}")

    def say(self, text: str) -> None:
        if self.progress is not None:
            self.progress(text)

    def move_aside(self, i: int) -> dict[str, Any]:
        """The unfinished attempt in slot ``i``: its record marked (an abandoned "running" one as interrupted)
        and its directory renamed to rep<k>.attempt<a>; returns what the next record lists of it."""
        slot, rec = self.order[i], self.records[i]
        run_dir = self.out / slot["dir"]
        if rec is None:
            rec = {"status": "interrupted", "reason": "interrupted before its record was written", "started": None}
        elif rec["status"] == "running":
            rec.update(status="interrupted", valid=False, ended=None,
                       reason=f"interrupted: the process running it (pid {rec['owner']['pid']} on "
                              f"{rec['owner']['host']}) ended without finishing its record (killed, e.g. by "
                              "SIGKILL, or the machine stopped); its files are as that process left them")
            _write_record(run_dir, rec)
        n = 1
        while (aside := run_dir.with_name(f"{run_dir.name}.attempt{n}")).exists():
            n += 1
        os.rename(run_dir, aside)
        return {"dir": str(aside.relative_to(self.out)), "status": rec["status"], "reason": rec["reason"],
                "started": rec.get("started")}

    def run_slot(self, i: int) -> None:
        slot = self.order[i]
        previous = list((self.records[i] or {}).get("previous_attempts", []))
        run_dir = self.out / slot["dir"]
        if run_dir.exists():
            previous.append(self.move_aside(i))
        run_dir.mkdir(parents=True)
        rec: dict[str, Any] = {
            "schema": RECORD_SCHEMA, "arm": slot["arm"], "dir": slot["dir"], "config": self.plan["arms"][slot["arm"]],
            "repetition": slot["repetition"], "round": slot["round"], "position": slot["position"],
            "seed": self.plan["seed"], "status": "running", "reason": None, "valid": None, "invalid_by": [],
            "started": _now(), "ended": None, "duration_s": None,
            "owner": {"host": socket.gethostname(), "pid": os.getpid()}, "statistics": [], "metrics": {},
            "capabilities": [], "previous_attempts": previous}
        self.keep_going(lambda: _write_record(run_dir, rec), str(run_dir / RECORD_FILE))
        self.records[i] = rec
        gone = self.not_runnable_before(i)
        ctx = RunContext(slot["arm"], self.arms[slot["arm"]], slot["repetition"], slot["round"], slot["position"],
                         run_dir, CommandLog(run_dir))
        t0 = time.monotonic()
        try:
            if gone is not None:
                raise NotRunnable(f"not run: {gone}")
            with terminate_raises():
                stats = list(self.run_fn(ctx))
            rec["statistics"] = [_statistic(s) for s in stats]
            rec["status"] = "complete"
        except NotRunnable as exc:
            rec.update(status="not runnable", reason=str(exc))
        except Exception:
            rec.update(status="failed", reason=traceback.format_exc())
        except BaseException as exc:    # Ctrl-C, SIGTERM/SIGHUP (Terminated), SystemExit: record it and go on up
            rec.update(status="interrupted", reason=f"interrupted by {type(exc).__name__}"
                                                    + (f": {exc}" if str(exc) else ""), valid=False)
            self.finish(i, ctx, t0)
            raise
        self.finish(i, ctx, t0)

    def finish(self, i: int, ctx: RunContext, t0: float) -> None:
        rec = self.records[i]
        assert rec is not None
        rec.update(ended=_now(), duration_s=round(time.monotonic() - t0, 3), metrics=ctx.metrics,
                   capabilities=ctx.capabilities)
        if rec["status"] != "complete":
            first = (rec["reason"] or "").strip().splitlines()
            rec["invalid_by"] = [{"rule": "completed", "reason": f"{rec['status']}: " + (first[-1] if first else "")}]
        else:
            for rule in self.rules:
                why = rule.check(rec)
                if why:
                    rec["invalid_by"].append({"rule": rule.name, "reason": why})
        rec["valid"] = rec["status"] == "complete" and not rec["invalid_by"]
        rec = json.loads(json.dumps(rec, default=str))
        self.records[i] = rec
        run_dir = self.out / self.order[i]["dir"]
        self.keep_going(lambda: _write_record(run_dir, rec), str(run_dir / RECORD_FILE))
        self.keep_going(self.write_summary, f"{self.out / SUMMARY_FILE} or {self.out / TABLE_FILE}")
        verdict = rec["status"] + ("" if rec["valid"] or rec["status"] != "complete"
                                   else f", invalid: {'; '.join(x['reason'] for x in rec['invalid_by'])}")
        if rec["status"] in ("not runnable", "failed"):
            verdict += f": {(rec['reason'] or '').strip().splitlines()[-1]}"
        self.say(f"[{rec['position']}/{len(self.order)}] {rec['arm']} repetition {rec['repetition']}: {verdict}")

    def not_runnable_before(self, i: int) -> str | None:
        for slot, rec in zip(self.order[:i], self.records[:i], strict=True):
            if rec is not None and slot["arm"] == self.order[i]["arm"] and rec["status"] == "not runnable":
                return f"repetition {rec['repetition']} of arm {rec['arm']} was not runnable: " \
                       + rec["reason"].removeprefix("not run: ")
        return None


def run_repetitions(output_dir: Path | str, arms: Mapping[str, Any], repetitions: int, run: RunFunction, *,
                    seed: int | None = None, rules: Sequence[Rule] = (),
                    progress: Callable[[str], None] | None = print) -> RepetitionSet:
    """Run every arm ``repetitions`` times in the seeded interleaved order, or finish doing so (see the module
    docstring). ``arms``: name -> configuration (recorded as JSON, handed to ``run`` as ``ctx.config``); names
    are directory names."""
    if not arms:
        raise ValueError("arms: expected at least one arm")
    if repetitions < 1:
        raise ValueError(f"repetitions: expected at least 1, got {repetitions}")
    for name in arms:
        if not ARM_NAME.fullmatch(name):
            raise ValueError(f"arm name {name!r}: expected letters, digits and . _ @ + = - (it names a directory)")
    names = {r.name for r in rules}
    if len(names) < len(rules) or names & {"completed", "not runnable here"}:
        raise ValueError(f"rules: names must be unique and not 'completed' or 'not runnable here', got "
                         f"{[r.name for r in rules]}")
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    with FileLock(out / LOCK_FILE, blocking=False, description=f"repetitions in {out}"):
        summary_path = out / SUMMARY_FILE
        old = _read_json(summary_path)["plan"] if summary_path.is_file() else None
        if seed is None:
            seed = int(old["seed"]) if old else secrets.randbelow(2**32)
        plan = _plan(arms, repetitions, seed, rules)
        if old is not None and (diff := _differences(old, plan)):
            raise PlanMismatch(f"{summary_path}: holds runs of a different plan ({'; '.join(diff)}); resume with the "
                               "same plan, or give another output directory")
        if old is None and (out / "raw").is_dir() and any((out / "raw").glob(f"*/*/{RECORD_FILE}")):
            raise PlanMismatch(f"{out}: holds run records under raw/ but no {SUMMARY_FILE}; give another output "
                               "directory")
        runner = _Runner(out, arms, plan, run, rules, progress)
        runner.write_summary()
        todo = [i for i, rec in enumerate(runner.records) if rec is None or rec["status"] not in FINISHED]
        if len(todo) < len(runner.order):
            runner.say(f"resuming in {out}: {len(runner.order) - len(todo)} of {len(runner.order)} runs finished, "
                       f"{len(todo)} to do (seed {seed})")
        for i in todo:
            slot = runner.order[i]
            runner.say(f"[{slot['position']}/{len(runner.order)}] {slot['arm']} repetition {slot['repetition']} "
                       f"of {repetitions} (round {slot['round']})")
            runner.run_slot(i)
        records = [r for r in runner.records if r is not None]
        result = RepetitionSet(out, _summary(plan, runner.order, runner.records), records, runner.write_errors)
    failed = [r for r in records if r["status"] == "failed"]
    if failed:
        raise RunsFailed(f"{len(failed)} of {len(records)} runs failed (each record keeps its traceback; the other "
                         "runs are recorded; calling again redoes the failed ones): " + "; ".join(
                             f"{r['dir']}: "
                             f"{r['reason'].strip().splitlines()[-1]}" for r in failed[:3]), result)
    return result


__all__ = ["PlanMismatch", "RepetitionSet", "RunContext", "RunFunction", "Rule", "RunsFailed", "Statistic",
           "interleaved_order", "run_repetitions", "statistics_table"]
