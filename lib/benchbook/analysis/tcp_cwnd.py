"""Congestion windows beside a capture: the kernel's ``tcp:tcp_probe`` records matched to the capture's flows.

A capture does not hold the sender's congestion window; the ``tcp_probe`` tracepoint does (snd_cwnd and
ssthresh in segments, srtt in µs, one record per ACK the socket processes). Each record names its socket's local
and remote endpoint, so it belongs to the flow with the same two endpoints, in the direction whose sender is the
local end (direction 0: the flow's originator sends).

Time: records brought to CLOCK_REALTIME (the capture's clock; benchbook.tools.tcp_probe records CLOCK_MONOTONIC
and the offset between the two) are placed on the capture's time axis ("realtime"). Records on another clock
(perf's default: time since boot) cannot be placed there; they are kept on their own axis, ns since the first
record of each flow direction ("own clock"), and the report says so. The clock is judged from the records
themselves: realtime when every matched record lies within the capture's span widened by ``REALTIME_SLACK_NS``
on both sides.
"""

from __future__ import annotations

import functools
import ipaddress
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

REALTIME_SLACK_NS = 60_000_000_000

CLOCK_REALTIME = "realtime"
CLOCK_OWN = "own clock"

COLUMNS = ("flow", "direction", "time_ns", "cwnd_segments", "ssthresh_segments", "srtt_us", "snd_wnd_bytes")


@dataclass(frozen=True)
class ProbeRecords:
    """tcp_probe records as columns (time in ns of perf's clock; endpoints as the kernel printed them)."""

    source: str
    clock: str            # how time_ns was obtained (perf's clock, or CLOCK_MONOTONIC + a measured offset)
    time_ns: np.ndarray
    src: list[str]
    sport: np.ndarray
    dst: list[str]
    dport: np.ndarray
    cwnd_segments: np.ndarray
    ssthresh_segments: np.ndarray
    srtt_us: np.ndarray
    snd_wnd_bytes: np.ndarray

    def __len__(self) -> int:
        return int(self.time_ns.shape[0])


@functools.cache
def _norm(addr: str) -> str:
    """One spelling per address: IPv4-mapped IPv6 as IPv4, IPv6 compressed."""
    a = ipaddress.ip_address(str(addr).strip("[]"))
    if isinstance(a, ipaddress.IPv6Address) and a.ipv4_mapped is not None:
        a = a.ipv4_mapped
    return str(a)


def flow_directions(flow: np.ndarray, direction: np.ndarray) -> list[tuple[int, int]]:
    """The (flow, direction) pairs that occur in the two columns, sorted."""
    return sorted(set(zip(flow.tolist(), direction.tolist(), strict=True)))


def match_records(records: ProbeRecords, flows: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The records that belong to a flow of ``flows`` (flow_arrays columns), as columns named in COLUMNS (time
    on the capture's clock when realtime, else ns since the first record of that flow direction), in record
    order; and what was matched: records, matched, clock, per flow direction its record count."""
    n = len(records)
    by_key: dict[tuple[str, int, str, int], list[tuple[int, int]]] = {}
    for f in range(flows["flow"].shape[0]):
        o = (_norm(flows["src"][f]), int(flows["sport"][f]))
        r = (_norm(flows["dst"][f]), int(flows["dport"][f]))
        by_key.setdefault((*o, *r), []).append((f, 0))
        by_key.setdefault((*r, *o), []).append((f, 1))
    first = flows["first_time_ns"]
    last = flows["last_time_ns"]
    span = (int(first.min()) - REALTIME_SLACK_NS, int(last.max()) + REALTIME_SLACK_NS) if first.size else (0, -1)
    t = records.time_ns
    realtime = n > 0
    cand: list[list[tuple[int, int]]] = []
    for i in range(n):
        c = by_key.get((_norm(records.src[i]), int(records.sport[i]), _norm(records.dst[i]), int(records.dport[i])), [])
        cand.append(c)
        if c and not span[0] <= int(t[i]) <= span[1]:
            realtime = False
    flow = np.full(n, -1, np.int64)
    direction = np.zeros(n, np.int64)
    for i, c in enumerate(cand):
        if not c:
            continue
        pick = c[0]
        if realtime and len(c) > 1:  # endpoints used again by a later flow: the one whose time span holds it
            inside = [x for x in c if first[x[0]] - REALTIME_SLACK_NS <= t[i] <= last[x[0]] + REALTIME_SLACK_NS]
            pick = min(inside or c, key=lambda x: abs(int(t[i]) - int(first[x[0]])))
        flow[i], direction[i] = pick
    keep = flow >= 0
    time_ns = t[keep].astype(np.int64)
    fl, dr = flow[keep], direction[keep]
    if not realtime:
        for key in flow_directions(fl, dr):
            m = (fl == key[0]) & (dr == key[1])
            time_ns[m] -= time_ns[m].min()
    counts = dict(Counter(f"{a}/{('orig', 'resp')[b]}" for a, b in zip(fl.tolist(), dr.tolist(), strict=True)))
    table = {"flow": fl, "direction": dr, "time_ns": time_ns,
             "cwnd_segments": records.cwnd_segments[keep].astype(np.int64),
             "ssthresh_segments": records.ssthresh_segments[keep].astype(np.int64),
             "srtt_us": records.srtt_us[keep].astype(np.int64),
             "snd_wnd_bytes": records.snd_wnd_bytes[keep].astype(np.int64)}
    info = {"source": records.source, "records": n, "record_clock": records.clock, "matched": int(keep.sum()),
            "clock": CLOCK_REALTIME if realtime and keep.any() else CLOCK_OWN, "per_flow_direction": counts}
    return table, info


__all__ = ["CLOCK_OWN", "CLOCK_REALTIME", "COLUMNS", "ProbeRecords", "flow_directions", "match_records"]
