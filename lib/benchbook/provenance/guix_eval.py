"""Evaluating the Guix manifests with GNU Guile and the Guix source at the pin, without Guix installed.

``prepare_tree`` writes the Guix source of one commit to a directory (``git archive``, no work tree
of the copy needed): ``gnu/``, ``guix/`` and their top-level modules, ``guix/config.scm`` made from
``guix/config.scm.in``, and, for a package module whose blob the copy lacks, a stand-in module
defining one placeholder package per name the other modules import from it or its newest stored
revision defines (so the module graph loads; the stand-in's packages are never ours).

``evaluate`` runs Guile uncompiled (``--no-auto-compile``) on that tree: it loads ``(gnu packages)``
and ``(guix profiles)`` and evaluates each manifest, so every specification is resolved to a package
object exactly as ``guix shell -m`` does, without a store, a daemon or a build. It needs Guile 3.0 with
the libraries Guix's modules load (Debian: guile-gcrypt, guile-json, guile-zlib, guile-lzlib,
guile-sqlite3, guile-git).
"""

from __future__ import annotations

import re
import subprocess
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchbook.provenance.guix_source import GuixGit

EVAL_SCRIPT = r"""
(use-modules (srfi srfi-19) (ice-9 format))
(define t0 (current-time time-monotonic))
(define (secs) (let ((d (time-difference (current-time time-monotonic) t0)))
                 (+ (time-second d) (/ (time-nanosecond d) 1e9))))
(define files 0)
(set! %load-hook (lambda (file) (set! files (+ files 1))))
(use-modules (gnu packages) (guix packages) (guix profiles) (guix diagnostics))
(format #t "# ~,1fs: (gnu packages) (guix profiles) loaded, ~a files~%" (secs) files)
(force-output)
(for-each
  (lambda (file)
    (let ((m (load file)))
      (format #t "# ~,1fs: ~a: ~a entries, ~a files loaded~%" (secs) file (length (manifest-entries m)) files)
      (for-each (lambda (e)
                  (let ((p (manifest-entry-item e)))
                    (format #t "~a\t~a\t~a\t~a~%" (basename file) (manifest-entry-name e)
                            (manifest-entry-version e) (and (package? p) (location-file (package-location p))))))
                (manifest-entries m))
      (force-output)))
  (cdr (command-line)))
"""

_CONFIG = {
    "PACKAGE_NAME": "GNU Guix", "PACKAGE_VERSION": "0", "PACKAGE_BUGREPORT": "bug-guix@gnu.org",
    "PACKAGE_URL": "https://guix.gnu.org", "storedir": "/gnu/store", "guix_localstatedir": "/var",
    "guix_sysconfdir": "/etc", "guix_system": "x86_64-linux", "GIT": "git", "GZIP": "gzip", "BZIP2": "bzip2",
    "XZ": "xz",
}


@dataclass
class EvalResult:
    returncode: int
    elapsed_s: float
    entries: list[tuple[str, str, str, str]] = field(default_factory=list)   # manifest, name, version, file
    log: list[str] = field(default_factory=list)
    stderr: str = ""


def _stub_module(git: GuixGit, commit: str, path: str, tree: Path) -> int:
    """Write a stand-in for the absent package module ``path``; returns how many names it defines."""
    module = path[:-4].replace("/", " ")
    names: set[str] = set()
    for rev in git.git("log", "--format=%H", "-n", "400", commit, "--", path).stdout.split():
        text = git.show(rev, path)
        if text is not None:
            names |= set(re.findall(r"^\(define-public ([^\s()]+)", text, re.M))
            break
    select = re.compile(r"\(\(" + re.escape(module) + r"\)\s+#:select\s+\(([^)]*)\)")
    for f in tree.rglob("*.scm"):
        for m in select.finditer(f.read_text(encoding="utf-8", errors="replace")):
            names |= set(m.group(1).split())
    body = "\n".join(f'(define-public {n} (package (name "{n}") (version "0") (source #f) '
                     f'(build-system trivial-build-system) (synopsis "") (description "") (home-page "") '
                     f'(license #f)))' for n in sorted(names))
    (tree / path).write_text(f";; stand-in: the blob of {path} at {commit} is absent from the Guix copy read\n"
                             f"(define-module ({module}) #:use-module (guix packages) "
                             f"#:use-module (guix build-system trivial))\n{body}\n", encoding="utf-8")
    return len(names)


def prepare_tree(git_dir: Path, commit: str, dest: Path) -> list[str]:
    """Write the Guix source of ``commit`` to ``dest``; returns notes (stand-ins written)."""
    git = GuixGit(Path(git_dir))
    full = git.resolve(commit)
    listing = git.git("ls-tree", "-r", full, "--", "gnu", "guix", "gnu.scm", "guix.scm").stdout.splitlines()
    blobs = [(line.split()[2], line.split("\t", 1)[1]) for line in listing if line.split()[1] == "blob"]
    check = subprocess.run(["git", f"--git-dir={git.git_dir}", "cat-file", "--batch-check"],
                           input="".join(f"{sha}\n" for sha, _ in blobs), capture_output=True, text=True, check=True)
    absent = [p for (_, p), line in zip(blobs, check.stdout.splitlines(), strict=True) if line.endswith(" missing")]
    dest.mkdir(parents=True, exist_ok=True)
    archive = dest / ".guix-src.tar"
    with archive.open("wb") as out:
        subprocess.run(["git", f"--git-dir={git.git_dir}", "archive", "--format=tar", full, "--", "gnu", "guix",
                        "gnu.scm", "guix.scm", *(f":!{p}" for p in absent)], stdout=out, stderr=subprocess.PIPE,
                       check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(dest, filter="data")
    archive.unlink()
    config_in = (dest / "guix" / "config.scm.in").read_text(encoding="utf-8")
    config = re.sub(r'"@(\w+)@"', lambda m: '"' + _CONFIG.get(m.group(1), "") + '"', config_in)
    config = re.sub(r"@GUIX_CHANNEL_\w+@", "#f", config)
    (dest / "guix" / "config.scm").write_text(config, encoding="utf-8")
    notes = []
    for p in absent:
        if p.startswith("gnu/packages/") and p.endswith(".scm"):
            notes.append(f"{p}: blob absent from the copy; stand-in module with {_stub_module(git, full, p, dest)} "
                         f"placeholder packages")
        else:
            notes.append(f"{p}: blob absent from the copy; not written")
    return notes


def evaluate(tree: Path, manifests: list[Path], timeout_s: float = 900.0, guile: str = "guile") -> EvalResult:
    """Run Guile on ``tree`` to evaluate ``manifests``; entries are (manifest, name, version, file)."""
    start = time.monotonic()
    try:
        r = subprocess.run([guile, "--no-auto-compile", "-L", str(tree), "-c", EVAL_SCRIPT, *map(str, manifests)],
                           capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        return EvalResult(-1, time.monotonic() - start, log=[ln for ln in out.splitlines() if ln.startswith("#")],
                          stderr=f"timed out after {timeout_s:.0f} s")
    res = EvalResult(r.returncode, time.monotonic() - start, stderr=r.stderr[-2000:])
    for line in r.stdout.splitlines():
        if line.startswith("#"):
            res.log.append(line)
        elif line.count("\t") == 3:
            res.entries.append(tuple(line.split("\t")))   # type: ignore[arg-type]
    return res
