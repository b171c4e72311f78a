"""TCP trace analysis: `benchbook tcp` against tcptrace, `tshark -q -z conv,tcp` and a dpkt script computing the
same metrics, on one generated capture of 8 bulk flows (benchbook.capture.tcp_synth: sender side, snap length
96, timestamps, delayed ACKs, 0.1 % losses and reordering), plus the in-process core and peak RSS at 3 M and 30 M
packets. Full run: 3 M packets (30 M for the RSS row, ~3 GB under benchmarks/work/); quick: 300 k.

Every wall time is the best of several runs in fresh child processes, start-up included; the notes also give
the child's best CPU time (user + system over all its threads), which a shared machine disturbs less. A start-up
row runs both tools on a capture of a few hundred packets: what `benchbook tcp` spends before and after the
packets (interpreter, CLI, the AOT kernel build or numba's JIT, pyarrow, writing the report).
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

from benchbook.analysis.tcp_pass import run_pass
from benchbook.capture.tcp_synth import make_tcp_capture
from timing import best_of, child_run, kernels_mode, row

HERE = Path(__file__).resolve().parent
WORK = HERE / "work"
PY = sys.executable
BENCHBOOK = str(Path(PY).with_name("benchbook"))


def capture(segments: int) -> tuple[Path, dict]:
    """A generated capture of 8 bulk flows, about 12 x segments packets (kept in benchmarks/work/)."""
    WORK.mkdir(parents=True, exist_ok=True)
    path = WORK / f"tcp-{segments}.pcap"
    meta = Path(str(path) + ".truth.json")
    if not (path.exists() and meta.exists()):
        t = make_tcp_capture(path, flows=8, segments=segments, rate_bps=60e6, loss=0.001, reorder=0.001, seed=3)
        meta.write_text(json.dumps({"packets": t.packets, "flows": t.flows, "params": t.params}))
    return path, json.loads(meta.read_text())


def best(cmd: list[str], repeat: int) -> tuple[dict, list[dict]]:
    """The run with the best wall time, its "cpu" replaced by the best CPU time of all runs; all runs."""
    runs = [child_run(cmd) for _ in range(repeat)]
    return dict(min(runs, key=lambda r: r["s"]), cpu=min(r["cpu"] for r in runs)), runs


def run(quick: bool) -> list[dict]:
    rows: list[dict] = []
    path, truth = capture(25_000 if quick else 250_000)
    n = truth["packets"]
    out = WORK / "tcp-out"
    bb = [BENCHBOOK, "tcp", str(path), "-o", str(out)]
    child_run(bb)  # compiles and caches the kernels on a fresh checkout
    ours, runs = best(bb, 3)
    s = json.loads((out / "summary.json").read_text())
    assert s["packets"] == n
    for f, t in zip(sorted(s["flows"], key=lambda f: f["sport"]), truth["flows"], strict=True):
        assert f["retransmissions"] == t["retransmissions"] + t["reordered"], (f, t)
    ours_rate = n / ours["s"] / 1e6
    ours_cpu_rate = n / ours["cpu"] / 1e6
    walls = ", ".join(f"{r['s']:.2f}" for r in runs)

    if shutil.which("tcptrace"):
        tt, tt_runs = best(["tcptrace", "-n", "-l", str(path)], 3)
        tt_walls = ", ".join(f"{r['s']:.2f}" for r in tt_runs)
        rows.append(row(f"`benchbook tcp` {n / 1e6:.2f} M packets, from the shell", ours_rate, n / tt["s"] / 1e6,
                        "tcptrace -n -l", "Mpkt/s",
                        f"wall best of 3 (ours {walls} s; tcptrace {tt_walls} s); "
                        f"best CPU: ours {ours['cpu']:.2f} s = {ours_cpu_rate:.2f} Mpkt/s, tcptrace "
                        f"{tt['cpu']:.2f} s = {n / tt['cpu'] / 1e6:.2f} Mpkt/s (CPU ratio "
                        f"{tt['cpu'] / ours['cpu']:.2f}x); ours writes 3 parquet tables, summary.json, report.html"))
        tiny, tiny_truth = capture(10)
        s_ours, _ = best([BENCHBOOK, "tcp", str(tiny), "-o", str(WORK / "tcp-out-tiny")], 3)
        s_tt, _ = best(["tcptrace", "-n", "-l", str(tiny)], 3)
        rows.append(row(f"start-up: `benchbook tcp` on {tiny_truth['packets']} packets", s_ours["cpu"], s_tt["cpu"],
                        "tcptrace -n -l", "s CPU",
                        f"best CPU of 3 (wall: ours {s_ours['s']:.2f} s, tcptrace {s_tt['s']:.2f} s): interpreter, "
                        f"CLI, kernels ({kernels_mode()}), pyarrow, report", higher_is_better=False))
    if shutil.which("tshark"):
        ts = child_run(["tshark", "-q", "-r", str(path), "-z", "conv,tcp"])
        rows.append(row(f"`benchbook tcp` {n / 1e6:.2f} M packets, from the shell", ours_rate, n / ts["s"] / 1e6,
                        "tshark -q -z conv,tcp", "Mpkt/s",
                        f"one tshark run: {ts['s']:.1f} s wall, {ts['cpu']:.1f} s CPU, peak RSS "
                        f"{ts['rss'] / 1024:.0f} MiB (ours {ours['rss'] / 1024:.0f} MiB)"))
    n_dpkt = 50_000 if quick else 300_000
    d = child_run([PY, str(HERE / "baselines" / "dpkt_tcp.py"), str(path), "--limit", str(n_dpkt)])
    rows.append(row(f"`benchbook tcp` {n / 1e6:.2f} M packets, from the shell", ours_rate, n_dpkt / d["s"] / 1e6,
                    "dpkt script (baselines/dpkt_tcp.py)", "Mpkt/s",
                    f"dpkt on the first {n_dpkt:,} packets incl. start-up, extrapolated as a rate "
                    f"({d['s']:.1f} s wall, {d['cpu']:.1f} s CPU)"))

    # ---- in-process core: the streaming pass (flows, bins, rules, RTT) without writing files ---------------

    run_pass([path])
    cpu: list[float] = []

    def core() -> None:
        c0 = time.process_time()
        run_pass([path])
        cpu.append(time.process_time() - c0)

    t_core = best_of(core, 3)
    rows.append(row("in-process core (tcp_pass.run_pass)", n / t_core / 1e6, 10.0, "goal 10 Mpkt/s", "Mpkt/s",
                    f"best wall of 3: {t_core:.3f} s; best CPU {min(cpu):.3f} s = {n / min(cpu) / 1e6:.1f} Mpkt/s; "
                    "reading (reader thread) and RTT histograms included, no parquet/HTML"))

    rows.append(row(f"peak RSS `benchbook tcp` {n / 1e6:.2f} M", ours["rss"] / 1024, 300.0, "limit 300 MiB", "MiB",
                    "ru_maxrss of the child; ratio = limit / used", higher_is_better=False))
    if not quick:
        free = shutil.disk_usage(WORK).free
        big_path = WORK / "tcp-2500000.pcap"
        if free < 8 * 2**30 and not big_path.exists():
            rows.append(row("peak RSS `benchbook tcp` 30 M", float("nan"), 300.0, "limit 300 MiB", "MiB",
                            f"skipped: {free / 2**30:.1f} GiB free, the capture needs 3 GB"))
        else:
            big, btruth = capture(2_500_000)
            nb = btruth["packets"]
            r, _ = best([BENCHBOOK, "tcp", str(big), "-o", str(WORK / "tcp-out-30M")], 2)
            if shutil.which("tcptrace"):
                tb, _ = best(["tcptrace", "-n", "-l", str(big)], 2)
                rows.append(row(f"`benchbook tcp` {nb / 1e6:.1f} M packets, from the shell", nb / r["s"] / 1e6,
                                nb / tb["s"] / 1e6, "tcptrace -n -l", "Mpkt/s",
                                f"best of 2 each: ours {r['s']:.1f} s wall, {r['cpu']:.1f} s CPU "
                                f"({nb / r['cpu'] / 1e6:.2f} Mpkt/s); tcptrace {tb['s']:.1f} s wall, {tb['cpu']:.1f} s "
                                f"CPU ({nb / tb['cpu'] / 1e6:.2f} Mpkt/s; CPU ratio {tb['cpu'] / r['cpu']:.2f}x)"))
            rows.append(row(f"peak RSS `benchbook tcp` {btruth['packets'] / 1e6:.1f} M", r["rss"] / 1024, 300.0,
                            "limit 300 MiB", "MiB",
                            f"vs {ours['rss'] / 1024:.0f} MiB at {n / 1e6:.1f} M: flat with capture size; wall "
                            f"{r['s']:.1f} s ({btruth['packets'] / r['s'] / 1e6:.2f} Mpkt/s), CPU {r['cpu']:.1f} s",
                            higher_is_better=False))
    return rows
