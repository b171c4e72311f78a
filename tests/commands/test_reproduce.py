"""`benchbook reproduce` end to end (papermill): Table III 8/8 with the repeats named; a wrong
published value in a user paper folder gives a mismatch and exit 1; a partial outcome exits 4, a
failing notebook 5, an entry that cannot run here 3; --list and --all say what cannot run here and
why; --show prints the notebook parameters; --dry-run prints the notebook's dry-run.txt."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest

from benchbook.commands.reproduce import EXIT_CODES
from benchbook.paths import NOTEBOOKS_DIR, REPO_ROOT
from conftest import SHARES_REPRODUCTIONS

SCHEERER = NOTEBOOKS_DIR / "scheerer-iitm23"


def run_cli(args, tmp_path, **env_extra):
    env = dict(os.environ, BENCHBOOK_RUNS=str(tmp_path / "runs"), COLUMNS="300", **env_extra)
    env.pop("BENCHBOOK_PAPERS", None)
    env.update(env_extra)
    proc = subprocess.run([sys.executable, "-m", "benchbook.cli", "reproduce", *args], capture_output=True,
                          text=True, env=env, cwd=REPO_ROOT, timeout=300)
    return proc.returncode, proc.stdout + proc.stderr


def only_run_dir(tmp_path: Path, figure_id: str) -> Path:
    dirs = list((tmp_path / "runs" / figure_id).iterdir())
    assert len(dirs) == 1
    return dirs[0]


def user_paper(tmp_path: Path, name: str = "my-copy") -> Path:
    """A user paper folder outside the repository with a copy of the scheerer notebook and module."""
    folder = tmp_path / "papers" / name
    folder.mkdir(parents=True)
    (folder / "paper.toml").write_text(f'id = "{name}"\ntitle = "t"\ncitation = "c"\n')
    for f in ("scheerer-iitm23-evt.ipynb", "scheerer.py"):
        (folder / f).write_bytes((SCHEERER / f).read_bytes())
    return folder


def test_exit_codes_are_distinct():
    assert EXIT_CODES == {"reproduced": 0, "figure redrawn": 0, "mismatch": 1, "skipped": 3, "partial": 4,
                          "failed": 5, "inconclusive": 6}  # a redrawn figure is a result, counted apart by its word


@pytest.mark.timeout(1200)
@SHARES_REPRODUCTIONS
def test_table3_reproduces_with_repeats_named(published_reproductions):
    out = published_reproductions.output_of("wiedner-itc23-table3")  # benchbook reproduce --all --paper wiedner-itc23
    assert published_reproductions.exit_codes["wiedner-itc23"] == 0, out
    assert "8/8 published values matched" in out and "wiedner-itc23-table3: reproduced" in out
    run_dir = published_reproductions.run_dir("wiedner-itc23-table3")
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert verdict["ok"] and verdict["counts"]["match"] == 8 and verdict["outcome"] == "reproduced"
    assert verdict["claim"]["status"] == "reproduced" and verdict["claim"]["text"]
    assert all(" repeat " in r["runs"] for r in verdict["rows"])
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "complete" and record["metrics"]["verdict"]["match"] == 8
    assert (run_dir / "evaluator-table.ipynb").is_file()
    # figures: HTML always; PNG/SVG exported, or the run record says why not
    exports = verdict["figures"]["table3-max-latency-by-repeat"]
    assert Path(exports["html"]).is_file()
    for fmt in ("png", "svg"):
        if exports[fmt].startswith("unavailable"):
            assert any(c["capability"] == f"figure export {fmt}" for c in record["capabilities"])
        else:
            assert Path(exports[fmt]).stat().st_size > 1000


@pytest.fixture
def short_tmp():
    """A directory with a short path: --list folds a paper folder's path that is wider than its column, and
    the tmp_path of a pytest-xdist worker is 10 characters longer than a serial run's."""
    d = Path(tempfile.mkdtemp(prefix="bb-"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.mark.slow
def test_user_paper_mismatch_partial_list_and_all(tmp_path, short_tmp):
    folder = user_paper(short_tmp)
    src = (SCHEERER / "scheerer-iitm23-return-level.toml").read_text()
    assert "value = 505\n" in src
    (folder / "my-return-level.toml").write_text(
        src.replace('id = "scheerer-iitm23-return-level"', 'id = "my-return-level"')
        .replace("value = 505\n", "value = 520\n"))
    (folder / "needs-a-testbed.toml").write_text(
        'id = "needs-a-testbed"\ntitle = "t"\nnotebook = "scheerer-iitm23-evt.ipynb"\n'
        'mode = "testbed-measurement"\nrequires = ["no-such-program-xyz", "testbed"]\n')
    code, out = run_cli(["--list", "--papers", str(folder)], tmp_path)
    assert code == 0, out
    assert "needs-a-testbed" in out and "program no-such-program-xyz not found" in out
    assert "scheerer-iitm23-return-level" in out and str(folder) in out
    code, out = run_cli(["--all", "--paper", "my-copy"], tmp_path, BENCHBOOK_PAPERS=str(folder.parent))
    assert code == 1, out
    assert "mismatch" in out and "skipped" in out and "BENCHBOOK_TESTBED" in out
    assert "outcomes: 1 mismatch, 1 skipped" in out
    verdict = json.loads((only_run_dir(tmp_path, "my-return-level") / "verdict.json").read_text())
    rows = {r["name"]: r for r in verdict["rows"]}
    assert rows["10000-observation return level"]["status"] == "mismatch"
    assert rows["10000-observation return level"]["published"] == 520
    assert rows["return level 95% CI lower (delta method)"]["status"] == "match"
    assert not verdict["ok"] and verdict["outcome"] == "mismatch" and verdict["claim"]["status"] == "mismatch"
    assert not (tmp_path / "runs" / "needs-a-testbed").exists()
    code, out = run_cli(["needs-a-testbed", "--papers", str(folder)], tmp_path)
    assert code == 3 and "skipped" in out
    code, out = run_cli(["no-such-entry"], tmp_path)
    assert code == 2 and "no registry entry 'no-such-entry'" in out
    # the shipped entry: the MLE needs the paper's data, so the outcome is partial; the claim holds
    code, out = run_cli(["scheerer-iitm23-return-level"], tmp_path)
    assert code == 4, out
    verdict = json.loads((only_run_dir(tmp_path, "scheerer-iitm23-return-level") / "verdict.json").read_text())
    assert verdict["outcome"] == "partial" and verdict["claim"]["status"] == "reproduced"
    assert "principal claim: reproduced" in out


def test_failed_notebook_and_dry_run(tmp_path):
    folder = tmp_path / "papers" / "tiny"
    folder.mkdir(parents=True)
    (folder / "paper.toml").write_text('id = "tiny"\ntitle = "t"\ncitation = "c"\n')

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nb.metadata["language_info"] = {"name": "python"}
    params = nbformat.v4.new_code_cell('figure_id = ""  # registry id\ndry_run = False  # only write dry-run.txt\n'
                                       'fail = False  # raise on purpose\noutput_dir = "."  # where files go')
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell(
        "from pathlib import Path\n"
        "if fail:\n    raise RuntimeError('failing on purpose')\n"
        "if dry_run:\n    Path(output_dir, 'dry-run.txt').write_text('host dut: dpdk-testpmd -l 1 --no-huge\\n')\n")]
    nbformat.write(nb, folder / "tiny.ipynb")
    (folder / "tiny-fig.toml").write_text('id = "tiny-fig"\ntitle = "t"\nnotebook = "tiny.ipynb"\n'
                                          'mode = "testbed-measurement"\nrequires = ["testbed"]\n'
                                          '[parameters]\nfail = false\n')
    code, out = run_cli(["tiny-fig", "--dry-run", "--papers", str(folder)], tmp_path)
    assert code == 0, out
    assert "host dut: dpdk-testpmd -l 1 --no-huge" in out and "tiny-fig: dry run" in out
    code, out = run_cli(["tiny-fig", "--dry-run", "--papers", str(folder), "-p", "fail=true"], tmp_path)
    assert code == 5 and "failing on purpose" in out, out
    code, out = run_cli(["--show", "tiny-fig", "--papers", str(folder)], tmp_path)
    assert code == 0, out
    assert "only write dry-run.txt" in out and "raise on purpose" in out and "set by benchbook reproduce" in out
    assert "tiny.ipynb" in out and "requires testbed" in out


def test_show_prints_parameters_defaults_and_meaning(tmp_path):
    code, out = run_cli(["--show", "wiedner-itc23-fig4"], tmp_path)
    assert code == 0, out
    lines = [line for line in out.splitlines() if line.startswith("│ repeat_policy")]
    assert lines and '"worst"' in lines[0] and "worst of the repeats" in lines[0]
    assert "notebooks/wiedner-itc23" in out and "Figure 4 (container, user-space processing)" in out
    code, out = run_cli(["--show"], tmp_path)
    assert code == 2
