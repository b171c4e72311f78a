"""Mutation score of the modules whose results users rely on (make mutate-score).

For each module listed in tests/mutations/modules.toml, mutmut 2 (pinned in manifests/mutate-requirements.lock,
installed into build/mutate-site) plants every mutant it knows, one at a time, in a copy of the tree (without
.git and .venv) and runs the tests that cover the module (tests/mutations/run_tests.py: kernels under numba's JIT,
a fresh numba cache directory per mutant). First a coverage pass runs the module's tests once on the unmutated
copy (they must pass) and records which test runs each line (tests/mutations/coverage_contexts.py): a mutant in a
function body runs only the tests that ran that line, and the whole list when it survives them (--rerun-all);
any other mutant (module level, signatures, numba kernels, lines no test ran in process) runs the whole list.

    .venv/bin/python tests/mutations/score.py                  # every listed module (make mutate-score)
    .venv/bin/python tests/mutations/score.py analysis/hdr.py  # one module
    .venv/bin/python tests/mutations/score.py --report         # the table of the last run(s) again
    .venv/bin/python tests/mutations/score.py --survivors analysis/hdr.py

A mutant is killed when a test fails or errors, or when the per-test timeout ends a hang (counted in the timeout
column as well); surviving mutants reviewed as equivalent (tests/mutations/equivalent.toml, each with its reason,
and three rules: XX wrapped around words of an error or warning message; numba's cache= or nogil= flipped; an
annotation of an annotated assignment changed in a module that never evaluates its annotations) leave
the denominator: score = killed / (mutants - equivalent). A kill counts only with run_tests.py's log entry saying a
test failed or the timeout ended the run (logged()); a mutant without one is untested and the module has no score.
Results stay in build/mutate/ (mutmut's cache in the tree copy, the per-mutant log, report.md); a rerun of a module
tests only its survivors and unproven mutants again unless --fresh. After each module's run its kills (with their
log entries) are saved to tests/mutations/results/<module>.json with the sha256 of the source they were measured
on, to be committed: a run without --fresh on a tree that holds nothing of the module starts from them when the
source is still the same (a fresh machine need not measure a module again from nothing; survivors are always
tested again). `--save` writes them from build/mutate/ alone.

`--sample FRACTION` (sampling.py) tests a mutant not measured yet only when it falls in a seeded sample of that
fraction (drawn anew by each run) and records the others skipped; the table then gives the score estimated from
the measured mutants and the sample, with its 95 % lower bound, and the sample's size. A run without --sample tests
the skipped ones.
"""

from __future__ import annotations

import argparse
import ast
import datetime as _dt
import hashlib
import json
import os
import re
import shlex
import shutil
import sqlite3
import subprocess
import sys
import time
import tomllib
import xml.etree.ElementTree as ET
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from queue import Queue

from sampling import SEED, estimate

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
WORK = REPO / "build" / "mutate"
SITE = REPO / "build" / "mutate-site"
PYTHON = REPO / ".venv" / "bin" / "python"
MODULES_FILE = HERE / "modules.toml"
EQUIVALENT_FILE = HERE / "equivalent.toml"
RESULTS = HERE / "results"
KERNEL_IMPORT = re.compile(r"^from benchbook\.kernels import .*\bnjit\b", re.M)
DONE = ("ok_killed", "ok_suspicious", "bad_timeout", "bad_survived", "skipped")


@dataclass
class Module:
    path: str  # relative to lib/benchbook
    tests: list[str]
    round: int = 1
    note: str = ""

    @property
    def slug(self) -> str:
        return self.path.removesuffix(".py").replace("/", ".")

    @property
    def lib_path(self) -> str:
        return f"lib/benchbook/{self.path}"


@dataclass
class Mutant:
    line_number: int  # 1-based
    index: int
    status: str
    original: str
    mutated: str
    outcome: dict = field(default_factory=dict)
    equivalent: str = ""


def load_modules() -> list[Module]:
    data = tomllib.loads(MODULES_FILE.read_text())
    return [Module(**m) for m in data["module"]]


def load_equivalents() -> list[dict]:
    if not EQUIVALENT_FILE.is_file():
        return []
    return tomllib.loads(EQUIVALENT_FILE.read_text()).get("mutant", [])


# -- the copy of the tree ------------------------------------------------------------------------------------------

def tree_dir(worker: int) -> Path:
    return WORK / f"tree-{worker}"


def sync_tree(dest: Path) -> None:
    """dest becomes a copy of the working tree (without .git, .venv, build, runs); mutmut's cache stays. While
    the copy is made the cache waits beside the tree (<tree>.mutmut-cache), so that a sync stopped midway (a
    run ended while it copies) loses none of the module's measured mutants: the next sync takes it back."""
    keep = dest / ".mutmut-cache"
    aside = dest.with_name(dest.name + ".mutmut-cache")
    if keep.is_file():
        os.replace(keep, aside)
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(REPO, dest, symlinks=True, ignore=shutil.ignore_patterns(
        ".venv", ".git", "build", "__pycache__", ".pytest_cache", ".ipynb_checkpoints", "runs", ".hypothesis",
        ".mutmut-cache"))
    shutil.copy2(HERE / "mutmut_config.py", dest / "mutmut_config.py")
    if aside.is_file():
        os.replace(aside, keep)


def kernel_stems_reaching(lib_path: str) -> list[str]:
    """Stems of the kernel modules whose compiled code may hold something of lib_path (benchbook.kernels'
    dependency_sources): their numba cache entries are left out of a mutant's fresh cache."""
    sys.path.insert(0, str(REPO / "lib"))
    from benchbook import kernels as kn  # noqa: PLC0415 from the tree's lib/, put on sys.path just above

    target = (REPO / lib_path).resolve()
    stems = []
    for path in sorted(kn._package_root().rglob("*.py")):
        if "__pycache__" in path.parts or not KERNEL_IMPORT.search(path.read_text(encoding="utf-8")):
            continue
        if target in kn.dependency_sources([path]):
            stems.append(path.stem)
    return stems


# -- coverage pass and test selection --------------------------------------------------------------------------------

def env_for_tests(tree: Path, cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MUTATE_", "NUMBA_", "PYTHON"))}
    env.update(PYTHONDONTWRITEBYTECODE="1", BENCHBOOK_KERNELS="jit", NUMBA_CACHE_DIR=str(cache),
               BENCHBOOK_SHARED=os.environ.get("BENCHBOOK_SHARED", str(REPO.parent / "shared")))
    return env


def coverage_pass(tree: Path, m: Module, out: Path) -> tuple[dict[str, float], dict[int, set[str]], str]:
    """Run the module's tests on the unmutated copy under coverage: (durations by node id, contexts by line,
    pytest's output). Raises RuntimeError when a test fails."""
    data_file = out / f"{m.slug}.coverage"
    junit = out / f"{m.slug}.junit.xml"
    for f in (data_file, junit):
        f.unlink(missing_ok=True)
    env = env_for_tests(tree, WORK / "warm-cache")
    env.update(PYTHONPATH=os.pathsep.join([str(tree / "lib"), str(HERE), str(SITE)]),
               MUTATE_COVERAGE_FILE=str(data_file), MUTATE_COVERAGE_INCLUDE=str(tree / m.lib_path))
    cmd = [str(PYTHON), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "coverage_contexts",
           f"--junitxml={junit}", "-o", "addopts=-ra --import-mode=importlib", *m.tests]
    proc = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"the tests of {m.path} fail on the unmutated tree:\n"
                           f"{proc.stdout[-4000:]}{proc.stderr[-2000:]}")
    durations: dict[str, float] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        node = _node_id(case.get("classname", ""), case.get("name", ""), m.tests)
        if node:
            durations[node] = float(case.get("time", "0"))
    sys.path.insert(0, str(SITE))
    from coverage import CoverageData  # noqa: PLC0415 from build/mutate-site, put on sys.path just above

    data = CoverageData(basename=str(data_file))
    data.read()
    contexts: dict[int, set[str]] = defaultdict(set)
    for fname in data.measured_files():
        for line, ctxs in data.contexts_by_lineno(fname).items():
            contexts[line].update(ctxs)
    return durations, contexts, proc.stdout


def _node_id(classname: str, name: str, tests: list[str]) -> str:
    """pytest's node id from a junit testcase (classname "tests.analysis.test_hdr" or "...test_hdr.TestX")."""
    parts = classname.split(".")
    for i in range(len(parts), 0, -1):
        path = "/".join(parts[:i]) + ".py"
        if (REPO / path).is_file():
            return "::".join([path, *parts[i:], name])
    return ""


def statement_spans(source: str) -> tuple[dict[int, tuple[int, int]], set[int]]:
    """For each line inside a function body (not a numba kernel): the span of its innermost statement; and the
    lines of numba kernels (functions decorated with njit)."""
    tree = ast.parse(source)
    spans: dict[int, tuple[int, int]] = {}
    kernel_lines: set[int] = set()

    def visit_body(stmts: list[ast.stmt]) -> None:
        for st in stmts:
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit_function(st)
                continue
            if isinstance(st, ast.ClassDef):
                visit_class(st)
                continue
            for line in range(st.lineno, (st.end_lineno or st.lineno) + 1):
                spans[line] = (st.lineno, st.end_lineno or st.lineno)
            for child in ("body", "orelse", "finalbody", "handlers"):
                sub = getattr(st, child, None)
                if sub:
                    visit_body([s for s in sub if isinstance(s, ast.stmt)] if child != "handlers" else
                               [s for h in sub for s in h.body])
            for case in getattr(st, "cases", []) or []:
                visit_body(case.body)

    def visit_function(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if any("njit" in ast.unparse(d) for d in fn.decorator_list):
            kernel_lines.update(range(fn.lineno, (fn.end_lineno or fn.lineno) + 1))
            for d in fn.decorator_list:
                kernel_lines.update(range(d.lineno, (d.end_lineno or d.lineno) + 1))
            return
        visit_body(fn.body)
        # the signature (defaults, annotations) and decorators: import time, the whole list
        first_body = fn.body[0].lineno
        for line in range(min([fn.lineno, *(d.lineno for d in fn.decorator_list)]), first_body):
            spans.pop(line, None)

    def visit_class(cls: ast.ClassDef) -> None:
        for st in cls.body:
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit_function(st)
            elif isinstance(st, ast.ClassDef):
                visit_class(st)

    for st in tree.body:
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
            visit_function(st)
        elif isinstance(st, ast.ClassDef):
            visit_class(st)
    return spans, kernel_lines


def selection(source: str, contexts: dict[int, set[str]], known: set[str]) -> dict[str, list[str]]:
    """line -> the tests to run for a mutant there (lines not listed run the module's whole list)."""
    spans, kernel_lines = statement_spans(source)
    out: dict[str, list[str]] = {}
    for line, (a, b) in spans.items():
        if line in kernel_lines:
            continue
        tests: set[str] = set()
        for ln in range(a, b + 1):
            tests.update(c.split("|")[0] for c in contexts.get(ln, ()) if c)
        tests &= known
        if tests:
            out[str(line)] = sorted(tests)
    return out


def quickest_first(durations: dict[str, float], tests: list[str]) -> list[str]:
    """The tests a mutant outside the selection runs (a kernel line, a signature): every test the coverage pass ran,
    by node id, the quickest first; with -x a kill ends at its first failing test, and a survivor runs them all in
    either order (and then the module's list as given, mutmut's --rerun-all). The list as given without durations."""
    return sorted(durations, key=lambda node: (durations[node], node)) or list(tests)


# -- running mutmut --------------------------------------------------------------------------------------------------

def run_module(m: Module, worker: int, fresh: bool, sample: float | None = None) -> str:
    """Run mutmut over one module in tree-<worker>; returns a line saying what happened."""
    tree = tree_dir(worker)
    out = WORK / "modules"
    out.mkdir(parents=True, exist_ok=True)
    log = out / f"{m.slug}.log.jsonl"
    if fresh:
        _forget(tree, m)
        log.unlink(missing_ok=True)
    else:
        if not _has_mutants(tree, m):
            print(restore_results(tree, m), flush=True)
        _reopen_unproven(tree, m)
    _forget_baseline_time(tree)
    (out / f"{m.slug}.tree").write_text(tree.name)  # where the module's latest results are
    t0 = time.monotonic()
    _drop_pyc(tree, m)
    try:
        durations, contexts, _ = coverage_pass(tree, m, out)
    except RuntimeError as exc:
        (out / f"{m.slug}.baseline-failed.txt").write_text(str(exc))
        return f"{m.path}: BASELINE FAILS (see {out / (m.slug + '.baseline-failed.txt')})"
    (out / f"{m.slug}.baseline-failed.txt").unlink(missing_ok=True)
    source = (tree / m.lib_path).read_text()
    known = set(durations)
    sel = selection(source, contexts, known)
    longest = max(durations.values(), default=1.0)
    run_cfg = {
        "module": m.path, "tree": str(tree), "python": str(PYTHON), "log": str(log),
        "warm_cache": str(WORK / "warm-cache"), "stale_stems": kernel_stems_reaching(m.lib_path),
        "shared": os.environ.get("BENCHBOOK_SHARED", str(REPO.parent / "shared")),
        "test_timeout_s": int(max(60, 4 * longest)),
        "run_timeout_s": int(max(300, 3 * sum(durations.values()), 4 * longest + 60)),  # the per-test one first
    }
    server = start_server(tree, WORK / f"server-{worker}.sock")
    if server is not None:
        run_cfg["server"] = str(WORK / f"server-{worker}.sock")
    cfg_path = out / f"{m.slug}.run.json"
    cfg_path.write_text(json.dumps(run_cfg, indent=1))
    runner = [str(PYTHON), str(tree / "tests" / "mutations" / "run_tests.py")]
    sel_path = out / f"{m.slug}.selection.json"
    body = {"runner": runner, "all": quickest_first(durations, m.tests), "lines": sel}
    before = read_mutants(tree, m)
    sample_file = out / f"{m.slug}.sample.json"
    if sample is not None:
        # the strata of this run: every mutant with an outcome already (measured whole) and the rest, of which
        # mutmut_config tests the seeded sample; the entries of this sample carry its stamp (tally)
        stamp = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        body["sample"] = {"fraction": sample, "seed": SEED, "stamp": stamp, "measured": sorted(
            f"{mu.line_number}:{mu.index}" for mu in before if mu.status in DONE and mu.status != "skipped"
            and logged(mu))}
        sample_file.write_text(json.dumps({k: body["sample"][k] for k in ("fraction", "seed", "stamp")}))
    else:
        sample_file.unlink(missing_ok=True)
    equivalents = load_equivalents()
    classify(before, m, equivalents, (tree / m.lib_path).read_text())
    # survivors reviewed as equivalent (a reason each) are not run again: run_tests.py logs them survived
    body["equivalent_survivors"] = {f"{mu.line_number}:{mu.index}": mu.original for mu in before
                                    if mu.status == "bad_survived" and mu.equivalent and logged(mu)}
    sel_path.write_text(json.dumps(body))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MUTATE_", "PYTHON"))}
    env.update(PYTHONPATH=str(SITE), MUTATE_RUN_CONFIG=str(cfg_path), MUTATE_SELECTION=str(sel_path))
    cmd = [str(PYTHON), str(tree / "tests" / "mutations" / "mutmut_main.py"), "run", "--paths-to-mutate", m.lib_path,
           "--tests-dir", "tests",
           "--runner", shlex.join([*runner, "--", *m.tests]), "--rerun-all", "--simple-output", "--no-progress"]
    try:
        proc = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True)
    finally:
        if server is not None:
            server.terminate()
            server.wait()
            Path(run_cfg["server"]).unlink(missing_ok=True)
        _drop_pyc(tree, m)  # a mutant's bytecode may pass the timestamp check against the restored source
    (out / f"{m.slug}.mutmut.txt").write_text(proc.stdout[-20000:] + proc.stderr[-5000:])
    mutants = read_mutants(tree, m)
    print(save_results(m, mutants), flush=True)
    n = len(mutants)
    return f"{m.path}: {n} mutants in {time.monotonic() - t0:.0f} s (selection for {len(sel)} lines)"


def start_server(tree: Path, sock: Path) -> subprocess.Popen | None:
    """The fork server (forkserver.py) for the tree's pytest runs; None (pytest as new processes) if it fails."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MUTATE_", "NUMBA_", "PYTHON"))}
    env.update(PYTHONPATH=str(tree / "lib"), PYTHONDONTWRITEBYTECODE="1", BENCHBOOK_KERNELS="jit",
               OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    proc = subprocess.Popen([str(PYTHON), str(HERE / "forkserver.py"), str(sock)], cwd=tree, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline() if proc.stdout else ""
    if line.strip() != "ready":
        proc.kill()
        print(f"fork server did not start ({proc.stderr.read()[-1000:] if proc.stderr else ''}); pytest runs as "
              f"new processes", file=sys.stderr)
        return None
    return proc


def _drop_pyc(tree: Path, m: Module) -> None:
    src = tree / m.lib_path
    for pyc in (src.parent / "__pycache__").glob(f"{src.stem}.*.pyc"):
        pyc.unlink(missing_ok=True)


def _has_mutants(tree: Path, m: Module) -> bool:
    """Whether mutmut's cache in the tree holds any mutant of the module (a query, not read_mutants: that one
    builds every mutated line)."""
    db = tree / ".mutmut-cache"
    if not db.is_file():
        return False
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT 1 FROM Mutant JOIN Line ON Mutant.line = Line.id JOIN SourceFile ON "
                           "Line.sourcefile = SourceFile.id WHERE SourceFile.filename = ? LIMIT 1",
                           (m.lib_path,)).fetchone() is not None
    except sqlite3.OperationalError:  # a cache mutmut created without its tables yet
        return False
    finally:
        con.close()


def _forget(tree: Path, m: Module) -> None:
    """Drop the module's mutants from mutmut's cache in the tree (a fresh measurement)."""
    db = tree / ".mutmut-cache"
    if not db.is_file():
        return
    con = sqlite3.connect(db)
    with con:
        ids = [r[0] for r in con.execute("SELECT id FROM SourceFile WHERE filename = ?", (m.lib_path,))]
        for sid in ids:
            con.execute("DELETE FROM Mutant WHERE line IN (SELECT id FROM Line WHERE sourcefile = ?)", (sid,))
            con.execute("DELETE FROM Line WHERE sourcefile = ?", (sid,))
            con.execute("DELETE FROM SourceFile WHERE id = ?", (sid,))
    con.close()


def _forget_baseline_time(tree: Path) -> None:
    """mutmut keeps one baseline time per tree (not per module) and ends a mutant's run itself after 10 times it;
    forgotten, every module's run times its own baseline, which run_tests.py makes last long enough for that
    module's timeouts to come first."""
    db = tree / ".mutmut-cache"
    if db.is_file():
        con = sqlite3.connect(db)
        with con:
            con.execute("DELETE FROM MiscData WHERE key = 'baseline_time_elapsed'")
        con.close()


def _reopen_unproven(tree: Path, m: Module) -> int:
    """Mark the module's mutants whose status the log does not bear out (logged()) untested in mutmut's cache, so
    that this run tests them (mutmut never tests a killed mutant again); returns how many. mutmut's own update of
    the lines' numbers to the file as it is now comes first (in a process of its own: mutmut binds its cache to
    the working directory once), so that a mutant whose line moved is checked under its new number."""
    if (tree / ".mutmut-cache").is_file():
        subprocess.run([str(PYTHON), "-c", "import sys; from mutmut.cache import update_line_numbers as u; "
                        "u(sys.argv[1])", m.lib_path], cwd=tree, env={**os.environ, "PYTHONPATH": str(SITE)},
                       check=True, capture_output=True)
    # a mutant a sampled run skipped is untested too (a later sampled run draws anew whether to test it)
    unproven = [mu for mu in read_mutants(tree, m) if mu.status in DONE and (not logged(mu) or mu.status == "skipped")]
    if not unproven:
        return 0
    con = sqlite3.connect(tree / ".mutmut-cache")
    with con:
        for mu in unproven:
            con.execute("UPDATE Mutant SET status = 'untested' WHERE \"index\" = ? AND line IN (SELECT Line.id "
                        "FROM Line JOIN SourceFile ON Line.sourcefile = SourceFile.id WHERE SourceFile.filename = ? "
                        "AND Line.line_number = ?)", (mu.index, m.lib_path, mu.line_number - 1))
    con.close()
    return len(unproven)


# -- saved results (committed) -----------------------------------------------------------------------------------------

def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def saved_form(m: Module, source: bytes, mutants: list[Mutant]) -> dict:
    """The module's kills borne out by the log (logged()), as saved: the source's sha256, the failing tests once,
    one [line, index, mutmut status, outcome, failing tests' indices] per mutant."""
    kills = [mu for mu in mutants if mu.status in ("ok_killed", "ok_suspicious", "bad_timeout") and logged(mu)]
    tests = sorted({t for mu in kills for t in mu.outcome.get("failed", [])})
    return {"module": m.path, "source_sha256": _sha256(source),
            "saved": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC"), "tests": tests,
            "mutants": [[mu.line_number, mu.index, mu.status, mu.outcome.get("outcome", ""),
                         [tests.index(t) for t in mu.outcome.get("failed", [])]] for mu in kills]}


def saved_kills(saved: dict, source: bytes) -> list[tuple[str, int, int, str, dict]]:
    """(line's text, index, 0-based line number, mutmut status, log entry) of each saved kill, or [] when the saved
    results were measured on another source (a kill is a property of the whole module as it was)."""
    if saved.get("source_sha256") != _sha256(source):
        return []
    lines = source.decode("utf-8").splitlines()
    out = []
    for line_number, index, status, outcome, failed in saved["mutants"]:
        text = lines[line_number - 1]
        entry = {"module": saved["module"], "mutant": f"{line_number}:{index}", "line": text, "outcome": outcome,
                 "failed": [saved["tests"][i] for i in failed], "restored_from": saved["saved"]}
        out.append((text, index, line_number - 1, status, entry))
    return out


def save_results(m: Module, mutants: list[Mutant] | None = None) -> str:
    """Write tests/mutations/results/<slug>.json from the module's tree (whole or not at all); `mutants`: its
    read_mutants, when the caller has them already (building every mutated line takes up to half a minute)."""
    tree = find_tree(m)
    if tree is None:
        return f"{m.path}: nothing to save"
    source = (tree / m.lib_path).read_bytes()
    if source != (REPO / m.lib_path).read_bytes():
        return (f"{m.path}: not saved: the tree's copy differs from {m.lib_path} (a mutant a stopped run left in it, "
                "or the source changed since the run): copy it back, or run the module again")
    form = saved_form(m, source, read_mutants(tree, m) if mutants is None else mutants)
    RESULTS.mkdir(exist_ok=True)
    dest = RESULTS / f"{m.slug}.json"
    tmp = dest.with_suffix(".json.tmp")
    body = ",\n".join(json.dumps(r) for r in form["mutants"])
    head = {k: v for k, v in form.items() if k != "mutants"}
    tmp.write_text(json.dumps(head, indent=1)[:-2] + ',\n "mutants": [\n' + body + "\n ]\n}\n")
    json.loads(tmp.read_text())  # what a later run reads back
    os.replace(tmp, dest)
    return f"{m.path}: {len(form['mutants'])} kills saved to {dest.relative_to(REPO)}"


def restore_results(tree: Path, m: Module) -> str:
    """Put the saved kills of the module into the tree's mutmut cache and its log, when the tree's source is the
    one they were measured on."""
    f = RESULTS / f"{m.slug}.json"
    if not f.is_file():
        return f"{m.path}: no saved results"
    saved = json.loads(f.read_text())
    kills = saved_kills(saved, (tree / m.lib_path).read_bytes())
    if not kills:
        return f"{m.path}: the saved results are of another version of it ({saved['saved']}): measured afresh"
    rows = WORK / "modules" / f"{m.slug}.restore.json"
    rows.write_text(json.dumps([[text, index, n, status] for text, index, n, status, _ in kills]))
    subprocess.run([str(PYTHON), str(HERE / "mutmut_main.py"), "restore", m.lib_path, str(rows)], cwd=tree,
                   env={**os.environ, "PYTHONPATH": str(SITE)}, check=True, capture_output=True)
    with (WORK / "modules" / f"{m.slug}.log.jsonl").open("a") as log:
        for *_, entry in kills:
            log.write(json.dumps(entry) + "\n")
    return f"{m.path}: {len(kills)} kills restored from {f.relative_to(REPO)} ({saved['saved']})"


# -- results -----------------------------------------------------------------------------------------------------------

def read_mutants(tree: Path, m: Module) -> list[Mutant]:
    """The module's mutants from mutmut's cache, with their mutated line and run_tests.py's last log entry."""
    db = tree / ".mutmut-cache"
    if not db.is_file():
        return []
    con = sqlite3.connect(db)
    rows = con.execute(
        "SELECT Line.line_number, Mutant.\"index\", Mutant.status, Line.line FROM Mutant JOIN Line ON Mutant.line = "
        "Line.id JOIN SourceFile ON Line.sourcefile = SourceFile.id WHERE SourceFile.filename = ? "
        "ORDER BY Line.line_number, Mutant.\"index\"", (m.lib_path,)).fetchall()
    con.close()
    source = (tree / m.lib_path).read_text()
    lines = source.splitlines()
    # mutmut keeps the rows of lines an earlier version of the file had: only the mutants of the source as it is
    # now count (a line's text at its number, as mutmut registers them)
    rows = [(n, i, st) for n, i, st, text in rows if n < len(lines) and lines[n] == text]
    log: dict[str, list[dict]] = defaultdict(list)
    logf = WORK / "modules" / f"{m.slug}.log.jsonl"
    if logf.is_file():
        for raw in logf.read_text().splitlines():
            rec = json.loads(raw)
            log[rec["mutant"]].append(rec)
    out = []
    for line_number, index, status in rows:
        original = lines[line_number] if line_number < len(lines) else ""
        mutated = _mutated_line(source, lines, line_number, index)
        out.append(Mutant(line_number + 1, index, status, original, mutated,
                          log_entry(log.get(f"{line_number + 1}:{index}", []), original)))
    return out


def log_entry(entries: list[dict], text: str) -> dict:
    """The log entry that tells a mutant's outcome: the last one under its "line:index", when it names the line's
    text as it is now. mutmut moves a line's number (and keeps its mutants' statuses) when lines above it are added
    or removed, so an entry under the same number may be another line's. Entries written before the log named
    the text (before 2026-11-27) are taken by their number."""
    best: dict = {}
    for rec in entries:
        best = rec if "line" not in rec or rec["line"] == text else {}
    return best


def _mutated_line(source: str, lines: list[str], line_number: int, index: int) -> str:
    sys.path.insert(0, str(SITE))
    from mutmut import Context, RelativeMutationID, mutate  # noqa: PLC0415 from build/mutate-site, put on sys.path just above

    ctx = Context(source=source, mutation_id=RelativeMutationID(lines[line_number], index, line_number))
    new, n = mutate(ctx)
    if n != 1:
        return "?"
    new_lines = new.splitlines()
    if line_number < len(new_lines):
        # a mutation may delete the line (e.g. a statement replaced by None keeps it; a removed decorator drops it)
        return new_lines[line_number] if len(new_lines) == len(lines) else "(line removed)"
    return "(line removed)"


MESSAGE_REASON = ("message text: the mutant only wraps words of an error or warning message in XX; the tests check "
                  "what the message names (file, position, limit, what was expected), which it still names")


NJIT_REASON = ("numba options cache= and nogil=: whether the compiled kernel is kept on disk and whether it "
               "releases the GIL change neither its results nor its errors")


ANNOTATION_REASON = ("annotation only: the module has `from __future__ import annotations` and nothing evaluates its "
                     "annotations (no typing.get_type_hints; dataclasses read them as text), so the mutant changes "
                     "only a string no code reads")


def annotation_only(source: str, original: str, mutated: str) -> bool:
    """True when `mutated` is `original` with only the annotation of an annotated assignment changed (the same
    target and value), in a module whose annotations stay unevaluated text."""
    if "from __future__ import annotations" not in source or "get_type_hints" in source:
        return False
    try:
        old, new = ast.parse(original.strip()).body, ast.parse(mutated.strip()).body
    except SyntaxError:
        return False
    if len(old) != 1 or len(new) != 1 or not isinstance(old[0], ast.AnnAssign) or not isinstance(new[0], ast.AnnAssign):
        return False
    a, b = old[0], new[0]
    return (ast.dump(a.target) == ast.dump(b.target) and ast.dump(a.annotation) != ast.dump(b.annotation)
            and (ast.dump(a.value) if a.value else None) == (ast.dump(b.value) if b.value else None))


def message_lines(source: str) -> set[int]:
    """Lines of raise statements and of calls building an exception or warning (warnings.warn, SomethingError(...),
    SomethingWarning(...), the readers' _truncated): where a string is message text."""
    lines: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        target = None
        if isinstance(node, ast.Raise):
            target = node
        elif isinstance(node, ast.Call):
            name = ast.unparse(node.func).rsplit(".", 1)[-1]
            if name in ("warn", "_truncated") or name.endswith(("Error", "Exception", "Warning")):
                target = node
        if target is not None:
            lines.update(range(target.lineno, (target.end_lineno or target.lineno) + 1))
    return lines


def classify(mutants: list[Mutant], m: Module, equivalents: list[dict], source: str) -> None:
    """Mark surviving mutants that are equivalent (a killed mutant is not: a test told it apart)."""
    messages = message_lines(source)
    for mu in mutants:
        if mu.status != "bad_survived":
            continue
        if (mu.line_number in messages and mu.mutated != mu.original
                and mu.mutated.replace("XX", "") == mu.original.replace("XX", "")):
            mu.equivalent = MESSAGE_REASON
            continue
        if (mu.original.strip().startswith("@njit(") and mu.mutated != mu.original
                and mu.mutated.replace("=False", "=True") == mu.original):
            mu.equivalent = NJIT_REASON
            continue
        if annotation_only(source, mu.original, mu.mutated):
            mu.equivalent = ANNOTATION_REASON
            continue
        for e in equivalents:
            if e["module"] != m.path or e["original"].strip() != mu.original.strip():
                continue
            if e.get("line") and int(e["line"]) != mu.line_number:
                continue
            if e["mutant"] == "*" or e["mutant"].strip() == mu.mutated.strip():
                mu.equivalent = e["reason"]
                break


@dataclass
class Row:
    module: str
    mutants: int = 0
    killed: int = 0
    survived: int = 0
    timeout: int = 0
    equivalent: int = 0
    untested: int = 0
    # --sample: the sample's kills, non-equivalent survivors and equivalents (also counted in the columns above),
    # and the mutants the sample left out
    sampled_killed: int = 0
    sampled_survived: int = 0
    sampled_equivalent: int = 0
    unsampled: int = 0

    @property
    def score(self) -> float | None:
        """The measured score: every mutant tested."""
        denom = self.mutants - self.equivalent
        return self.killed / denom if denom > 0 and not self.untested and not self.unsampled else None

    @property
    def sampled(self) -> int:
        return self.sampled_killed + self.sampled_survived + self.sampled_equivalent

    def estimate(self) -> tuple[float, float] | None:
        """(estimate, 95 % lower bound) of the score when a sample stands in for the unsampled mutants."""
        if not self.unsampled or self.untested or not (self.sampled_killed + self.sampled_survived):
            return None
        return estimate(self.killed - self.sampled_killed, self.survived - self.sampled_survived,
                        self.sampled_killed, self.sampled_survived, self.sampled_equivalent, self.unsampled)


def logged(mu: Mutant) -> bool:
    """Whether run_tests.py's log bears out mutmut's status. mutmut counts any non-zero exit of the test command as
    a kill, also one of run_tests.py itself (a fork server that did not answer once counted 264 mutants of judge.py
    killed that no test had run); a kill counts only with a log entry that says a test failed or the timeout ended
    the run. mutmut's own timeout (bad_timeout) ends run_tests.py before it can log, and stays a kill."""
    if mu.status in ("ok_killed", "ok_suspicious"):
        return mu.outcome.get("outcome") in ("killed", "timeout")
    if mu.status == "bad_survived":
        return mu.outcome.get("outcome") == "survived"
    return True


def tally(m: Module, mutants: list[Mutant], stamp: str | None = None) -> Row:
    """The row of the table; `stamp`: the module's latest --sample run (its entries are the sample of the mutants
    not measured before it; every other entry counts as measured whole)."""
    row = Row(m.path, mutants=len(mutants))
    for mu in mutants:
        sampled = stamp is not None and mu.outcome.get("sampled") == stamp
        if mu.status == "skipped" and not mu.outcome:
            row.unsampled += 1
        elif mu.status not in DONE or mu.status == "skipped" or not logged(mu):
            row.untested += 1
        elif mu.status in ("ok_killed", "ok_suspicious", "bad_timeout"):
            row.killed += 1
            row.sampled_killed += sampled
            if mu.status == "bad_timeout" or mu.outcome.get("outcome") == "timeout":
                row.timeout += 1
        elif mu.equivalent:
            row.equivalent += 1
            row.sampled_equivalent += sampled
        else:
            row.survived += 1
            row.sampled_survived += sampled
    return row


def find_tree(m: Module) -> Path | None:
    marker = WORK / "modules" / f"{m.slug}.tree"
    if marker.is_file():
        return WORK / marker.read_text().strip()
    for tree in sorted(WORK.glob("tree-*")):
        db = tree / ".mutmut-cache"
        if db.is_file():
            con = sqlite3.connect(db)
            hit = con.execute("SELECT 1 FROM SourceFile WHERE filename = ?", (m.lib_path,)).fetchone()
            con.close()
            if hit:
                return tree
    return None


def report(modules: list[Module], survivors_of: list[str] | None = None) -> tuple[str, list[Row]]:
    equivalents = load_equivalents()
    rows, lines, surv_lines, equiv_lines = [], [], [], []
    for m in modules:
        tree = find_tree(m)
        if tree is None:
            rows.append(Row(m.path))
            continue
        mutants = read_mutants(tree, m)
        classify(mutants, m, equivalents, (tree / m.lib_path).read_text())
        sample_file = WORK / "modules" / f"{m.slug}.sample.json"
        stamp = json.loads(sample_file.read_text())["stamp"] if sample_file.is_file() else None
        rows.append(tally(m, mutants, stamp))
        for mu in mutants:
            if mu.status == "bad_survived" and not mu.equivalent:
                surv_lines.append(f"{m.path}:{mu.line_number}  {mu.original.strip()}  ->  {mu.mutated.strip()}")
            elif mu.equivalent:
                equiv_lines.append(f"{m.path}:{mu.line_number}  {mu.original.strip()}  ->  {mu.mutated.strip()}"
                                   f"  ({mu.equivalent})")
    lines.append("| module | round | mutants | killed | survived | timeout | equivalent | score |")
    lines.append("|---|---|---|---|---|---|---|---|")
    by_path = {m.path: m for m in modules}
    for r in rows:
        est = r.estimate()
        if r.mutants == 0:
            score = "not run"
        elif r.score is not None:
            score = f"{100 * r.score:.1f} %"
        elif est is not None:
            score = (f"≈ {100 * est[0]:.1f} % (≥ {100 * est[1]:.1f} % at 95 %; a sample of {r.sampled} of the "
                     f"{r.sampled + r.unsampled} not measured before)")
        else:
            score = f"{r.untested + r.unsampled} untested"
        lines.append(f"| `{r.module}` | {by_path[r.module].round} | {r.mutants} | {r.killed} | {r.survived} | "
                     f"{r.timeout} | {r.equivalent} | {score} |")
    text = "\n".join(lines)
    if survivors_of is not None:
        text += "\n\nsurvivors:\n" + "\n".join(s for s in surv_lines if not survivors_of
                                               or s.split(":")[0] in survivors_of)
    text += f"\n\n{len(surv_lines)} survivors, {len(equiv_lines)} equivalent"
    (WORK / "survivors.txt").write_text("\n".join(surv_lines) + "\n")
    (WORK / "equivalent.txt").write_text("\n".join(equiv_lines) + "\n")
    return text, rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("modules", nargs="*", help="module paths under lib/benchbook (default: every listed module)")
    ap.add_argument("--round", type=int, help="only the modules of this round")
    ap.add_argument("--jobs", type=int, default=1, help="modules measured at once, each in its own tree copy")
    ap.add_argument("--first-tree", type=int, default=0,
                    help="number of the first tree copy to use (another run may use the others meanwhile)")
    ap.add_argument("--fresh", action="store_true", help="forget earlier results of the modules run")
    ap.add_argument("--report", action="store_true", help="only print the table of the results there are")
    ap.add_argument("--survivors", action="store_true", help="list the survivors (of the modules given)")
    ap.add_argument("--list", action="store_true", help="list the modules and their tests")
    ap.add_argument("--save", action="store_true", help="save the modules' kills to tests/mutations/results/")
    ap.add_argument("--sample", type=float, metavar="FRACTION",
                    help="test the mutants not measured yet only when in a seeded sample of this fraction")
    args = ap.parse_args(argv)
    modules = load_modules()
    unknown = set(args.modules) - {m.path for m in modules}
    if unknown:
        ap.error(f"not in {MODULES_FILE.name}: {', '.join(sorted(unknown))}")
    chosen = [m for m in modules if (not args.modules or m.path in args.modules)
              and (args.round is None or m.round == args.round)]
    if args.list:
        for m in chosen:
            print(f"{m.path} (round {m.round}): {' '.join(m.tests)}")
        return 0
    if args.save:
        for m in chosen:
            print(save_results(m))
        return 0
    if not args.report and not args.survivors:
        if not (SITE / "mutmut").is_dir():
            print(f"mutmut is not installed in {SITE}: `make mutate-score` installs it", file=sys.stderr)
            return 2
        WORK.mkdir(parents=True, exist_ok=True)
        # the tree copies live inside this checkout: without a ceiling, git run by the tests in a copy (run
        # records note the commit) finds this checkout's .git, reports its commit and takes its index lock
        os.environ["GIT_CEILING_DIRECTORIES"] = str(WORK)
        jobs = max(1, args.jobs)
        trees = [args.first_tree + w for w in range(jobs)]
        for w in trees:
            sync_tree(tree_dir(w))
        t0 = time.monotonic()
        if jobs == 1:
            for m in chosen:
                print(run_module(m, trees[0], args.fresh, args.sample), flush=True)
        else:
            free: Queue[int] = Queue()
            for w in trees:
                free.put(w)

            def one(m: Module) -> str:
                w = free.get()
                try:
                    return run_module(m, w, args.fresh, args.sample)
                finally:
                    free.put(w)

            with ThreadPoolExecutor(jobs) as pool:
                for line in pool.map(one, chosen):
                    print(line, flush=True)
        print(f"mutation runs took {(time.monotonic() - t0) / 60:.1f} min", flush=True)
    text, rows = report(modules if not args.modules else chosen,
                        survivors_of=args.modules if args.survivors else None)
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d")
    (WORK / "report.md").write_text(f"mutation score, {stamp}\n\n{text}\n")
    print(text)
    return 0 if all(_lowest(r) is not None and _lowest(r) >= 0.85 for r in rows if r.mutants) else 1


def _lowest(r: Row) -> float | None:
    """The measured score, else the estimate's lower bound (the goal must hold for it)."""
    est = r.estimate()
    return r.score if r.score is not None else (est[1] if est is not None else None)


if __name__ == "__main__":
    sys.exit(main())
