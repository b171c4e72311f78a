"""What a paper notebook opens first: its registry entry, a Verdict for it, the paper's own module from the paper
folder, and the directory it writes into.

    from benchbook.reproduce.notebook_entry import open_entry

    entry, verdict, paper, output_dir = open_entry(figure_id, paper_dir, output_dir, module="paper")

Run by benchbook (papermill) the notebook receives ``paper_dir`` (the entry's paper folder) and ``output_dir``
(its run directory). Opened by hand (JupyterLab's "Run All": the parameters cell's defaults, ``output_dir``
None) the entry is found beside the notebook (the kernel's working directory is the notebook's folder) or else
on the registry's search path, and the notebook writes into a fresh interactive run under
``data/runs/<entry>/`` (or BENCHBOOK_RUNS) with its run record (benchbook.experiment.interactive), never
into its paper folder.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, NamedTuple

from IPython import get_ipython

from benchbook.experiment.interactive import start_interactive_run
from benchbook.experiment.runner import DRY_RUN_FILE
from benchbook.reproduce.notebook_params import notebook_parameters
from benchbook.reproduce.registry import FigureEntry, RegistryError, load_entry
from benchbook.reproduce.verdict import VERDICT_FILE, Verdict


class OpenedEntry(NamedTuple):
    entry: FigureEntry
    verdict: Verdict  # Verdict.for_entry(entry): the published values and their tolerances
    module: ModuleType | None  # the paper's own module (``module=`` of open_entry), else None
    output_dir: str  # where the notebook writes: its run directory


def find_entry(figure_id: str, paper_dir: str | Path | None = None) -> FigureEntry:
    """The entry ``figure_id`` from ``paper_dir``; without one, from the working directory when the entry's TOML
    is there (a notebook opened in its paper folder), else from the registry's search path."""
    if not figure_id:
        raise RegistryError("figure_id is empty: set it in the notebook's parameters cell to the entry the "
                            "notebook computes (benchbook reproduce --list shows them)")
    if paper_dir is None and (Path.cwd() / f"{figure_id}.toml").is_file():
        paper_dir = Path.cwd()
    return load_entry(figure_id, paper_dir)


def import_paper_module(folder: Path, name: str) -> ModuleType:
    """``<folder>/<name>.py``, executed afresh (an edit shows at the next call), registered as ``name`` with the
    folder on sys.path for the modules beside it; no __pycache__ is written into the paper folder."""
    path = Path(folder).resolve() / f"{name}.py"
    if not path.is_file():
        raise RegistryError(f"{path}: the paper folder has no module {name!r} (a file {name}.py beside the "
                            f"notebook was expected)")
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise RegistryError(f"{path}: cannot be imported as a module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    write_bytecode = sys.dont_write_bytecode
    sys.dont_write_bytecode = True
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    finally:
        sys.dont_write_bytecode = write_bytecode
    return module


def _notebook_of(entry: FigureEntry) -> Path:
    """The notebook the kernel runs: the one JupyterLab started it for (JPY_SESSION_NAME), else the entry's."""
    session = os.environ.get("JPY_SESSION_NAME", "")
    if session.endswith(".ipynb") and Path(session).is_file():
        return Path(session)
    return entry.notebook_path


def _kernel_parameters(notebook: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The values the kernel holds for the notebook's parameters (its parameters cell; output_dir aside), and of
    them figure_id and those that differ from the cell's defaults: what papermill would have been passed."""
    shell = get_ipython()
    if shell is None or not notebook.is_file():
        return {}, {}
    values, changed = {}, {}
    for param in notebook_parameters(notebook):
        if param.name == "output_dir" or param.name not in shell.user_ns:
            continue
        values[param.name] = value = shell.user_ns[param.name]
        try:
            default = ast.literal_eval(param.default)
        except (ValueError, SyntaxError):  # an expression: compared as unequal
            default = object()
        if param.name == "figure_id" or value != default:
            changed[param.name] = value
    return values, changed


def open_entry(figure_id: str, paper_dir: str | Path | None = None, output_dir: str | Path | None = None,
               module: str | None = None) -> OpenedEntry:
    """The entry ``figure_id`` (see find_entry), its Verdict, the paper module ``module`` of its folder (see
    import_paper_module) and the output directory: ``output_dir`` when given, else a new interactive run of the
    entry whose record follows the kernel's cells (benchbook.experiment.interactive)."""
    entry = find_entry(figure_id, paper_dir)
    paper_module = import_paper_module(entry.folder, module) if module else None
    if output_dir is None:
        notebook = _notebook_of(entry)
        values, changed = _kernel_parameters(notebook)
        # None in a parameters cell stands for the entry's value (the notebook looks it up)
        differ = {k: v for k, v in entry.parameters.items() if values.get(k) is not None and values[k] != v}
        warnings = [f"interactive run: the notebook's values of {', '.join(sorted(differ))} are not entry "
                    f"{entry.id}'s [parameters] ({', '.join(f'{k}={v!r}' for k, v in sorted(differ.items()))}), "
                    f"which benchbook reproduce {entry.id} passes"] if differ else []
        inputs = [entry.source] + ([entry.dataset_dir] if entry.dataset_dir is not None else [])
        run = start_interactive_run(notebook, changed or {"figure_id": figure_id}, entry.id, inputs=inputs,
                                    done_when=(VERDICT_FILE, DRY_RUN_FILE), warnings=warnings)
        output_dir = run.run_dir
        print(f"interactive run of {entry.id}: writing into {output_dir}", *warnings, sep="\n")
    return OpenedEntry(entry, Verdict.for_entry(entry), paper_module, str(output_dir))
