"""One streaming pass of the TCP analysis over one or more captures (read in the order given, as one trace).

Memory: the flow table (about 20 kB per live flow; when it is full, flows finished for 5 s or idle for 300 s
leave it and keep only their ~1 kB of counters), up to four capture chunks (a reader thread reads ahead), the
interval rows (one per flow, direction and bin) and two RTT-row buffers in turn, each handed to ``on_rtt`` when
it fills, so the pass holds nothing per packet. Per flow direction the RTT samples also go into an HdrHistogram
(min and mean exact, p99 to 3 significant figures).
"""

from __future__ import annotations

import ipaddress
import queue
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import numpy as np

from benchbook.analysis import tcp_flows as tf
from benchbook.analysis import tcp_rtt as rt
from benchbook.analysis.hdr import HdrHistogram
from benchbook.analysis.tcp_rules import rule_index
from benchbook.capture.errors import CaptureWarning
from benchbook.capture.reader import open_capture
from benchbook.errors import BenchbookError
from benchbook.kernels import before_threads

T = TypeVar("T")


class TcpAnalysisError(BenchbookError, ValueError):
    """A capture the TCP analysis cannot use (no packets, no TCP, unsupported link type)."""


SUPPORTED_LINKTYPES = {0: "BSD loopback", 1: "Ethernet", 12: "raw IP", 14: "raw IP", 101: "raw IP",
                       108: "OpenBSD loopback", 113: "Linux cooked", 228: "raw IPv4", 229: "raw IPv6",
                       276: "Linux cooked v2"}


@dataclass
class TcpPass:
    """What the pass found: flow table, interval rows, counters, RTT histograms, warnings."""

    files: list[str]
    bin_ns: int
    rule: str
    fl: np.ndarray
    st: np.ndarray
    holes: np.ndarray
    iv_rows: np.ndarray
    counters: dict[str, int]
    t0_ns: int
    rtt_hist: dict[tuple[int, int], HdrHistogram] = field(default_factory=dict)
    messages: list[str] = field(default_factory=list)

    @property
    def n_flows(self) -> int:
        return int(self.fl.shape[0])


def address(hi: int, lo: int) -> str:
    """Text form of an address stored as two 64-bit halves (IPv4 as IPv4-mapped)."""
    v = ((hi & 0xFFFFFFFFFFFFFFFF) << 64) | (lo & 0xFFFFFFFFFFFFFFFF)
    a = ipaddress.IPv6Address(v)
    return str(a.ipv4_mapped) if a.ipv4_mapped is not None else str(a)


def flow_name(fl: np.ndarray, f: int) -> str:
    return (f"{address(int(fl[f, tf.FL_OA_HI]), int(fl[f, tf.FL_OA_LO]))}:{int(fl[f, tf.FL_OPORT])} > "
            f"{address(int(fl[f, tf.FL_RA_HI]), int(fl[f, tf.FL_RA_LO]))}:{int(fl[f, tf.FL_RPORT])}")


def flow_notes(files: list[str], fl: np.ndarray, st: np.ndarray) -> list[str]:
    """What the report should say about flows seen from the middle, probes and keep-alives, sequence wraps;
    each names the first such flow by file and byte offset of its first packet."""
    notes = []

    def where(f: int) -> str:
        path = files[int(fl[f, tf.FL_FIRST_FILE])]
        return f"{path}: at byte offset {int(fl[f, tf.FL_FIRST_OFF])} ({flow_name(fl, f)})"

    mid = np.flatnonzero(((st[:, :, tf.S_START_SEEN] == 0) & (st[:, :, tf.S_INIT] > 0)).any(axis=1))
    if mid.size:
        notes.append(f"{mid.size} flow(s) started before the capture (start_seen false: a direction's first packet "
                     f"is not a SYN): sequence coverage from the lowest sequence number seen, so payload below a "
                     f"direction's first segment is new; the first: {where(int(mid[0]))}")
    ka = st[:, :, tf.S_KEEPALIVE].sum(axis=1)
    zwp = st[:, :, tf.S_ZWP].sum(axis=1)
    probed = np.flatnonzero((ka + zwp) > 0)
    if probed.size:
        notes.append(f"{int(ka.sum())} keep-alive and {int(zwp.sum())} zero-window-probe segment(s) counted apart "
                     f"(keep-alives: never classified under wireshark; a 1-byte one repeating a byte is a "
                     f"retransmission under zeek and tcptrace); the first flow with one: {where(int(probed[0]))}")
    isn = st[:, :, tf.S_ISN]
    wraps = np.flatnonzero((((isn + st[:, :, tf.S_HIGH] >= 1 << 32) | (isn + st[:, :, tf.S_LOW] < 0))
                            & (st[:, :, tf.S_INIT] > 0)).any(axis=1))
    if wraps.size:
        notes.append(f"{wraps.size} flow(s) wrap their 32-bit sequence numbers (counted on, unwrapped to 64 bits); "
                     f"the first: {where(int(wraps[0]))}")
    return notes


PREFETCH = 1  # capture chunks read ahead by the reader thread


def prefetched(chunks: Iterator[T], depth: int = PREFETCH) -> Iterator[T]:
    """Iterate ``chunks`` in a reader thread, at most ``depth`` items ahead of the consumer (the capture scan is a
    nogil kernel, so reading overlaps the analysis on a second core). An exception of the reader is raised here;
    leaving the loop early stops the reader and closes ``chunks``."""
    q: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()
    end = object()

    def put(item: object) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def read() -> None:
        try:
            for item in chunks:
                if not put((item, None)):
                    return
            put((end, None))
        except BaseException as exc:  # handed to the consumer
            put((end, exc))
        finally:
            close = getattr(chunks, "close", None)
            if close is not None:
                close()

    before_threads()
    reader = threading.Thread(target=read, name="tcp-read", daemon=True)
    reader.start()
    try:
        while True:
            item, exc = q.get()
            if exc is not None:
                raise exc
            if item is end:
                return
            yield item
    finally:
        stop.set()
        reader.join()


def _new_hist() -> HdrHistogram:
    return HdrHistogram(1, 3_600_000_000_000, 3)


def run_pass(paths: Sequence[str | Path], bin_ns: int = 100_000_000, rule: str = "zeek",
             on_rtt: Callable[[np.ndarray], None] | None = None, chunk_packets: int = 1 << 16) -> TcpPass:
    """Analyse ``paths`` in one pass. ``on_rtt`` receives each filled block of RTT rows (int64, tcp_rtt.R_*), in
    a background thread; the block is reused once the call returns (copy what you keep)."""
    if bin_ns <= 0:
        raise ValueError(f"bin length must be positive, got {bin_ns} ns")
    rule_no = rule_index(rule)
    state = tf.new_state()
    c = state["c"]
    hists: dict[tuple[int, int], HdrHistogram] = {}
    iv_parts: list[np.ndarray] = []
    messages: list[str] = []

    def consume_rtt(rows: np.ndarray) -> None:
        keys, bounds, values = rt.group_samples(rows)
        for j in range(keys.shape[0]):
            k = int(keys[j])
            h = hists.get((k // 2, k % 2))
            if h is None:
                h = hists[(k // 2, k % 2)] = _new_hist()
            h.record(values[bounds[j]:bounds[j + 1]])
        if on_rtt is not None:
            on_rtt(rows)

    # RTT blocks are consumed (histograms, on_rtt) in one background thread while the kernel (nogil) goes on;
    # at most one block waits, so memory stays bounded.
    pending: list[Future] = []
    worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tcp-rtt")

    spare = [np.empty_like(state["rtt"])]

    def drain_rtt() -> None:
        """Hand the filled RTT buffer to the RTT thread and let the kernel go on in the other one (two buffers in
        turn: the thread has finished with the other before the kernel gets it back)."""
        n = int(c[tf.C_NRTT])
        if n == 0:
            return
        if pending:
            pending.pop().result()
        full = state["rtt"]
        state["rtt"] = spare.pop()
        c[tf.C_NRTT] = 0
        spare.append(full)
        pending.append(worker.submit(consume_rtt, full[:n]))

    def finish_rtt() -> None:
        try:
            while pending:
                pending.pop().result()
        finally:
            worker.shutdown(wait=True)

    def drain_iv() -> None:
        n = int(c[tf.C_NIV])
        if n:
            iv_parts.append(state["iv"][:n].copy())
            c[tf.C_NIV] = 0

    archive: list[dict[str, np.ndarray]] = []
    peak = {"table": 0}

    def make_room() -> None:
        """Evict finished flows when at least a quarter of the table is finished, else grow it."""
        out = tf.evictable(state)
        if out.size * 4 >= int(c[tf.C_NFLOWS]):
            drain_iv()
            if state["iv"].shape[0] < 2 * out.size + 2:
                state["iv"] = np.zeros((2 * out.size + 2, tf.N_IV), np.int64)
            tf.flush_flows(state["fl"], state["st"], out, state["iv"], c)
            drain_iv()
            archive.append(tf.evict(state, out))
        else:
            tf.grow_flows(state)
        peak["table"] = max(peak["table"], state["fl"].shape[0])

    files = [str(p) for p in paths]
    try:
        for file_index, path in enumerate(files):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", CaptureWarning)
                for chunk in prefetched(open_capture(path, chunk_packets=chunk_packets, recycle=PREFETCH + 3),
                                        PREFETCH):
                    if chunk.linktype not in SUPPORTED_LINKTYPES:
                        known = ", ".join(f"{k} ({v})" for k, v in SUPPORTED_LINKTYPES.items())
                        raise TcpAnalysisError(
                            f"{path}: at byte offset {int(chunk.file_offsets[0])}: link type {chunk.linktype} is not "
                            f"supported: expected one of {known}")
                    i = 0
                    while True:
                        i, status = tf.process(
                            chunk.ts_ns, chunk.caplen, chunk.wirelen, chunk.offsets, chunk.file_offsets, chunk.data,
                            chunk.linktype, file_index, i, bin_ns, rule_no, state["fl"], state["st"], state["holes"],
                            state["tsr"], state["sgr"], state["slots"], state["iv"], state["rtt"], c)
                        if status == tf.DONE:
                            break
                        if status == tf.GROW_FLOWS:
                            make_room()
                        elif status == tf.FLUSH_IV:
                            drain_iv()
                        elif status == tf.FLUSH_RTT:
                            drain_rtt()
            for w in caught:
                if issubclass(w.category, CaptureWarning):
                    messages.append(str(w.message))
                else:
                    warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        nflows = int(c[tf.C_NFLOWS])
        drain_iv()
        if state["iv"].shape[0] < 2 * nflows + 2:
            state["iv"] = np.zeros((2 * nflows + 2, tf.N_IV), np.int64)
        tf.flush_flows(state["fl"], state["st"], np.arange(nflows), state["iv"], c)
        drain_iv()
        drain_rtt()
    finally:
        finish_rtt()
    counters = {name: int(c[k]) for name, k in (
        ("packets", tf.C_PKTS), ("tcp_packets", tf.C_TCP), ("non_tcp_packets", tf.C_NOT_TCP),
        ("malformed_packets", tf.C_MALFORMED), ("flows", tf.C_NFLOWS), ("backwards_timestamps", tf.C_BACKWARDS),
        ("hole_list_overflows", tf.C_HOLE_OVERFLOW))}
    counters["flows"] = int(c[tf.C_NEXT_GID])
    counters["flow_table_slots"] = max(peak["table"], int(state["fl"].shape[0]))
    counters["evicted_flows"] = sum(int(a["fl"].shape[0]) for a in archive)
    if counters["packets"] == 0:
        raise TcpAnalysisError(f"{', '.join(files)}: no packets")
    if c[tf.C_MALFORMED]:
        messages.append(
            f"{files[int(c[tf.C_MAL_FILE])]}: at byte offset {int(c[tf.C_MAL_OFF])}: IP/TCP header cut short or with "
            f"impossible lengths; {counters['malformed_packets']} such packet(s) skipped")
    if c[tf.C_BACKWARDS]:
        messages.append(f"{counters['backwards_timestamps']} packet(s) stamped earlier than the packet before them (in "
                        "the order read): RTTs, bins and timeouts take their times as they are; captures that overlap "
                        "in time are read in the order given, not merged (mergecap merges them)")
    if c[tf.C_NOT_TCP]:
        messages.append(f"{counters['non_tcp_packets']} non-TCP packet(s) skipped (other protocols, non-first "
                        f"fragments)")
    if counters["tcp_packets"] == 0:
        raise TcpAnalysisError(f"{', '.join(files)}: no TCP packets among {counters['packets']} packets")
    iv_rows = np.concatenate(iv_parts) if iv_parts else np.zeros((0, tf.N_IV), np.int64)
    parts = archive + [{k: state[k][:nflows] for k in ("fl", "st", "holes")}]
    fl = np.concatenate([a["fl"] for a in parts])
    order = np.argsort(fl[:, tf.FL_GID], kind="stable")
    assert np.array_equal(fl[order, tf.FL_GID], np.arange(fl.shape[0]))
    fl = fl[order]
    st = np.concatenate([a["st"] for a in parts])[order]
    messages += flow_notes(files, fl, st)
    return TcpPass(files=files, bin_ns=bin_ns, rule=rule, fl=fl, st=st,
                   holes=np.concatenate([a["holes"] for a in parts])[order], iv_rows=iv_rows,
                   counters=counters, t0_ns=int(c[tf.C_T0]), rtt_hist=hists, messages=messages)
