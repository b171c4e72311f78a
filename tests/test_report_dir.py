"""report_dir: a report appears whole or not at all; a rerun replaces the report's files in the same directory,
keeps files that are not the report's, removes named files the rerun did not write, loses nothing on failure."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from benchbook import report_dir as rd

NAMES = ("a.parquet", "summary.json", "report.html")


def _write(work: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (work / name).write_text(text)


def _previous(out: Path) -> None:
    out.mkdir()
    _write(out, {"a.parquet": "old a", "report.html": "old html", "summary.json": "old summary",
                 "notes.txt": "the user's"})
    (out / "sub").mkdir()
    (out / "sub" / "kept").write_text("kept")
    os.chmod(out, 0o750)


def _check_rerun(out: Path) -> None:
    assert sorted(p.name for p in out.iterdir()) == ["a.parquet", "notes.txt", "sub", "summary.json"]
    assert (out / "a.parquet").read_text() == "new a" and (out / "summary.json").read_text() == "new summary"
    assert (out / "notes.txt").read_text() == "the user's" and (out / "sub" / "kept").read_text() == "kept"
    assert oct(out.stat().st_mode & 0o777) == oct(0o750)
    assert [p.name for p in out.parent.iterdir() if p.name.startswith(".")] == []


def test_new_directory_is_renamed_into_place(tmp_path: Path) -> None:
    out = tmp_path / "deep" / "out"
    with rd.report_dir(out, NAMES) as work:
        _write(work, {"a.parquet": "new a"})
        assert not out.exists()
    assert [p.name for p in out.iterdir()] == ["a.parquet"]
    assert [p.name for p in out.parent.iterdir()] == ["out"]


def test_rerun_replaces_the_report_in_the_same_directory(tmp_path: Path) -> None:
    """out stays the same directory (a process working in it, such as a notebook kernel whose cwd it is, keeps
    its place) and each file of the report is the new one."""
    out = tmp_path / "out"
    _previous(out)
    inode = out.stat().st_ino
    held = (out / "a.parquet").open()  # a reader holding the previous file keeps reading it whole
    cwd = os.getcwd()
    try:
        os.chdir(out)
        with rd.report_dir(out, NAMES) as work:
            _write(work, {"a.parquet": "new a", "summary.json": "new summary"})
        assert Path(os.getcwd()).resolve() == out.resolve() and Path("notes.txt").read_text() == "the user's"
    finally:
        os.chdir(cwd)
    assert held.read() == "old a"
    held.close()
    assert out.stat().st_ino == inode
    _check_rerun(out)


def test_failed_move_puts_the_previous_file_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    _previous(out)
    real = os.rename

    def rename(src, dst):
        if Path(src).name == "summary.json" and Path(src).parent.name.startswith(".out.tmp-"):  # new -> out
            raise OSError(28, "No space left on device")
        return real(src, dst)

    monkeypatch.setattr(rd.os, "rename", rename)
    with pytest.raises(OSError, match="No space left"):
        with rd.report_dir(out, NAMES) as work:
            _write(work, {"a.parquet": "new a", "summary.json": "new summary"})
    assert (out / "summary.json").read_text() == "old summary"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_symlinked_output_stays_a_link(tmp_path: Path) -> None:
    real = tmp_path / "real"
    _previous(real)
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    with rd.report_dir(link, NAMES) as work:
        _write(work, {"a.parquet": "new a", "summary.json": "new summary"})
    assert link.is_symlink() and link.resolve() == real.resolve()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "real"]
    assert sorted(p.name for p in real.iterdir()) == ["a.parquet", "notes.txt", "sub", "summary.json"]
    assert (real / "a.parquet").read_text() == "new a"


def test_failure_leaves_the_previous_report_exactly(tmp_path: Path) -> None:
    out = tmp_path / "out"
    _previous(out)
    before = {p.name: p.read_text() for p in out.iterdir() if p.is_file()}
    with pytest.raises(RuntimeError, match="half way"):
        with rd.report_dir(out, NAMES) as work:
            _write(work, {"a.parquet": "half"})
            raise RuntimeError("half way")
    assert {p.name: p.read_text() for p in out.iterdir() if p.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
