"""Report of the TCP analysis: flows.parquet, intervals.parquet, rtt.parquet, report.html, summary.json.

Written into a temporary directory beside the output directory and moved into place only when all
succeeded. summary.json holds exactly ``{"rule", "bin_ms", "packets", "flows": [{"src", "sport", "dst",
"dport", "start_seen", "packets", "bytes", "goodput_bps", "retransmissions", "out_of_order",
"syn_retransmissions", "fin_retransmissions", "rtt_ms": {"min", "mean", "p99"}}, ...], "jain_of_means",
"jain_mean_of_intervals"}``. Per flow: ``src``/``sport`` is the originator, ``start_seen`` is false when a
direction's first packet was not a SYN (the capture began mid-connection: its coverage starts at the lowest
sequence number seen, see :mod:`benchbook.analysis.tcp_flows`), ``packets`` and ``bytes`` (frame bytes) count
both directions, ``goodput_bps`` is the bytes seen for the first time in both directions x 8 / the flow's
duration, ``retransmissions``/``out_of_order`` sum both directions under the rule (retransmitted SYNs and
FINs included under ``wireshark`` and ``tcptrace``, see :mod:`benchbook.analysis.tcp_rules`),
``syn_retransmissions``/``fin_retransmissions`` sum both directions under every rule, ``rtt_ms`` summarises
the RTT samples of both directions (TS echo and data -> ACK; min and mean exact, p99 HdrHistogram to 3
significant figures). Jain's indices (both variants, see
:mod:`benchbook.analysis.fairness`) are over the per-bin goodput of the bulk flows: flows carrying at least
1 % of all goodput bytes (so an iperf3 control connection does not count as a competitor); null with fewer
than two such flows.

Given the kernel's ``tcp:tcp_probe`` records (:mod:`benchbook.analysis.tcp_cwnd`), the report also holds
cwnd.parquet (the records matched to the capture's flows: flow, direction, time_ns, cwnd_segments,
ssthresh_segments, srtt_us, snd_wnd_bytes), a congestion-window panel in report.html, and in summary.json
``"cwnd": {"source", "records", "record_clock", "matched", "clock", "per_flow_direction"}``.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from html import escape as html_escape
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from benchbook.analysis import tcp_flows as tf
from benchbook.analysis import tcp_rtt as rt
from benchbook.analysis.fairness import FlowSeries, sorted_unique, summarize
from benchbook.analysis.tcp_cwnd import CLOCK_REALTIME, ProbeRecords, flow_directions, match_records
from benchbook.analysis.tcp_intervals import DIRECTIONS, flow_goodput_series, interval_arrays
from benchbook.analysis.tcp_pass import TcpPass, address, run_pass
from benchbook.report_dir import report_dir

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

OUTPUT_FILES = ("flows.parquet", "intervals.parquet", "rtt.parquet", "cwnd.parquet", "report.html", "plotly.min.js",
                "summary.json")
BULK_SHARE = 0.01
RTT_PLOT_POINTS = 20_000

_DIR_COLUMNS = {
    "packets": tf.S_PKTS, "wire_bytes": tf.S_WIRE, "ip_bytes": tf.S_IPBYTES, "payload_bytes": tf.S_PAY,
    "payload_segments": tf.S_PSEGS, "unique_bytes": tf.S_NEW,
    "retransmissions_zeek": tf.S_RX_Z, "retransmitted_bytes_zeek": tf.S_RXB_Z,
    "retransmissions_wireshark": tf.S_RX_WS, "retransmitted_bytes_wireshark": tf.S_RXB_WS,
    "out_of_order_wireshark": tf.S_OOO_WS, "retransmissions_tcptrace": tf.S_RX_TT,
    "retransmitted_bytes_tcptrace": tf.S_RXB_TT, "out_of_order_tcptrace": tf.S_OOO_TT,
    "syn_retransmissions": tf.S_SYN_RX, "fin_retransmissions": tf.S_FIN_RX,
    "keepalives": tf.S_KEEPALIVE, "zero_window_probes": tf.S_ZWP, "syn_segments": tf.S_SYNS,
    "fin_segments": tf.S_FINS, "rst_segments": tf.S_RSTS, "sack_segments": tf.S_SACKS,
    "timestamp_segments": tf.S_TSOPTS, "mss_bytes": tf.S_MSS, "window_scale": tf.S_WSCALE,
    "sack_permitted": tf.S_SACKOK, "first_time_ns": tf.S_FIRST_TS, "last_time_ns": tf.S_LAST_TS,
}


def rule_counts(rule: str) -> tuple[str, str | None]:
    """flows.parquet column stems of the rule's retransmission and out-of-order counts."""
    return f"retransmissions_{rule}", (None if rule == "zeek" else f"out_of_order_{rule}")


NULLABLE = ("handshake_rtt_ns", "syn_to_synack_ns")  # -1 in flow_arrays: not seen (null in Parquet)
STRINGS = ("src", "dst", "handshake", "first_file")


def flow_arrays(tp: TcpPass) -> dict[str, np.ndarray]:
    """One entry per flow, both directions (orig_*, resp_*), as columns of numpy arrays."""
    fl, st, holes = tp.fl, tp.st, tp.holes
    n = fl.shape[0]
    cols: dict[str, np.ndarray] = {
        "flow": np.arange(n, dtype=np.int64),
        "src": np.array([address(int(fl[f, tf.FL_OA_HI]), int(fl[f, tf.FL_OA_LO])) for f in range(n)], object),
        "sport": fl[:, tf.FL_OPORT].astype(np.int64),
        "dst": np.array([address(int(fl[f, tf.FL_RA_HI]), int(fl[f, tf.FL_RA_LO])) for f in range(n)], object),
        "dport": fl[:, tf.FL_RPORT].astype(np.int64),
        "ip_version": fl[:, tf.FL_IPV].astype(np.int64),
        "first_time_ns": fl[:, tf.FL_FIRST_TS].astype(np.int64),
        "last_time_ns": fl[:, tf.FL_LAST_TS].astype(np.int64),
    }
    syn, synack, ack3 = fl[:, tf.FL_SYN_TS], fl[:, tf.FL_SYNACK_TS], fl[:, tf.FL_ACK3_TS]
    cols["handshake"] = np.where((syn >= 0) & (synack >= 0) & (ack3 >= 0), "complete",
                                 np.where((syn >= 0) | (synack >= 0), "partial", "none")).astype(object)
    cols["handshake_rtt_ns"] = np.where((syn >= 0) & (ack3 >= 0), ack3 - syn, -1).astype(np.int64)
    cols["syn_to_synack_ns"] = np.where((syn >= 0) & (synack >= 0), synack - syn, -1).astype(np.int64)
    # every direction that sent a packet began with a SYN
    cols["start_seen"] = ((st[:, :, tf.S_START_SEEN] > 0) | (st[:, :, tf.S_INIT] == 0)).all(axis=1)
    cols["first_file_offset"] = fl[:, tf.FL_FIRST_OFF].astype(np.int64)
    cols["first_file"] = np.array([tp.files[int(k)] for k in fl[:, tf.FL_FIRST_FILE]], object)
    for d, prefix in enumerate(("orig_", "resp_")):
        s = st[:, d]
        for name, k in _DIR_COLUMNS.items():
            cols[prefix + name] = s[:, k].astype(np.int64)
        span = s[:, tf.S_HIGH] - s[:, tf.S_FIRST_DATA]
        cols[prefix + "seq_span_bytes"] = np.where(s[:, tf.S_INIT] > 0, span, 0).astype(np.int64)
        k = np.arange(holes.shape[2])
        inside = k[None, :] < s[:, tf.S_NHOLES][:, None]
        hole_bytes = ((holes[:, d, :, 1] - holes[:, d, :, 0]) * inside).sum(axis=1).astype(np.int64)
        cols[prefix + "missed_bytes"] = hole_bytes + s[:, tf.S_LOST_HOLE_BYTES] + s[:, tf.S_UNCAPTURED]
        stats = {"min": np.full(n, np.nan), "mean": np.full(n, np.nan), "p99": np.full(n, np.nan)}
        count = np.zeros(n, np.int64)
        for (f, dd), h in tp.rtt_hist.items():
            if dd == d and h.total_count:
                stats["min"][f], stats["mean"][f] = float(h.min), float(h.mean)
                stats["p99"][f] = float(h.value_at_percentile(99.0))
                count[f] = h.total_count
        for stat, v in stats.items():
            cols[prefix + f"rtt_{stat}_ns"] = v
        cols[prefix + "rtt_samples"] = count
    dur = (cols["last_time_ns"] - cols["first_time_ns"]) / 1e9
    cols["duration_s"] = dur
    with np.errstate(divide="ignore", invalid="ignore"):
        cols["goodput_bps"] = np.where(dur > 0, (cols["orig_unique_bytes"] + cols["resp_unique_bytes"]) * 8 / dur,
                                       np.nan)
    return cols


def flow_table(tp: TcpPass) -> pd.DataFrame:
    """flow_arrays as a DataFrame (handshake_rtt_ns and syn_to_synack_ns nullable Int64)."""
    import pandas as pd  # noqa: PLC0415 pandas: `benchbook tcp` imports this module without it

    cols = flow_arrays(tp)
    df = pd.DataFrame({k: (v.tolist() if k in STRINGS else v) for k, v in cols.items()})
    for k in NULLABLE:
        df[k] = pd.array(cols[k], dtype="Int64")
        df.loc[cols[k] < 0, k] = pd.NA
    return df


def arrow_array(v: np.ndarray, null: np.ndarray | None = None):
    """A pyarrow Array over a numpy column built from its buffers: ``pa.array`` would import pandas (0.3-0.5 s
    of start-up) only to check whether the input is a pandas object. Object arrays become UTF-8 strings; ``null``
    marks null entries."""
    import pyarrow as pa  # noqa: PLC0415 pyarrow loads once the pass runs, not at import

    n = int(v.shape[0])
    validity = None
    if null is not None and null.any():
        validity = pa.py_buffer(np.packbits(~null, bitorder="little"))
    if v.dtype == object:
        raw = [str(x).encode() for x in v]
        offsets = np.zeros(n + 1, np.int32)
        if n:
            offsets[1:] = np.cumsum([len(b) for b in raw])
        return pa.Array.from_buffers(pa.string(), n, [validity, pa.py_buffer(offsets), pa.py_buffer(b"".join(raw))])
    if v.dtype == np.bool_:
        return pa.Array.from_buffers(pa.bool_(), n, [validity, pa.py_buffer(np.packbits(v, bitorder="little"))])
    types = {np.dtype(np.int64): pa.int64(), np.dtype(np.int8): pa.int8(), np.dtype(np.float64): pa.float64()}
    v = np.ascontiguousarray(v)
    return pa.Array.from_buffers(types[v.dtype], n, [validity, pa.py_buffer(v)])


def arrow_dictionary(codes: np.ndarray, values: tuple[str, ...]):
    """Dictionary-encoded strings (int8 codes into ``values``) without pandas."""
    import pyarrow as pa  # noqa: PLC0415 pyarrow loads once the pass runs, not at import

    return pa.DictionaryArray.from_arrays(arrow_array(codes.astype(np.int8)), arrow_array(np.array(values, object)))


def write_parquet(path: Path, cols: dict[str, np.ndarray], dictionary: dict[str, tuple[str, ...]] | None = None,
                  nullable: tuple[str, ...] = ()) -> None:
    """Columns to Parquet: object arrays as strings, ``dictionary`` columns (codes) as dictionary strings,
    ``nullable`` int columns with -1 as null."""
    import pyarrow as pa  # noqa: PLC0415 pyarrow loads once the pass runs, not at import
    import pyarrow.parquet as pq  # noqa: PLC0415 pyarrow loads once the pass runs, not at import

    arrays, names = [], []
    for k, v in cols.items():
        if dictionary and k in dictionary:
            arrays.append(arrow_dictionary(v, dictionary[k]))
        elif k in nullable:
            arrays.append(arrow_array(v, null=v < 0))
        else:
            arrays.append(arrow_array(v))
        names.append(k)
    pq.write_table(pa.Table.from_arrays(arrays, names=names), str(path), compression="zstd")


def _merged_rtt_ms(tp: TcpPass, f: int) -> dict[str, float | None]:
    hs = [tp.rtt_hist[(f, d)] for d in (0, 1) if (f, d) in tp.rtt_hist and tp.rtt_hist[(f, d)].total_count]
    if not hs:
        return rt.rtt_summary_ms(None)
    h = hs[0].copy()
    for other in hs[1:]:
        h.merge(other)
    return rt.rtt_summary_ms(h)


def fairness_numbers(flows: dict[str, np.ndarray], intervals: dict[str, np.ndarray], bin_ns: int) -> dict[str, Any]:
    """Both Jain variants over the bulk flows' per-bin goodput (None with fewer than two bulk flows)."""
    unique = flows["orig_unique_bytes"] + flows["resp_unique_bytes"]
    total = float(unique.sum())
    bulk = flows["flow"][unique >= BULK_SHARE * total].tolist() if total > 0 else []
    out: dict[str, Any] = {"jain_of_means": None, "jain_mean_of_intervals": None, "jain_min_interval": None,
                           "bulk_flows": bulk}
    if len(bulk) < 2:
        return out
    f, t, v = flow_goodput_series(intervals, np.array(bulk))
    series = FlowSeries.from_columns(f.tolist(), t, v, interval_ns=bin_ns, source="intervals")
    s = summarize(series)
    out.update({k: s[k] for k in ("jain_of_means", "jain_mean_of_intervals", "jain_min_interval")})
    return out


def summary_doc(tp: TcpPass, flows: dict[str, np.ndarray], fair: dict[str, Any]) -> dict[str, Any]:
    rx_col, ooo_col = rule_counts(tp.rule)
    rows = []
    for i in range(flows["flow"].shape[0]):
        def both(stem: str, i: int = i) -> int:
            return int(flows["orig_" + stem][i] + flows["resp_" + stem][i])

        g = float(flows["goodput_bps"][i])
        rows.append({
            "src": str(flows["src"][i]), "sport": int(flows["sport"][i]), "dst": str(flows["dst"][i]),
            "dport": int(flows["dport"][i]), "start_seen": bool(flows["start_seen"][i]), "packets": both("packets"),
            "bytes": both("wire_bytes"), "goodput_bps": g if np.isfinite(g) else None,
            "retransmissions": both(rx_col), "out_of_order": 0 if ooo_col is None else both(ooo_col),
            "syn_retransmissions": both("syn_retransmissions"), "fin_retransmissions": both("fin_retransmissions"),
            "rtt_ms": _merged_rtt_ms(tp, int(flows["flow"][i])),
        })
    return {"rule": tp.rule, "bin_ms": tp.bin_ns / 1e6, "packets": tp.counters["packets"], "flows": rows,
            "jain_of_means": fair["jain_of_means"], "jain_mean_of_intervals": fair["jain_mean_of_intervals"]}


class _RttSink:
    """Writes RTT rows to rtt.parquet as they come and keeps an evenly thinned sample for the plot. pyarrow is
    imported on the first block, in the pass's RTT thread while the kernel runs on."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.writer = None
        self.stride = 1
        self.seen = 0
        self.sample: list[np.ndarray] = []
        self.sample_rows = 0

    def _open(self) -> None:
        import pyarrow as pa  # noqa: PLC0415 pyarrow loads once the pass runs, not at import
        import pyarrow.parquet as pq  # noqa: PLC0415 pyarrow loads once the pass runs, not at import

        self.pa = pa
        # no nulls (no definition levels to write) and statistics only where readers filter: 30 % less CPU
        labels = pa.dictionary(pa.int8(), pa.string())
        self.schema = pa.schema([pa.field(name, kind, nullable=False) for name, kind in (
            ("flow", pa.int64()), ("direction", labels), ("time_ns", pa.int64()), ("rtt_ns", pa.int64()),
            ("kind", labels), ("bytes_in_flight", pa.int64()))])
        delta = "DELTA_BINARY_PACKED"
        self.writer = pq.ParquetWriter(
            str(self.path), self.schema, compression="none", use_dictionary=["direction", "kind"],
            column_encoding={"flow": delta, "time_ns": delta, "rtt_ns": delta, "bytes_in_flight": delta},
            write_statistics=["flow", "time_ns"])

    def __call__(self, rows: np.ndarray) -> None:
        if self.writer is None:
            self._open()
        pa = self.pa
        dirs = arrow_dictionary(rows[:, rt.R_DIR], ("orig", "resp"))
        kinds = arrow_dictionary(rows[:, rt.R_KIND], rt.KIND_NAMES)
        table = pa.Table.from_arrays(
            [arrow_array(rows[:, rt.R_FLOW]), dirs, arrow_array(rows[:, rt.R_TIME]), arrow_array(rows[:, rt.R_RTT]),
             kinds, arrow_array(rows[:, rt.R_INFLIGHT])], schema=self.schema)
        self.writer.write_table(table)
        start = (-self.seen) % self.stride
        self.seen += rows.shape[0]
        keep = rows[start::self.stride].copy()  # a view would keep the whole block alive
        self.sample.append(keep)
        self.sample_rows += keep.shape[0]
        if self.sample_rows > RTT_PLOT_POINTS:
            allrows = np.concatenate(self.sample)
            while allrows.shape[0] > RTT_PLOT_POINTS:
                allrows = allrows[::2]
                self.stride *= 2
            self.sample = [allrows]
            self.sample_rows = allrows.shape[0]

    def close(self) -> np.ndarray:
        if self.writer is None:
            self._open()
        self.writer.close()
        return np.concatenate(self.sample) if self.sample else np.zeros((0, rt.N_R), np.int64)


def _html(out: Path, flows: dict[str, np.ndarray], intervals: dict[str, np.ndarray], rtt_sample: np.ndarray, t0_ns: int,
          fair: dict[str, Any], rule: str, bin_ns: int,
          cwnd: tuple[dict[str, np.ndarray], dict[str, Any]] | None = None) -> None:
    """report.html: throughput, goodput and RTT over time per flow (plotly.js beside it, no network needed).

    The figure is written as plain plotly.js JSON: building it through plotly's Python objects costs more
    memory than the whole analysis pass."""
    spec = importlib.util.find_spec("plotly")  # its location only: importing plotly costs 0.05-0.1 s
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("plotly is not installed: it provides plotly.min.js for report.html")
    js = Path(next(iter(spec.submodule_search_locations))) / "package_data" / "plotly.min.js"
    shutil.copyfile(js, out / "plotly.min.js")

    label = {int(f): f"{f}: {a}:{sp} > {b}:{dp}" + ("" if seen else " (start not captured)")
             for f, a, sp, b, dp, seen in zip(flows["flow"], flows["src"], flows["sport"], flows["dst"],
                                              flows["dport"], flows["start_seen"], strict=True)}
    unseen = [label[int(f)] for f in flows["flow"][~flows["start_seen"]]]
    data: list[dict[str, Any]] = []
    _, _, thr = flow_goodput_series(intervals, column="throughput_bps")
    fids, starts, good = flow_goodput_series(intervals)
    for f in sorted_unique(fids):
        m = fids == f
        x = np.round((starts[m] - t0_ns) / 1e9, 6).tolist()
        data.append({"type": "scatter", "mode": "lines", "x": x, "y": np.round(thr[m] / 1e6, 6).tolist(),
                     "name": label[int(f)], "legendgroup": str(f), "xaxis": "x", "yaxis": "y3"})
        data.append({"type": "scatter", "mode": "lines", "x": x, "y": np.round(good[m] / 1e6, 6).tolist(),
                     "name": label[int(f)], "legendgroup": str(f), "showlegend": False, "xaxis": "x", "yaxis": "y2"})
    for f in sorted_unique(rtt_sample[:, rt.R_FLOW]) if rtt_sample.size else []:
        m = rtt_sample[:, rt.R_FLOW] == f
        data.append({"type": "scattergl", "mode": "markers", "marker": {"size": 3},
                     "x": np.round((rtt_sample[m, rt.R_TIME] - t0_ns) / 1e9, 6).tolist(),
                     "y": np.round(rtt_sample[m, rt.R_RTT] / 1e6, 6).tolist(), "name": label[int(f)],
                     "legendgroup": str(int(f)), "showlegend": False, "xaxis": "x", "yaxis": "y"})

    def fmt(v: float | None) -> str:
        return "n/a" if v is None else f"{v:.4f}"

    ms = f"{bin_ns / 1e6:g} ms"
    domains = {"y": [0.0, 0.3], "y2": [0.35, 0.65], "y3": [0.7, 1.0]}
    extra: dict[str, Any] = {}
    if cwnd is not None:
        domains = {"y": [0.0, 0.2], "y4": [0.26, 0.46], "y2": [0.52, 0.74], "y3": [0.8, 1.0]}
        table, info = cwnd
        realtime = info["clock"] == CLOCK_REALTIME
        xa = "x" if realtime else "x2"
        step = max(1, -(-table["flow"].shape[0] // RTT_PLOT_POINTS))
        for f, d in flow_directions(table["flow"], table["direction"]):
            m = np.flatnonzero((table["flow"] == f) & (table["direction"] == d))[::step]
            x = (table["time_ns"][m] - (t0_ns if realtime else 0)) / 1e9
            data.append({"type": "scattergl", "mode": "lines", "line": {"shape": "hv"}, "x": np.round(x, 6).tolist(),
                         "y": table["cwnd_segments"][m].tolist(), "name": f"{label[f]} ({DIRECTIONS[d]} sends)",
                         "legendgroup": str(f), "showlegend": False, "xaxis": xa, "yaxis": "y4"})
        extra["yaxis4"] = {"title": {"text": "cwnd (segments, tcp_probe)"}, "domain": domains["y4"]}
        if not realtime:
            extra["xaxis2"] = {"title": {"text": "s since the flow's first tcp_probe record (perf clock is not "
                                                 "CLOCK_REALTIME: not on the capture's time axis)"},
                               "anchor": "y4", "overlaying": "x"}
    layout = {
        "height": 900,
        "title": {"text": f"TCP flows (rule {rule}); Jain's index of per-flow mean goodputs "
                          f"{fmt(fair['jain_of_means'])}, mean of per-{ms} indices "
                          f"{fmt(fair['jain_mean_of_intervals'])} (bulk flows {fair['bulk_flows']})"},
        "xaxis": {"title": {"text": "time since first packet (s)"}, "anchor": "y"},
        "yaxis": {"title": {"text": "RTT (ms)"}, "domain": domains["y"]},
        "yaxis2": {"title": {"text": f"goodput per {ms} (Mbit/s)"}, "domain": domains["y2"]},
        "yaxis3": {"title": {"text": f"throughput per {ms} (Mbit/s)"}, "domain": domains["y3"]},
        **extra,
    }
    doc = json.dumps({"data": data, "layout": layout}, allow_nan=False)
    (out / "report.html").write_text(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>benchbook tcp</title>"
        "<script src=\"plotly.min.js\"></script></head><body><div id=\"report\"></div><p>Throughput: wire bytes; "
        "goodput: payload seen for the first time (sequence coverage); RTT: TS echo and data-to-ACK (Karn) "
        "samples, evenly thinned to at most " + str(RTT_PLOT_POINTS) + " points." + ("" if cwnd is None else (
            " cwnd: the sender's congestion window from the kernel's tcp_probe records (" + html_escape(
                str(cwnd[1]["source"])) + ", " + str(cwnd[1]["matched"]) + " of " + str(cwnd[1]["records"])
            + " records matched, clock: " + str(cwnd[1]["clock"]) + ").")) + "</p><script>var fig = " + doc
        + ";Plotly.newPlot(\"report\", fig.data, fig.layout);</script>" + ("" if not unseen else (
            "<p id=\"start-not-captured\">Start not captured (start_seen: false; no SYN at the start of a direction, "
            "the capture began mid-connection: sequence coverage from the lowest sequence number seen): "
            + html_escape("; ".join(unseen)) + ".</p>")) + "</body></html>\n", encoding="utf-8")


def analyze_tcp(paths: list[str | Path], out_dir: str | Path, bin_ms: float = 100.0, rule: str = "zeek",
                html: bool = True, probe: ProbeRecords | None = None
                ) -> tuple[dict[str, Any], dict[str, np.ndarray], list[str]]:
    """Analyse the captures and write the report directory; returns (summary, flows table, messages). ``probe``:
    tcp_probe records to match to the flows (cwnd.parquet, the cwnd panel, summary "cwnd")."""
    bin_ns = round(bin_ms * 1_000_000)
    with report_dir(out_dir, OUTPUT_FILES) as work:
        sink = _RttSink(work / "rtt.parquet")
        try:
            tp = run_pass(paths, bin_ns=bin_ns, rule=rule, on_rtt=sink)
        finally:
            rtt_sample = sink.close()
        flows = flow_arrays(tp)
        intervals = interval_arrays(tp.iv_rows, tp.t0_ns, bin_ns)
        write_parquet(work / "flows.parquet", flows, nullable=NULLABLE)
        write_parquet(work / "intervals.parquet", intervals, dictionary={"direction": DIRECTIONS})
        fair = fairness_numbers(flows, intervals, bin_ns)
        summary = summary_doc(tp, flows, fair)
        cwnd = None
        if probe is not None:
            cwnd = match_records(probe, flows)
            write_parquet(work / "cwnd.parquet", cwnd[0], dictionary={"direction": DIRECTIONS})
            summary["cwnd"] = cwnd[1]
            if cwnd[1]["matched"] == 0:
                tp.messages.append(f"{probe.source}: none of its {cwnd[1]['records']} tcp_probe record(s) belongs to a "
                                   "flow of the capture (matched by both endpoints)")
        if html:
            _html(work, flows, intervals, rtt_sample, tp.t0_ns, fair, rule, bin_ns, cwnd)
        (work / "summary.json").write_text(json.dumps(summary, indent=2, allow_nan=False) + "\n")
    return summary, flows, tp.messages


def format_flows(summary: dict[str, Any]) -> str:
    """The per-flow table the command prints."""
    head = (f"{'src':>22} {'sport':>5}  {'dst':>22} {'dport':>5} {'packets':>10} {'bytes':>13} "
            f"{'goodput Mbit/s':>14} {'retx':>7} {'ooo':>6} {'rtt min/mean/p99 ms':>24}")
    lines = [f"rule {summary['rule']}, bins {summary['bin_ms']:g} ms, {summary['packets']} packets", head]
    for f in summary["flows"]:
        r = f["rtt_ms"]
        rtt = "-" if r["min"] is None else f"{r['min']:.3f}/{r['mean']:.3f}/{r['p99']:.3f}"
        gp = "-" if f["goodput_bps"] is None else f"{f['goodput_bps'] / 1e6:.3f}"
        mark = "" if f["start_seen"] else " *"
        lines.append(f"{f['src']:>22} {f['sport']:>5}  {f['dst']:>22} {f['dport']:>5} {f['packets']:>10} "
                     f"{f['bytes']:>13} {gp:>14} {f['retransmissions']:>7} {f['out_of_order']:>6} {rtt:>24}{mark}")
    if any(not f["start_seen"] for f in summary["flows"]):
        lines.append("* start not captured (no SYN at the start of a direction): sequence coverage from the lowest "
                     "sequence number seen")

    def j(v: float | None) -> str:
        return "n/a" if v is None else f"{v:.4f}"

    lines.append(f"Jain's index of per-flow mean goodputs {j(summary['jain_of_means'])}; mean of per-interval "
                 f"indices {j(summary['jain_mean_of_intervals'])}")
    return "\n".join(lines)


__all__ = ["analyze_tcp", "flow_table", "format_flows", "run_pass"]
