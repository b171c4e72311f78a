"""Synthetic pre/post capture pairs with known per-packet truth.

The pre capture holds ``n_packets`` Ethernet/IPv4/UDP frames sent at a constant rate, each carrying a
64-bit packet id (little-endian) at frame offset ``id_offset``, with valid IPv4 and UDP checksums.
The post capture holds what a device under test would deliver: every packet delayed by a latency
drawn from a stated model, some lost, some duplicated, some held back long enough to be reordered,
written in order of arrival with nanosecond timestamps. Generation is chunked, so 2 x 50 M packets
need no more memory than 2 x 1 M (set ``keep_arrays=False`` to drop the per-packet truth).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from benchbook.capture.writer import PcapWriter
from benchbook.kernels import njit

ETH_IP_UDP = 42  # bytes of Ethernet + IPv4 + UDP headers


@dataclass
class LatencyModel:
    """latency = base_ns + Exponential(tail_mean_ns), plus with probability spike_prob a spike
    Uniform(0, spike_ns). Packets chosen for reordering get an extra reorder_gaps inter-packet gaps."""

    base_ns: int = 5_000
    tail_mean_ns: float = 500.0
    spike_prob: float = 1e-4
    spike_ns: int = 200_000
    reorder_gaps: float = 8.0

    def draw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        lat = self.base_ns + rng.exponential(self.tail_mean_ns, n).astype(np.int64)
        if self.spike_prob > 0:
            spikes = rng.random(n) < self.spike_prob
            lat[spikes] += rng.integers(0, max(1, self.spike_ns), int(spikes.sum()))
        return np.maximum(lat, 1)


@dataclass
class GroundTruth:
    """What matching the pair must find. Arrays are indexed by pre packet (None if not kept)."""

    pre: int
    post: int
    matched: int
    lost: int
    duplicates: int
    reordered: int
    unmatched_post: int
    id_offset: int
    id_width: int = 8
    start_ns: int = 0
    id: np.ndarray | None = None  # uint64 packet ids in pre order
    t_pre_ns: np.ndarray | None = None
    latency_ns: np.ndarray | None = None  # int64, -1 where lost
    duplicated: np.ndarray | None = None  # bool
    params: dict = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        return {k: getattr(self, k) for k in (
            "pre", "post", "matched", "lost", "duplicates", "reordered", "unmatched_post")}


@njit(cache=True)
def _csum_add(s, buf, start, n):
    i = 0
    while i + 1 < n:
        s += (np.int64(buf[start + i]) << 8) | np.int64(buf[start + i + 1])
        i += 2
    if i < n:
        s += np.int64(buf[start + i]) << 8
    return s


@njit(cache=True)
def _fold(s):
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


@njit(cache=True)
def pack_frames(out, ts_ns, ids, template, frame_size, id_offset, n_flows, mac_byte):
    """Write pcap records (ns) of the synthetic frames into out; return bytes used."""
    p = 0
    for k in range(ts_ns.shape[0]):
        t = ts_ns[k]
        sec = t // 1_000_000_000
        frac = t - sec * 1_000_000_000
        for b in range(4):
            out[p + b] = (sec >> (8 * b)) & 0xFF
            out[p + 4 + b] = (frac >> (8 * b)) & 0xFF
            out[p + 8 + b] = (frame_size >> (8 * b)) & 0xFF
            out[p + 12 + b] = (frame_size >> (8 * b)) & 0xFF
        f = p + 16
        out[f : f + frame_size] = template
        pid = ids[k]
        flow = np.int64(pid % np.uint64(n_flows))
        if mac_byte >= 0:  # post side of a router-like DuT: different MAC addresses
            out[f + 5] = mac_byte
            out[f + 11] = mac_byte
        # IPv4 identification and destination address vary per packet/flow
        out[f + 18] = (pid >> np.uint64(8)) & np.uint64(0xFF)
        out[f + 19] = pid & np.uint64(0xFF)
        out[f + 33] = 1 + flow
        # UDP source port per flow
        sport = 1234 + flow
        out[f + 34] = (sport >> 8) & 0xFF
        out[f + 35] = sport & 0xFF
        for b in range(8):
            out[f + id_offset + b] = (pid >> np.uint64(8 * b)) & np.uint64(0xFF)
        # IPv4 header checksum
        out[f + 24] = 0
        out[f + 25] = 0
        c = _fold(_csum_add(np.int64(0), out, f + 14, 20))
        out[f + 24] = c >> 8
        out[f + 25] = c & 0xFF
        # UDP checksum over the pseudo header, header and payload
        udp_len = frame_size - 34
        out[f + 40] = 0
        out[f + 41] = 0
        s = _csum_add(np.int64(0), out, f + 26, 8) + 17 + udp_len
        s = _csum_add(s, out, f + 34, udp_len)
        c = _fold(s)
        if c == 0:
            c = 0xFFFF
        out[f + 40] = c >> 8
        out[f + 41] = c & 0xFF
        p += 16 + frame_size
    return p


def frame_template(frame_size: int) -> np.ndarray:
    """Ethernet/IPv4/UDP frame with constant fields filled in (checksums 0)."""
    t = np.zeros(frame_size, np.uint8)
    t[0:6] = [0x02, 0, 0, 0, 0, 0x02]
    t[6:12] = [0x02, 0, 0, 0, 0, 0x01]
    t[12:14] = [0x08, 0x00]
    ip_len = frame_size - 14
    t[14:34] = [0x45, 0, ip_len >> 8, ip_len & 0xFF, 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 1, 0, 1]
    udp_len = frame_size - 34
    t[34:42] = [0x04, 0xD2, 0x16, 0x2E, udp_len >> 8, udp_len & 0xFF, 0, 0]
    return t


@njit(cache=True)
def _count_reordered(pre_index, running_max):
    r = 0
    m = running_max
    for k in range(pre_index.shape[0]):
        v = pre_index[k]
        if v < 0:
            continue
        if v < m:
            r += 1
        else:
            m = v
    return r, m


def make_capture_pair(
    pre_path: str | Path,
    post_path: str | Path,
    n_packets: int,
    rate_pps: float = 1_000_000.0,
    latency: LatencyModel | None = None,
    loss: float = 0.0,
    duplicate: float = 0.0,
    reorder: float = 0.0,
    frame_size: int = 64,
    id_offset: int = ETH_IP_UDP,
    seed: int = 0,
    start_ns: int = 1_700_000_000_000_000_000,
    foreign_post: int = 0,
    n_flows: int = 10,
    post_mac_rewrite: bool = False,
    keep_arrays: bool = True,
    chunk: int = 1 << 20,
    id_start: int = 1,
) -> GroundTruth:
    """Write a pre/post ns pcap pair with known truth; returns the GroundTruth.

    foreign_post packets (ids outside the sent range) appear only in the post capture: they must be
    counted as unmatched post packets.
    """
    latency = latency or LatencyModel()
    if id_offset < ETH_IP_UDP or id_offset + 8 > frame_size:
        raise ValueError(f"id_offset {id_offset} must lie in the UDP payload of a {frame_size}-byte frame")
    rng = np.random.default_rng(seed)
    gap = 1e9 / rate_pps
    template = frame_template(frame_size)
    rec = 16 + frame_size
    keep = {k: [] for k in ("id", "t", "lat", "dup")} if keep_arrays else None
    lost_total = dup_total = reordered = 0
    running_max = -1
    n_post = 0
    # foreign packets: spread over the capture, ids far beyond the sent ones
    foreign_at = np.sort(rng.integers(0, max(n_packets, 1), foreign_post)) if foreign_post else np.zeros(0, np.int64)
    pending_t = np.zeros(0, np.int64)
    pending_id = np.zeros(0, np.uint64)
    pending_idx = np.zeros(0, np.int64)
    with PcapWriter(pre_path) as wpre, PcapWriter(post_path) as wpost:
        for lo in range(0, n_packets, chunk):
            hi = min(n_packets, lo + chunk)
            m = hi - lo
            idx = np.arange(lo, hi, dtype=np.int64)
            t_pre = start_ns + np.round(idx * gap).astype(np.int64)
            ids = (idx + id_start).astype(np.uint64)
            buf = np.empty(m * rec, np.uint8)
            used = pack_frames(buf, t_pre, ids, template, frame_size, id_offset, n_flows, -1)
            wpre.write_raw(buf[:used], m)
            lat = latency.draw(rng, m)
            if reorder > 0:
                ro = rng.random(m) < reorder
                lat[ro] += int(latency.reorder_gaps * gap) + 1
            lost = rng.random(m) < loss if loss > 0 else np.zeros(m, bool)
            dup = (rng.random(m) < duplicate) & ~lost if duplicate > 0 else np.zeros(m, bool)
            lost_total += int(lost.sum())
            dup_total += int(dup.sum())
            if keep is not None:
                keep["id"].append(ids)
                keep["t"].append(t_pre)
                keep["lat"].append(np.where(lost, -1, lat))
                keep["dup"].append(dup)
            ok = ~lost
            t_post = t_pre[ok] + lat[ok]
            p_id = ids[ok]
            p_idx = idx[ok]
            d_t = t_pre[dup] + lat[dup] + 1 + rng.integers(0, max(2, int(4 * gap)), int(dup.sum()))
            fsel = foreign_at[(foreign_at >= lo) & (foreign_at < hi)]
            f_t = start_ns + np.round(fsel * gap).astype(np.int64) + latency.base_ns
            f_id = (np.uint64(1) << np.uint64(62)) + fsel.astype(np.uint64)
            pending_t = np.concatenate([pending_t, t_post, d_t, f_t])
            pending_id = np.concatenate([pending_id, p_id, ids[dup], f_id])
            # pre index for reorder counting: -1 for copies that cannot match (duplicates, foreign)
            pending_idx = np.concatenate([pending_idx, p_idx, np.full(int(dup.sum()) + len(fsel), -1, np.int64)])
            if hi < n_packets:
                limit = start_ns + int(round(hi * gap)) + latency.base_ns
            else:
                limit = np.iinfo(np.int64).max
            order = np.lexsort((pending_idx < 0, pending_t))
            pending_t, pending_id, pending_idx = pending_t[order], pending_id[order], pending_idx[order]
            cut = int(np.searchsorted(pending_t, limit, side="left"))
            et, eid, eidx = pending_t[:cut], pending_id[:cut], pending_idx[:cut]
            pending_t, pending_id, pending_idx = pending_t[cut:], pending_id[cut:], pending_idx[cut:]
            r, running_max = _count_reordered(eidx, running_max)
            reordered += r
            obuf = np.empty(cut * rec, np.uint8)
            used = pack_frames(obuf, et, eid, template, frame_size, id_offset, n_flows,
                               0x7E if post_mac_rewrite else -1)
            wpost.write_raw(obuf[:used], cut)
            n_post += cut
    truth = GroundTruth(
        pre=n_packets, post=n_post, matched=n_packets - lost_total, lost=lost_total,
        duplicates=dup_total, reordered=reordered, unmatched_post=foreign_post,
        id_offset=id_offset, start_ns=start_ns,
        params=dict(n_packets=n_packets, rate_pps=rate_pps, loss=loss, duplicate=duplicate,
                    reorder=reorder, frame_size=frame_size, id_offset=id_offset, seed=seed,
                    foreign_post=foreign_post, latency=latency.__dict__.copy()),
    )
    if keep is not None:
        truth.id = np.concatenate(keep["id"]) if keep["id"] else np.zeros(0, np.uint64)
        truth.t_pre_ns = np.concatenate(keep["t"]) if keep["t"] else np.zeros(0, np.int64)
        truth.latency_ns = np.concatenate(keep["lat"]) if keep["lat"] else np.zeros(0, np.int64)
        truth.duplicated = np.concatenate(keep["dup"]) if keep["dup"] else np.zeros(0, bool)
    return truth
