"""Reading GNU Guix package definitions from the Guix source at one commit, without Guix.

``read_datums`` reads Guile source (gexps, keywords, characters, vectors, datum and block comments)
into Python values: a list is a Python list, a symbol a ``str``, a string ``GString``, a reader
prefix (``'`` ``#~`` ``#$`` ...) a two-element list ``[prefix, datum]``.

``PackageTable`` evaluates the top-level ``define-public`` forms of ``gnu/packages/*.scm``
statically: ``(package ...)``, ``(package (inherit x) ...)``, ``package/inherit``, ``hidden-package``,
``deprecated-package``, ``let``/``let*`` around a package, aliases (``(define-public python
python-3)``) and the two name-building procedures our names go through (``make-gcc-toolchain``,
``wrap-python3``). Name and version expressions are strings, ``string-append``, ``git-version``,
``package-name``/``package-version`` and variables bound to those. A definition it cannot evaluate
is counted as unresolved (never guessed). Specification lookup follows Guix's rule: among the
visible packages with that name (not hidden, not superseded), the highest version.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchbook.errors import BenchbookError


class GuixSourceError(BenchbookError):
    """The Guix source could not be read as expected (names the file and position)."""


class GString(str):
    """A Scheme string literal (plain ``str`` values are symbols)."""


_TOKEN = re.compile(
    r"""(?P<ws>\s+|;[^\n]*)"""
    r"""|(?P<block>\#\|.*?\|\#|\#!.*?!\#)"""
    r"""|(?P<datumcomment>\#;)"""
    r"""|(?P<str>"(?:\\.|[^"\\])*")"""
    r"""|(?P<char>\#\\(?:x[0-9a-fA-F]+(?![^\s()\[\]"])|[a-zA-Z][a-zA-Z0-9-]*(?![^\s()\[\]"])|.))"""
    r"""|(?P<open>\#(?:vu8|u8|[suf](?:8|16|32|64))?\(|[(\[])"""
    r"""|(?P<close>[)\]])"""
    r"""|(?P<prefix>\#\$@|\#\+@|\#\$|\#\+|\#~|\#'|\#`|\#,@|\#,|,@|['`,])"""
    r"""|(?P<ext>\#\{.*?\}\#)"""
    r"""|(?P<atom>[^\s()\[\]";]+)""",
    re.S,
)


def _unescape(body: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), body)


def read_datums(text: str, source: str = "<string>") -> list[Any]:
    """Every top-level datum of Guile source ``text``; errors name ``source`` and the line."""
    stack: list[list[Any]] = [[]]
    opened_at: list[int] = []
    prefixes: list[list[str]] = [[]]
    skip: list[list[bool]] = [[]]   # per level: pending '#;' markers
    pos, n = 0, len(text)

    def line_of(offset: int) -> int:
        return text.count("\n", 0, offset) + 1

    def push(value: Any) -> None:
        while prefixes[-1]:
            value = [prefixes[-1].pop(), value]
        if skip[-1]:
            skip[-1].pop()
            return
        stack[-1].append(value)

    while pos < n:
        m = _TOKEN.match(text, pos)
        if m is None:
            raise GuixSourceError(f"{source}: line {line_of(pos)}: unexpected character {text[pos]!r}")
        pos = m.end()
        kind = m.lastgroup
        if kind in ("ws", "block"):
            continue
        if kind == "str":
            push(GString(_unescape(m.group("str")[1:-1])))
        elif kind == "open":
            stack.append([])
            prefixes.append([])
            skip.append([])
            opened_at.append(m.start())
        elif kind == "close":
            if len(stack) == 1:
                raise GuixSourceError(f"{source}: line {line_of(m.start())}: unbalanced ')'")
            done = stack.pop()
            prefixes.pop()
            skip.pop()
            opened_at.pop()
            push(done)
        elif kind == "prefix":
            prefixes[-1].append(m.group("prefix"))
        elif kind == "datumcomment":
            skip[-1].append(True)
        else:
            push(m.group(kind))
    if len(stack) > 1:
        raise GuixSourceError(f"{source}: line {line_of(opened_at[-1])}: '(' opened here is never closed")
    return stack[0]


def version_key(version: str) -> tuple:
    """Guix's version order (numeric parts compare as numbers)."""
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"[.\-]", version))


@dataclass
class PackageInfo:
    name: str
    version: str
    module: str
    variable: str
    build_system: str = ""
    hidden: bool = False
    superseded: bool = False
    origin: str = ""   # the variable it inherits from / wraps, when any


@dataclass
class Unresolved:
    module: str
    variable: str
    why: str


@dataclass
class PackageTable:
    packages: list[PackageInfo] = field(default_factory=list)
    unresolved: list[Unresolved] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)
    public_definitions: int = 0
    modules: int = 0

    def visible(self, name: str) -> list[PackageInfo]:
        return [p for p in self.packages if p.name == name and not p.hidden and not p.superseded]

    def best(self, name: str) -> PackageInfo | None:
        """What the specification ``name`` resolves to: the highest visible version."""
        found = self.visible(name)
        if not found:
            return None
        return max(found, key=lambda p: version_key(p.version))

    def by_variable(self, module_or_none: str | None, variable: str) -> PackageInfo | None:
        for p in self.packages:
            if p.variable == variable and (module_or_none is None or p.module == module_or_none):
                return p
        return None


class _Evaluator:
    """Static evaluation of package definitions across modules (variables looked up in the whole tree)."""

    def __init__(self, forms: dict[str, list[Any]]):
        self.forms = forms
        self.defs: dict[str, tuple[str, Any, bool]] = {}   # variable -> (module, expression, public)
        for module, datums in forms.items():
            for d in datums:
                if (isinstance(d, list) and len(d) >= 3 and d[0] in ("define-public", "define")
                        and isinstance(d[1], str) and not isinstance(d[1], GString)):
                    self.defs.setdefault(d[1], (module, d[2], d[0] == "define-public"))
        self.cache: dict[str, dict | None] = {}
        self.active: set[str] = set()

    def variable(self, var: str) -> dict | None:
        if var in self.cache:
            return self.cache[var]
        if var in self.active or var not in self.defs:
            return None
        self.active.add(var)
        try:
            module, expr, _ = self.defs[var]
            result = self.value(expr, {})
        finally:
            self.active.discard(var)
        self.cache[var] = result
        return result

    def value(self, expr: Any, env: dict[str, Any]) -> Any:
        """A string, a package dict, or None when the expression is outside what is evaluated."""
        if isinstance(expr, GString):
            return str(expr)
        if isinstance(expr, str):
            if expr in env:
                return env[expr]
            if expr in self.defs:
                return self.variable(expr)
            return None
        if not isinstance(expr, list) or not expr:
            return None
        head, args = expr[0], expr[1:]
        if head in ("let", "let*") and len(args) >= 2 and isinstance(args[0], list):
            inner = dict(env)
            for binding in args[0]:
                if isinstance(binding, list) and len(binding) == 2 and isinstance(binding[0], str):
                    inner[binding[0]] = self.value(binding[1], inner if head == "let*" else env)
            return self.value(args[-1], inner)
        if head == "string-append":
            parts = [self.value(a, env) for a in args]
            return "".join(parts) if all(isinstance(p, str) for p in parts) else None
        if head == "git-version" and len(args) == 3:
            v, rev, commit = (self.value(a, env) for a in args)
            if all(isinstance(x, str) for x in (v, rev, commit)):
                return f"{v}-{rev}.{commit[:7]}"
            return None
        if head in ("package-version", "package-name") and len(args) == 1:
            pkg = self.value(args[0], env)
            return pkg.get("version" if head == "package-version" else "name") if isinstance(pkg, dict) else None
        if head == "package":
            return self.package(args, env, None)
        if head == "package/inherit" and args:
            return self.package(args[1:], env, args[0])
        if head == "hidden-package" and len(args) == 1:
            pkg = self.value(args[0], env)
            return {**pkg, "hidden": True} if isinstance(pkg, dict) else None
        if head == "deprecated-package" and len(args) == 2:
            name, pkg = self.value(args[0], env), self.value(args[1], env)
            if isinstance(name, str) and isinstance(pkg, dict):
                return {**pkg, "name": name, "superseded": True}
            return None
        if head == "wrap-python3" and args:
            pkg = self.value(args[0], env)
            if isinstance(pkg, dict):
                return {**pkg, "name": pkg["name"] + "-wrapper", "origin": _sym(args[0]), "hidden": False}
            return None
        if head == "make-gcc-toolchain" and len(args) == 1:
            gcc = self.value(args[0], env)
            if isinstance(gcc, dict):
                return {"name": gcc["name"] + "-toolchain", "version": gcc["version"],
                        "build_system": "trivial-build-system", "origin": _sym(args[0]),
                        "hidden": False, "superseded": False}
            return None
        if head in ("make-linux-libre", "make-linux-libre*") and args:
            version = self.value(args[0], env)
            extra = next((self.value(b, env) for a, b in zip(args, args[1:], strict=False)
                          if a == "#:extra-version"), None)
            if isinstance(version, str):
                return {"name": f"linux-libre-{extra}" if isinstance(extra, str) else "linux-libre",
                        "version": version, "build_system": "gnu-build-system", "origin": "",
                        "hidden": False, "superseded": False}
            return None
        return None

    def package(self, fields: list[Any], env: dict[str, Any], inherit_expr: Any) -> dict | None:
        base: dict | None = None
        origin = ""
        for f in fields:
            if isinstance(f, list) and len(f) == 2 and f[0] == "inherit":
                inherit_expr = f[1]
        if inherit_expr is not None:
            base = self.value(inherit_expr, env)
            origin = _sym(inherit_expr)
            if not isinstance(base, dict):
                return None
        pkg = {"name": None, "version": None, "build_system": "", "hidden": False, "superseded": False,
               **(base or {}), "origin": origin}
        for f in fields:
            if not (isinstance(f, list) and len(f) >= 2 and isinstance(f[0], str)):
                continue
            key, val = f[0], f[1]
            if key in ("name", "version"):
                pkg[key] = self.value(val, env)
            elif key == "build-system" and isinstance(val, str):
                pkg["build_system"] = val
            elif key == "properties":   # replaces the inherited properties
                text = repr(val)
                pkg["hidden"] = "'hidden?'" in text and "'#t'" in text
                pkg["superseded"] = "'superseded'" in text
        if not (isinstance(pkg["name"], str) and isinstance(pkg["version"], str)):
            return None
        return pkg


def _sym(expr: Any) -> str:
    return expr if isinstance(expr, str) and not isinstance(expr, GString) else ""


def build_table(files: dict[str, str | None]) -> PackageTable:
    """Evaluate every public definition of ``files`` ({module path: text, or None when unreadable})."""
    table = PackageTable()
    forms: dict[str, list[Any]] = {}
    table.modules = len(files)
    for path, text in sorted(files.items()):
        if text is None:
            table.unreadable.append(path)
            continue
        forms[path] = read_datums(text, source=path)
    ev = _Evaluator(forms)
    for var, (module, expr, public) in sorted(ev.defs.items()):
        if not public:
            continue
        table.public_definitions += 1
        result = ev.variable(var)
        if isinstance(expr, str) and not isinstance(expr, GString) and isinstance(result, dict):
            continue   # an alias (define-public python python-3): the same package object, listed once
        if isinstance(result, dict):
            table.packages.append(PackageInfo(
                name=result["name"], version=result["version"], module=module, variable=var,
                build_system=result.get("build_system") or "", hidden=bool(result.get("hidden")),
                superseded=bool(result.get("superseded")), origin=result.get("origin") or ""))
        elif not isinstance(result, str):
            table.unresolved.append(Unresolved(module, var, "not a package this reader evaluates"))
    return table


@dataclass(frozen=True)
class GuixGit:
    """A Guix git repository read with ``git --git-dir`` (no work tree needed)."""

    git_dir: Path

    def git(self, *args: str, check: bool = True, text: bool = True) -> subprocess.CompletedProcess:
        r = subprocess.run(["git", f"--git-dir={self.git_dir}", *args], capture_output=True, text=text, check=False)
        if check and r.returncode != 0:
            err = r.stderr if text else r.stderr.decode(errors="replace")
            raise GuixSourceError(f"git --git-dir={self.git_dir} {' '.join(args)}: {err.strip()}")
        return r

    def resolve(self, rev: str) -> str:
        return self.git("rev-parse", "--verify", f"{rev}^{{commit}}").stdout.strip()

    def commit_date(self, commit: str) -> str:
        return self.git("show", "-s", "--format=%cI", commit).stdout.strip()

    def show(self, commit: str, path: str) -> str | None:
        r = self.git("show", f"{commit}:{path}", check=False)
        return r.stdout if r.returncode == 0 else None

    def package_modules(self, commit: str) -> dict[str, str | None]:
        """{gnu/packages/X.scm: text or None when its blob is absent from this copy}."""
        names = [p for p in self.git("ls-tree", "-r", "--name-only", commit, "gnu/packages/").stdout.splitlines()
                 if p.endswith(".scm") and p.count("/") == 2]
        request = "".join(f"{commit}:{p}\n" for p in names).encode()
        r = subprocess.run(["git", f"--git-dir={self.git_dir}", "cat-file", "--batch"], input=request,
                           capture_output=True, check=False)
        if r.returncode != 0:
            raise GuixSourceError(f"git cat-file --batch in {self.git_dir}: {r.stderr.decode(errors='replace')}")
        out, pos, files = r.stdout, 0, {}
        for p in names:
            end = out.index(b"\n", pos)
            header = out[pos:end].decode()
            pos = end + 1
            if header.endswith(" missing"):
                files[p] = None
                continue
            size = int(header.split()[2])
            files[p] = out[pos:pos + size].decode("utf-8", errors="replace")
            pos += size + 1
        return files
