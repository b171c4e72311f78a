"""Stemplinger & Bauer (IITM WS 2018/19): bro-tcp's ACK inter-arrival times and retransmission score on a local capture.

Imported by bro-metrics.ipynb beside it. One bulk TCP flow runs through the local dumbbell
(:mod:`benchbook.experiment.dumbbell_runs`, through the repetition runner) while tcpdump captures the sender's
interface; benchbook's TCP analysis (:func:`benchbook.analysis.tcp_report.analyze_tcp`, rule ``zeek``: a
payload segment whose sequence number does not pass the highest seen, bro-tcp's rule) gives per 0.1 s and
direction the payload and retransmitted bytes and the advancing ACKs. From them, as bro-tcp logs them:

- retransmission score: retransmitted bytes / all payload bytes sent so far (retransmissions included),
  one entry per 0.1 s for each direction that carried a packet in that 0.1 s (``retransmission_scores.log``);
  the score of each 0.1 s alone is shown beside it;
- ACK inter-arrival: the mean time between successive ACKs that advance the cumulative ACK, per 0.1 s
  and direction (bro-tcp logs every such ACK; the mean per bin is what the interval table holds).

Published numbers come only from the entry TOMLs of this folder.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from benchbook.analysis.tcp_report import analyze_tcp
from benchbook.atomic_write import write_json_atomic
from benchbook.experiment.dumbbell_runs import FlowsArm, FlowsRun, flows_run
from benchbook.experiment.repetitions import RunContext, Statistic, run_repetitions
from benchbook.testbed.dumbbell import BASE_PORT, Dumbbell, FlowSpec, LinkSpec
from benchbook.tools import tcpdump

BIN_MS = 100        # bro-tcp's score_log_trigger interval


def _capture_argv(iface: str, pcap: Path | str) -> list[str]:
    return tcpdump.build_argv(iface, pcap, snaplen=128, bpf_filter=f"tcp port {BASE_PORT + 1}")


def dry_run(cca: str, link: LinkSpec, duration_s: int, output_dir: Path | str) -> Path:
    db = Dumbbell(link, [FlowSpec(cca)])
    lines = ["# one flow; tcpdump on the sender's interface while it runs (token 000000 stands for the run token)"]
    lines += db.dry_run(duration_s, BIN_MS / 1000)
    pcap = f"raw/{cca}/rep1/sender.pcap"
    lines.append(f"[s1] {' '.join(_capture_argv('bb-000000-s1e', pcap))}   (started before the flow)")
    lines.append(f"# then: benchbook tcp {pcap} -o raw/{cca}/rep1/tcp --bin-ms {BIN_MS} --rule zeek")
    path = Path(output_dir) / "dry-run.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


@contextmanager
def _sender_capture(db: Dumbbell, ctx: RunContext) -> Iterator[None]:
    """tcpdump on the sender's interface while the flow runs, into the run's sender.pcap; its counters go into
    the run's metrics; a capture that lost packets or failed makes the run fail."""
    assert db.tb is not None
    pcap = ctx.directory / "sender.pcap"
    cap = tcpdump.start_capture(db.tb.host("s1"), _capture_argv(db.ifname("s1e"), pcap), pcap)
    try:
        yield
        tcpdump.wait_until_written(pcap)
    finally:
        stats = cap.stop()
        ctx.metrics["tcpdump"] = {k: v for k, v in stats.items() if k != "argv"}
    problem = cap.problem()
    if problem:
        raise RuntimeError(problem)


def _bro_statistics(run: FlowsRun) -> list[Statistic]:
    """The TCP analysis of the run's capture into its tcp/ (the report ``benchbook tcp`` writes), and bro-tcp's
    measures of it as the run's statistics."""
    d = run.directory
    _summary, flows, messages = analyze_tcp([d / "sender.pcap"], d / "tcp", bin_ms=BIN_MS, rule="zeek")
    data = int(np.argmax(flows["orig_payload_bytes"] + flows["resp_payload_bytes"]))
    f = {k: (v[data].item() if hasattr(v[data], "item") else v[data]) for k, v in flows.items()}
    run.ctx.metrics.update({"data_flow": data, "flow": f, "analysis_messages": messages})
    data_dir = "orig" if f["orig_payload_bytes"] >= f["resp_payload_bytes"] else "resp"
    ack_dir = "resp" if data_dir == "orig" else "orig"
    series = bro_series(d, data)
    shape = score_shape(series[data_dir])
    ia = series[ack_dir]["ack_interarrival_ms"]
    finite = np.isfinite(ia)
    bins = int(np.sum(np.isfinite(series[data_dir]["cumulative_score"])))
    acks = {side: int(np.sum(series[side]["advancing_acks"])) for side in ("orig", "resp")}
    data_bins, acked_bins = ack_continuity(series, data_dir)
    sent = series[data_dir]["payload_bytes"] > 0
    idle_s = (max(0.0, (f["last_time_ns"] - series[data_dir]["start_time_ns"][sent][-1]) / 1e9 - BIN_MS / 1000)
              if sent.any() else None)
    return [Statistic("receiver_advancing_acks", acks[ack_dir], None, "", "ACKs that advance the cumulative ACK "
                      "sent by the data receiver (bro-tcp's ACK log of that direction)"),
            Statistic("advancing_acks", acks["orig"] + acks["resp"], None, "", "ACKs that advance the cumulative "
                      "ACK, both directions"),
            Statistic("idle_before_close_s", idle_s, None, "s", f"from the end of the last {BIN_MS} ms bin in which "
                      "the data direction carried payload to the connection's last packet (resolution "
                      f"{BIN_MS} ms)"),
            Statistic("data_bins", data_bins, None, "", f"{BIN_MS} ms bins in which the data direction carried "
                      "payload"),
            Statistic("data_bins_acked", acked_bins, None, "", "of the data_bins, those in which the data receiver "
                      "sent an advancing ACK"),
            Statistic("retransmissions_zeek", f[f"{data_dir}_retransmissions_zeek"], None, "segments",
                      "payload segments of the data direction whose sequence number does not pass the highest seen "
                      "(bro-tcp's rule) in the sender-side capture"),
            Statistic("first_retransmission_s", shape["first_retransmission_s"], None, "s", "start of the first "
                      f"{BIN_MS} ms bin with retransmitted bytes, from the flow's first bin"),
            Statistic("peak_score", shape["peak_score"], bins, "", "largest cumulative retransmission score "
                      f"(retransmitted / all payload bytes so far), logged per {BIN_MS} ms; n: bins logged"),
            Statistic("end_score", shape["end_score"], bins, "", "the cumulative retransmission score in the last "
                      "bin logged; n: bins logged"),
            Statistic("ack_interarrival_median_ms", float(np.median(ia[finite])) if finite.any() else None,
                      int(finite.sum()), "ms", f"median over {BIN_MS} ms bins of the data receiver's mean time "
                      "between advancing ACKs; n: bins with one")]


def run(cca: str, link: LinkSpec, duration_s: int, output_dir: Path | str, progress: Any = print,
        repetitions: int = 1, seed: int | None = None) -> dict[str, Any]:
    """The flow with a sender-side capture, through the repetition runner (:mod:`benchbook.experiment.
    repetitions`; calling again on ``output_dir`` resumes): raw/<cca>/rep<k>/ holds sender.pcap, the iperf3
    report, every command, the TCP analysis (tcp/, the report ``benchbook tcp`` writes) and the run's record
    with bro-tcp's measures as statistics. Returns what the verdict needs of the first valid run; metrics.json
    and capabilities.json keep the emulation record and tcpdump's counters."""
    out = Path(output_dir)
    arms = {cca: FlowsArm(link, (FlowSpec(cca),), duration_s, BIN_MS / 1000)}
    res = run_repetitions(out, arms, repetitions, flows_run(during=_sender_capture, measures=_bro_statistics),
                          seed=seed, progress=progress)
    valid = res.runs(cca)
    if not valid:
        why = res.not_runnable().get(cca) or "no valid run"
        result: dict[str, Any] = {"not_runnable": why, "output_dir": str(out)}
        write_json_atomic(out / "metrics.json", result)
        write_json_atomic(out / "capabilities.json", [*res.capabilities(), {"capability": "dumbbell",
                                                                            "status": "missing", "detail": why}])
        return result
    rec = valid[0]
    m = rec["metrics"]
    result = {"cca": cca, "duration_s": duration_s, "token": m["token"], "dir": rec["dir"],
              "repetitions": repetitions, "valid_runs": len(valid), "seed": res.summary["plan"]["seed"],
              "link": {"rate_bps": link.rate_bps, "buffer_packets": link.buffer_packets, "delay_ms": link.delay_ms},
              "tcpdump": m["tcpdump"], "data_flow": m["data_flow"], "flow": m["flow"],
              "kernel_retransmits": m["flows"][0]["retransmits"], "receiver_bps": m["flows"][0]["receiver_bps"],
              "analysis_messages": m["analysis_messages"], "output_dir": str(out)}
    write_json_atomic(out / "metrics.json", {**result, "link_emulation": m["emulation"]})
    write_json_atomic(out / "capabilities.json", res.capabilities())
    return result


def bro_series(run_dir: Path | str, flow: int) -> dict[str, dict[str, np.ndarray]]:
    """From the TCP report in ``run_dir``/tcp, per direction ("orig", "resp") of ``flow``: t_s (bin start from
    the flow's first bin), the cumulative score (NaN in bins without a packet of that direction: bro-tcp logs
    nothing there), the score of the bin alone, advancing ACKs and their mean inter-arrival (ms) per bin."""
    iv = pd.read_parquet(Path(run_dir) / "tcp" / "intervals.parquet")
    iv = iv[iv["flow"] == flow]
    t0 = iv["start_time_ns"].min()
    out = {}
    for d in ("orig", "resp"):
        x = iv[iv["direction"].astype(str) == d].sort_values("start_time_ns")
        pay = x["payload_bytes"].to_numpy(float)
        rtx = x["retransmitted_bytes"].to_numpy(float)
        cum_pay, cum_rtx = np.cumsum(pay), np.cumsum(rtx)
        with np.errstate(invalid="ignore", divide="ignore"):
            cum = np.where((x["packets"].to_numpy() > 0) & (cum_pay > 0), cum_rtx / cum_pay, np.nan)
            per_bin = np.where(pay > 0, rtx / pay, np.nan)
        out[d] = {"t_s": (x["start_time_ns"].to_numpy() - t0) / 1e9, "cumulative_score": cum, "bin_score": per_bin,
                  "advancing_acks": x["advancing_acks"].to_numpy(), "retransmitted_bytes": rtx, "payload_bytes": pay,
                  "start_time_ns": x["start_time_ns"].to_numpy(),
                  "ack_interarrival_ms": x["ack_interarrival_mean_ns"].to_numpy(float) / 1e6}
    return out


def ack_continuity(series: dict[str, dict[str, np.ndarray]], data_dir: str) -> tuple[int, int]:
    """(bins in which the data direction carried payload, those of them in which the other direction sent an
    advancing ACK), the bins matched by their start time."""
    ack_dir = "resp" if data_dir == "orig" else "orig"
    d, a = series[data_dir], series[ack_dir]
    data_t = d["t_s"][d["payload_bytes"] > 0]
    acked_t = a["t_s"][a["advancing_acks"] > 0]
    return int(data_t.size), int(np.isin(np.round(data_t, 6), np.round(acked_t, 6)).sum())


def score_shape(s: dict[str, np.ndarray]) -> dict[str, Any]:
    """Of the data direction: the time of the first retransmission, the cumulative score's peak and its value
    at the end (a score that falls after the spike as more data is sent: end < peak)."""
    rtx = np.nonzero(s["retransmitted_bytes"] > 0)[0]
    cum = s["cumulative_score"]
    if rtx.size == 0 or not np.isfinite(cum).any():
        return {"first_retransmission_s": None, "peak_score": None, "end_score": None}
    finite = np.nonzero(np.isfinite(cum))[0]
    peak = int(finite[np.argmax(cum[finite])])
    return {"first_retransmission_s": float(s["t_s"][rtx[0]]), "peak_score": float(cum[peak]),
            "peak_s": float(s["t_s"][peak]), "end_score": float(cum[finite[-1]])}


def score_figure(series: dict[str, dict[str, np.ndarray]], data_dir: str, title: str) -> Any:
    s = series[data_dir]
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=s["t_s"], y=s["cumulative_score"], mode="lines+markers", marker={"size": 3},
                             name="retransmission score (cumulative, as bro-tcp logs it)"))
    fig.add_trace(go.Bar(x=s["t_s"], y=s["bin_score"], name="score of each 0.1 s alone", opacity=0.4))
    fig.update_layout(title=title, xaxis_title="Time [s]", yaxis_title="retransmitted / transmitted bytes")
    return fig


def ack_figure(series: dict[str, dict[str, np.ndarray]], labels: dict[str, str], title: str) -> Any:
    fig = go.Figure()
    for d, s in series.items():
        ok = np.isfinite(s["ack_interarrival_ms"])
        fig.add_trace(go.Scatter(x=s["t_s"][ok], y=s["ack_interarrival_ms"][ok], mode="markers", marker={"size": 4},
                                 name=labels[d]))
    fig.update_layout(title=title, xaxis_title="Time [s]", yaxis_title="ACK inter-arrival [ms] (mean per 0.1 s)",
                      yaxis_type="log")
    return fig


def add_verdict_rows(verdict: Any, result: dict[str, Any], series: dict[str, dict[str, np.ndarray]],
                     figure: str) -> None:
    """The figure and info rows of the first valid run beside the judged ones (the published values and claims
    are judged across runs by ``verdict.judge_runs``)."""
    f = result["flow"]
    data_dir = "orig" if f["orig_payload_bytes"] >= f["resp_payload_bytes"] else "resp"
    ack_dir = "resp" if data_dir == "orig" else "orig"
    link = result["link"]
    pcap = f"{result['dir']}/sender.pcap"
    setup = (f"one {result['cca']} flow, {result['duration_s']} s, {link['rate_bps'] / 1e6:g} Mbit/s, "
             f"+{link['delay_ms']:g} ms, FIFO {link['buffer_packets']} packets; sender-side capture")
    if figure == "fig3":
        shape = score_shape(series[data_dir])
        verdict.figure_redrawn("Fig. 3: retransmission score over the connection, every 0.1 s",
                            note="figure produced on the local capture (method reproduced; the paper's trace is "
                                 "not published)", runs=pcap)
        for key, label in (("peak_score", "peak"), ("end_score", "end of the connection")):
            verdict.add(f"retransmission score (cumulative) at its {label}", None, shape[key], "", pcap,
                        "info", "the text: 'the retransmission score decreased again as more data was transmitted' "
                                "after the spike" if key == "end_score" else setup)
        kernel, capture = result["kernel_retransmits"], f[f"{data_dir}_retransmissions_zeek"]
        verdict.add("retransmitted segments in the capture (zeek rule)", None, capture, "segments",
                    f"{pcap}, {result['dir']}/iperf3-flow1.json", "info",
                    f"the sender kernel's counter (tcpi_total_retrans, iperf3 -J) says {kernel}, an oracle for the "
                    f"rule on a sender-side capture; equal within 1: {'yes' if abs(capture - kernel) <= 1 else 'no'}")
        return
    verdict.figure_redrawn("Fig. 2: ACK inter-arrival over the connection, per direction",
                        note="figure produced on the local capture (mean per 0.1 s of the advancing ACKs' "
                             "inter-arrival; bro-tcp logs each)", runs=pcap)
    for d, role in ((ack_dir, "data receiver"), (data_dir, "data sender")):
        acks = int(np.sum(series[d]["advancing_acks"]))
        verdict.add(f"advancing ACKs sent by the {role} ({d})", None, acks, "", pcap, "info",
                    "the text: the sender of the data acknowledged only the handshakes and the teardown" if
                    role == "data sender" else setup)
    ia = series[ack_dir]["ack_interarrival_ms"]
    verdict.add("median ACK inter-arrival of the data receiver (ms, of the 0.1 s means)", None,
                float(np.nanmedian(ia)) if np.isfinite(ia).any() else None, "ms", pcap, "info",
                "at the bottleneck rate one MSS segment takes "
                f"{1514 * 8 / link['rate_bps'] * 1000:.3f} ms; delayed ACKs cover two")
