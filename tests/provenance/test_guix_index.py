"""The Guix index: the reader of Guix package definitions on Guile source written the way Guix writes
it, the index file's format, and (with a Guix git copy, BENCHBOOK_GUIX_GIT) the pinned commit
checked on upstream master and the committed index regenerated identically."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchbook.commands.env import rebuild_command
from benchbook.experiment.runner import copy_environment_files
from benchbook.paths import MANIFESTS_DIR, REPO_ROOT
from benchbook.provenance.environment import ANALYSIS_MANIFEST, environment_description
from benchbook.provenance.guix_eval import evaluate, prepare_tree
from benchbook.provenance.guix_index import GuixIndexError, index_path, read_index
from benchbook.provenance.guix_pin import verify_pin
from benchbook.provenance.guix_source import GString, GuixSourceError, build_table, read_datums
from benchbook.provenance.manifests import read_manifest
from benchbook.provenance.scheme import channel_commits, channel_introductions

MODULE = r'''
(define-module (gnu packages demo))
#| a block comment with "quotes" and ( parens |#
(define %commit "0123456789abcdef")
(define-public demo-1
  (package
    (name "demo")
    (version "1.9.0")
    (arguments (list #:phases #~(modify-phases %standard-phases
                                  (add-after 'unpack 'x (lambda _ (display #\() (display #\")
                                                          (display #\space) #$output #t)))))
    (build-system python-build-system)))
(define-public demo-2
  (package
    (inherit demo-1)
    #;(version "9.9")
    (version "1.10.0")))
(define-public demo-git
  (let ((revision "3"))
    (package (inherit demo-1) (version (git-version "2.0" revision %commit)))))
(define-public demo-hidden (hidden-package (package (inherit demo-1) (version "99"))))
(define-public demo-old (deprecated-package "demo" demo-2))
(define-public demo-props
  (package (inherit demo-1) (version "98") (properties '((hidden? . #t)))))
(define-public demo-unhidden (package (inherit demo-props) (name "demo-visible") (properties '())))
(define-public demo-alias demo-2)
(define-public not-a-package (some-procedure 1 2))
'''


def test_reader_reads_guix_syntax():
    forms = read_datums(MODULE, "demo.scm")
    assert [f[1] for f in forms if f[0] == "define-public"][:2] == ["demo-1", "demo-2"]
    assert isinstance(forms[1][2], GString) and forms[1][2] == "0123456789abcdef"
    with pytest.raises(GuixSourceError, match=r"demo.scm: line 2: '\(' opened here is never closed"):
        read_datums('(a)\n(define x "y"\n', "demo.scm")
    with pytest.raises(GuixSourceError, match="line 1: unbalanced"):
        read_datums("(a))", "demo.scm")


def test_specification_resolution_follows_guix():
    t = build_table({"gnu/packages/demo.scm": MODULE, "gnu/packages/absent.scm": None})
    assert t.unreadable == ["gnu/packages/absent.scm"]
    # highest visible version: 2.0-3.0123456 (git-version) over 1.10.0 over 1.9.0; hidden ones and the
    # deprecated alias do not count; 1.10 > 1.9 numerically
    assert [p.version for p in sorted(t.visible("demo"), key=lambda p: p.variable)] == \
        ["1.9.0", "1.10.0", "2.0-3.0123456"]
    best = t.best("demo")
    assert (best.variable, best.version, best.build_system) == ("demo-git", "2.0-3.0123456", "python-build-system")
    assert t.by_variable(None, "demo-props").hidden and t.by_variable(None, "demo-hidden").hidden
    assert t.best("demo-visible").version == "98"
    assert t.by_variable(None, "demo-old").superseded
    assert [u.variable for u in t.unresolved] == ["not-a-package"]
    assert t.best("no-such-name") is None


def test_index_reader_rejects_malformed_files(tmp_path):
    good = index_path(MANIFESTS_DIR, channel_commits(REPO_ROOT / "channels.scm")["guix"]).read_text()
    bad = tmp_path / "i.tsv"
    lines = good.splitlines()
    row = next(i for i, ln in enumerate(lines) if ln.startswith("python-numpy\t"))
    bad.write_text("\n".join(lines[:row] + [lines[row].replace("\tdefined\t", "\tmaybe\t")] + lines[row + 1:]))
    with pytest.raises(GuixIndexError, match=rf"i.tsv: line {row + 1}: status must be defined or absent"):
        read_index(bad)
    bad.write_text("\n".join(ln for ln in lines if not ln.startswith("# commit:")))
    with pytest.raises(GuixIndexError, match="no '# commit: <40 hex digits>' line"):
        read_index(bad)


def _guix_git() -> Path:
    where = os.environ.get("BENCHBOOK_GUIX_GIT")
    if not where:
        pytest.skip("no Guix git copy: set BENCHBOOK_GUIX_GIT to the git directory of a Guix clone or mirror")
    path = Path(where)
    if not (path / "objects").is_dir():
        pytest.skip(f"BENCHBOOK_GUIX_GIT={path} is not a git directory (no objects/)")
    return path


@pytest.mark.slow
def test_pin_is_signed_on_upstream_master():
    git = _guix_git()
    channels = REPO_ROOT / "channels.scm"
    rep = verify_pin(git, channel_commits(channels)["guix"], channel_introductions(channels)["guix"])
    assert rep.ok, rep.problems
    assert any(f.startswith("reachable from master") for f in rep.findings)
    assert any("is authorised in .guix-authorizations" in f for f in rep.findings)
    # a commit that is not in upstream's history fails
    bad = verify_pin(git, "003658b0fc5eeaa4d59f0162bfd942088f08385b", channel_introductions(channels)["guix"])
    assert not bad.ok and "is not in" in bad.problems[0]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_committed_index_regenerates_identically(tmp_path):
    git = _guix_git()
    pinned = channel_commits(REPO_ROOT / "channels.scm")["guix"]
    committed = index_path(MANIFESTS_DIR, pinned)
    extra = read_index(committed).header["command"].split("   #")[0].split()
    names = [extra[i + 1] for i, a in enumerate(extra) if a == "--name"]
    out = tmp_path / committed.name
    r = subprocess.run([sys.executable, "-m", "benchbook.cli", "env", "guix-index", "--guix-git", str(git),
                        "--commit", pinned, "-o", str(out), *(a for n in names for a in ("--name", n))],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    def facts(text: str) -> list[str]:
        """Header and rows without the command line and the wanted_for column (which says why a row
        is there and follows requirements.in, not Guix)."""
        return ["\t".join(ln.split("\t")[:-1]) if "\t" in ln else ln
                for ln in text.splitlines() if not ln.startswith("# command:")]

    assert facts(out.read_text()) == facts(committed.read_text())


def test_run_records_keep_the_pin_and_rebuild_names_it(tmp_path):
    """A run directory gets channels.scm and its manifest, run.json the pinned commit, and the rebuild
    command runs the run's own copies through guix time-machine with the pip lock set up inside."""
    pinned = channel_commits(REPO_ROOT / "channels.scm")["guix"]
    assert environment_description()["guix_channel_commit"] == pinned
    run_dir = tmp_path / "exp" / "run-1"
    run_dir.mkdir(parents=True)
    copied = copy_environment_files(run_dir, ANALYSIS_MANIFEST)
    assert copied["channels"] == "channels.scm" and copied["manifest_source"] == "analysis.scm"
    assert channel_commits(run_dir / "channels.scm")["guix"] == pinned
    record = {"experiment": "no-such-entry", "notebook": str(REPO_ROOT / "notebooks" / "x.ipynb"),
              "parameters": {"rate": 10, "flag": True, "output_dir": "out"}}
    cmd, inner = rebuild_command(run_dir, record)
    assert cmd[:9] == ["guix", "time-machine", "-C", str(run_dir / "channels.scm"), "--", "shell", "-m",
                       str(run_dir / "manifest.scm"), "--"]
    assert cmd[9:11] == ["sh", "-c"]
    assert "pip install --require-hashes --no-deps -r manifests/requirements.lock" in cmd[11]
    assert cmd[11].endswith("-m benchbook.cli run notebooks/x.ipynb -p rate=10 -p flag=true "
                            "--experiment no-such-entry-rebuild")
    assert shlex.split(inner)[:3] == ["benchbook", "run", "notebooks/x.ipynb"]


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_manifests_evaluate_with_guile_to_the_index_versions(tmp_path):
    """Guile loads Guix's modules at the pin uncompiled and resolves every manifest specification to a
    package object (as `guix shell -m` does, nothing built); each is the package the index names."""
    git = _guix_git()
    guile = shutil.which("guile")
    if guile is None:
        pytest.skip("guile is not installed (Debian: guile-3.0)")
    libs = subprocess.run([guile, "-c", "(use-modules (gcrypt hash) (json) (zlib) (lzlib) (sqlite3) (git))"],
                          capture_output=True, text=True, timeout=120)
    if libs.returncode != 0:
        pytest.skip("Guile libraries Guix loads are missing (Debian: guile-gcrypt guile-json guile-zlib "
                    "guile-lzlib guile-sqlite3 guile-git)")
    pinned = channel_commits(REPO_ROOT / "channels.scm")["guix"]
    idx = read_index(index_path(MANIFESTS_DIR, pinned))
    notes = prepare_tree(git, pinned, tmp_path / "guix")
    assert all("stand-in" in n or "not written" in n for n in notes), notes
    manifests = [MANIFESTS_DIR / "analysis.scm", MANIFESTS_DIR / "testbed.scm"]
    res = evaluate(tmp_path / "guix", manifests, timeout_s=1500)
    assert res.returncode == 0, (res.stderr, res.log)
    for m in manifests:
        got = [(name, version, file) for manifest, name, version, file in res.entries if manifest == m.name]
        want = [(n, idx.rows[n].version, idx.rows[n].module) for n in read_manifest(m)]
        assert got == want, m
