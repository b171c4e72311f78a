"""The parameters of a papermill notebook: name, default and meaning, read from the cell tagged
``parameters`` (one assignment a line; the meaning is the comment after the assignment)."""

from __future__ import annotations

import ast
import io
import json
import tokenize
from dataclasses import dataclass
from pathlib import Path


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
