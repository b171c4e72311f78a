"""The test command mutmut runs for each mutant (tests/mutations/score.py): pytest on the tests given, in the copy
of the tree, with the kernels under numba's JIT and a fresh numba cache directory.

    MUTATE_MUTANT=LINE:INDEX run_tests.py -- TEST...

Settings come from the JSON file MUTATE_RUN_CONFIG names (score.py writes it per module): the tree, the log, the
warm numba cache, the kernel modules the mutated file reaches, the timeouts, and the socket of the fork server
(forkserver.py) that runs pytest in a fresh child process, else pytest runs as a new process. The fresh cache directory
is a copy of the warm cache (filled by the unmutated tree's coverage pass) without the entries of any kernel
module that imports the mutated file directly or indirectly: those compile afresh from the mutant, the others
load what the unmutated tree compiled. Exit status 0 when the tests pass (the mutant survived), 1 when one
fails, errors, or is ended by the per-test timeout (killed; the log says which and by what). score.py counts a
kill only with its log entry, so a failure of this script itself is never a kill. mutmut's rerun of the module's
list after a mutant outside the selection passed that whole list by node id (passed_just_before) collects the tests
with the mutant in place and runs them only when one of them was not in the list (a kernel line's survivor ran every
test twice before, a minute each for the TCP kernels).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def fresh_cache(warm: Path, dest: Path, stale_stems: list[str]) -> None:
    """Copy the warm numba cache to dest, leaving out the files of the kernel modules in stale_stems."""
    prefixes = tuple(f"{s}." for s in stale_stems)
    if warm.is_dir():
        shutil.copytree(warm, dest, ignore=lambda d, names: [n for n in names if n.startswith(prefixes)])
    else:
        dest.mkdir(parents=True)


def main(argv: list[str]) -> int:
    mutant = os.environ.get("MUTATE_MUTANT", "baseline")  # set by mutmut_config.pre_mutation
    if argv[:1] == ["--"]:
        argv = argv[1:]
    cfg = json.loads(Path(os.environ["MUTATE_RUN_CONFIG"]).read_text())
    tree = Path(cfg["tree"])
    record = {"module": cfg["module"], "mutant": mutant, "tests": len(argv)}
    if mutant != "baseline":
        record["line"] = os.environ.get("MUTATE_MUTANT_LINE", "")  # score.py matches the entry to the line's text
        if os.environ.get("MUTATE_SAMPLED"):
            record["sampled"] = os.environ["MUTATE_SAMPLED"]  # tested as part of that score.py --sample run's sample
        if os.environ.get("MUTATE_EQUIVALENT"):  # survived every test before and is recorded equivalent (score.py)
            record.update(outcome="survived", rc=0, failed=[], seconds=0.0,
                          detail="recorded equivalent (tests/mutations/equivalent.toml or a rule) after it survived "
                                 "the module's whole list: not run again")
            _log(cfg, record)
            return 0
    if not argv:  # no test runs the mutated line
        record.update(outcome="survived", detail="no test selected", seconds=0.0)
        _log(cfg, record)
        return 0
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bb-mutant-cache-") as tmp:
        cache = Path(tmp) / "numba"
        fresh_cache(Path(cfg["warm_cache"]), cache, cfg["stale_stems"] if mutant != "baseline" else [])
        args = ["-x", "-q", "--no-header", "-p", "no:cacheprovider", "--tb=line",
                "-o", "addopts=-ra --import-mode=importlib", f"--timeout={cfg['test_timeout_s']}",
                "-o", "timeout_method=thread", *argv]
        env = {"BENCHBOOK_KERNELS": "jit", "NUMBA_CACHE_DIR": str(cache), "BENCHBOOK_SHARED": cfg["shared"],
               "PYTHONDONTWRITEBYTECODE": "1"}
        passed = passed_just_before(cfg, record, argv)
        if passed is not None:
            collected = _collected(cfg, tree, argv, env)
            if collected is not None and collected <= passed:
                record.update(outcome="survived", rc=0, failed=[], seconds=round(time.monotonic() - t0, 2),
                              detail=f"the {len(collected)} tests collected from these files all passed in the run "
                                     f"just before (by node id): not run twice")
                _log(cfg, record)
                return 0
        if cfg.get("server"):
            sys.path.insert(0, str(Path(__file__).resolve().parent))
            from forkserver import request  # noqa: PLC0415 a sibling script: importable once its directory is on sys.path

            mutated = tree / "lib" / "benchbook" / cfg["module"]
            pyc = [str(p) for p in (mutated.parent / "__pycache__").glob(f"{mutated.stem}.*.pyc")]
            try:
                answer = request(cfg["server"], {"args": args, "env": env, "cache": str(cache), "drop_pyc": pyc,
                                                 "timeout_s": cfg["run_timeout_s"]})
                rc, out = answer["rc"], answer["output"]
            except (OSError, ValueError, KeyError) as exc:  # the server is gone: this run's exit would be a "kill"
                record["server"] = f"{type(exc).__name__}: {exc}; pytest ran as a new process"
                rc, out = _subprocess(cfg, tree, args, env)
        else:
            rc, out = _subprocess(cfg, tree, args, env)
    failed = re.findall(r"^(?:FAILED|ERROR) (\S+)", out, re.M)
    if rc is None or ("Timeout" in out and "+++++" in out):
        outcome = "timeout"
    elif rc == 0 or rc == 5:  # 5: nothing collected (every selected test deselected or skipped)
        outcome = "survived"
    else:
        outcome = "killed"
    record.update(outcome=outcome, rc=rc, failed=failed[:3], seconds=round(time.monotonic() - t0, 2))
    if outcome != "survived" and not failed:
        record["tail"] = out[-600:]
    _log(cfg, record)
    if mutant == "baseline":
        if outcome != "survived":
            sys.stdout.write(out[-5000:])
        # mutmut ends a mutant's run itself after 10 times its baseline run, without a word in the log; the
        # baseline lasts long enough that this run's own timeout (logged, the child ended) always comes first
        time.sleep(max(0.0, (cfg["run_timeout_s"] + 60) / 10 - (time.monotonic() - t0)))
    return 0 if outcome == "survived" else 1


def passed_just_before(cfg: dict, record: dict, argv: list[str]) -> set[str] | None:
    """The node ids of the selection's whole list when this run is mutmut's rerun of the module's list
    (--rerun-all) right after the same mutant passed that whole list by node id (a mutant outside the selection:
    mutmut_config sets MUTATE_SELECTED=all); else None. The rerun is then needed only for a test the run before
    did not hold (the caller compares what pytest collects now)."""
    if os.environ.get("MUTATE_SELECTED") != "all" or not os.environ.get("MUTATE_SELECTION"):
        return None
    every = json.loads(Path(os.environ["MUTATE_SELECTION"]).read_text())["all"]
    if argv == every or not Path(cfg["log"]).is_file():
        return None  # this is the run by node id itself
    with open(cfg["log"], "rb") as fh:
        fh.seek(0, os.SEEK_END)
        fh.seek(max(0, fh.tell() - 65536))
        lines = fh.read().decode("utf-8", "replace").splitlines()
    last = json.loads(lines[-1]) if lines else {}
    same = (last.get("mutant"), last.get("line"), last.get("tests")) == (record["mutant"], record.get("line"),
                                                                       len(every))
    return set(every) if same and last.get("outcome") == "survived" and "detail" not in last else None


def _collected(cfg: dict, tree: Path, argv: list[str], env: dict[str, str]) -> set[str] | None:
    """The node ids pytest collects from argv with the mutant in place, or None when collecting fails."""
    rc, out = _subprocess(cfg, tree, ["--collect-only", "-q", "--no-header", "-p", "no:cacheprovider",
                                      "-o", "addopts=--import-mode=importlib", *argv], env)
    if rc != 0:
        return None
    ids = {line.strip() for line in out.splitlines() if "::" in line and not line.startswith(" ")}
    return ids or None


def _subprocess(cfg: dict, tree: Path, args: list[str], extra: dict[str, str]) -> tuple[int | None, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MUTATE_", "NUMBA_", "PYTHON"))}
    env.update(extra, PYTHONPATH=str(tree / "lib"))
    proc = subprocess.Popen([cfg["python"], "-m", "pytest", *args], cwd=tree, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=cfg["run_timeout_s"])
        return proc.returncode, out
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        return None, proc.communicate()[0]


def _log(cfg: dict, record: dict) -> None:
    with open(cfg["log"], "a", encoding="utf-8") as fh:
        fh.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
