"""`benchbook reproduce`: rerun registered paper figures and compare with the published numbers.

    benchbook reproduce ID            execute the entry's notebook into a run directory, print the
                                      verdict table and exit with the entry's outcome
    benchbook reproduce ID --dry-run  execute it with dry_run=True: the notebook writes dry-run.txt
                                      (every command each host would run) and measures nothing; the
                                      file is printed, exit 0
    benchbook reproduce --show ID     the entry, its published values and its notebook's parameters
                                      (default, the entry's value, meaning)
    benchbook reproduce --list        every entry, its paper folder, mode, published values and
                                      whether it can run here
    benchbook reproduce --all         every entry that can run here (the others: skipped, with why)
    --list/--all --paper PAPER_ID     only the entries of that paper folder
    --all --fresh-kernel              a new Jupyter kernel per entry (default: one kernel for the whole
                                      --all, reset to a fresh kernel's state before each entry, and one
                                      browser for its static figures; benchbook.reproduce.run)

Outcomes and exit status (for --all: the worst outcome over the entries run, in the order
failed > mismatch > inconclusive > partial > figure redrawn > reproduced; skipped entries do not count;
the words are docs/statistics.md's):

    0  reproduced      every published value derived here matched / was reproduced within its margin
       figure redrawn  nothing to compare: the figure was redrawn (counted apart from reproduced)
    1  mismatch        a value disagrees with the published one (or a principal claim fails)
    2  usage           bad usage or a malformed registry entry / paper folder
    3  cannot run      the entry cannot run on this machine (the reason is printed)
    4  partial         no mismatch, but some published values are not derivable (or not comparable) here;
                       the verdict says whether the figure's principal claim was reproduced
    5  failed          the notebook failed, wrote no verdict, or the dataset's SHA256SUMS do not verify
    6  inconclusive    a measured entry whose runs decide neither way (too few runs, a statistic the runs
                       cannot resolve, a margin below the noise floor); the rows say how many runs would

For a measured entry each row shows the estimate (median over runs), its 95 % interval, the margin and the
runs; then "k of m reproduced; m*alpha = x mismatches expected by chance" and the claims.

Options: --papers DIR (repeatable) and BENCHBOOK_PAPERS=dir1:dir2 add paper folders (or folders of
paper folders) to the built-in ones under notebooks/; --runs-dir where run directories go (default
data/runs, or BENCHBOOK_RUNS); -p key=value overrides a notebook parameter (values are parsed as
JSON when they can be).

The reproducing itself is benchbook.reproduce.run (a library caller needs no CLI); this module parses the
arguments and prints what it returns.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer

from benchbook.engine.options import ENGINE_OPTION, SCHEDULER_OPTION, SSH_CLUSTER_OPTION

EXIT_REPRODUCED = 0
EXIT_MISMATCH = 1
EXIT_BAD_USAGE = 2
EXIT_CANNOT_RUN = 3
EXIT_PARTIAL = 4
EXIT_FAILED = 5
EXIT_INCONCLUSIVE = 6
EXIT_CODES = {"reproduced": EXIT_REPRODUCED, "figure redrawn": EXIT_REPRODUCED, "mismatch": EXIT_MISMATCH,
              "skipped": EXIT_CANNOT_RUN, "partial": EXIT_PARTIAL, "failed": EXIT_FAILED,
              "inconclusive": EXIT_INCONCLUSIVE}
_SEVERITY = ("reproduced", "figure redrawn", "partial", "inconclusive", "mismatch", "failed")
_STYLES = {"reproduced": "green", "figure redrawn": "cyan", "partial": "yellow", "inconclusive": "magenta",
           "mismatch": "bold red", "failed": "bold red", "skipped": "yellow", "dry run": "cyan"}


def _console():
    from rich.console import Console

    # Piped into a log (make reproduce, CI) there is no terminal width: keep output paths whole.
    return Console() if sys.stdout.isatty() else Console(width=160)


def _parse_overrides(items: list[str]) -> dict[str, Any]:
    """-p key=value items: values parsed as JSON where they can be (checked against the notebook's
    parameters by benchbook.reproduce.notebook_params.prepare_parameters when the entry runs)."""
    import json

    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"expected key=value, got {item!r}", param_hint="--param")
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        out[key] = value
    return out


def _print_progress(step, console) -> None:
    """A step of benchbook.reproduce.run (a Progress), as the command has always printed it."""
    from rich.text import Text

    if step.kind == "executing":
        console.print(Text.assemble((step.entry_id, "bold"), f": {step.text}"))
    elif step.kind == "dataset":
        console.print(Text(step.text, style="dim"))
    else:
        console.print(str(step), highlight=False, markup=False)


def _print_result(res, console) -> None:
    """An EntryResult of benchbook.reproduce.run: its verdict table, figures, claim and outcome."""
    verdict = res.verdict
    if verdict is not None:
        console.print(verdict.rich_table())
        for stem, exports in verdict.figures.items():
            shown = ", ".join(f"{fmt}: {path}" for fmt, path in exports.items())
            console.print(f"  figure [bold]{stem}[/]: {shown}")
        claim = verdict.claim()
        if claim["text"]:
            style = {"reproduced": "green", "mismatch": "bold red", "figure redrawn": "cyan"}.get(claim["status"],
                                                                                             "yellow")
            console.print(f"principal claim: {claim['text']} [{style}]{claim['status']}[/]", highlight=False)
    if res.plan is not None:
        # soft_wrap: a plan's lines stay whole (a copied command must be the one that runs)
        console.print(res.plan, highlight=False, markup=False, end="", soft_wrap=True)
    console.print(f"[{_STYLES[res.outcome]}]{res.id}: {res.outcome}[/] - {res.detail}", highlight=False)
    if res.run_dir is not None:
        console.print(f"  outputs: {res.run_dir}", highlight=False)


def _where(path: Path) -> str:
    from benchbook.paths import REPO_ROOT

    try:
        return str(path.resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(path.resolve())


def _list_entries(entries, console) -> None:
    from rich.table import Table

    from benchbook.reproduce.capabilities import entry_blockers

    n_values = sum(len(e.published) for e in entries.values())
    table = Table(title=f"{len(entries)} registered entries, {n_values} published values")
    table.add_column("id", overflow="fold")
    table.add_column("paper folder", overflow="fold")
    table.add_column("mode", no_wrap=True)
    table.add_column("published values", justify="right", no_wrap=True)
    table.add_column("here", no_wrap=True)
    why: list[tuple[str, list[str]]] = []
    for entry in entries.values():
        blockers = entry_blockers(entry)
        table.add_row(entry.id, _where(entry.folder), entry.mode,
                      str(len(entry.published)) if entry.published else "0 (figure)",
                      "[green]yes[/]" if not blockers else "[yellow]no[/]")
        if blockers:
            why.append((entry.id, blockers))
    console.print(table)
    for entry in entries.values():
        console.print(f"[bold]{entry.id}[/]: {entry.title}", highlight=False)
    for figure_id, blockers in why:
        console.print(f"[yellow]{figure_id} cannot run here[/]: " + "; ".join(blockers), highlight=False)


def _show_entry(entry, console) -> None:
    from rich.markup import escape
    from rich.table import Table

    from benchbook.reproduce.notebook_params import notebook_parameters

    lines = [
        f"[bold]{entry.id}[/]: {entry.title}",
        f"paper folder: {_where(entry.folder)}" + (f" ({entry.paper.title})" if entry.paper else ""),
        f"entry file:   {_where(entry.source)}",
        f"citation:     {entry.citation}",
        f"notebook:     {entry.notebook} -> {_where(entry.notebook_path)}",
        f"mode:         {entry.mode}" + (f", requires {', '.join(entry.requires)}" if entry.requires else ""),
    ]
    if entry.dataset:
        lines.append(f"dataset:      {entry.dataset} -> {entry.dataset_dir}")
    if entry.claim:
        rows = f" (rows: {', '.join(entry.claim_rows)})" if entry.claim_rows else ""
        lines.append(f"claim:        {entry.claim}{rows}")
    if entry.paper is not None and entry.paper.unstated:
        lines.append(f"the paper leaves unstated: {entry.paper.unstated}")
    if entry.notes:
        lines.append(f"notes:        {entry.notes}")
    for line in lines:
        head, sep, rest = line.partition(":")
        console.print(head + sep + escape(rest), highlight=False)
    if entry.published:
        pt = Table(title=f"{len(entry.published)} published values")
        for col in ("name", "value", "compared", "declared source"):
            pt.add_column(col, overflow="fold")
        for pv in entry.published:
            if pv.measured:
                where = f"runs of {pv.arm}:{pv.run_statistic}" if pv.arm else ""
                src = (f"{where} ({pv.value_range})" if pv.comparable else
                       "; ".join(x for x in (where, f"not comparable: {pv.not_comparable_reason}") if x))
            else:
                src = ", ".join(f"{k}={getattr(pv, k)}" for k in ("folder", "statistic", "rate_pps", "repeat")
                                if getattr(pv, k) is not None)
            pt.add_row(escape(pv.name), f"{pv.value:g} {pv.unit}".strip(), pv.tolerance_text(), escape(src or "-"))
        console.print(pt)
    if entry.claims:
        ct = Table(title=f"{len(entry.claims)} claims (* principal), judged across runs")
        for col in ("id", "test", "text"):
            ct.add_column(col, overflow="fold")
        for c in entry.claims:
            d = c.as_dict()
            test = " ".join(f"{k}={d[k]}" for k in ("test", "a", "b", "within", "successes", "trials", "q")
                            if k in d)
            margin = c.margin_text()
            ct.add_row(c.id + (" *" if c.principal else ""), escape(test + (f" margin {margin}" if margin else "")),
                       escape(c.text))
        console.print(ct)
    params = notebook_parameters(entry.notebook_path) if entry.notebook_path.is_file() else []
    from benchbook.reproduce.notebook_params import INJECTED_PARAMETERS

    tab = Table(title=f"notebook parameters ({entry.notebook_path.name}); set one with -p name=value")
    for col in ("parameter", "notebook default", "this entry", "meaning"):
        tab.add_column(col, overflow="fold")
    for p in params:
        mine = repr(entry.parameters[p.name]) if p.name in entry.parameters else (
            "set by benchbook reproduce" if p.name in INJECTED_PARAMETERS else "-")
        tab.add_row(p.name, escape(p.default), escape(mine), escape(p.meaning))
    for name in sorted(set(entry.parameters) - {p.name for p in params}):
        tab.add_row(name, "-", escape(repr(entry.parameters[name])), "(not a parameter of the notebook)")
    console.print(tab)


def register(app: typer.Typer) -> None:
    """Add `benchbook reproduce` to the app."""

    @app.command("reproduce")
    def reproduce(
        figure_id: str | None = typer.Argument(None, help="registry id of an entry (see --list)"),
        list_: bool = typer.Option(False, "--list", help="list every entry and whether it can run here"),
        all_: bool = typer.Option(False, "--all", help="reproduce every entry that can run here"),
        show: bool = typer.Option(False, "--show", help="show the entry ID with its notebook parameters"),
        dry_run: bool = typer.Option(False, "--dry-run", help="run the notebook with dry_run=True, print dry-run.txt"),
        papers: list[Path] = typer.Option(
            [], "--papers", help="add a paper folder (or a folder of paper folders); repeatable; "
                                 "BENCHBOOK_PAPERS=dir1:dir2 adds more"),
        paper: str | None = typer.Option(None, "--paper", help="--list/--all: only this paper's entries"),
        runs_dir: Path | None = typer.Option(None, "--runs-dir", help="where run directories go"),
        param: list[str] = typer.Option([], "--param", "-p", help="override a notebook parameter: key=value"),
        fresh_kernel: bool = typer.Option(False, "--fresh-kernel", help="--all: start a new kernel for every entry "
                                          "(default: one kernel, reset to a fresh kernel's state before each "
                                          "entry, and one browser for static figures)"),
        engine: str | None = ENGINE_OPTION,
        scheduler: str | None = SCHEDULER_OPTION,
        ssh_cluster: Path | None = SSH_CLUSTER_OPTION,
    ) -> None:
        """Rerun a paper figure from its data and compare with the published numbers."""
        from benchbook.reproduce.notebook_params import ParameterError
        from benchbook.reproduce.registry import RegistryError, load_entry, load_registry
        from benchbook.reproduce.run import reproduce_entries, reproduce_entry

        console = _console()

        def progress(step) -> None:
            _print_progress(step, console)

        def printed(res) -> None:
            _print_result(res, console)

        if sum(bool(x) for x in (figure_id and not show, list_, all_, show)) != 1 or (show and not figure_id):
            console.print("give exactly one of: ID, --show ID, --list, --all")
            raise typer.Exit(EXIT_BAD_USAGE)
        if dry_run and not figure_id or dry_run and show:
            console.print("--dry-run needs an entry ID")
            raise typer.Exit(EXIT_BAD_USAGE)
        if fresh_kernel and not all_:
            console.print("--fresh-kernel applies to --all")
            raise typer.Exit(EXIT_BAD_USAGE)
        if (engine or scheduler or ssh_cluster) and not all_:
            console.print("--engine, --scheduler and --ssh-cluster apply to --all")
            raise typer.Exit(EXIT_BAD_USAGE)
        overrides = _parse_overrides(param)

        def selected():
            entries = load_registry(papers)
            if paper is None:
                return entries
            chosen = {k: e for k, e in entries.items() if e.folder.name == paper}
            if not chosen:
                known = ", ".join(sorted({e.folder.name for e in entries.values()}))
                raise RegistryError(f"no paper folder {paper!r} on the search path (known: {known})")
            return chosen

        try:
            if list_:
                _list_entries(selected(), console)
                raise typer.Exit(EXIT_REPRODUCED)
            if figure_id:
                entry = load_entry(figure_id, papers=papers)
                if show:
                    _show_entry(entry, console)
                    raise typer.Exit(EXIT_REPRODUCED)
                res = reproduce_entry(entry, runs_dir, overrides, dry_run=dry_run, progress=progress)
                _print_result(res, console)
                if res.outcome == "dry run":
                    raise typer.Exit(EXIT_REPRODUCED)
                raise typer.Exit(EXIT_CODES[res.outcome])
            entries = selected()
        except RegistryError as exc:
            console.print(f"[bold red]registry error[/]: {exc}", highlight=False)
            raise typer.Exit(EXIT_BAD_USAGE) from exc
        except ParameterError as exc:
            console.print(f"[bold red]parameter error[/]: {exc}", highlight=False)
            raise typer.Exit(EXIT_BAD_USAGE) from exc
        from benchbook.engine import EngineError, engine_spec

        try:
            spec = engine_spec(engine, scheduler, ssh_cluster)
        except EngineError as exc:
            console.print(f"[bold red]engine error[/]: {exc}", highlight=False)
            raise typer.Exit(EXIT_BAD_USAGE) from exc
        try:
            results = reproduce_entries(entries, runs_dir, overrides, spec, progress=progress, on_result=printed,
                                        shared_kernel=not fresh_kernel)
        except EngineError as exc:
            console.print(f"[bold red]engine error[/]: {exc}", highlight=False)
            raise typer.Exit(EXIT_CANNOT_RUN) from exc
        _summary(results, console)
        ran = [r.outcome for r in results if r.outcome != "skipped"]
        worst = max(ran, key=_SEVERITY.index) if ran else "reproduced"
        raise typer.Exit(EXIT_CODES[worst])


def _summary(results: list, console) -> None:
    from collections import Counter

    from rich.table import Table

    table = Table(title="benchbook reproduce --all")
    for col in ("id", "mode", "outcome", "detail", "outputs"):
        table.add_column(col, overflow="fold", no_wrap=col == "id")
    for r in results:
        table.add_row(r.id, r.mode, f"[{_STYLES[r.outcome]}]{r.outcome}[/]", r.detail,
                      str(r.run_dir) if r.run_dir is not None else "-")
    console.print(table)
    counts = Counter(r.outcome for r in results)
    order = ("reproduced", "figure redrawn", "partial", "inconclusive", "mismatch", "failed", "skipped")
    console.print("outcomes: " + ", ".join(f"{counts[o]} {o}" for o in order if counts[o]), highlight=False)
