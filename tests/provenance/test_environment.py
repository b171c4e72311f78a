"""git_dirty in the run record also counts untracked files the run read (real git, temporary repo)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from benchbook.provenance.environment import git_state, untracked_paths


@pytest.fixture
def repo(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git not installed")
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.org", "PATH": "/usr/bin:/bin"}
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, env=env)
    (tmp_path / "tracked.csv").write_text("a\n1\n")
    (tmp_path / ".gitignore").write_text("ignored.csv\n")
    subprocess.run(["git", "-C", str(tmp_path), "add", "."], check=True, env=env)
    subprocess.run(["git", "-C", str(tmp_path), "commit", "-q", "-m", "init"], check=True, env=env)
    return tmp_path


def test_clean_tree_reading_tracked_files_is_not_dirty(repo):
    state = git_state(repo, read_paths=[repo / "tracked.csv"])
    assert state["git_dirty"] is False
    assert state["git_untracked_inputs"] == []


def test_untracked_input_makes_the_tree_dirty(repo, tmp_path_factory):
    (repo / "data").mkdir()
    (repo / "data" / "new.csv").write_text("b\n2\n")
    (repo / "ignored.csv").write_text("c\n")
    outside = tmp_path_factory.mktemp("elsewhere") / "x.csv"
    outside.write_text("d\n")
    state = git_state(repo, read_paths=[repo / "tracked.csv", repo / "data", repo / "ignored.csv", outside])
    assert state["git_dirty"] is True
    assert state["git_untracked_inputs"] == ["data/new.csv"]
    # an untracked file the run did not read leaves the flag alone
    assert git_state(repo, read_paths=[repo / "tracked.csv"])["git_dirty"] is False


def test_modified_tracked_file_is_dirty_without_inputs(repo):
    (repo / "tracked.csv").write_text("a\n2\n")
    assert git_state(repo)["git_dirty"] is True
    assert untracked_paths(repo, []) == []
