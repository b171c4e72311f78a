"""Pinned environments: GNU Guile parses and evaluates channels.scm and every manifest; `benchbook env
check` passes on the repository and fails naming the package when a pin differs; the host fingerprint
and capability probes report on this machine."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchbook.paths import MANIFESTS_DIR, REPO_ROOT
from benchbook.provenance.envcheck import check_environment, check_files, check_running
from benchbook.provenance.guix_index import index_path, read_index
from benchbook.provenance.manifests import read_manifest
from benchbook.provenance.scheme import SchemeSyntaxError, channel_commits, manifest_specifications, parse
from benchbook.testbed import capabilities as caps
from conftest import require_program

SCHEME_FILES = [REPO_ROOT / "channels.scm", *sorted(MANIFESTS_DIR.glob("*.scm"))]

# Stubs standing in for Guix's bindings, so Guile evaluates each file for real (unbound names,
# wrong arity or a malformed spec list are errors) without Guix installed.
GUILE_STUBS = r"""
(use-modules (srfi srfi-1))
(define-syntax channel
  (syntax-rules () ((_ (field value) ...) (list (cons 'field value) ...))))
(define (make-channel-introduction commit fpr)
  (unless (and (string? commit) (= (string-length commit) 40)) (error "bad introduction commit" commit))
  (list 'introduction commit fpr))
(define (openpgp-fingerprint s) (unless (string? s) (error "bad fingerprint")) s)
(define (specifications->manifest specs)
  (unless (and (list? specs) (every string? specs) (pair? specs)) (error "expected a list of strings" specs))
  specs)
(define result (load (cadr (command-line))))
(write (if (and (pair? result) (pair? (car result)) (pair? (caar result)))
           (map (lambda (ch) (cdr (assq 'commit ch))) result)
           result))
"""


def _guile_eval(path: Path) -> subprocess.CompletedProcess:
    guile = require_program("guile")
    return subprocess.run([guile, "--no-auto-compile", "-c", GUILE_STUBS, str(path)],
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("path", SCHEME_FILES, ids=lambda p: p.name)
def test_guile_reads_every_form(path):
    guile = require_program("guile")
    reader = ('(call-with-input-file (cadr (command-line)) (lambda (p) (let loop ((x (read p)) (n 0)) '
              '(if (eof-object? x) (begin (display n) (newline)) (loop (read p) (+ n 1))))))')
    out = subprocess.run([guile, "--no-auto-compile", "-c", reader, str(path)], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout.strip()) >= 1


@pytest.mark.parametrize("path", SCHEME_FILES, ids=lambda p: p.name)
def test_guile_evaluates_and_agrees_with_python_reader(path):
    out = _guile_eval(path)
    assert out.returncode == 0, out.stderr
    if path.name == "channels.scm":
        commits = channel_commits(path)
        assert out.stdout.strip() == f'("{commits["guix"]}")'
        assert len(commits["guix"]) == 40 and all(c in "0123456789abcdef" for c in commits["guix"])
    else:
        specs = manifest_specifications(path)
        assert out.stdout.strip() == "(" + " ".join(f'"{s}"' for s in specs) + ")"


def test_syntax_error_is_caught_by_guile_and_by_the_reader(tmp_path):
    broken = tmp_path / "broken.scm"
    broken.write_text((MANIFESTS_DIR / "analysis.scm").read_text().rstrip().rstrip(")") + "\n")
    assert _guile_eval(broken).returncode != 0
    with pytest.raises(SchemeSyntaxError, match=r"line \d+: '\(' opened here is never closed"):
        manifest_specifications(broken)
    with pytest.raises(SchemeSyntaxError, match="line 2: unbalanced"):
        parse('(a "b")\n)', source="x.scm")


def test_env_check_passes_on_the_repository():
    rep = check_environment(REPO_ROOT, running=True)
    assert rep.ok, rep.problems
    assert rep.checked["numpy"]["lock"] == rep.checked["numpy"]["conda"]
    # every Python package comes from the lock; what the pin has of it is read from the index
    assert rep.checked["nbclient"]["guix"] == "pip"
    idx = read_index(index_path(MANIFESTS_DIR, channel_commits(REPO_ROOT / "channels.scm")["guix"]))
    assert rep.checked["nbclient"]["guix_at_pin"] == idx.rows["python-nbclient"].version
    assert rep.checked["ruff"]["guix_at_pin"] == "absent"
    names = set(read_manifest(MANIFESTS_DIR / "testbed.scm"))
    assert any(n.startswith("Guix: all ") and f"all {len(names)} manifest names are defined" in n for n in rep.notes)
    assert not any("unverified" in n for n in rep.notes)


def _copy_env(tmp: Path) -> Path:
    root = tmp / "repo"
    (root / "manifests").mkdir(parents=True)
    for name in ("environment.yml", "channels.scm"):
        shutil.copy(REPO_ROOT / name, root / name)
    for p in MANIFESTS_DIR.iterdir():
        if p.is_file():
            shutil.copy(p, root / "manifests" / p.name)
    return root


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1))


def test_env_check_names_the_package_whose_pin_differs(tmp_path):
    root = _copy_env(tmp_path)
    assert check_files(root).ok
    # a Python package taken from Guix at a version the lock does not have needs an exception
    _edit(root / "manifests" / "analysis.scm", '"guile"', '"guile"\n    "python-nbclient@0.6.6"')
    rep = check_files(root)
    assert any(p.startswith("nbclient:") and "0.6.6" in p for p in rep.problems), rep.problems
    # the testbed manifest must agree with the analysis one
    assert any(p.startswith("nbclient:") and "testbed.scm" in p for p in rep.problems), rep.problems
    # and Guix's python-nbclient builds with Python 3.10, not the manifests' interpreter
    assert any(p.startswith("python-nbclient:") and "builds with Python 3.10" in p for p in rep.problems), rep.problems
    # and through the command line, exit code 1 naming the package
    r = subprocess.run([sys.executable, "-m", "benchbook.cli", "env", "check", "--root", str(root), "--files-only"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "nbclient" in r.stderr


def test_env_check_conda_pin_and_undocumented_and_stale_exceptions(tmp_path):
    root = _copy_env(tmp_path)
    _edit(root / "environment.yml", "  - scipy=1.17.1", "  - scipy=1.17.0")
    rep = check_files(root)
    assert [p for p in rep.problems if p.startswith("scipy:")] and len(rep.problems) == 1, rep.problems
    root = _copy_env(tmp_path / "b")
    exc = root / "manifests" / "exceptions.toml"
    _edit(exc, 'package = "typer"', 'package = "typerx"')  # typer's exception gone, a stale one added
    rep = check_files(root)
    assert any(p.startswith("typer:") and "lists no guix exception" in p for p in rep.problems), rep.problems
    assert any(p.startswith("typerx:") and "no longer applies" in p for p in rep.problems), rep.problems
    root = _copy_env(tmp_path / "d")
    _edit(root / "manifests" / "testbed.scm", '"make"', '"make"\n    "netcat"')
    _edit(root / "manifests" / "exceptions.toml", "[guix_only]\n", '[guix_only]\nnetcat = "test"\n')
    rep = check_files(root)
    assert [p for p in rep.problems if p.startswith("netcat:") and "has no row for it" in p], rep.problems
    root = _copy_env(tmp_path / "c")
    _edit(root / "manifests" / "requirements.in", "rich\n", "rich\nnot-a-locked-package\n")
    rep = check_files(root)
    assert any(p.startswith("not-a-locked-package:") for p in rep.problems), rep.problems


def test_index_names_the_pinned_commit():
    """The committed index is the one of the commit channels.scm pins, and says how it was made."""
    pinned = channel_commits(REPO_ROOT / "channels.scm")["guix"]
    path = index_path(MANIFESTS_DIR, pinned)
    assert path.is_file(), path
    idx = read_index(path)
    assert idx.commit == pinned
    assert idx.header["command"].startswith(f"benchbook env guix-index --guix-git GUIX_GIT --commit {pinned[:8]} ")
    assert f"-o manifests/{path.name}" in idx.header["command"]
    assert idx.header["date"].startswith("20")
    # the Python the Python build systems use at the pin is recorded, and every python-* row names it
    defaults = {k: v for k, v in idx.header.items() if k.startswith("default python of ")}
    assert set(defaults) == {"default python of python-build-system", "default python of pyproject-build-system"}
    for row in idx.rows.values():
        if row.build_system in ("python-build-system", "pyproject-build-system"):
            assert row.python == defaults[f"default python of {row.build_system}"], row
    assert sorted(p.name for p in MANIFESTS_DIR.glob("guix-index-*.tsv")) == [path.name]


def test_manifest_name_the_pin_lacks_fails_naming_it(tmp_path):
    root = _copy_env(tmp_path / "a")
    # dpdk: the index records that the pin defines no package of that name
    _edit(root / "manifests" / "testbed.scm", '"gcc-toolchain"', '"gcc-toolchain"\n    "dpdk"')
    _edit(root / "manifests" / "exceptions.toml", "[guix_only]\n", '[guix_only]\ndpdk = "test"\n')
    rep = check_files(root)
    assert [p for p in rep.problems if p.startswith("dpdk:") and "does not define it" in p], rep.problems
    r = subprocess.run([sys.executable, "-m", "benchbook.cli", "env", "check", "--root", str(root), "--files-only"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "dpdk: manifests/testbed.scm names it but Guix commit" in r.stderr, r.stderr
    # a name the index has no row for (Guix's package is "iproute2", not "iproute")
    root = _copy_env(tmp_path / "b")
    _edit(root / "manifests" / "testbed.scm", '"iproute2"', '"iproute"')
    _edit(root / "manifests" / "exceptions.toml", "[guix_only]\n", '[guix_only]\niproute = "test"\n')
    rep = check_files(root)
    assert [p for p in rep.problems if p.startswith("iproute:") and "has no row for it" in p], rep.problems


def test_manifest_versions_and_exceptions_are_checked_against_the_index(tmp_path):
    root = _copy_env(tmp_path / "a")
    # a manifest @version other than the pin's
    for m in ("analysis", "testbed"):
        _edit(root / "manifests" / f"{m}.scm", '    "python-next"\n', '    "python-next@3.11"\n')
    rep = check_files(root)
    assert [p for p in rep.problems if p.startswith("python-next:") and "@3.11" in p and "3.12.2" in p], rep.problems
    # the testbed manifest must repeat the analysis one
    root = _copy_env(tmp_path / "b")
    _edit(root / "manifests" / "testbed.scm", '"make"\n', "")
    rep = check_files(root)
    assert [p for p in rep.problems if p.startswith("make:") and "testbed.scm does not" in p], rep.problems
    # an exception whose at_pin is not what the index says
    root = _copy_env(tmp_path / "c")
    exc = root / "manifests" / "exceptions.toml"
    text = exc.read_text()
    i = text.index('package = "numpy"')
    exc.write_text(text[:i] + re.sub(r'at_pin = "[^"]*"', 'at_pin = "9.9.9"', text[i:], count=1))
    rep = check_files(root)
    assert [p for p in rep.problems if p.startswith("numpy:") and "9.9.9" in p and "python-numpy" in p], rep.problems
    # an interpreter below pyproject's requires-python
    root = _copy_env(tmp_path / "d")
    shutil.copy(REPO_ROOT / "pyproject.toml", root / "pyproject.toml")
    for m in ("analysis", "testbed"):
        _edit(root / "manifests" / f"{m}.scm", '    "python-next"\n', '    "python"\n')
    _edit(root / "manifests" / "exceptions.toml", "[guix_only]\n", '[guix_only]\npython = "test"\n')
    rep = check_files(root)
    assert [p for p in rep.problems if p.startswith("python:") and "requires-python" in p], rep.problems
    # a pin without its index
    root = _copy_env(tmp_path / "e")
    pinned = channel_commits(root / "channels.scm")["guix"]
    _edit(root / "channels.scm", pinned, "f" * 40)
    rep = check_files(root)
    assert [p for p in rep.problems if "guix-index-ffffffff.tsv" in p and "benchbook env guix-index" in p], rep.problems
    assert check_files(_copy_env(tmp_path / "f")).ok


def test_running_environment_mismatch_is_reported(tmp_path):
    lock = tmp_path / "requirements.lock"
    text = (MANIFESTS_DIR / "requirements.lock").read_text()
    lock.write_text(re.sub(r"(?m)^numpy==\S+", "numpy==0.0.1", text))
    rep = check_running(lock)
    assert any(p.startswith("numpy: installed") for p in rep.problems), rep.problems


def test_host_fingerprint_and_env_show_json():
    r = subprocess.run([sys.executable, "-m", "benchbook.cli", "env", "show", "--json"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    fp = json.loads(r.stdout)
    assert fp["kernel"]["release"] == os.uname().release
    assert fp["cpu"]["count"] == os.cpu_count()
    assert fp["cgroups"]["mode"] in ("v1", "v2", "hybrid", "none")
    assert "lo" in fp["nics"]
    assert set(fp["tcp"]["available_congestion_control"]) == set(
        Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split())
    assert fp["environment"]["lock_sha256"] and fp["environment"]["guix_channel_commit"]
    for cap in fp["capabilities"]:
        assert cap["status"] in ("present", "missing", "unknown"), cap
        assert cap["detail"], cap  # a status always says why
    r = subprocess.run([sys.executable, "-m", "benchbook.cli", "env", "show"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0 and "cgroups" in r.stdout and "capability netem" in r.stdout


def test_capability_probes_agree_with_the_kernel():
    h = caps.cgroup_hierarchies()
    for line in Path("/proc/cgroups").read_text().splitlines()[1:]:
        name, hierarchy, _, enabled = line.split()
        if enabled == "1" and hierarchy != "0":
            assert h[name] == "v1"
    kvm = caps.probe_kvm()
    if not os.path.exists("/dev/kvm"):
        assert not kvm.ok and "does not exist" in kvm.detail
    elif os.path.exists("/sys/module/kvm_pvm"):
        assert not kvm.ok and "kvm_pvm" in kvm.detail  # this VM: /dev/kvm cannot run a stock kernel
    perf = caps.probe_perf_counters()
    if shutil.which("perf"):  # independent check: does perf count instructions of `true` here?
        r = subprocess.run(["perf", "stat", "-x,", "-e", "instructions", "--", "true"], capture_output=True, text=True)
        line = next((ln for ln in r.stderr.splitlines() if ",instructions" in ln), "")
        counted = bool(line) and line.split(",")[0].strip().isdigit()
        assert perf.status == ("present" if counted else "missing"), (perf, r.stderr[-500:])
    else:
        assert perf.status == "missing" and "perf" in perf.detail, perf
    cc = caps.probe_congestion_control("reno")
    assert cc.status == "present"
    assert caps.probe_congestion_control("no-such-cc").status == "missing"
    if os.geteuid() == 0 and shutil.which("unshare") and shutil.which("tc"):
        tbf = caps.probe_qdisc("tbf", ["rate", "1mbit", "burst", "32kbit", "latency", "400ms"])
        assert tbf.status == "present", tbf
        assert caps.probe_qdisc("no-such-qdisc").status == "missing"
