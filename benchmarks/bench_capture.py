"""Capture reading and latency matching: benchbook against dpkt, scapy, tshark, pyshark and a
straightforward dpkt matching script, on the same generated nanosecond pcap pair.

Full run: scan on a 2 M-packet pair side; `benchbook latency` from the shell on 2 x 10 M, once per key mode
(sequential ids, byte-swapped ids, content key); peak RSS for 2 x 10 M and 2 x 50 M (the 50 M pair needs
~8 GB under benchmarks/work/). pyshark and the dpkt
matching script run on a subsample (first N packets) and are extrapolated as rates; the notes say so.
Generated captures are kept in benchmarks/work/ (git-ignored) and reused.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import warnings
from pathlib import Path

import dpkt
import pyshark
from scapy.utils import RawPcapReader

from benchbook.analysis.latency import IdKey, match_captures
from benchbook.capture import open_capture
from benchbook.capture.synth import make_capture_pair
from timing import best_of, child_run, kernels_mode, row

HERE = Path(__file__).resolve().parent
WORK = HERE / "work"
PY = sys.executable


def pair(n: int) -> tuple[Path, Path, dict]:
    """A generated ns pcap pair of n packets per side (1 Mpkt/s, 0.1 % loss/dup/reorder)."""
    WORK.mkdir(parents=True, exist_ok=True)
    tag = f"{n // 1000}k" if n < 1_000_000 else f"{n // 1_000_000}M"
    pre, post, meta = WORK / f"pre-{tag}.pcap", WORK / f"post-{tag}.pcap", WORK / f"truth-{tag}.json"
    if not (pre.exists() and post.exists() and meta.exists()):
        t = make_capture_pair(pre, post, n, rate_pps=1e6, loss=0.001, duplicate=0.001, reorder=0.001,
                              seed=42, keep_arrays=False)
        meta.write_text(json.dumps(t.counts()))
    return pre, post, json.loads(meta.read_text())



def run(quick: bool) -> list[dict]:

    rows: list[dict] = []
    n_scan = 200_000 if quick else 2_000_000
    pre, post, truth = pair(n_scan)

    # ---- scanning one capture ----------------------------------------------------------------
    def ours():
        n = 0
        for ch in open_capture(pre):
            n += len(ch)
        assert n == n_scan

    ours()  # load the cached JIT code outside the timing
    t_ours = best_of(ours, 3)
    ours_mpps = n_scan / t_ours / 1e6

    def dpkt_scan():
        n = 0
        with open(pre, "rb") as f:
            for _ts, _buf in dpkt.pcap.Reader(f):
                n += 1
        assert n == n_scan

    t = best_of(dpkt_scan, 1)
    rows.append(row("scan ns pcap (timestamps, lengths, frames)", ours_mpps, n_scan / t / 1e6, "dpkt pcap.Reader",
                    "Mpkt/s", f"{n_scan:,} packets of 64 B, page cache warm, in-process"))

    def scapy_scan():
        n = 0
        for _buf, _meta in RawPcapReader(str(pre)):
            n += 1
        assert n == n_scan

    t = best_of(scapy_scan, 1)
    rows.append(row("scan ns pcap", ours_mpps, n_scan / t / 1e6, "scapy RawPcapReader", "Mpkt/s",
                    "same file, in-process"))

    if shutil.which("tshark"):
        t0 = time.perf_counter()
        out = subprocess.run(["tshark", "-r", str(pre), "-T", "fields", "-e", "frame.time_epoch", "-e", "frame.len"],
                             capture_output=True, text=True, check=True).stdout
        t = time.perf_counter() - t0
        n = out.count("\n")
        rows.append(row("scan ns pcap", ours_mpps, n / t / 1e6, "tshark -T fields", "Mpkt/s",
                        f"tshark prints time and length of all {n:,} packets; includes its start-up"))
        n_sub = 2_000 if quick else 10_000
        sub = WORK / f"sub-{n_sub}.pcap"
        subprocess.run(["editcap", "-r", str(pre), str(sub), f"1-{n_sub}"], check=True, capture_output=True)

        def pyshark_scan():
            cap = pyshark.FileCapture(str(sub), keep_packets=False)
            k = 0
            for p in cap:
                _ = p.sniff_time, p.length
                k += 1
            cap.close()
            assert k == n_sub

        t = best_of(pyshark_scan, 1)
        rows.append(row("scan ns pcap", ours_mpps, n_sub / t / 1e6, "pyshark FileCapture", "Mpkt/s",
                        f"pyshark on the first {n_sub:,} packets, extrapolated as a rate"))

    # ---- in-process matching core ------------------------------------------------------------
    warnings.simplefilter("ignore")
    match_captures(pre, post, IdKey(42), keep_arrays=False)  # JIT load
    res = {}

    def core():
        res["r"] = match_captures(pre, post, IdKey(42), keep_arrays=False)

    t_core = best_of(core, 2)
    matched = res["r"].counts["matched"]
    assert matched == truth["matched"], (matched, truth)
    core_rate = matched / t_core / 1e6

    # the dpkt baseline on a subsample of the same pair
    n_dpkt = 50_000 if quick else 500_000
    dpkt_run = child_run([PY, str(HERE / "baselines" / "dpkt_match.py"), str(pre), str(post),
                          "--limit", str(n_dpkt)])
    d = json.loads(dpkt_run["out"])
    dpkt_rate = d["matched"] / dpkt_run["s"] / 1e6
    rows.append(row("latency matching, in-process core", core_rate, dpkt_rate, "dpkt script (baselines/dpkt_match.py)",
                    "M matched pkt/s", f"core: {n_scan:,} per side, no output files; dpkt: first {n_dpkt:,} per side, "
                    "whole script from the shell incl. start-up, extrapolated as a rate"))

    # ---- `benchbook latency` from the shell, one row per key mode ----------------------------
    n_cli = 1_000_000 if quick else 10_000_000
    cpre, cpost, ctruth = pair(n_cli)
    kernels = kernels_mode()  # one `kernels status` for the three rows
    bb = [str(Path(PY).with_name("benchbook")), "latency", str(cpre), str(cpost), "-o", str(WORK / f"out-{n_cli}"),
          "--id-offset", "42"]
    modes = (
        ("sequential ids", [], "the generator's little-endian counter at offset 42"),
        ("byte-swapped ids", ["--id-big-endian"], "the same counter read big-endian: its low bytes never vary, "
                                                  "as a big-endian counter read little-endian"),
        ("content key", None, "MoonSniff/pos key: frame bytes 12-64, IPv4/UDP checksums zeroed, hashed to 128 bits"),
    )
    rss_cli = 0
    for label, extra, what in modes:
        cmd = bb[:6] + ["--content-key"] if extra is None else bb + extra
        child_run(cmd)  # the first run may compile and cache the kernels; then the best of three
        runs = [child_run(cmd) for _ in range(3)]
        walls = [r["s"] for r in runs]
        t_cli = min(walls)
        rss_cli = max(rss_cli, *(r["rss"] for r in runs))
        s = json.loads((WORK / f"out-{n_cli}" / "summary.json").read_text())
        assert s["matched"] == ctruth["matched"], (label, s["matched"], ctruth)
        rows.append(row(f"`benchbook latency` 2 x {n_cli / 1e6:g} M ns pcap, {label}, from the shell",
                        s["matched"] / t_cli / 1e6, dpkt_rate, "dpkt script (baselines/dpkt_match.py)",
                        "M matched pkt/s",
                        f"{what}; best wall of 3 runs {t_cli:.2f} s, spread {max(walls) - t_cli:.2f} s (all: "
                        f"{', '.join(f'{w:.2f}' for w in walls)}) incl. interpreter start-up, kernels: "
                        f"{kernels}, parquet + "
                        f"hlog + hdr.html + summary; dpkt on the first {n_dpkt:,} packets per side, extrapolated; "
                        f"dpkt's float timestamps also lose ns precision"))
    rows.append(row(f"peak RSS `benchbook latency` 2 x {n_cli / 1e6:g} M", rss_cli / 1024, 1024.0, "limit 1 GiB", "MiB",
                    "resource.getrusage(RUSAGE_CHILDREN).ru_maxrss of the child, highest of the three key modes; "
                    "ratio = limit / used", higher_is_better=False))
    if not quick:
        n_big = 50_000_000
        free = shutil.disk_usage(WORK).free
        if free < 10 * 2**30 and not (WORK / "pre-50M.pcap").exists():
            rows.append(row("peak RSS `benchbook latency` 2 x 50 M", float("nan"), 1024.0, "limit 1 GiB", "MiB",
                            f"skipped: {free / 2**30:.1f} GiB free, the pair needs 8 GB"))
        else:
            bpre, bpost, btruth = pair(n_big)
            bb_big = bb.copy()
            bb_big[2], bb_big[3], bb_big[5] = str(bpre), str(bpost), str(WORK / "out-50M")
            big = child_run(bb_big)
            t_big, rss_big = big["s"], big["rss"]
            s = json.loads((WORK / "out-50M" / "summary.json").read_text())
            assert s["matched"] == btruth["matched"]
            rows.append(row("peak RSS `benchbook latency` 2 x 50 M", rss_big / 1024, 1024.0, "limit 1 GiB", "MiB",
                            f"vs {rss_cli / 1024:.0f} MiB for 2 x 10 M: flat with capture size; wall {t_big:.1f} s, "
                            f"{s['matched'] / t_big / 1e6:.2f} M matched pkt/s; percentiles: "
                            f"{s['percentile_method'].split(':')[0]}", higher_is_better=False))
    return rows


if __name__ == "__main__":
    for r in run("--quick" in sys.argv):
        print(r)
