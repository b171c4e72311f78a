"""`benchbook env check`: the pip lock, environment.yml and the Guix manifests name the same
packages at the same versions (differences only where manifests/exceptions.toml documents them),
and the running interpreter has exactly the lock's versions installed.

Every finding names the package and the file it comes from.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from benchbook.paths import REPO_ROOT
from benchbook.provenance.guix_index import GuixIndexError, index_path, read_index
from benchbook.provenance.manifests import (
    EnvFiles,
    normalize,
    read_environment_yml,
    read_lock,
    read_manifest,
    read_requirements_in,
)
from benchbook.provenance.scheme import channel_commits


@dataclass
class CheckReport:
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    checked: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problems


INTERPRETERS = ("python-next", "python")


def _requires_python(root: Path) -> tuple[int, ...] | None:
    """The minimum Python of pyproject.toml's requires-python (">=X.Y"), if stated."""
    try:
        doc = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return None
    m = re.search(r">=\s*(\d+(?:\.\d+)*)", str((doc.get("project") or {}).get("requires-python", "")))
    return tuple(int(x) for x in m.group(1).split(".")) if m else None


def check_guix_index(root: Path, pinned: str, manifests: dict[str, dict[str, str | None]],
                     notes: list[str]) -> tuple[list[str], Any]:
    """Problems with the manifests against the index of the pinned commit: every manifest name must be
    defined there, at the manifest's @version when one is given; the testbed manifest must repeat the
    analysis one; the interpreter must satisfy pyproject's requires-python; a Guix Python package in a
    manifest must build with that interpreter's Python. Returns (problems, index or None)."""

    problems: list[str] = []
    path = index_path(root / "manifests", pinned)
    rel = path.relative_to(root)
    try:
        idx = read_index(path)
    except GuixIndexError as exc:
        return [f"{exc} (channels.scm pins {pinned}; generate the index with `benchbook env guix-index "
                f"--guix-git GUIX_GIT --commit {pinned[:8]} -o {rel}`)"], None
    if idx.commit != pinned:
        return [f"{rel} indexes commit {idx.commit} but channels.scm pins {pinned}"], None
    regen = idx.header.get("command", "benchbook env guix-index").split("   #")[0]
    for manifest, specs in manifests.items():
        for name, version in sorted(specs.items()):
            row = idx.rows.get(name)
            where = f"manifests/{manifest}.scm"
            if row is None:
                problems.append(f"{name}: {where} names it but {rel} has no row for it (regenerate: {regen})")
            elif not row.defined:
                problems.append(f"{name}: {where} names it but Guix commit {pinned[:8]} does not define it "
                                f"({rel}: absent); `guix time-machine` would fail on this manifest")
            elif version is not None and not (row.version == version or row.version.startswith(version + ".")):
                problems.append(f"{name}: {where} pins @{version} but Guix commit {pinned[:8]} defines "
                                f"{name} {row.version} ({rel})")
    analysis, testbed = manifests.get("analysis", {}), manifests.get("testbed", {})
    for name in sorted(set(analysis) - set(testbed)):
        problems.append(f"{name}: manifests/analysis.scm names it but manifests/testbed.scm does not "
                        f"(the testbed manifest repeats the analysis one)")
    for name in sorted(set(analysis) & set(testbed)):
        if analysis[name] != testbed[name]:
            problems.append(f"{name}: manifests/testbed.scm has @{testbed[name]} but manifests/analysis.scm has "
                            f"@{analysis[name]}")
    interp = next((n for n in INTERPRETERS if n in analysis and n in idx.rows and idx.rows[n].defined), None)
    if interp is None:
        problems.append(f"manifests/analysis.scm names no Python interpreter defined at the pin "
                        f"({', '.join(INTERPRETERS)})")
    else:
        iv = idx.rows[interp].version
        need = _requires_python(root)
        have = tuple(int(x) for x in re.findall(r"\d+", iv)[:2])
        if need and have < need[:2]:
            problems.append(f"{interp}: Guix commit {pinned[:8]} defines it at {iv}, below pyproject.toml's "
                            f"requires-python >= {'.'.join(map(str, need))}")
        for manifest, specs in manifests.items():
            for name in sorted(specs):
                row = idx.rows.get(name)
                if row and row.python and row.python.split()[-1].split(".")[:2] != iv.split(".")[:2]:
                    problems.append(f"{name}: at Guix commit {pinned[:8]} it builds with Python "
                                    f"{row.python.split()[-1]}, but the manifests' interpreter is {interp} {iv}; "
                                    f"manifests/{manifest}.scm cannot use it")
    names = sorted(set().union(*manifests.values()))
    if not problems:
        notes.append(f"Guix: all {len(names)} manifest names are defined at the pinned commit {pinned[:12]} "
                     f"({idx.header.get('date', '?')}), versions from {rel}: "
                     + ", ".join(f"{n} {idx.rows[n].version}" for n in names))
    return problems, idx


def check_files(root: Path = REPO_ROOT) -> CheckReport:
    """Compare lock, environment.yml and manifests (no look at the running interpreter)."""
    f = EnvFiles(Path(root))
    rep = CheckReport()
    try:
        direct = read_requirements_in(f.requirements_in)
        lock = read_lock(f.lock)
        conda, doc = read_environment_yml(f.environment_yml)
        analysis = read_manifest(f.analysis)
        testbed = read_manifest(f.testbed)
        exc_doc = tomllib.loads(f.exceptions.read_text(encoding="utf-8"))
        commits = channel_commits(f.channels)
    except (OSError, ValueError, tomllib.TOMLDecodeError) as exc:
        rep.problems.append(str(exc))
        return rep
    rep.notes.append(f"channels.scm pins {', '.join(f'{k}@{v[:12]}' for k, v in commits.items())}")
    if "guix" not in commits:
        rep.problems.append(f"{f.channels}: no channel named 'guix'")
    names = {normalize(k): v for k, v in (exc_doc.get("names") or {}).items()}
    guix_only = set(exc_doc.get("guix_only") or {})
    exceptions: dict[tuple[str, str], dict] = {}
    for i, e in enumerate(exc_doc.get("exception") or []):
        missing = [k for k in ("package", "pin", "value", "why") if not e.get(k)]
        if missing or e.get("pin") not in ("conda", "guix"):
            rep.problems.append(f"{f.exceptions}: exception {i + 1}: needs package, pin (conda|guix), value and why "
                                f"(missing or wrong: {', '.join(missing) or 'pin'})")
            continue
        key = (normalize(e["package"]), e["pin"])
        if key in exceptions:
            rep.problems.append(f"{f.exceptions}: {e['package']} ({e['pin']}) listed twice")
        exceptions[key] = e
    used: set[tuple[str, str]] = set()

    def differs(pkg: str, pin: str, actual: str, where: Path, expected: str) -> None:
        e = exceptions.get((pkg, pin))
        if e is None:
            rep.problems.append(f"{pkg}: {where.relative_to(f.root)} has {actual}, the pip lock has {expected}, "
                                f"and {f.exceptions.relative_to(f.root)} lists no {pin} exception for it")
        elif str(e["value"]) != actual:
            rep.problems.append(f"{pkg}: {where.relative_to(f.root)} has {actual}, but the {pin} exception in "
                                f"{f.exceptions.relative_to(f.root)} says {e['value']}")
        used.add((pkg, pin))

    # environment.yml: python and every direct dependency at the lock's version
    if "python" not in conda:
        rep.problems.append(f"python: {f.environment_yml.relative_to(f.root)} does not pin python")
    for pkg in direct:
        if pkg not in lock:
            rep.problems.append(f"{pkg}: named in {f.requirements_in.relative_to(f.root)} but absent from the lock "
                                f"(run make lock)")
            continue
        want = lock[pkg]
        cname = normalize((names.get(pkg) or {}).get("conda", pkg))
        got = conda.get(cname) or conda.get(pkg)
        if got is None:
            differs(pkg, "conda", "absent", f.environment_yml, want)
        elif got[0] != want:
            differs(pkg, "conda", got[0] or "unpinned", f.environment_yml, want)
        gname = (names.get(pkg) or {}).get("guix", f"python-{pkg}")
        if gname in analysis:
            gv = analysis[gname]
            if gv != want:
                differs(pkg, "guix", gv or "unpinned", f.analysis, want)
        else:
            differs(pkg, "guix", "pip", f.analysis, want)
        if analysis.get(gname, "<none>") != testbed.get(gname, "<none>"):
            rep.problems.append(f"{pkg}: {f.testbed.relative_to(f.root)} has {gname}@{testbed.get(gname, 'absent')} "
                                f"but {f.analysis.relative_to(f.root)} has {gname}@{analysis.get(gname, 'absent')}")
        rep.checked[pkg] = {"lock": want, "conda": got[0] if got else None,
                            "guix": (analysis[gname] or "unpinned") if gname in analysis else "pip"}
    extra_conda = set(conda) - {"python", "pip"} - {normalize((names.get(p) or {}).get("conda", p)) for p in direct}
    for c in sorted(extra_conda):
        rep.problems.append(f"{c}: {f.environment_yml.relative_to(f.root)} names it but "
                            f"{f.requirements_in.relative_to(f.root)} does not")
    guix_python = {(names.get(p) or {}).get("guix", f"python-{p}") for p in direct}
    for manifest, specs in ((f.analysis, analysis), (f.testbed, testbed)):
        for g in sorted(set(specs) - guix_python - guix_only):
            rep.problems.append(f"{g}: {manifest.relative_to(f.root)} names it but it is neither a dependency in "
                                f"{f.requirements_in.relative_to(f.root)} nor listed under [guix_only] in "
                                f"{f.exceptions.relative_to(f.root)}")
    for key, e in sorted(exceptions.items()):
        if key not in used:
            rep.problems.append(f"{e['package']}: {f.exceptions.relative_to(f.root)} lists a {e['pin']} exception "
                                f"({e['value']}) that no longer applies; remove it")
    if "guix" not in commits:
        return rep
    problems, idx = check_guix_index(f.root, commits["guix"], {"analysis": analysis, "testbed": testbed}, rep.notes)
    rep.problems += problems
    if idx is None:
        return rep
    rel = f"manifests/guix-index-{commits['guix'][:8]}.tsv"
    absent, older = [], []
    for pkg in direct:
        gname = (names.get(pkg) or {}).get("guix", f"python-{pkg}")
        row = idx.rows.get(gname)
        if row is None:
            rep.problems.append(f"{pkg}: {rel} has no row for its Guix name {gname} (regenerate the index)")
            continue
        at_pin = row.version if row.defined else "absent"
        if pkg in rep.checked:
            rep.checked[pkg]["guix_at_pin"] = at_pin
        (older if row.defined else absent).append(f"{gname} {row.version}" if row.defined else gname)
        e = exceptions.get((pkg, "guix"))
        if e is not None and str(e.get("at_pin", "")) != at_pin:
            rep.problems.append(f"{pkg}: {f.exceptions.relative_to(f.root)} says Guix has {e.get('at_pin') or '?'} "
                                f"of {gname} at the pin, {rel} says {at_pin}")
    rep.notes.append(f"pip-lock packages Guix lacks at the pin (listed in manifests/exceptions.toml): {len(absent)} "
                     f"({', '.join(absent) or '-'}); present there but taken from the lock: {len(older)} "
                     f"({', '.join(older) or '-'})")
    return rep


def check_running(lock_path: Path) -> CheckReport:
    """Every package of the lock installed at exactly its version in this interpreter."""
    rep = CheckReport()
    lock = read_lock(lock_path)
    installed = {normalize(d.metadata["Name"]): d.version for d in metadata.distributions() if d.metadata["Name"]}
    for pkg, want in sorted(lock.items()):
        have = installed.get(pkg)
        if have is None:
            rep.problems.append(f"{pkg}: the lock pins {want} but it is not installed in this environment")
        elif have != want:
            rep.problems.append(f"{pkg}: installed {have}, the lock pins {want}")
    rep.notes.append(f"{len(lock)} locked packages checked against the running interpreter")
    return rep


def check_environment(root: Path = REPO_ROOT, running: bool = True) -> CheckReport:
    rep = check_files(root)
    if running:
        try:
            r = check_running(EnvFiles(Path(root)).lock)
            rep.problems += r.problems
            rep.notes += r.notes
        except (OSError, ValueError) as exc:
            rep.problems.append(str(exc))
    return rep
