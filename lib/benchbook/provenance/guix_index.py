"""The Guix index: what the pinned GNU Guix commit defines for every name benchbook's environments use.

``manifests/guix-index-<commit[:8]>.tsv`` is generated from the Guix source at the pin
(``benchbook env guix-index --guix-git DIR --commit C -o ...``) and read offline by
``benchbook env check``. Header lines start with ``#`` and hold ``key: value`` pairs (``commit``,
``date``, ``command``, the default Python of the Python build systems, modules that could not be
read); then one tab-separated row per name:

  name          the package name a specification resolves by
  status        defined (a visible package of that name exists at the commit) | absent
  version       the version the specification resolves to (Guix: the highest visible version)
  module        the file defining it (gnu/packages/X.scm)
  variable      its Scheme variable
  build_system  its build system
  python        for python-build-system / pyproject-build-system packages: the Python it builds with
  wanted_for    manifest (a manifest names it) or pypi:<name> (Guix's name for a pip-lock package)
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from benchbook.errors import BenchbookError
from benchbook.provenance.guix_source import GuixGit, build_table
from benchbook.provenance.manifests import EnvFiles, read_manifest, read_requirements_in

COLUMNS = ("name", "status", "version", "module", "variable", "build_system", "python", "wanted_for")
PYTHON_BUILD_SYSTEMS = {
    # build system -> (Guix module defining it, variable its default-python procedure returns)
    "python-build-system": "guix/build-system/python.scm",
    "pyproject-build-system": "guix/build-system/pyproject.scm",
}


class GuixIndexError(BenchbookError):
    """A Guix index file is missing or malformed (names the file and line)."""


@dataclass
class IndexRow:
    name: str
    status: str
    version: str = ""
    module: str = ""
    variable: str = ""
    build_system: str = ""
    python: str = ""
    wanted_for: str = ""

    @property
    def defined(self) -> bool:
        return self.status == "defined"


@dataclass
class GuixIndex:
    header: dict[str, str] = field(default_factory=dict)
    rows: dict[str, IndexRow] = field(default_factory=dict)

    @property
    def commit(self) -> str:
        return self.header.get("commit", "")


def index_path(manifests_dir: Path, commit: str) -> Path:
    return Path(manifests_dir) / f"guix-index-{commit[:8]}.tsv"


def read_index(path: Path) -> GuixIndex:
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise GuixIndexError(f"{path}: cannot read the Guix index ({exc.strerror})") from None
    idx = GuixIndex()
    columns: tuple[str, ...] | None = None
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        if line.startswith("#"):
            key, sep, value = line[1:].partition(":")
            if sep:
                idx.header[key.strip()] = value.strip()
            continue
        cells = line.split("\t")
        if columns is None:
            if tuple(cells) != COLUMNS:
                raise GuixIndexError(f"{path}: line {lineno}: expected the column header "
                                     f"{' '.join(COLUMNS)!r}, got {line[:80]!r}")
            columns = COLUMNS
            continue
        if len(cells) != len(COLUMNS):
            raise GuixIndexError(f"{path}: line {lineno}: expected {len(COLUMNS)} tab-separated cells, "
                                 f"got {len(cells)}")
        row = IndexRow(*cells)
        if row.status not in ("defined", "absent"):
            raise GuixIndexError(f"{path}: line {lineno}: status must be defined or absent, got {row.status!r}")
        if row.name in idx.rows:
            raise GuixIndexError(f"{path}: line {lineno}: {row.name} listed twice")
        idx.rows[row.name] = row
    if columns is None:
        raise GuixIndexError(f"{path}: no column header line ({' '.join(COLUMNS)})")
    if len(idx.commit) != 40:
        raise GuixIndexError(f"{path}: header has no '# commit: <40 hex digits>' line")
    return idx


def wanted_names(root: Path) -> dict[str, str]:
    """{Guix name: why} for every name the manifests use and the Guix name of every pip-lock dependency."""
    f = EnvFiles(Path(root))
    names: dict[str, str] = {}
    for manifest in (f.analysis, f.testbed):
        for name in read_manifest(manifest):
            names[name] = "manifest"
    exc = tomllib.loads(f.exceptions.read_text(encoding="utf-8")) if f.exceptions.exists() else {}
    renames = {k: v for k, v in (exc.get("names") or {}).items()}
    for pkg in read_requirements_in(f.requirements_in):
        gname = (renames.get(pkg) or {}).get("guix", f"python-{pkg}")
        names.setdefault(gname, f"pypi:{pkg}")
    return names


def default_pythons(table, git, commit: str) -> dict[str, tuple[str, str]]:
    """{build system: (variable, version)}: the Python each Python build system uses by default at
    ``commit``, read from its ``default-python`` procedure (``(module-ref python 'VAR)``)."""
    out: dict[str, tuple[str, str]] = {}
    for system, path in PYTHON_BUILD_SYSTEMS.items():
        text = git.show(commit, path) or ""
        m = re.search(r"\(define \(default-python\).*?\(module-ref python '([\w.+-]+)\)\)", text, re.S)
        if not m:
            raise GuixIndexError(f"{path} at {commit}: no (define (default-python) ... (module-ref python 'VAR))")
        pkg = table.by_variable("gnu/packages/python.scm", m.group(1))
        if pkg is None:
            raise GuixIndexError(f"{path} at {commit}: default python {m.group(1)} is not a package of "
                                 f"gnu/packages/python.scm this reader evaluates")
        out[system] = (m.group(1), pkg.version)
    return out


def build_index(git_dir: Path, commit: str, root: Path, extra: list[str] = ()) -> tuple[GuixIndex, list[str]]:
    """The index of ``commit`` for the names of the repository at ``root`` (plus ``extra`` names).
    Returns it with the TSV text's header comment lines."""
    git = GuixGit(Path(git_dir))
    full = git.resolve(commit)
    table = build_table(git.package_modules(full))
    pythons = default_pythons(table, git, full)
    idx = GuixIndex(header={"commit": full, "date": git.commit_date(full)})
    names = wanted_names(root)
    for n in extra:
        names.setdefault(n, "extra")
    for name, why in sorted(names.items()):
        best = table.best(name)
        if best is None:
            idx.rows[name] = IndexRow(name, "absent", wanted_for=why)
            continue
        py = pythons.get(best.build_system)
        idx.rows[name] = IndexRow(name, "defined", best.version, best.module, best.variable, best.build_system,
                                  f"{py[0]} {py[1]}" if py else "", why)
    comments = [
        f"default python of {system}: {var} {version}" for system, (var, version) in sorted(pythons.items())
    ]
    comments.append(f"package modules: {table.modules} (gnu/packages/*.scm), {table.public_definitions} public "
                    f"definitions, {len(table.packages)} evaluated "
                    f"to packages (aliases counted once), {len(table.unresolved)} not evaluated (procedures, "
                    f"non-package values)")
    comments.append("modules absent from the Guix copy read: " + (", ".join(table.unreadable) or "none"))
    # an 'absent' row is only as good as the evaluation: name the unevaluated definitions whose
    # variable equals a wanted name, so nothing wanted hides among them
    hidden_in_unresolved = sorted(u.variable for u in table.unresolved if u.variable in names)
    comments.append("unevaluated definitions named like a wanted name: " + (", ".join(hidden_in_unresolved) or "none"))
    return idx, comments


def format_index(idx: GuixIndex, comments: list[str], command: str) -> str:
    lines = [
        "# benchbook Guix index: what the GNU Guix commit below defines for the names benchbook uses",
        f"# commit: {idx.commit}",
        f"# date: {idx.header.get('date', '')}",
        f"# command: {command}",
        *(f"# {c}" for c in comments),
        "\t".join(COLUMNS),
    ]
    for row in idx.rows.values():
        lines.append("\t".join(getattr(row, c) for c in COLUMNS))
    return "\n".join(lines) + "\n"
