"""A small reader for the Scheme data in channels.scm and Guix manifests.

It reads s-expressions (lists, strings, symbols, numbers, quote forms, comments) into Python values
so that benchbook can pull out the pinned commit and the package specifications without Guile.
GNU Guile remains the authority on syntax (tests parse every file with it); this reader raises a
clear error naming the file and line when the text is not well formed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchbook.errors import BenchbookError


class SchemeSyntaxError(BenchbookError, ValueError):
    pass


@dataclass(frozen=True)
class Symbol:
    name: str

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return self.name


_TOKEN = re.compile(
    r"""\s+|;[^\n]*|\#\|.*?\|\#|(?P<str>"(?:\\.|[^"\\])*")|(?P<open>[(\[])|(?P<close>[)\]])"""
    r"""|(?P<quote>,@|['`,])|(?P<atom>[^\s()\[\]";'`,]+)""",
    re.S,
)
_QUOTES = {"'": "quote", "`": "quasiquote", ",": "unquote", ",@": "unquote-splicing"}


def _unescape(body: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), body)


def parse(text: str, source: str = "<string>") -> list[Any]:
    """All top-level forms of ``text``. Lists become Python lists, symbols Symbol, strings str."""
    stack: list[list[Any]] = [[]]
    opened_at: list[int] = []
    pending_quotes: list[list[str]] = [[]]
    pos = 0

    def line_of(offset: int) -> int:
        return text.count("\n", 0, offset) + 1

    def push(value: Any) -> None:
        while pending_quotes[-1]:
            value = [Symbol(pending_quotes[-1].pop()), value]
        stack[-1].append(value)

    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise SchemeSyntaxError(f"{source}: line {line_of(pos)}: unexpected character {text[pos]!r}")
        pos = m.end()
        if m.group("str") is not None:
            push(_unescape(m.group("str")[1:-1]))
        elif m.group("open") is not None:
            stack.append([])
            pending_quotes.append([])
            opened_at.append(m.start())
        elif m.group("close") is not None:
            if len(stack) == 1:
                raise SchemeSyntaxError(f"{source}: line {line_of(m.start())}: unbalanced ')'")
            if pending_quotes[-1]:
                raise SchemeSyntaxError(f"{source}: line {line_of(m.start())}: quote before ')'")
            done = stack.pop()
            pending_quotes.pop()
            opened_at.pop()
            push(done)
        elif m.group("quote") is not None:
            pending_quotes[-1].append(_QUOTES[m.group("quote")])
        elif m.group("atom") is not None:
            atom = m.group("atom")
            if atom.startswith('"'):
                raise SchemeSyntaxError(f"{source}: line {line_of(m.start())}: unterminated string")
            try:
                value: Any = int(atom)
            except ValueError:
                value = Symbol(atom)
            push(value)
        elif text[m.start()] == '"':
            raise SchemeSyntaxError(f"{source}: line {line_of(m.start())}: unterminated string")
    if len(stack) > 1:
        raise SchemeSyntaxError(
            f"{source}: line {line_of(opened_at[-1])}: '(' opened here is never closed (expected ')')"
        )
    if pending_quotes[0]:
        raise SchemeSyntaxError(f"{source}: quote at end of file")
    return stack[0]


def parse_file(path: Path) -> list[Any]:
    path = Path(path)
    return parse(path.read_text(encoding="utf-8"), source=str(path))


def _walk(form: Any):
    yield form
    if isinstance(form, list):
        for item in form:
            yield from _walk(item)


def channel_commits(path: Path) -> dict[str, str]:
    """{channel name: commit} for every ``(channel (name 'x) ... (commit "..."))`` in channels.scm."""
    found: dict[str, str] = {}
    for form in parse_file(path):
        for node in _walk(form):
            if isinstance(node, list) and node and node[0] == Symbol("channel"):
                name = commit = None
                for field in node[1:]:
                    if isinstance(field, list) and len(field) == 2 and isinstance(field[0], Symbol):
                        key, value = field[0].name, field[1]
                        if isinstance(value, list) and len(value) == 2 and value[0] == Symbol("quote"):
                            value = value[1]
                        if key == "name":
                            name = value.name if isinstance(value, Symbol) else str(value)
                        elif key == "commit":
                            commit = str(value)
                if name and commit:
                    found[name] = commit
    if not found:
        raise SchemeSyntaxError(f"{path}: no (channel (name ...) (commit \"...\")) form found")
    return found


def manifest_specifications(path: Path) -> list[str]:
    """The strings of ``(specifications->manifest (list "pkg@version" ...))`` (or a quoted list)."""
    specs: list[str] = []
    for form in parse_file(path):
        for node in _walk(form):
            if isinstance(node, list) and node and node[0] == Symbol("specifications->manifest"):
                for arg in node[1:]:
                    listed = isinstance(arg, list) and arg and arg[0] in (Symbol("list"), Symbol("quote"))
                    items = arg[1:] if listed else []
                    if items and isinstance(items[0], list) and arg[0] == Symbol("quote"):
                        items = items[0]
                    specs.extend(s for s in items if isinstance(s, str))
    if not specs:
        raise SchemeSyntaxError(f"{path}: no (specifications->manifest (list \"name@version\" ...)) found")
    return specs


def split_spec(spec: str) -> tuple[str, str | None]:
    """'python-numpy@1.21.3' -> ('python-numpy', '1.21.3'); output suffix ':out' dropped."""
    name, _, version = spec.partition("@")
    name = name.split(":", 1)[0]
    return name, (version.split(":", 1)[0] or None) if version else None


def channel_introductions(path: Path) -> dict[str, str]:
    """{channel name: introduction commit} for channels with ``(introduction (make-channel-introduction "C" ...))``."""
    found: dict[str, str] = {}
    for form in parse_file(path):
        for node in _walk(form):
            if isinstance(node, list) and node and node[0] == Symbol("channel"):
                name = intro = None
                for fld in node[1:]:
                    if not (isinstance(fld, list) and len(fld) == 2 and isinstance(fld[0], Symbol)):
                        continue
                    value = fld[1]
                    if fld[0].name == "name" and isinstance(value, list) and len(value) == 2:
                        name = value[1].name if isinstance(value[1], Symbol) else str(value[1])
                    elif fld[0].name == "introduction" and isinstance(value, list) and len(value) >= 2 \
                            and value[0] == Symbol("make-channel-introduction") and isinstance(value[1], str):
                        intro = value[1]
                if name and intro:
                    found[name] = intro
    return found
