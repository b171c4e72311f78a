"""Run every benchmarks/bench_*.py and write BENCHMARKS.md.

Each module defines ``run(quick: bool) -> list[dict]`` whose rows carry: name, benchbook, other,
other_tool, unit, ratio (benchbook's advantage: >1 means benchbook is better) and note. Both sides of
every row are measured in this one run on this machine; the machine line heads the file.

    python benchmarks/run.py            # full sizes, rewrites BENCHMARKS.md
    python benchmarks/run.py --quick    # small sizes, prints only
    python benchmarks/run.py capture    # only bench_capture.py
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import os
import platform
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def machine_line() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (
        f"{platform.node()}: Linux {platform.release()}, {cpu}, {os.cpu_count()} cores, "
        f"{mem_gib:.0f} GiB, Python {platform.python_version()}"
    )


def load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(HERE))
    spec.loader.exec_module(mod)
    return mod


def fmt(x: float) -> str:
    if x != x:  # nan
        return "n/a"
    return f"{x:.3g}" if abs(x) < 1000 else f"{x:,.0f}"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("only", nargs="*", help="benchmark module names without bench_ prefix")
    ap.add_argument("--quick", action="store_true", help="small sizes; do not rewrite BENCHMARKS.md")
    args = ap.parse_args()
    files = sorted(HERE.glob("bench_*.py"))
    if args.only:
        files = [f for f in files if f.stem.removeprefix("bench_") in args.only]
    sections: list[str] = []
    failed = 0
    for f in files:
        t0 = time.perf_counter()
        print(f"== {f.stem}", flush=True)
        try:
            rows = load(f).run(args.quick)
        except Exception:
            traceback.print_exc()
            failed += 1
            sections.append(f"## {f.stem}\n\nfailed in this run: see `make bench` output\n")
            continue
        lines = [f"## {f.stem} ({time.perf_counter() - t0:.0f} s)", "",
                 "| benchmark | benchbook | other | other tool | unit | ratio | note |",
                 "|---|---:|---:|---|---|---:|---|"]
        for r in rows:
            lines.append(
                f"| {r['name']} | {fmt(r['benchbook'])} | {fmt(r['other'])} | {r['other_tool']} | "
                f"{r['unit']} | {fmt(r['ratio'])}× | {r.get('note', '')} |"
            )
            print(f"  {r['name']}: benchbook {fmt(r['benchbook'])} vs {r['other_tool']} "
                  f"{fmt(r['other'])} {r['unit']} -> {fmt(r['ratio'])}x", flush=True)
        sections.append("\n".join(lines) + "\n")
    text = (
        "# Benchmarks\n\n"
        f"Measured by `make bench` on {dt.date.today().isoformat()}, both sides of every row in the same run.\n\n"
        f"Machine: {machine_line()}\n\n"
        "Ratio: benchbook's advantage (higher is better for benchbook).\n\n" + "\n".join(sections)
    )
    if args.quick or args.only:
        print(text)
    else:
        (ROOT / "BENCHMARKS.md").write_text(text)
        print(f"wrote {ROOT / 'BENCHMARKS.md'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
