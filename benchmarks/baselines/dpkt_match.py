"""A straightforward dpkt script doing benchbook latency's id matching (the baseline a researcher
would write): read the pre capture into a dict id -> timestamp, walk the post capture, keep
0 < latency < 5 s for the first copy of each id, count what is lost, duplicated and reordered,
and print exact percentiles. Usage: dpkt_match.py PRE POST [--id-offset 42] [--limit N]"""

import argparse
import json
import struct
import time

import dpkt

t_start = time.perf_counter()
ap = argparse.ArgumentParser()
ap.add_argument("pre")
ap.add_argument("post")
ap.add_argument("--id-offset", type=int, default=42)
ap.add_argument("--limit", type=int, default=0, help="read only the first N packets of each file")
a = ap.parse_args()
MAX = 5_000_000_000


def packets(path):
    with open(path, "rb") as f:
        for i, (ts, buf) in enumerate(dpkt.pcap.Reader(f)):
            if a.limit and i >= a.limit:
                break
            yield ts, buf


def ns(ts):
    # dpkt gives float seconds (or Decimal for nanosecond files with precision set); keep ns ints
    return int(round(ts * 1_000_000_000))


pre = {}
dups = set()
order = {}
for i, (ts, buf) in enumerate(packets(a.pre)):
    pid = struct.unpack_from("<Q", buf, a.id_offset)[0]
    if pid in pre:
        dups.add(pid)
    pre[pid] = ns(ts)
    order[pid] = i
for pid in dups:
    del pre[pid]
lat = []
matched = set()
duplicates = unmatched = reordered = 0
max_idx = -1
n_post = 0
for ts, buf in packets(a.post):
    n_post += 1
    pid = struct.unpack_from("<Q", buf, a.id_offset)[0]
    t = pre.get(pid)
    if t is None:
        unmatched += 1
        continue
    d = ns(ts) - t
    if not 0 < d < MAX:
        unmatched += 1
        continue
    if pid in matched:
        duplicates += 1
        continue
    matched.add(pid)
    lat.append(d)
    if order[pid] < max_idx:
        reordered += 1
    max_idx = max(max_idx, order[pid])
lat.sort()
pct = ({p: lat[max(1, -(-int(p * 1000) * len(lat) // 100000)) - 1] for p in (50, 90, 99, 99.9, 99.99, 99.999)}
       if lat else {})
print(json.dumps({"pre": len(order), "post": n_post, "matched": len(lat), "duplicates": duplicates,
                  "unmatched_post": unmatched, "reordered": reordered,
                  "percentiles_ns": {str(k): v for k, v in pct.items()},
                  "seconds": time.perf_counter() - t_start}))
