"""The mutation-score harness itself (score.py, run_tests.py, forkserver.py): a failure of the harness is never a
killed mutant. A fork server that died once (a client killed while it waited made its answer a BrokenPipeError)
turned every later mutant of judge.py into a "kill" that no test had run."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import socket
import sys
import time
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"mutation_harness_{name}", HERE / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up while the class is made
    spec.loader.exec_module(mod)
    return mod


sys.path.insert(0, str(HERE))  # score.py and mutmut_config.py import their sibling sampling.py
forkserver = _load("forkserver")
run_tests = _load("run_tests")
score = _load("score")
mutmut_main = _load("mutmut_main")
mutmut_config = _load("mutmut_config")
sampling = _load("sampling")


def test_a_client_that_hangs_up_is_seen():
    server_end, client_end = socket.socketpair()
    with server_end:
        assert not forkserver._hung_up(server_end)
        client_end.close()
        assert forkserver._hung_up(server_end)


def test_the_server_ends_the_child_of_a_client_that_hung_up():
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its own session, as the server's children, then a hang
        os.setsid()
        os.write(ready_w, b"x")
        time.sleep(60)
        os._exit(0)
    os.read(ready_r, 1)
    os.close(ready_r)
    os.close(ready_w)
    server_end, client_end = socket.socketpair()
    client_end.close()
    t0 = time.monotonic()
    with server_end:
        assert forkserver._wait(pid, 120.0, server_end) is None
    assert time.monotonic() - t0 < 10
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # reaped


def _state(pid: int) -> str:
    """The process's state letter (Z: ended, not yet reaped), or "" when it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return ""


def test_a_pytest_child_ends_with_its_server():
    r, w = os.pipe()
    server = os.fork()
    if server == 0:                          # the server: forks a child that hangs, then ends without waiting
        kid = os.fork()
        if kid == 0:
            forkserver.die_with_parent(os.getppid())
            time.sleep(60)
            os._exit(0)
        os.write(w, str(kid).encode())
        time.sleep(0.5)
        os._exit(0)
    os.close(w)
    kid = int(os.read(r, 32))
    os.close(r)
    os.waitpid(server, 0)
    deadline = time.monotonic() + 10
    while _state(kid) not in ("", "Z") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _state(kid) in ("", "Z")


def _tree(tmp_path: Path, test_body: str) -> tuple[Path, list[str]]:
    tree = tmp_path / "tree"
    (tree / "lib" / "benchbook").mkdir(parents=True)
    (tree / "tests").mkdir()
    (tree / "tests" / "test_one.py").write_text(f"def test_one():\n    {test_body}\n")
    cfg = {"module": "x.py", "tree": str(tree), "python": sys.executable, "log": str(tmp_path / "log.jsonl"),
           "warm_cache": str(tmp_path / "no-warm-cache"), "stale_stems": [], "shared": str(tmp_path),
           "test_timeout_s": 60, "run_timeout_s": 120, "server": str(tmp_path / "no-server.sock")}
    (tmp_path / "run.json").write_text(json.dumps(cfg))
    return tmp_path / "run.json", ["tests/test_one.py"]


@pytest.mark.parametrize(("body", "rc", "outcome"), [("assert True", 0, "survived"), ("assert False", 1, "killed")])
def test_a_server_that_is_gone_leaves_the_outcome_to_the_tests(tmp_path, monkeypatch, body, rc, outcome):
    cfg, tests = _tree(tmp_path, body)
    monkeypatch.setenv("MUTATE_RUN_CONFIG", str(cfg))
    monkeypatch.setenv("MUTATE_MUTANT", "7:1")
    assert run_tests.main(["--", *tests]) == rc
    (record,) = [json.loads(line) for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert (record["mutant"], record["outcome"]) == ("7:1", outcome)
    assert record["server"].startswith(("FileNotFoundError", "ConnectionRefusedError"))
    assert record["server"].endswith("pytest ran as a new process")


def _mutant(status: str, outcome: str | None) -> object:
    return score.Mutant(3, 0, status, "x = 1", "x = 2", {"outcome": outcome} if outcome else {})


def test_a_kill_counts_only_with_its_log_entry():
    m = score.Module("x.py", ["tests/test_x.py"])
    row = score.tally(m, [_mutant("ok_killed", "killed"), _mutant("ok_suspicious", "timeout"),
                          _mutant("bad_timeout", None), _mutant("bad_survived", "survived")])
    assert (row.killed, row.timeout, row.survived, row.untested, row.score) == (3, 2, 1, 0, 0.75)
    for unproven in (_mutant("ok_killed", None), _mutant("ok_killed", "survived"), _mutant("bad_survived", None),
                     _mutant("ok_suspicious", "error")):
        row = score.tally(m, [_mutant("ok_killed", "killed"), unproven])
        assert (row.killed, row.untested, row.score) == (1, 1, None)


def test_a_log_entry_counts_for_the_line_it_names():
    """mutmut moves a line's number when lines above it change, keeping its mutants' statuses: an entry under the
    same "line:index" that names another line's text is not this mutant's."""
    killed = {"mutant": "83:0", "outcome": "killed", "line": "x = 1"}
    other = {"mutant": "83:0", "outcome": "survived", "line": "y = 2"}
    legacy = {"mutant": "83:0", "outcome": "killed"}
    assert score.log_entry([killed], "x = 1") == killed
    assert score.log_entry([killed], "y = 2") == {}
    assert score.log_entry([killed, other], "x = 1") == {}          # the latest run there was another line's
    assert score.log_entry([other, killed], "x = 1") == killed
    assert score.log_entry([legacy], "anything") == legacy           # written before entries named their line
    assert score.log_entry([], "x = 1") == {}


@dataclasses.dataclass(frozen=True)
class _MutationId:  # the fields of mutmut's RelativeMutationID that its cache reads
    line: str
    index: int
    line_number: int


def test_a_mutant_on_a_repeated_line_gets_its_own_status():
    """mutmut 2.5.1's get_cached_mutation_statuses looks a line up by its text and keeps the first hit by text
    alone; asked one line number at a time, each mutant gets the status of its own line."""
    db = {("continue", 174): {0: "ok_killed"}, ("continue", 176): {0: "untested"}, ("x = 1", 3): {0: "bad_survived",
                                                                                                  1: "ok_killed"}}

    def mutmut_lookup(filename, mutations, hash_of_tests):  # as mutmut 2.5.1 does it
        line_by_text, out = {}, {}
        for mid in mutations:
            if mid.line not in line_by_text:
                line_by_text[mid.line] = (mid.line, mid.line_number)
            out[mid] = db[line_by_text[mid.line]][mid.index]
        return out

    ids = [_MutationId("x = 1", 0, 3), _MutationId("x = 1", 1, 3), _MutationId("continue", 0, 174),
           _MutationId("continue", 0, 176)]
    assert mutmut_lookup("f.py", ids, "h")[ids[3]] == "ok_killed"  # the bug: line 177 is never run again
    fixed = mutmut_main.statuses_line_by_line(mutmut_lookup)("f.py", ids, "h")
    assert fixed == {ids[0]: "bad_survived", ids[1]: "ok_killed", ids[2]: "ok_killed", ids[3]: "untested"}


def test_saved_kills_come_back_only_for_the_source_they_were_measured_on():
    """A module's kills saved (with the failing tests and the source's sha256) come back as the same mutants with
    the same log entries; survivors, unproven kills and untested mutants are not saved (they are tested again); a
    source changed by one byte gets nothing back."""
    source = b"def f(x):\n    y = x + 1\n    return y * 2\n"
    m = score.Module("x.py", ["tests/test_x.py"])
    t = "tests/test_x.py::test_f[a b]"
    mutants = [score.Mutant(2, 0, "ok_killed", "    y = x + 1", "    y = x - 1", {"outcome": "killed", "failed": [t]}),
               score.Mutant(2, 1, "bad_timeout", "    y = x + 1", "    y = x + 2", {}),
               score.Mutant(3, 0, "ok_suspicious", "    return y * 2", "    return y / 2",
                            {"outcome": "timeout", "failed": []}),
               score.Mutant(3, 1, "bad_survived", "    return y * 2", "    return y * 3", {"outcome": "survived"}),
               score.Mutant(3, 2, "ok_killed", "    return y * 2", "    return None", {}),      # no log entry
               score.Mutant(1, 0, "untested", "def f(x):", "?", {})]
    form = json.loads(json.dumps(score.saved_form(m, source, mutants)))
    assert form["tests"] == [t] and len(form["mutants"]) == 3
    back = score.saved_kills(form, source)
    assert [(text, index, n, status) for text, index, n, status, _ in back] == [
        ("    y = x + 1", 0, 1, "ok_killed"), ("    y = x + 1", 1, 1, "bad_timeout"),
        ("    return y * 2", 0, 2, "ok_suspicious")]
    restored = [score.Mutant(n + 1, index, status, text, "", entry) for text, index, n, status, entry in back]
    assert [score.logged(mu) for mu in restored] == [True, True, True]
    assert restored[0].outcome["failed"] == [t] and restored[0].outcome["mutant"] == "2:0"
    assert score.log_entry([restored[2].outcome], "    return y * 2")["outcome"] == "timeout"
    row = score.tally(m, restored)
    assert (row.killed, row.timeout) == (3, 2)
    assert score.saved_kills(form, source.replace(b"+ 1", b"+ 2")) == []


def test_kills_are_not_saved_from_a_tree_whose_module_differs_from_the_source(tmp_path, monkeypatch):
    """A run stopped in the middle of a mutant leaves that mutant in the tree's copy: saving then would record the
    mutant's sha256, and no later run could restore the kills."""
    repo, tree = tmp_path / "repo", tmp_path / "tree-0"
    for root, text in ((repo, "x = 1\n"), (tree, "x = 2\n")):
        (root / "lib" / "benchbook").mkdir(parents=True)
        (root / "lib" / "benchbook" / "x.py").write_text(text)
    monkeypatch.setattr(score, "REPO", repo)
    monkeypatch.setattr(score, "find_tree", lambda m: tree)
    monkeypatch.setattr(score, "RESULTS", tmp_path / "results")
    msg = score.save_results(score.Module("x.py", []))
    assert msg.startswith("x.py: not saved: the tree's copy differs") and not (tmp_path / "results").exists()


def test_a_sync_stopped_midway_keeps_mutmuts_cache_for_the_next(tmp_path, monkeypatch):
    """The tenth session lost tcp_flows' cache when a run was ended while it copied the tree (the cache was held
    in memory, between the tree's removal and the copy): it now waits beside the tree until the copy is made."""
    repo, tree = tmp_path / "repo", tmp_path / "tree-0"
    (repo / "lib").mkdir(parents=True)
    (repo / "lib" / "x.py").write_text("x = 1\n")
    tree.mkdir()
    (tree / ".mutmut-cache").write_bytes(b"measured")
    monkeypatch.setattr(score, "REPO", repo)
    real_copytree = score.shutil.copytree

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(score.shutil, "copytree", stopped)
    with pytest.raises(KeyboardInterrupt):
        score.sync_tree(tree)
    assert not tree.exists() and (tmp_path / "tree-0.mutmut-cache").read_bytes() == b"measured"
    monkeypatch.setattr(score.shutil, "copytree", real_copytree)
    score.sync_tree(tree)
    assert (tree / ".mutmut-cache").read_bytes() == b"measured" and (tree / "lib" / "x.py").is_file()
    assert not (tmp_path / "tree-0.mutmut-cache").exists()
    (tree / ".mutmut-cache").write_bytes(b"newer")
    score.sync_tree(tree)  # and an ordinary sync keeps it as it is
    assert (tree / ".mutmut-cache").read_bytes() == b"newer"


def test_a_mutant_outside_the_selection_runs_every_test_the_quickest_first():
    durations = {"t.py::slow": 22.6, "t.py::b": 0.1, "t.py::a": 0.1, "u.py::mid[1-2]": 1.04}
    assert score.quickest_first(durations, ["t.py", "u.py"]) == ["t.py::a", "t.py::b", "u.py::mid[1-2]", "t.py::slow"]
    assert score.quickest_first({}, ["t.py", "u.py"]) == ["t.py", "u.py"]  # no durations: the module's list


@pytest.mark.parametrize(("extra", "rc", "ran"), [
    ("", 0, False),                                     # the same tests: not run again
    ("def test_three():\n    assert False\n", 1, True),  # a test the run by node id did not hold: run, and kills
])
def test_the_rerun_of_the_whole_list_runs_only_what_the_run_by_node_id_did_not(tmp_path, monkeypatch, extra, rc, ran):
    """mutmut's --rerun-all after a kernel line's mutant passed every test by node id (run_tests.passed_just_before):
    pytest collects the files with the mutant in place; only a test outside the list sends them to run again."""
    cfg, tests = _tree(tmp_path, "assert True")
    test_file = tmp_path / "tree" / tests[0]
    test_file.write_text(test_file.read_text() + "\n\ndef test_two():\n    assert True\n\n\n" + extra)
    every = [f"{tests[0]}::test_two", f"{tests[0]}::test_one"]
    (tmp_path / "selection.json").write_text(json.dumps({"runner": [], "all": every, "lines": {}}))
    monkeypatch.setenv("MUTATE_RUN_CONFIG", str(cfg))
    monkeypatch.setenv("MUTATE_SELECTION", str(tmp_path / "selection.json"))
    monkeypatch.setenv("MUTATE_SELECTED", "all")
    monkeypatch.setenv("MUTATE_MUTANT", "7:1")
    monkeypatch.setenv("MUTATE_MUTANT_LINE", "x = 1")
    assert run_tests.main(["--", *every]) == 0  # the run by node id: both pass
    conf = json.loads(cfg.read_text())
    assert run_tests.passed_just_before(conf, {"mutant": "7:1", "line": "x = 1"}, tests) == set(every)
    # another mutant's survival, the same number on another line, or the run by node id itself never stand in
    assert run_tests.passed_just_before(conf, {"mutant": "8:0", "line": "x = 1"}, tests) is None
    assert run_tests.passed_just_before(conf, {"mutant": "7:1", "line": "x = 2"}, tests) is None
    assert run_tests.passed_just_before(conf, {"mutant": "7:1", "line": "x = 1"}, every) is None
    monkeypatch.setenv("MUTATE_SELECTED", "line")  # a selected line's mutant ran only its own tests
    assert run_tests.passed_just_before(conf, {"mutant": "7:1", "line": "x = 1"}, tests) is None
    monkeypatch.setenv("MUTATE_SELECTED", "all")
    assert run_tests.main(["--", *tests]) == rc  # mutmut's rerun of the module's list
    first, second = [json.loads(line) for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert (first["outcome"], first["tests"], "detail" in first) == ("survived", 2, False)
    assert second["outcome"] == ("killed" if rc else "survived")
    assert ("detail" not in second) == ran
    if not ran:
        assert "2 tests collected" in second["detail"]


def test_the_sample_is_seeded_of_its_fraction_and_drawn_anew_by_each_run():
    keys = [(n, f"line {n % 97}", i) for n in range(1, 4001) for i in range(5)]
    run, later = "2026-11-27T18:00:00Z", "2026-11-27T19:00:00Z"
    small = {k for k in keys if sampling.in_sample(*k, 0.1, run)}
    large = {k for k in keys if sampling.in_sample(*k, 0.3, run)}
    assert small <= large and small == {k for k in keys if sampling.in_sample(*k, 0.1, run)}  # a run's draw is fixed
    assert small != {k for k in keys if sampling.in_sample(*k, 0.1, run, seed=1)}
    # 20,000 Bernoulli draws: the counts lie within 5 standard deviations of 2,000 and 6,000
    assert abs(len(small) - 2000) < 5 * (20000 * 0.1 * 0.9) ** 0.5
    assert abs(len(large) - 6000) < 5 * (20000 * 0.3 * 0.7) ** 0.5
    # what an earlier run (0.4) left out is sampled by a later run (0.2) at its fraction, not never: the bias of a
    # draw by line and index alone, which made tcp_rtt's "sample" 2 of 119 mutants
    left_out = [k for k in keys if not sampling.in_sample(*k, 0.4, run)]
    again = [k for k in left_out if sampling.in_sample(*k, 0.2, later)]
    assert abs(len(again) - 0.2 * len(left_out)) < 5 * (len(left_out) * 0.2 * 0.8) ** 0.5


def test_the_sampled_score_bound_holds_for_known_truth():
    """Simulation with known truth: 300 mutants measured whole (270 killed, 12 surviving, 18 equivalent) and 700 not
    yet (kill share among the non-equivalent 0.92, 8 % equivalent), sampled at 15 % 2,000 times: the lower bound
    lies below the true score in at least 95 % of the samples, and the estimate is within half a point of it on
    average."""
    rng = np.random.default_rng(7)
    outcome = np.array(["e"] * 56 + ["k"] * 594 + ["s"] * 50)  # 700 - 56 = 644 non-equivalent, 594 killed
    true = (270 + 594) / (270 + 12 + 644)
    below, ests = 0, []
    for _ in range(2000):
        pick = outcome[rng.random(outcome.size) < 0.15]
        k, s, e = (int(np.sum(pick == c)) for c in "kse")
        est, lower = sampling.estimate(270, 12, k, s, e, outcome.size - pick.size)
        assert lower <= est
        below += lower <= true
        ests.append(est)
    assert below >= 0.95 * 2000
    assert abs(np.mean(ests) - true) < 0.005
    with pytest.raises(ValueError, match="no non-equivalent"):
        sampling.estimate(10, 0, 0, 0, 3, 50)


def test_a_sampled_run_counts_its_strata_apart():
    """tally(): a mutant the sample left out (mutmut's status skipped, no log entry) is unsampled, one of the
    module's latest sample carries its stamp in its log entry, and any other entry (an earlier sample's too)
    counts as measured whole; the score is the estimate's, never a measured one, until a run without --sample."""
    m = score.Module("x.py", ["tests/test_x.py"])
    def mu(status, outcome=None, sampled=False, equivalent=""):
        entry = {"outcome": outcome} if outcome else {}
        if sampled:
            entry["sampled"] = sampled
        return score.Mutant(3, 0, status, "x = 1", "x = 2", entry, equivalent)
    now, earlier = "2026-11-27T18:40:00Z", "2026-11-27T17:40:00Z"
    mutants = ([mu("ok_killed", "killed")] * 30 + [mu("ok_killed", "killed", earlier)] * 10
               + [mu("bad_survived", "survived")] + [mu("bad_survived", "survived", earlier)]
               + [mu("ok_killed", "killed", now)] * 18 + [mu("bad_survived", "survived", now)]
               + [mu("bad_survived", "survived", now, "a reason")] + [mu("skipped")] * 80)
    row = score.tally(m, mutants, now)
    assert (row.killed, row.survived, row.equivalent, row.untested, row.unsampled) == (58, 3, 1, 0, 80)
    assert (row.sampled_killed, row.sampled_survived, row.sampled_equivalent, row.sampled) == (18, 1, 1, 20)
    assert row.score is None
    est, lower = row.estimate()
    assert (est, lower) == sampling.estimate(40, 2, 18, 1, 1, 80)
    assert 0.9 < est < 0.97 and lower < est
    assert score._lowest(row) == lower
    # a mutant left untested besides (a stopped run): no estimate
    assert score.tally(m, [*mutants, mu("untested")], now).estimate() is None
    # without the stamp (no sample run recorded) nothing is a sample: the skipped leave the module unscored
    assert score.tally(m, mutants).sampled == 0 and score.tally(m, mutants).estimate() is None


@dataclasses.dataclass
class _Config:
    test_command: str = ""


@dataclasses.dataclass
class _Context:  # the fields of mutmut's Context that pre_mutation reads and sets
    mutation_id: _MutationId
    config: _Config
    skip: bool = False


def test_pre_mutation_tests_the_measured_and_the_sampled_and_skips_the_rest(tmp_path, monkeypatch):
    every = ["tests/test_x.py::test_a"]
    fraction = 0.5
    ids = [_MutationId("x = 1", i, n) for n in range(40) for i in range(2)]
    measured = ["1:0", "7:1"]
    sel = {"runner": ["run"], "all": every, "lines": {}, "sample": {"fraction": fraction, "seed": sampling.SEED,
                                                                    "stamp": "S", "measured": measured},
           "equivalent_survivors": {"7:1": "x = 1", "1:0": "x = 9"}}
    (tmp_path / "sel.json").write_text(json.dumps(sel))
    monkeypatch.setenv("MUTATE_SELECTION", str(tmp_path / "sel.json"))
    mutmut_config._selection.cache_clear()
    for mid in ids:
        ctx = _Context(mid, _Config())
        mutmut_config.pre_mutation(ctx)
        key = f"{mid.line_number + 1}:{mid.index}"
        wanted = sampling.in_sample(mid.line_number + 1, mid.line, mid.index, fraction, "S")
        if key in measured:
            assert not ctx.skip and os.environ["MUTATE_SAMPLED"] == ""
        elif wanted:
            assert not ctx.skip and os.environ["MUTATE_SAMPLED"] == "S" and ctx.config.test_command.endswith(every[0])
        else:
            assert ctx.skip and ctx.config.test_command == ""
        if not ctx.skip:  # a reviewed equivalent survivor, on the line it was reviewed on, is not run again
            assert os.environ["MUTATE_EQUIVALENT"] == ("1" if key == "7:1" else "")
    mutmut_config._selection.cache_clear()


def test_a_reviewed_equivalent_survivor_is_logged_survived_without_running(tmp_path, monkeypatch):
    cfg, tests = _tree(tmp_path, "assert False")  # a test that would kill it
    monkeypatch.setenv("MUTATE_RUN_CONFIG", str(cfg))
    monkeypatch.setenv("MUTATE_MUTANT", "8:1")
    monkeypatch.setenv("MUTATE_MUTANT_LINE", "x = 1")
    monkeypatch.setenv("MUTATE_EQUIVALENT", "1")
    assert run_tests.main(["--", *tests]) == 0
    (record,) = [json.loads(line) for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert record["outcome"] == "survived" and record["detail"].startswith("recorded equivalent")
    monkeypatch.setenv("MUTATE_EQUIVALENT", "")
    assert run_tests.main(["--", *tests]) == 1  # not reviewed: the tests run, and kill it
