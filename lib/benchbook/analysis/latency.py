"""Per-packet latency from a pre-DuT and a post-DuT capture.

Packets are matched by (a) an explicit packet id at a given frame offset and width (``IdKey``), or (b)
the MoonSniff/pos content key (``ContentKey``): frame bytes 12-64 with the IPv4 header checksum and the
UDP/TCP checksum (over IPv4 or IPv6, after an 802.1Q tag too) zeroed, so that a capture whose checksums
the NIC had still to fill in (offloaded: 0) matches one with the real checksums. As in the pos
evaluators' SQL, a pre key occurring more than once is dropped (here: more than once while it can still
be matched), latency = t_post - t_pre is kept when 0 < latency < max_latency_ns, and the first post copy
of a packet is the match (later copies within the latency window count as duplicates, copies arriving
later as unmatched post). A post copy at or before its pre packet (latency <= 0: equal timestamps
included) is out_of_range_post, and its pre packet stays waiting for a later copy; one max_latency_ns or
more after it finds its pre packet gone.

Counts: pre = matched + lost + pre_duplicates + unkeyed_pre; post = matched + duplicates +
unmatched_post (unmatched_post includes unkeyed_post, ambiguous_post and out_of_range_post).
reordered = matched post packets whose pre packet came before the latest pre packet matched so far.

Both captures are streamed in merged time order through a bounded window of waiting pre packets
(``window_packets``), so memory does not grow with capture size; ``counts["reorder_window"]`` reports
the deepest window a match needed (in pre packets) and ``counts["window_evicted"]`` how many pre
packets had to leave the window before their time was up (if > 0, raise window_packets).

Per-packet rows: ``id`` (the packet id in IdKey mode; the 0-based index of the packet in the pre
capture in ContentKey mode), ``t_pre_ns``, ``t_post_ns``, ``latency_ns``.
"""

from __future__ import annotations

import queue
import threading
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from benchbook.analysis import match_kernel as mk
from benchbook.analysis.latency_table import CallbackSink, LatencyParquetWriter, ThreadedWriter
from benchbook.capture import CaptureFormatError, open_capture
from benchbook.capture.chunk import PacketChunk
from benchbook.kernels import before_threads

DEFAULT_MAX_LATENCY_NS = 5_000_000_000
DEFAULT_WINDOW = 1 << 18
OUT_BATCH = 1 << 20


@dataclass(frozen=True)
class IdKey:
    """Packet id: ``width`` bytes (1..8) at frame ``offset``, in ``byteorder``."""

    offset: int
    width: int = 8
    byteorder: str = "little"

    def __post_init__(self) -> None:
        if not 1 <= self.width <= 8:
            raise ValueError(f"id width {self.width}: expected 1..8 bytes")
        if self.offset < 0:
            raise ValueError(f"id offset {self.offset}: expected >= 0")
        if self.byteorder not in ("little", "big"):
            raise ValueError("byteorder must be 'little' or 'big'")

    def describe(self) -> str:
        return f"id: {self.width} bytes at offset {self.offset} ({self.byteorder}-endian)"


@dataclass(frozen=True)
class ContentKey:
    """MoonSniff/pos content key: frame bytes [start, end) with checksums zeroed."""

    start: int = 12
    end: int = 64

    def describe(self) -> str:
        return f"content: bytes {self.start}-{self.end} with IPv4, UDP and TCP checksums zeroed"


Key = IdKey | ContentKey
BatchCallback = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], None]


@dataclass
class LatencyResult:
    latency_ns: np.ndarray | None
    t_pre_ns: np.ndarray | None
    t_post_ns: np.ndarray | None
    id: np.ndarray | None
    counts: dict[str, int]
    warnings: list[str]
    key: str
    parquet: Path | None


class _KeyedStream:
    """One capture's chunks with their keys, handed out as flat arrays.

    A background thread reads and keys the next chunk while the matcher works on this one (the
    numba kernels release the GIL), so the two captures and the matching share the cores.
    """

    def __init__(self, path: Path, key: Key, chunk_packets: int) -> None:
        self.path = path
        self.key = key
        # chunks in flight: one being keyed, one queued, one being matched; a fourth set spare
        self.it: Iterator[PacketChunk] = open_capture(path, chunk_packets, recycle=4)
        self.done = False
        self.t = np.zeros(0, np.int64)
        self.hi = np.zeros(0, np.uint64)
        self.lo = np.zeros(0, np.uint64)
        self.ok = np.zeros(0, np.bool_)
        self.base = 0
        self.pos = 0
        self.first_unkeyed: int | None = None
        self.first_unkeyed_len = 0
        self.checked_snaplen = False
        before_threads()
        self._q: queue.Queue = queue.Queue(maxsize=1)
        self._thread = threading.Thread(target=self._produce, name=f"keys-{path.name}", daemon=True)
        self._thread.start()

    def _produce(self) -> None:
        try:
            while True:
                item = self._keyed()
                self._q.put(item)
                if item is None:
                    return
        except BaseException as exc:  # handed to the consumer
            self._q.put(exc)

    def _keyed(self):
        try:
            ch = next(self.it)
        except StopIteration:
            return None
        n = len(ch)
        hi = np.empty(n, np.uint64)
        lo = np.empty(n, np.uint64)
        ok = np.empty(n, np.bool_)
        if isinstance(self.key, IdKey):
            k = self.key
            if not self.checked_snaplen:
                self.checked_snaplen = True
                if 0 < ch.snaplen < k.offset + k.width:
                    pcap = ch.format == "pcap"
                    raise CaptureFormatError(
                        self.path, 16 if pcap else int(ch.file_offsets[0]),
                        f"{'' if pcap else 'interface '}snap length {ch.snaplen} is shorter than the packet id "
                        f"field (bytes {k.offset}..{k.offset + k.width - 1}): no packet can carry its id",
                    )
            mk.id_keys(ch.data, ch.offsets, ch.caplen, k.offset, k.width, k.byteorder == "big", hi, lo, ok)
        else:
            mk.content_keys(ch.data, ch.offsets, ch.caplen, self.key.start, self.key.end, hi, lo, ok)
        unkeyed = None
        if not ok.all():
            bad = int(np.argmin(ok))
            unkeyed = (int(ch.file_offsets[bad]), int(ch.caplen[bad]))
        return ch.first_index, ch.ts_ns, hi, lo, ok, unkeyed

    def next(self) -> None:
        item = self._q.get()
        if isinstance(item, BaseException):
            raise item
        if item is None:
            self.done = True
            self.t = self.t[:0]
            self.base += self.pos
            self.pos = 0
            return
        first_index, self.t, self.hi, self.lo, self.ok, unkeyed = item
        if unkeyed is not None and self.first_unkeyed is None:
            self.first_unkeyed, self.first_unkeyed_len = unkeyed
        self.base = first_index
        self.pos = 0


def match_captures(
    pre: str | Path,
    post: str | Path,
    key: Key = IdKey(offset=42),
    max_latency_ns: int = DEFAULT_MAX_LATENCY_NS,
    out_parquet: str | Path | None = None,
    window_packets: int = DEFAULT_WINDOW,
    keep_arrays: bool = True,
    on_batch: BatchCallback | None = None,
    chunk_packets: int = 1 << 18,
) -> LatencyResult:
    """Match two captures; see the module docstring for the rules.

    keep_arrays=False keeps no per-packet arrays in memory (use out_parquet and/or on_batch, which
    receives (id, t_pre_ns, t_post_ns, latency_ns) for every batch of matches in arrival order, in a
    background thread; an exception it raises is re-raised when matching ends).
    """
    pre, post = Path(pre), Path(post)
    a = _KeyedStream(pre, key, chunk_packets)
    b = _KeyedStream(post, key, chunk_packets)
    st = mk.new_state(window_packets, 2 if isinstance(key, IdKey) else 4)
    c = st["c"]
    # reused output arrays; each batch is copied out (cheaper here than fresh arrays' page faults)
    cap = OUT_BATCH
    out = (np.empty(cap, np.uint64), np.empty(cap, np.int64), np.empty(cap, np.int64), np.empty(cap, np.int64))
    kept: list[tuple[np.ndarray, ...]] = []

    # the Parquet writer and the batch callback each run in a thread of their own, in batch order,
    # so the matcher itself only matches
    sinks = []
    if out_parquet is not None:
        pq_path = Path(out_parquet)
        sinks.append(ThreadedWriter(lambda: LatencyParquetWriter(pq_path)))
    if on_batch is not None:
        cb = on_batch
        sinks.append(ThreadedWriter(lambda: CallbackSink(cb)))
    id_from_key = isinstance(key, IdKey)
    try:
        while True:
            if a.pos >= len(a.t) and not a.done:
                a.next()
                continue
            if b.pos >= len(b.t) and not b.done:
                b.next()
                continue
            i, j, n = mk.match_step(
                st["tab"], st["r_hi"], st["r_lo"], st["r_t"], st["r_idx"], st["r_slot"], st["r_state"], c,
                a.t, a.hi, a.lo, a.ok, a.base, a.pos, a.done,
                b.t, b.hi, b.lo, b.ok, b.pos, b.done,
                max_latency_ns, id_from_key, *out,
            )
            a.pos, b.pos = int(i), int(j)
            if n:
                batch = tuple(x[:n].copy() for x in out)
                for sink in sinks:
                    sink.write(*batch)
                if keep_arrays:
                    kept.append(batch)
            if a.done and b.done and a.pos >= len(a.t) and b.pos >= len(b.t):
                break
        mk.finish(st["tab"], st["r_slot"], st["r_state"], c)
    finally:
        errors = []
        for sink in sinks:
            try:
                sink.close()
            except BaseException as exc:  # close every sink, then report the first failure
                errors.append(exc)
        if errors:
            raise errors[0]
    counts = {name: int(c[idx]) for name, idx in mk.COUNTER_NAMES.items()}
    counts["backwards_timestamps"] = counts["backwards_timestamps_pre"] + counts["backwards_timestamps_post"]
    counts["window_limit"] = window_packets
    counts["max_latency_ns"] = int(max_latency_ns)
    msgs = _warnings(pre, post, a, b, counts, key)
    for m in msgs:
        warnings.warn(m, stacklevel=2)
    parquet = Path(out_parquet) if out_parquet is not None else None
    if not keep_arrays:
        return LatencyResult(None, None, None, None, counts, msgs, key.describe(), parquet)
    cols = [np.concatenate([k[x] for k in kept]) if kept else np.zeros(0, np.int64) for x in range(4)]
    ids = cols[0].astype(np.uint64, copy=False)
    return LatencyResult(cols[3], cols[1], cols[2], ids, counts, msgs, key.describe(), parquet)


def _warnings(pre: Path, post: Path, a: _KeyedStream, b: _KeyedStream, counts: dict, key: Key) -> list[str]:
    msgs = []
    for side, path in (("pre", pre), ("post", post)):
        if counts[side] == 0:
            msgs.append(f"{path}: the {side} capture holds no packets (nothing after its file header)")
    for side, path, s in (("pre", pre, a), ("post", post, b)):
        n = counts[f"unkeyed_{side}"]
        if n:
            need = (f"offset {key.offset} + width {key.width}" if isinstance(key, IdKey)
                    else f"more than {key.start} bytes")
            msgs.append(
                f"{path}: {n} {side} packets are too short to carry the key ({need}); the first is the "
                f"record at byte offset {s.first_unkeyed} with {s.first_unkeyed_len} captured bytes"
            )
        back = counts[f"backwards_timestamps_{side}"]
        if back:
            msgs.append(f"{path}: timestamps go backwards {back} times in the {side} capture")
    if counts["window_evicted"] and counts["unmatched_post"]:
        msgs.append(
            f"{counts['window_evicted']} pre packets left the matching window ({counts['window_limit']} "
            f"packets) unmatched before max latency had passed, and {counts['unmatched_post']} post packets "
            "found no match: some may be late copies of them; raise window_packets"
        )
    if counts["pre_duplicates"]:
        msgs.append(f"{counts['pre_duplicates']} pre packets share a key with another waiting pre packet "
                    "and were dropped")
    return msgs
