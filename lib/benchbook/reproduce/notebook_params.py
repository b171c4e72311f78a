"""The parameters of a papermill notebook: name, default and meaning, read from the cell tagged
``parameters`` (one assignment a line; the meaning is the comment after the assignment).

A parameter is a *path parameter* when its default is a string or None and its name or comment
says so: a word of its name (split at "_") or of its comment among PATH_WORDS (path, file, dir,
directory, folder, capture, pcap, or a file format: toml, json, csv, yaml, parquet, hlog): a relative
path given for it with `benchbook run -p` / `benchbook reproduce -p` is made absolute (the notebook
runs in its run directory); every other value is passed exactly as given."""

from __future__ import annotations

import ast
import io
import json
import math
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchbook.errors import BenchbookError


@dataclass(frozen=True)
class NotebookParameter:
    name: str
    default: str  # the source text of the default value
    meaning: str  # the comment after the assignment ("" when there is none)


def parameters_source(notebook: Path | str) -> str:
    """The source of the cell tagged ``parameters`` ("" when the notebook has none)."""
    path = Path(notebook)
    try:
        nb = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}:{exc.lineno}: not a notebook (invalid JSON: {exc.msg})") from exc
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "code" and "parameters" in cell.get("metadata", {}).get("tags", []):
            src = cell.get("source", "")
            return "".join(src) if isinstance(src, list) else src
    return ""


def notebook_parameters(notebook: Path | str) -> list[NotebookParameter]:
    """Every top-level assignment of the parameters cell, in order."""
    src = parameters_source(notebook)
    if not src:
        return []
    try:
        tree = ast.parse(src)
    except SyntaxError as exc:
        raise ValueError(f"{notebook}: parameters cell line {exc.lineno}: {exc.msg}") from exc
    comments: dict[int, str] = {}
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type == tokenize.COMMENT:
            comments[tok.start[0]] = tok.string.lstrip("#").strip()
    out = []
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            value = ast.get_source_segment(src, node.value) if node.value is not None else ""
            meaning = comments.get(node.end_lineno or node.lineno, "")
            for t in targets:
                if isinstance(t, ast.Name):
                    out.append(NotebookParameter(t.id, value or "", meaning))
    return out


PATH_WORDS = ("path", "paths", "file", "files", "dir", "dirs", "directory", "folder", "capture", "captures", "pcap",
              "pcapng", "toml", "json", "csv", "yaml", "parquet", "hlog")
_WORD_RE = re.compile(r"[A-Za-z]+")


# What benchbook reproduce passes to every entry's notebook besides the entry's [parameters] and the -p overrides:
# the entry id, its paper folder, its dataset (when it names one), the run directory, and dry_run (--dry-run).
INJECTED_PARAMETERS = ("figure_id", "paper_dir", "dataset_dir", "output_dir", "dry_run")


class ParameterError(BenchbookError, ValueError):
    """A -p override that names no parameter of the notebook, or a value run.json cannot hold."""


def is_path_parameter(param: NotebookParameter) -> bool:
    """Whether `param` is declared as a path (see the module docstring)."""
    try:
        default = ast.literal_eval(param.default) if param.default else None
    except (ValueError, SyntaxError):
        return False
    if default is not None and not isinstance(default, str):
        return False
    words = {w.lower() for w in param.name.split("_")} | {w.lower() for w in _WORD_RE.findall(param.meaning)}
    return any(w in PATH_WORDS for w in words)


def prepare_parameters(notebook: Path | str, overrides: dict[str, Any], injected: Any = ()) -> dict[str, Any]:
    """Check -p overrides against the notebook's parameters cell and return them ready to pass:
    a name the notebook does not declare (nor benchbook injects: `injected`) is refused listing the
    notebook's parameters; a value holding NaN or an infinity is refused; a relative path that
    exists here becomes absolute for path parameters only."""
    declared = {p.name: p for p in notebook_parameters(notebook)}
    allowed = set(declared) | set(injected) | {"output_dir"}
    unknown = [k for k in overrides if k not in allowed]
    if unknown:
        listing = ", ".join(declared) if declared else "none (no cell tagged 'parameters')"
        raise ParameterError(
            f"{notebook}: no parameter named {', '.join(repr(k) for k in unknown)}; the notebook's parameters: "
            f"{listing}"
        )
    out: dict[str, Any] = {}
    for name, value in overrides.items():
        if _nonfinite(value, math):
            raise ParameterError(f"-p {name}={value!r}: NaN and infinity cannot be recorded in run.json (JSON has "
                                 "no such numbers)")
        param = declared.get(name)
        out[name] = _absolute(value) if param is not None and is_path_parameter(param) else value
    return out


def _nonfinite(value: Any, math: Any) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, (list, tuple)):
        return any(_nonfinite(v, math) for v in value)
    if isinstance(value, dict):
        return any(_nonfinite(v, math) for v in value.values())
    return False


def _absolute(value: Any) -> Any:
    if isinstance(value, str) and value and not Path(value).is_absolute() and Path(value).exists():
        return str(Path(value).resolve())
    if isinstance(value, list):
        return [_absolute(v) for v in value]
    return value
