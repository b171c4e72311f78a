"""Checks that a pinned GNU Guix commit is one `guix time-machine` accepts, against a Guix git copy.

``verify_pin`` establishes, each as a finding with the git evidence:

  1. the commit exists in the copy and is reachable from its ``master`` branch;
  2. the channel introduction commit (channels.scm) is an ancestor of it;
  3. the commit object carries an OpenPGP signature that verifies with a key from the copy's
     ``keyring`` branch (imported into a temporary GnuPG home, removed afterwards);
  4. the signing key's primary fingerprint is authorised in ``.guix-authorizations`` of every
     parent of the commit (Guix's rule for authenticating a commit).

It checks the pinned commit itself, not every commit between the introduction and the pin (that is
what ``guix git authenticate`` does on a machine with Guix).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from benchbook.provenance.guix_source import GuixGit, GuixSourceError


@dataclass
class PinReport:
    commit: str
    findings: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def _fingerprints(authorizations: str) -> set[str]:
    """Primary-key fingerprints listed in a .guix-authorizations file (spaces removed)."""
    return {re.sub(r"\s+", "", m) for m in re.findall(r'^\s*\(\s*"([0-9A-F ]{40,60})"', authorizations, re.M)}


def verify_pin(git_dir: Path, commit: str, introduction: str, branch: str = "master",
               keyring: str = "keyring") -> PinReport:
    git = GuixGit(Path(git_dir))
    try:
        full = git.resolve(commit)
    except GuixSourceError as exc:
        return PinReport(commit, problems=[f"commit {commit} is not in {git_dir}: {exc}"])
    rep = PinReport(full)
    info = git.git("show", "-s", "--format=%ci%n%an%n%cn%n%P%n%s", full).stdout.splitlines()
    date, _author, committer, parents, subject = (info + [""] * 5)[:5]
    rep.findings.append(f"commit {full} ({date}), committed by {committer}: {subject}")
    tip = git.resolve(branch)
    on_branch = git.git("merge-base", "--is-ancestor", full, tip, check=False).returncode == 0
    (rep.findings if on_branch else rep.problems).append(
        f"{'reachable' if on_branch else 'NOT reachable'} from {branch} (tip {tip[:12]}, "
        f"{git.commit_date(tip)})")
    intro = git.git("merge-base", "--is-ancestor", introduction, full, check=False).returncode == 0
    (rep.findings if intro else rep.problems).append(
        f"channel introduction {introduction[:12]} {'is' if intro else 'is NOT'} an ancestor")
    raw = git.git("cat-file", "commit", full).stdout
    if "\ngpgsig " not in raw:
        rep.problems.append("the commit object has no gpgsig header (unsigned)")
        return rep
    if shutil.which("gpg") is None:
        rep.problems.append("gpg is not installed: the signature cannot be verified here")
        return rep
    home = Path(tempfile.mkdtemp(prefix="benchbook-guix-keyring-"))
    try:
        home.chmod(0o700)
        keys = [p for p in git.git("ls-tree", "--name-only", "-z", keyring).stdout.split("\0") if p.endswith(".key")]
        armored = "".join(git.git("show", f"{keyring}:{k}").stdout for k in keys)
        imp = subprocess.run(["gpg", "--homedir", str(home), "--batch", "--import"], input=armored,
                             capture_output=True, text=True, check=False)
        imported = re.search(r"Total number processed: (\d+)", imp.stderr)
        rep.findings.append(f"{len(keys)} key files of the '{keyring}' branch ({git.resolve(keyring)[:12]}) "
                            f"imported into a temporary GnuPG home ({imported.group(1) if imported else '?'} keys)")
        env = {"GNUPGHOME": str(home), "PATH": "/usr/bin:/bin"}
        v = subprocess.run(["git", f"--git-dir={git.git_dir}", "verify-commit", "--raw", full], capture_output=True,
                           text=True, check=False, env=env)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    valid = re.search(r"\[GNUPG:\] VALIDSIG (\S+) .* (\S+)$", v.stderr, re.M)
    if v.returncode != 0 or not valid:
        rep.problems.append(f"signature does not verify with the keyring: {v.stderr.strip()[-300:]}")
        return rep
    signing, primary = valid.group(1), valid.group(2)
    rep.findings.append(f"good signature by {committer}: signing key {signing}, "
                        f"primary key {primary}")
    for parent in parents.split():
        auth = git.show(parent, ".guix-authorizations")
        if auth is None:
            rep.problems.append(f"parent {parent[:12]} has no .guix-authorizations")
        elif primary in _fingerprints(auth):
            rep.findings.append(f"primary key {primary} is authorised in .guix-authorizations of parent "
                                f"{parent[:12]}")
        else:
            rep.problems.append(f"primary key {primary} is NOT in .guix-authorizations of parent {parent[:12]}")
    return rep
