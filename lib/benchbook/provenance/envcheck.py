"""`benchbook env check`: the pip lock, environment.yml and the Guix manifests name the same
packages at the same versions (differences only where manifests/exceptions.toml documents them),
and the running interpreter has exactly the lock's versions installed.

Every finding names the package and the file it comes from.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchbook.paths import REPO_ROOT


def normalize(name: str) -> str:
    """PEP 503 normalised distribution name."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass
class CheckReport:
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    checked: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass(frozen=True)
class EnvFiles:
    root: Path

    @property
    def requirements_in(self) -> Path: return self.root / "manifests" / "requirements.in"
    @property
    def lock(self) -> Path: return self.root / "manifests" / "requirements.lock"
    @property
    def environment_yml(self) -> Path: return self.root / "environment.yml"
    @property
    def analysis(self) -> Path: return self.root / "manifests" / "analysis.scm"
    @property
    def testbed(self) -> Path: return self.root / "manifests" / "testbed.scm"
    @property
    def exceptions(self) -> Path: return self.root / "manifests" / "exceptions.toml"
    @property
    def channels(self) -> Path: return self.root / "channels.scm"
    @property
    def guix_packages(self) -> Path: return self.root / "manifests" / "guix-packages.toml"


def read_requirements_in(path: Path) -> list[str]:
    names = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            names.append(normalize(re.split(r"[<>=!~\[; ]", line, maxsplit=1)[0]))
    return names


def read_lock(path: Path) -> dict[str, str]:
    """{normalised name: version} from a hashed pip lock (name==version lines)."""
    pins: dict[str, str] = {}
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line or line[0] in " #\t-":
            continue
        m = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==([^\s;\\]+)", line)
        if not m:
            raise ValueError(f"{path}: line {lineno}: expected 'name==version', got {line[:60]!r}")
        pins[normalize(m.group(1))] = m.group(2)
    return pins


def read_environment_yml(path: Path) -> tuple[dict[str, tuple[str, str]], dict[str, Any]]:
    """({name: (version, "conda"|"pip")}, whole document)."""
    import yaml

    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else "?"
        raise ValueError(f"{path}: {where}: not valid YAML ({exc})") from None
    pins: dict[str, tuple[str, str]] = {}
    for i, dep in enumerate(doc.get("dependencies") or []):
        if isinstance(dep, dict) and "pip" in dep:
            for spec in dep["pip"]:
                m = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)$", str(spec).strip())
                if not m:
                    raise ValueError(f"{path}: pip dependency {spec!r}: expected 'name==version' (exact pin)")
                pins[normalize(m.group(1))] = (m.group(2), "pip")
        elif isinstance(dep, str):
            m = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:=+\s*([^\s=]+))?", dep.strip())
            if not m:
                raise ValueError(f"{path}: dependency {i + 1} {dep!r}: expected 'name=version'")
            pins[normalize(m.group(1))] = (m.group(2) or "", "conda")
        else:
            raise ValueError(f"{path}: dependency {i + 1}: expected a string or a 'pip:' list")
    return pins, doc


def read_manifest(path: Path) -> dict[str, str | None]:
    from benchbook.provenance.scheme import manifest_specifications, split_spec

    out: dict[str, str | None] = {}
    for spec in manifest_specifications(path):
        name, version = split_spec(spec)
        out[name] = version
    return out


GUIX_EVIDENCE = {
    # the name's definition was read in the pinned commit's file (version known at the pin)
    "definition-at-pin": True,
    # a definition read in the pinned commit names it as an input, so it exists there (version not read)
    "input-at-pin": True,
    # defined with this name in a stored revision dated before the pin and in one dated after it
    "bracketed": False,
    # what was read (if anything) does not establish that it exists at the pin
    "unverified": False,
}
_HEX40 = re.compile(r"^[0-9a-f]{40}$")


def check_guix_evidence(gp: dict[str, Any], pinned: str | None, manifests: dict[str, dict[str, str | None]],
                        where: str, notes: list[str]) -> list[str]:
    """Problems with manifests/guix-packages.toml: every manifest name needs one [[package]] entry whose
    evidence is consistent (at-pin evidence read at the pinned commit, bracketing with a read before
    and after it), a manifest's @version must be the version read at the pin, and no [[excluded]] name
    may be in a manifest. Appends a one-line summary to ``notes``."""
    problems: list[str] = []
    if gp.get("pinned_commit") != pinned:
        problems.append(f"{where} records checks for commit {gp.get('pinned_commit')} but channels.scm pins {pinned}")
    entries: dict[str, dict[str, Any]] = {}
    for i, e in enumerate(gp.get("package") or []):
        name, kind = e.get("name"), e.get("evidence")
        label = f"{where}: package {i + 1} ({name or '?'})"
        if not name or kind not in GUIX_EVIDENCE:
            problems.append(f"{label}: needs a name and evidence (one of {', '.join(GUIX_EVIDENCE)})")
            continue
        if name in entries:
            problems.append(f"{label}: listed twice")
        entries[name] = e
        at_pin = GUIX_EVIDENCE[kind]
        if e.get("at_pinned_commit") is not at_pin:
            problems.append(f"{label}: evidence {kind} means at_pinned_commit = {str(at_pin).lower()}")
        if at_pin and e.get("commit") != pinned:
            problems.append(f"{label}: evidence {kind} but commit {e.get('commit')} is not the pinned {pinned}")
        if kind == "definition-at-pin" and not e.get("version"):
            problems.append(f"{label}: a definition read at the pin must record its version")
        if kind == "bracketed":
            for side in ("before", "after"):
                read = e.get(side) or {}
                if not (_HEX40.match(str(read.get("commit", ""))) and read.get("version") and read.get("dated")):
                    problems.append(f"{label}: bracketing needs a '{side}' read with commit, version and dated")
    excluded = {x.get("name") for x in gp.get("excluded") or []}
    for manifest, specs in manifests.items():
        for name in sorted(specs):
            e = entries.get(name)
            if name in excluded:
                problems.append(f"{name}: manifests/{manifest}.scm names it but {where} lists it under [[excluded]]")
            elif e is None:
                problems.append(f"{name}: manifests/{manifest}.scm names it but {where} does not say whether or "
                                f"where its Guix definition was checked")
            elif specs[name] is not None and (e.get("evidence") != "definition-at-pin"
                                                or str(e.get("version")) != specs[name]):
                problems.append(f"{name}: manifests/{manifest}.scm pins @{specs[name]} but {where} records "
                                f"{e.get('evidence')} version {e.get('version')} at the pin")
    names = set().union(*manifests.values())
    counts = {k: sorted(n for n in names if (entries.get(n) or {}).get("evidence") == k) for k in GUIX_EVIDENCE}
    notes.append(f"Guix names in the manifests: {len(counts['definition-at-pin'])} read at the pinned commit, "
                 f"{len(counts['input-at-pin'])} named as inputs there, {len(counts['bracketed'])} bracketed by "
                 f"reads before and after it, {len(counts['unverified'])} unverified "
                 f"({', '.join(counts['unverified'])})"
                 f" - see {where}")
    return problems


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
        from benchbook.provenance.scheme import channel_commits

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
                            "guix": analysis.get(gname, "pip") if gname in analysis else "pip"}
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
    if f.guix_packages.exists():
        try:
            gp = tomllib.loads(f.guix_packages.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            rep.problems.append(f"{f.guix_packages.relative_to(f.root)}: not valid TOML ({exc})")
            return rep
        rep.problems += check_guix_evidence(gp, commits.get("guix"), {"analysis": analysis, "testbed": testbed},
                                            str(f.guix_packages.relative_to(f.root)), rep.notes)
    return rep


def check_running(lock_path: Path) -> CheckReport:
    """Every package of the lock installed at exactly its version in this interpreter."""
    from importlib import metadata

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
