"""The straightforward dpkt script researchers write for TCP trace metrics (the baseline of bench_tcp).

Per flow direction: packets, frame bytes, payload bytes, payload and frame bytes per 100 ms bin, Zeek-rule
retransmissions (a payload segment whose end does not pass the highest sequence seen, sequence numbers
unwrapped), goodput by sequence coverage (a list of seen ranges), TS-echo RTT samples. Prints a JSON summary.

    python dpkt_tcp.py CAPTURE [--limit N] [--bin-ms 100]
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import time
from collections import defaultdict

import dpkt


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("capture")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--bin-ms", type=float, default=100.0)
    a = ap.parse_args()
    bin_ns = int(a.bin_ms * 1_000_000)
    t_start = time.perf_counter()
    flows: dict = {}
    t0 = None
    n = 0
    with open(a.capture, "rb") as f:
        for ts, buf in dpkt.pcap.Reader(f):
            n += 1
            if a.limit and n > a.limit:
                n -= 1
                break
            t_ns = int(round(ts * 1_000_000_000))
            if t0 is None:
                t0 = t_ns
            eth = dpkt.ethernet.Ethernet(buf)
            ip = eth.data
            if not isinstance(ip, (dpkt.ip.IP, dpkt.ip6.IP6)) or not isinstance(ip.data, dpkt.tcp.TCP):
                continue
            tcp = ip.data
            key = (ip.src, tcp.sport, ip.dst, tcp.dport)
            rkey = (ip.dst, tcp.dport, ip.src, tcp.sport)
            if key not in flows and rkey not in flows:
                flows[key] = {}
            fkey, d = (key, 0) if key in flows else (rkey, 1)
            st = flows[fkey].setdefault(d, {"packets": 0, "bytes": 0, "payload": 0, "isn": tcp.seq, "high": 0,
                                             "seen": [], "retx": 0, "unique": 0, "bins": defaultdict(lambda: [0, 0]),
                                             "tsval": {}, "rtt": []})
            plen = (ip.len - ip.hl * 4 if isinstance(ip, dpkt.ip.IP) else ip.plen) - tcp.off * 4
            st["packets"] += 1
            st["bytes"] += len(buf)
            b = st["bins"][(t_ns - t0) // bin_ns]
            b[1] += len(buf)
            opts = dpkt.tcp.parse_opts(tcp.opts)
            for kind, val in opts:
                if kind == dpkt.tcp.TCP_OPT_TIMESTAMP and len(val) == 8:
                    tsval = int.from_bytes(val[:4], "big")
                    tsecr = int.from_bytes(val[4:], "big")
                    if plen > 0:
                        st["tsval"].setdefault(tsval, t_ns)
                    other = flows[fkey].get(1 - d)
                    if other and tcp.flags & dpkt.tcp.TH_ACK and tsecr in other["tsval"]:
                        other["rtt"].append(t_ns - other["tsval"].pop(tsecr))
            if plen <= 0:
                continue
            rel = (tcp.seq - st["isn"]) % 2**32
            dd = (rel - st["high"] % 2**32) % 2**32
            if dd >= 2**31:
                dd -= 2**32
            start = st["high"] + dd
            end = start + plen
            st["payload"] += plen
            b[0] += plen
            if end <= st["high"]:
                st["retx"] += 1
            new = plen
            for s, e in st["seen"]:
                new -= max(0, min(e, end) - max(s, start))
            st["unique"] += max(0, new)
            merged = sorted(st["seen"] + [[start, end]])
            out: list[list[int]] = []
            for s, e in merged:
                if out and s <= out[-1][1]:
                    out[-1][1] = max(out[-1][1], e)
                else:
                    out.append([s, e])
            st["seen"] = out
            st["high"] = max(st["high"], end)
    result = {"packets": n, "flows": []}
    for (src, sport, dst, dport), dirs in flows.items():
        for d, st in dirs.items():
            rtt = sorted(st["rtt"])
            result["flows"].append({
                "src": socket.inet_ntop(socket.AF_INET if len(src) == 4 else socket.AF_INET6, src), "sport": sport,
                "dst": socket.inet_ntop(socket.AF_INET if len(dst) == 4 else socket.AF_INET6, dst), "dport": dport,
                "direction": d, "packets": st["packets"], "bytes": st["bytes"], "payload": st["payload"],
                "unique": st["unique"], "retransmissions": st["retx"], "bins": len(st["bins"]),
                "rtt_min_ns": rtt[0] if rtt else None, "rtt_samples": len(rtt)})
    result["seconds"] = time.perf_counter() - t_start
    json.dump(result, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
