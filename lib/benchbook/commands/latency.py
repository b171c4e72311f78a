"""`benchbook latency PRE POST -o DIR`: per-packet latency from a pre-DuT and a post-DuT capture;
`benchbook latency --pairs FILE -o DIR`: the same for every pair a CSV lists, on the local or the dask engine."""

from __future__ import annotations

from pathlib import Path

import typer

from benchbook.engine.options import ENGINE_OPTION, SCHEDULER_OPTION, SSH_CLUSTER_OPTION


def register(app: typer.Typer) -> None:
    """Add this module's command(s) to the benchbook app."""
    app.command("latency")(latency)


def latency(
    pre: Path | None = typer.Argument(None, help="capture before the device under test (pcap/pcapng, .zst ok)"),
    post: Path | None = typer.Argument(None, help="capture after the device under test"),
    out: Path = typer.Option(..., "-o", "--out", help="output directory"),
    pairs: Path | None = typer.Option(None, "--pairs", help="CSV with columns pre,post,name: one report per "
                                      "pair in DIR/<name>/, and DIR/merged.hlog, DIR/merged.json"),
    engine: str | None = ENGINE_OPTION,
    scheduler: str | None = SCHEDULER_OPTION,
    ssh_cluster: Path | None = SSH_CLUSTER_OPTION,
    id_offset: int | None = typer.Option(None, "--id-offset", help="frame offset of the packet id"),
    id_width: int = typer.Option(8, "--id-width", help="id width in bytes (1..8)"),
    id_big_endian: bool = typer.Option(False, "--id-big-endian", help="id is big-endian (default little)"),
    content_key: bool = typer.Option(False, "--content-key", help="MoonSniff/pos key: bytes 12-64, checksums zeroed"),
    max_latency_ms: float = typer.Option(5000.0, "--max-latency-ms", help="latencies must be below this"),
    window: int = typer.Option(1 << 18, "--window", help="matching window in pre packets (power of two)"),
    no_html: bool = typer.Option(False, "--no-html", help="skip hdr.html"),
) -> None:
    """Match PRE and POST; write latencies.parquet, latency.hlog, hdr.html and summary.json to DIR.

    DIR is replaced as a whole only when the analysis succeeds (a failed run leaves it as it was).
    With --pairs, DIR/<name>/ holds exactly what `benchbook latency PRE POST -o DIR/<name>` writes (paths
    made absolute, relative ones read from the CSV's folder), whichever --engine runs the pairs.
    Exit status: 0 ok, 1 a capture problem or no matched packets, 2 a usage error."""
    problem = _check_options(id_offset, id_width, content_key, max_latency_ms, window, out)
    if problem is None and (pairs is None) == (pre is None or post is None):
        problem = "give PRE and POST, or --pairs FILE (not both)" if pairs else "give PRE and POST (or --pairs FILE)"
    if problem is None and pairs is None and (engine or scheduler or ssh_cluster):
        problem = "--engine, --scheduler and --ssh-cluster apply to --pairs"
    if problem:
        typer.echo(f"benchbook latency: error: {problem}", err=True)
        raise typer.Exit(2)
    from benchbook.analysis.latency import ContentKey, IdKey
    from benchbook.analysis.latency_report import analyze_captures, format_summary
    from benchbook.capture import CaptureFormatError
    from benchbook.capture.errors import CaptureFileError
    from benchbook.capture.source import check_capture_file

    try:
        key = ContentKey() if content_key else IdKey(id_offset, id_width, "big" if id_big_endian else "little")
    except ValueError as exc:
        typer.echo(f"benchbook latency: error: {exc}", err=True)
        raise typer.Exit(2) from None
    if pairs is not None:
        _latency_pairs(pairs, out, key, round(max_latency_ms * 1e6), window, not no_html, engine, scheduler,
                       ssh_cluster)
        return
    assert pre is not None and post is not None
    for p in (pre, post):
        try:
            check_capture_file(p)
        except CaptureFileError as exc:
            typer.echo(f"benchbook latency: error: {exc}", err=True)
            raise typer.Exit(2) from None
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # every warning is kept in summary.json and printed below
        try:
            summary = analyze_captures(
                pre, post, out, key, max_latency_ns=round(max_latency_ms * 1e6), window_packets=window,
                html=not no_html,
            )
        except CaptureFormatError as exc:
            typer.echo(f"benchbook latency: error: {exc} ({out} left unchanged)", err=True)
            raise typer.Exit(1) from None
    for w in summary["details"]["warnings"]:
        typer.echo(f"warning: {w}", err=True)
    typer.echo(format_summary(summary))
    typer.echo(f"wrote {out}/: latencies.parquet latency.hlog summary.json" + ("" if no_html else " hdr.html"))
    if summary["matched"] == 0:
        raise typer.Exit(1)


def _check_options(id_offset: int | None, id_width: int, content_key: bool, max_latency_ms: float, window: int,
                   out: Path) -> str | None:
    """What is wrong with the options (one line), or None."""
    from benchbook.analysis.hlog_merge import max_latency_problem

    if (id_offset is None) == (not content_key):
        return "give exactly one of --id-offset N or --content-key"
    if id_offset is not None and id_offset < 0:
        return f"--id-offset {id_offset}: expected a frame offset >= 0"
    if not 1 <= id_width <= 8:
        return f"--id-width {id_width}: expected 1..8 bytes"
    if (problem := max_latency_problem(max_latency_ms)) is not None:
        return problem
    if window < 2 or window & (window - 1):
        return f"--window {window}: expected a power of two >= 2 (e.g. {1 << max(1, window.bit_length())})"
    if out.exists() and not out.is_dir():
        return f"-o {out}: exists and is not a directory"
    return None


PAIR_COLUMNS = ("pre", "post", "name")


def read_pairs(path: Path) -> list[tuple[Path, Path, str]]:
    """The pairs of a --pairs CSV (header pre,post,name; relative paths from the CSV's folder, made
    absolute). Errors name the file and line."""
    import csv

    from benchbook.analysis.hlog_merge import pair_name_problem
    from benchbook.capture.errors import CaptureFileError
    from benchbook.capture.source import check_capture_file

    where = path.absolute().parent
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PairsError(f"--pairs {path}: cannot read ({exc})") from None
    rows = list(csv.reader(text.splitlines()))
    if not rows or sorted(c.strip() for c in rows[0]) != sorted(PAIR_COLUMNS):
        got = ",".join(rows[0]) if rows else "an empty file"
        raise PairsError(f"{path}: line 1: expected the header pre,post,name, got {got!r}")
    cols = [c.strip() for c in rows[0]]
    out: list[tuple[Path, Path, str]] = []
    seen: dict[str, int] = {}
    for n, row in enumerate(rows[1:], start=2):
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) != len(cols):
            raise PairsError(f"{path}: line {n}: expected {len(cols)} fields (pre,post,name), got {len(row)}")
        rec = dict(zip(cols, (c.strip() for c in row), strict=True))
        name = rec["name"]
        if (problem := pair_name_problem(name)) is not None:
            raise PairsError(f"{path}: line {n}: {problem}")
        if name in seen:
            raise PairsError(f"{path}: line {n}: name {name!r} already used on line {seen[name]}")
        seen[name] = n
        caps = []
        for col in ("pre", "post"):
            if not rec[col]:
                raise PairsError(f"{path}: line {n}: empty {col} path")
            p = Path(rec[col]).expanduser()
            p = p if p.is_absolute() else where / p
            try:
                check_capture_file(p)
            except CaptureFileError as exc:
                raise PairsError(f"{path}: line {n}: {col}: {exc}") from None
            caps.append(p)
        out.append((caps[0], caps[1], name))
    if not out:
        raise PairsError(f"{path}: no pairs (expected lines pre,post,name after the header)")
    return out


class PairsError(ValueError):
    """A --pairs file that cannot be used (a usage error)."""


def pair_task(pre: str, post: str, final: str, key, max_latency_ns: int, window: int, html: bool) -> dict:
    """One pair's analysis (on the local engine or a Dask worker): the report written into a fresh attempt
    directory beside ``final``; returns the attempt path and the summary."""
    import warnings

    from benchbook.analysis.latency_report import analyze_captures
    from benchbook.engine.tasks import attempt_dir

    work = attempt_dir(final)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # kept in summary.json
        summary = analyze_captures(pre, post, work, key, max_latency_ns=max_latency_ns, window_packets=window,
                                   html=html, report_path=final)
    return {"attempt": str(work), "summary": summary}


def _latency_pairs(pairs_csv: Path, out: Path, key, max_latency_ns: int, window: int, html: bool,
                   engine: str | None, scheduler: str | None, ssh_cluster: Path | None) -> None:
    from benchbook.analysis.hlog_merge import MERGED_FILES, merged_line
    from benchbook.analysis.latency_report import OUTPUT_FILES
    from benchbook.engine import EngineError, Task, engine_spec, run_installed_or_exit

    try:
        spec = engine_spec(engine, scheduler, ssh_cluster)
        pairs = read_pairs(pairs_csv)
    except (EngineError, PairsError) as exc:
        typer.echo(f"benchbook latency: error: {exc}", err=True)
        raise typer.Exit(2) from None
    out = out.absolute()
    finals = {name: out / name for _pre, _post, name in pairs}
    tasks = [Task(name, pair_task, (str(pre), str(post), str(finals[name]), key, max_latency_ns, window, html))
             for pre, post, name in pairs]
    done, failed = run_installed_or_exit(spec, tasks, finals, OUTPUT_FILES, "pairs", "benchbook latency: error")
    summaries = {name: value["summary"] for name, value in done.items()}
    for _pre, _post, name in pairs:
        if name in summaries:
            s = summaries[name]
            for w in s["details"]["warnings"]:
                typer.echo(f"warning: {name}: {w}", err=True)
            typer.echo(f"{name}: matched {s['matched']} lost {s['lost']}  {_pct(s, '50')}  {_pct(s, '99')}  "
                       f"max {s['max_ns']} ns")
        else:
            typer.echo(f"benchbook latency: error: pair {name}: {failed[name]} ({finals[name]} left unchanged)",
                       err=True)
    if failed:
        for f in MERGED_FILES:
            (out / f).unlink(missing_ok=True)  # a merge of other pairs would pass for this run's
        raise typer.Exit(1)
    merged = write_merged(out, [name for _pre, _post, name in pairs], max_latency_ns)
    typer.echo(merged_line(merged))
    typer.echo(f"wrote {out}/: {len(pairs)} pair folders, merged.hlog, merged.json")
    if any(s["matched"] == 0 for s in summaries.values()):
        raise typer.Exit(1)


def _pct(summary: dict, p: str) -> str:
    """"p99 12345 ns", or "p99 not resolvable at N = ..." when the packet count cannot resolve it."""
    v = summary["percentiles_ns"].get(p)
    if v is None:
        return f"p{p} " + summary.get("unresolved_percentiles", {}).get(p, "no value")
    return f"p{p} {v} ns"


def write_merged(out: Path, names: list[str], max_latency_ns: int) -> dict:
    """DIR/merged.hlog: one histogram holding every interval of every pair's latency.hlog (counts added,
    nothing re-recorded), and DIR/merged.json: its count and percentiles (benchbook.analysis.hlog_merge)."""
    from benchbook.analysis.hlog_merge import write_merged as write_merged_files

    return write_merged_files(out, [(name, out / name / "latency.hlog") for name in names], max_latency_ns)
