"""The TCP analysis (benchbook.analysis.tcp_*) against independent oracles.

- Zeek's own btest baselines (shared dataset zeek-tcp-baselines, BSD-3-clause-style licence, see its
  SOURCES.md and COPYING.zeek): conn.log byte counts (Zeek derives them from sequence numbers), packet and IP
  byte counts, missed_bytes, and the retransmission letters T/t of the history strings.
- tcpdump's test captures (shared dataset tcpdump-tcp-tests, BSD-3-clause, see its SOURCES.md): nanosecond
  timestamps, MPTCP options, SYN-ACK-first and RST-with-data captures.
- Generated captures with known truth (benchbook.capture.tcp_synth), tcptrace's and tshark's output on them, and
  the plain-Python reference in tests/tcp_reference.py.
"""

from __future__ import annotations

import ipaddress
import re
import struct
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import zstandard

import tcp_reference
from benchbook.analysis import tcp_flows as tf
from benchbook.analysis import tcp_rtt as rt
from benchbook.analysis.hdr import HdrHistogram
from benchbook.analysis.tcp_intervals import interval_table
from benchbook.analysis.tcp_pass import TcpAnalysisError, prefetched, run_pass
from benchbook.analysis.tcp_report import analyze_tcp, flow_table
from benchbook.capture.reader import open_capture
from benchbook.capture.tcp_synth import make_tcp_capture
from benchbook.capture.writer import write_pcap, write_pcapng
from conftest import require_program


def zeek_conn_log(path: Path) -> list[dict[str, str]]:
    fields: list[str] = []
    rows = []
    for line in path.read_text().splitlines():
        if line.startswith("#fields"):
            fields = line.split("\t")[1:]
        elif line and not line.startswith("#"):
            rows.append(dict(zip(fields, line.split("\t"), strict=True)))
    return rows


def by_endpoints(df):
    return {(r.src, int(r.sport), r.dst, int(r.dport)): r for r in df.itertuples()}


@pytest.fixture(scope="module")
def zeek(shared_datasets: Path) -> Path:
    return shared_datasets / "zeek-tcp-baselines"


def check_against_conn_log(trace: Path, log: Path) -> int:
    flows = by_endpoints(flow_table(run_pass([trace])))
    checked = 0
    for c in zeek_conn_log(log):
        if c["proto"] != "tcp":
            continue
        r = flows[(c["id.orig_h"], int(c["id.orig_p"]), c["id.resp_h"], int(c["id.resp_p"]))]
        assert r.orig_packets == int(c["orig_pkts"]) and r.resp_packets == int(c["resp_pkts"]), c
        assert r.orig_ip_bytes == int(c["orig_ip_bytes"]) and r.resp_ip_bytes == int(c["resp_ip_bytes"]), c
        if c["orig_bytes"] != "-":
            assert r.orig_seq_span_bytes == int(c["orig_bytes"]), c
            assert r.resp_seq_span_bytes == int(c["resp_bytes"]), c
        hist = c["history"]
        assert (r.orig_retransmissions_zeek > 0) == ("T" in hist), (hist, r.orig_retransmissions_zeek)
        assert (r.resp_retransmissions_zeek > 0) == ("t" in hist), (hist, r.resp_retransmissions_zeek)
        checked += 1
    return checked


def test_zeek_conn_logs_bytes_packets_and_retransmission_letters(zeek: Path) -> None:
    """Every TCP connection of three Zeek baselines: packets, IP bytes, sequence-derived bytes and T/t letters."""
    n = check_against_conn_log(zeek / "Traces/tcp/retransmit-fast009.pcap",
                               zeek / "Baseline/core.tcp.rxmit-history/conn-1.log")
    n += check_against_conn_log(zeek / "Traces/wikipedia.pcap", zeek / "Baseline/core.tcp.rxmit-history/conn-2.log")
    n += check_against_conn_log(zeek / "Traces/http/http-post-large.pcap",
                                zeek / "Baseline/scripts.policy.protocols.conn.speculative-service/conn-post-large.log")
    assert n == 1 + 10 + 2


def test_zeek_bigtransfer_sequence_wrap_and_missed_bytes(zeek: Path) -> None:
    """ftp/bigtransfer.pcap: a 5.4 GB transfer cut down to its first and last packets, whose 32-bit sequence
    numbers wrap; Zeek's conn.log gives its bytes from sequence numbers and the bytes never seen."""
    flows = by_endpoints(flow_table(run_pass([zeek / "Traces/ftp/bigtransfer.pcap"])))
    logs = zeek_conn_log(zeek / "Baseline/core.tcp.large-file-reassembly/conn.log")
    assert len(logs) == 3
    for c in logs:
        r = flows[(c["id.orig_h"], int(c["id.orig_p"]), c["id.resp_h"], int(c["id.resp_p"]))]
        assert r.orig_seq_span_bytes == int(c["orig_bytes"]) and r.resp_seq_span_bytes == int(c["resp_bytes"])
        assert r.orig_missed_bytes + r.resp_missed_bytes == int(c["missed_bytes"]), c
        assert r.orig_packets == int(c["orig_pkts"]) and r.resp_packets == int(c["resp_pkts"])
    big = flows[("192.168.56.1", 59764, "192.168.56.101", 37150)]
    assert big.resp_seq_span_bytes == 5_416_666_670 > 2**32


def test_zeek_ssh_dups_both_directions_retransmit(zeek: Path) -> None:
    """tcp/ssh-dups.pcap ends with history ShADTadtTtFf: retransmissions (Zeek's rule) in both directions,
    and Zeek's tcp_multiple_retransmissions event fired at 10 for each direction, so at least 10 each."""
    (r,) = flow_table(run_pass([zeek / "Traces/tcp/ssh-dups.pcap"])).itertuples()
    assert r.orig_retransmissions_zeek >= 10 and r.resp_retransmissions_zeek >= 10
    assert (r.src, r.sport, r.dst, r.dport) == ("192.168.0.102", 53206, "192.168.0.112", 22)


def test_zeek_timestamp_options(zeek: Path) -> None:
    """tcp/timestamp.pcap (Zeek's baseline: MSS 1460, window scale 7, TSval/TSecr on the handshake)."""
    base = (zeek / "Baseline/scripts.base.protocols.tcp.timestamp/.stdout").read_text()
    df = flow_table(run_pass([zeek / "Traces/tcp/timestamp.pcap"]))
    assert "1460" in base and "7" in base
    r = df.iloc[0]
    assert r.orig_mss_bytes == 1460 or r.resp_mss_bytes == 1460
    assert 7 in (r.orig_window_scale, r.resp_window_scale)
    assert r.orig_timestamp_segments > 0 and r.resp_timestamp_segments > 0


def test_tcpdump_nanosecond_handshake(shared_datasets: Path) -> None:
    """tcp-handshake-nano.pcap: tcpdump prints the three handshake packets with ns timestamps; the handshake RTT
    (SYN to the ACK completing it) is their difference to the nanosecond."""
    d = shared_datasets / "tcpdump-tcp-tests"
    times = [line.split()[1] for line in (d / "tcp-handshake-nano.out").read_text().splitlines() if line.strip()]
    ns = []
    for t in times:
        hms, frac = t.split(".")
        h, m, s = (int(x) for x in hms.split(":"))
        ns.append(((h * 60 + m) * 60 + s) * 10**9 + int(frac.ljust(9, "0")))
    (r,) = flow_table(run_pass([d / "tcp-handshake-nano.pcap"])).itertuples()
    assert r.handshake == "complete"
    assert r.handshake_rtt_ns == ns[2] - ns[0]
    assert r.syn_to_synack_ns == ns[1] - ns[0]


def test_tcpdump_mptcp_and_rst_data(shared_datasets: Path) -> None:
    """mptcp-v0.pcap: an MPTCP v0 SSH session (unknown options must be skipped); tcpdump's output lists its packets
    with their lengths; payload bytes per direction equal the sum of tcpdump's `length N` fields."""
    d = shared_datasets / "tcpdump-tcp-tests"
    out = (d / "mptcp-v0.out").read_text().splitlines()
    lengths: dict[str, int] = {}
    for line in out:
        m = re.search(r"IP (\S+) > (\S+?):.*length (\d+)", line)
        if m:
            lengths[m.group(1)] = lengths.get(m.group(1), 0) + int(m.group(3))
    df = flow_table(run_pass([d / "mptcp-v0.pcap"]))
    total = int((df["orig_payload_bytes"] + df["resp_payload_bytes"]).sum())
    assert total == sum(lengths.values()) > 0
    rst = flow_table(run_pass([d / "tcp_rst_data.pcap"]))
    assert int(rst["orig_rst_segments"].sum() + rst["resp_rst_segments"].sum()) == 1
    assert int(rst["orig_payload_bytes"].sum() + rst["resp_payload_bytes"].sum()) > 0


@pytest.fixture(scope="module")
def synth(tmp_path_factory) -> tuple[Path, object]:
    path = tmp_path_factory.mktemp("tcp") / "bulk.pcap"
    truth = make_tcp_capture(path, flows=4, segments=6000, loss=0.003, reorder=0.003, seed=7)
    return path, truth


@pytest.mark.parametrize("rule", ["zeek", "wireshark", "tcptrace"])
def test_synthetic_truth(synth, rule: str) -> None:
    """Known truth: unique bytes, payload, retransmissions and reordering per flow (flow 0 wraps its sequence)."""
    path, truth = synth
    tp = run_pass([path], rule=rule)
    flows = by_endpoints(flow_table(tp))
    assert tp.counters["packets"] == truth.packets
    for t in truth.flows:
        r = flows[(t["src"], t["sport"], t["dst"], t["dport"])]
        assert r.orig_unique_bytes == t["unique_bytes"] == r.orig_seq_span_bytes
        assert r.orig_payload_bytes == t["payload_bytes"]
        assert r.orig_packets == t["data_segments"] + 4  # SYN, ACK, FIN and the last ACK
        assert r.resp_packets == t["ack_segments"] + 1
        assert r.orig_wire_bytes == t["orig_wire_bytes"] and r.resp_wire_bytes == t["resp_wire_bytes"]
        assert r.orig_retransmissions_tcptrace == t["retransmissions"]
        assert r.orig_out_of_order_tcptrace == t["reordered"]
        assert r.orig_retransmissions_zeek == t["retransmissions"] + t["reordered"]
        captured = truth.params["snaplen"] - 66  # payload bytes within the snap length (Zeek: the rest is missed)
        assert r.orig_missed_bytes == truth.params["segments"] * (truth.params["mss"] - captured)
        assert r.handshake == "complete"
        assert r.handshake_rtt_ns == truth.params["handshake_rtt_ns"]
        assert r.orig_rtt_min_ns == t["ack_delay_ns"] or r.orig_rtt_min_ns < t["ack_delay_ns"]
    assert truth.flows[0]["isn"] + truth.flows[0]["unique_bytes"] > 2**32


def test_output_buffers_that_fill_inside_a_chunk_are_drained_and_lose_nothing(tmp_path: Path) -> None:
    """The kernel stops when its interval buffer (16,384 rows) or RTT buffer (65,536 rows) is full and the driver
    drains the one that asked (tcp_flows' FLUSH_IV and FLUSH_RTT, distinct from GROW_FLOWS): 10-us bins give a row
    per packet, and one chunk of all ~240,000 packets holds some 80,000 data->ACK samples, so both fill several
    times inside the chunk; small chunks never fill them. Flows, interval rows and RTT histograms are the same."""
    path = tmp_path / "many.pcap"
    truth = make_tcp_capture(path, flows=8, segments=20_000, loss=0.0, reorder=0.0, seed=3)
    rows: dict[int, list[int]] = {}

    def one(chunk_packets: int):
        seen = rows.setdefault(chunk_packets, [])
        tp = run_pass([path], bin_ns=10_000, chunk_packets=chunk_packets, on_rtt=lambda b: seen.append(len(b)))
        iv = tp.iv_rows[np.lexsort((tp.iv_rows[:, tf.IV_BIN], tp.iv_rows[:, tf.IV_DIR], tp.iv_rows[:, tf.IV_FLOW]))]
        return tp, flow_table(tp), iv

    whole, fl_whole, iv_whole = one(1 << 18)
    small, fl_small, iv_small = one(1 << 12)
    assert whole.counters["packets"] == small.counters["packets"] == truth.packets > 1 << 17
    assert len(iv_whole) > 4 * 16_384 and sum(rows[1 << 18]) > 2 * 65_536
    pd.testing.assert_frame_equal(fl_whole, fl_small)
    np.testing.assert_array_equal(iv_whole, iv_small)
    assert sum(rows[1 << 18]) == sum(rows[1 << 12])
    totals = {k: h.total_count for k, h in whole.rtt_hist.items()}
    assert totals == {k: h.total_count for k, h in small.rtt_hist.items()}
    assert sum(totals.values()) == sum(rows[1 << 18])


def test_data_ack_rtt_is_the_ack_delay(synth, tmp_path: Path) -> None:
    """The generator ACKs ack_delay_ns after the segment it acknowledges: every data->ACK sample whose ACK came
    in order equals it, and none is smaller (Karn's rule drops the retransmitted ones)."""
    path, truth = synth
    analyze_tcp([path], tmp_path / "out", html=False)
    rtt = pd.read_parquet(tmp_path / "out" / "rtt.parquet")
    da = rtt[rtt["kind"] == "data_ack"]
    delay = truth.params["ack_delay_ns"]
    assert len(da) > 1000
    assert int(da["rtt_ns"].min()) == delay
    assert (da["rtt_ns"] == delay).mean() > 0.95
    assert set(da["direction"]) == {"orig"}


def test_kernel_matches_reference(synth, zeek: Path) -> None:
    """Counters and per-bin payload/goodput of the numba pass equal the plain-Python reference."""
    path, _ = synth
    for trace in (path, zeek / "Traces/tcp/ssh-dups.pcap", zeek / "Traces/http/http-post-large.pcap"):
        tp = run_pass([trace], bin_ns=100_000_000)
        ref = tcp_reference.analyse([trace], bin_ns=100_000_000)
        df = flow_table(tp)
        def key(a: bytes) -> str:
            return str(ipaddress.ip_address(a))

        rows = by_endpoints(df)
        for (src, sport, dst, dport), dirs in ref.items():
            r = rows[(key(src), sport, key(dst), dport)]
            for prefix, d in zip(("orig_", "resp_"), dirs, strict=True):
                want = tcp_reference.counts(d)
                got = {k: getattr(r, prefix + k) for k in want}
                assert got == want, (trace, prefix)
        iv = interval_table(tp.iv_rows, tp.t0_ns, tp.bin_ns)
        flows_by_id = {int(r.flow): (r.src, r.sport, r.dst, r.dport) for r in df.itertuples()}
        got_bins = {}
        for r in iv.itertuples():
            if r.payload_bytes:
                got_bins[(flows_by_id[r.flow], r.direction, r.bin)] = (r.payload_bytes, r.goodput_bytes)
        want_bins = {}
        for (src, sport, dst, dport), dirs in ref.items():
            for name, d in zip(("orig", "resp"), dirs, strict=True):
                for b, (pay, new) in d.bins.items():
                    want_bins[((key(src), sport, key(dst), dport), name, b)] = (pay, new)
        assert got_bins == want_bins, trace


def test_tcptrace_agrees_on_synthetic_capture(synth) -> None:
    """tcptrace -l: unique bytes, rexmt data pkts and outoforder pkts per connection equal the tcptrace rule."""
    exe = require_program("tcptrace")
    path, _ = synth
    text = subprocess.run([exe, "-l", "-n", str(path)], capture_output=True, text=True, check=True).stdout
    conns = text.split("TCP connection ")[2:]
    flows = by_endpoints(flow_table(run_pass([path], rule="tcptrace")))
    assert len(conns) == len(flows) == 4
    for block in conns:
        a = re.search(r"host \w+:\s+(\S+):(\d+)", block)
        b = re.search(r"host \w+:\s+(\S+):(\d+)\n\s+host \w+:\s+(\S+):(\d+)", block)
        assert a and b
        r = flows[(b.group(1), int(b.group(2)), b.group(3), int(b.group(4)))]

        def two(label: str, block: str = block) -> tuple[int, int]:
            m = re.search(label + r":\s+(\d+)\D+?:\s+(\d+)", block)
            assert m, label
            return int(m.group(1)), int(m.group(2))

        assert two("unique bytes sent") == (r.orig_unique_bytes, r.resp_unique_bytes)
        assert two("rexmt data pkts") == (r.orig_retransmissions_tcptrace, r.resp_retransmissions_tcptrace)
        assert two("outoforder pkts") == (r.orig_out_of_order_tcptrace, r.resp_out_of_order_tcptrace)
        assert two("actual data bytes") == (r.orig_payload_bytes, r.resp_payload_bytes)


@pytest.mark.slow
def test_tshark_io_stat_100ms_payload_sums_and_conv_frames(synth) -> None:
    """tshark `-z io,stat,0.1,SUM(tcp.len)tcp.len...` per flow: every 100 ms payload sum equals ours (integer-ns
    bins; tshark 4.0 prints SUM(tcp.len) as 0 unless the filter mentions tcp.len), and `-z conv,tcp` frames."""
    exe = require_program("tshark")

    path, truth = synth
    tp = run_pass([path], bin_ns=100_000_000)
    df = flow_table(tp)
    iv = interval_table(tp.iv_rows, tp.t0_ns, tp.bin_ns)
    cols = ",".join(f"SUM(tcp.len)tcp.len>=0 && tcp.srcport=={t['sport']}" for t in truth.flows)
    args = [exe, "-q", "-r", str(path), "-z", f"io,stat,0.1,{cols}"]
    text = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    cells = []
    for line in text.splitlines():
        m = re.match(r"\|\s*([\d.]+)\s*<>\s*([\d.]+|Dur)\s*\|(.*)\|\s*$", line)
        if m:
            cells.append([int(x) for x in m.group(3).split("|") if x.strip()])
    assert cells
    n_bins = len(cells)
    for j, t in enumerate(truth.flows):
        f = int(df[(df["sport"] == t["sport"])]["flow"].iloc[0])
        ours = np.zeros(n_bins, np.int64)
        sel = iv[(iv["flow"] == f) & (iv["direction"] == "orig")]
        ours[sel["bin"].to_numpy()] = sel["payload_bytes"].to_numpy()
        theirs = np.array([row[j] for row in cells], np.int64)
        assert np.array_equal(ours, theirs), t["sport"]
    conv = subprocess.run([exe, "-q", "-r", str(path), "-z", "conv,tcp"], capture_output=True, text=True,
                          check=True).stdout
    for t in truth.flows:
        m = re.search(rf"{t['src']}:{t['sport']}\s+<->\s+\S+\s+(\d+)\s+\S+ \S+\s+(\d+)\s+\S+ \S+\s+(\d+)", conv)
        assert m
        r = df[df["sport"] == t["sport"]].iloc[0]
        assert (int(m.group(1)), int(m.group(2)), int(m.group(3))) == (
            r.resp_packets, r.orig_packets, r.orig_packets + r.resp_packets)


# ---- bad input --------------------------------------------------------------------------------


def _frame(src: int, dst: int, sport: int, dport: int, seq: int, ack: int, flags: int, payload: bytes = b"",
           win: int = 1000) -> bytes:
    tcp = struct.pack(">HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, 5 << 4, flags, win, 0, 0)
    ip = struct.pack(">BBHHHBBHII", 0x45, 0, 20 + len(tcp) + len(payload), 0, 0x4000, 64, 6, 0, src, dst)
    return b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + ip + tcp + payload


A, B = 0x0A000001, 0x0A000002


def _ts_frame(src: int, dst: int, sport: int, dport: int, seq: int, ack: int, tsval: int, tsecr: int,
              payload: bytes = b"", flags: int = 0x10) -> bytes:
    """_frame with a timestamp option (NOP, NOP, TS) carrying tsval and tsecr."""
    tcp = (struct.pack(">HHIIBBHHH", sport, dport, seq, ack, 8 << 4, flags, 1000, 0, 0)
           + b"\x01\x01\x08\x0a" + struct.pack(">II", tsval, tsecr) + payload)
    ip = struct.pack(">BBHHHBBHII", 0x45, 0, 20 + len(tcp), 0, 0x4000, 64, 6, 0, src, dst)
    return b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + ip + tcp


def _tshark_rx_ooo(path: Path) -> list[tuple[bool, bool]]:
    """Per frame: whether tshark flags it a retransmission and whether out of order."""
    out = subprocess.run([require_program("tshark"), "-r", str(path), "-T", "fields", "-e",
                          "tcp.analysis.retransmission", "-e", "tcp.analysis.out_of_order"],
                         capture_output=True, text=True, check=True).stdout
    return [(bool(rx), bool(ooo)) for rx, ooo in (line.split("\t") for line in out.splitlines())]


def test_truncated_capture_names_file_and_offset(synth, tmp_path: Path) -> None:
    path, truth = synth
    data = path.read_bytes()
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(data[: len(data) // 2 + 7])
    tp = run_pass([cut])
    assert any(str(cut) in m and "byte offset" in m and "truncated" in m for m in tp.messages), tp.messages
    assert 0 < tp.counters["packets"] < truth.packets
    empty = tmp_path / "empty.pcap"
    write_pcap(empty, [], [])
    with pytest.raises(TcpAnalysisError, match="no packets"):
        run_pass([empty])


def test_non_tcp_and_malformed_are_skipped_with_offsets(tmp_path: Path) -> None:
    udp = b"\x02" * 12 + b"\x08\x00" + struct.pack(">BBHHHBBHII", 0x45, 0, 28, 0, 0, 64, 17, 0, A, B) + bytes(8)
    arp = b"\x02" * 12 + b"\x08\x06" + bytes(28)
    short = _frame(A, B, 1, 2, 0, 0, 0x10)[:40]  # TCP header cut short
    frames = [_frame(A, B, 1000, 80, 5, 0, 0x02), udp, arp, short, _frame(B, A, 80, 1000, 9, 6, 0x12)]
    p = tmp_path / "mixed.pcap"
    write_pcap(p, np.arange(5) * 1000, frames)
    tp = run_pass([p])
    assert tp.counters == {**tp.counters, "packets": 5, "tcp_packets": 2, "non_tcp_packets": 2, "malformed_packets": 1}
    offset = 24 + sum(16 + len(f) for f in frames[:3])
    assert any(f"{p}: at byte offset {offset}" in m for m in tp.messages), tp.messages
    only_udp = tmp_path / "udp.pcap"
    write_pcap(only_udp, [0], [udp])
    with pytest.raises(TcpAnalysisError, match=r"udp\.pcap: no TCP packets among 1 packets"):
        run_pass([only_udp])


def test_handshakes_at_time_zero_retransmitted_syns_fins_and_counters(tmp_path: Path) -> None:
    """A capture whose clock starts at 0 (as tcpdump -tt of a rebased trace): flow 1's SYN and SYN-ACK share
    t = 0 (equal timestamps are not backwards) and its handshake completes 300 ns later; flow 2's SYN is sent
    again after 0.5 s and 1 s (three SYNs, two retransmissions), and its handshake RTT is measured from the first
    SYN. Flow 1 then carries 100 payload bytes,
    a FIN sent twice and the peer's FIN: payload segments count only segments with payload, FIN segments count
    each FIN. Two frames cut short are two malformed packets."""
    s1 = s2 = 1000
    syn1, syn2 = _frame(A, B, 1000, 80, s1, 0, 0x02), _frame(A, B, 1001, 80, s2, 0, 0x02)
    pkts = [(0, syn1), (0, syn2), (0, _frame(B, A, 80, 1000, 7000, s1 + 1, 0x12)),
            (300, _frame(A, B, 1000, 80, s1 + 1, 7001, 0x10)),
            (400, _frame(A, B, 1000, 80, s1 + 1, 7001, 0x18, b"d" * 100)),
            (500, _frame(B, A, 80, 1000, 7001, s1 + 101, 0x10)),
            (600, _frame(A, B, 1000, 80, s1 + 101, 7001, 0x11)), (700, _frame(A, B, 1000, 80, s1 + 101, 7001, 0x11)),
            (800, _frame(B, A, 80, 1000, 7001, s1 + 102, 0x11)), (900, _frame(A, B, 1000, 80, s1 + 102, 7002, 0x10)),
            (950, syn1[:40]), (960, syn2[:44]), (500_000_000, syn2),
            (1_000_000_000, syn2), (1_000_000_100, _frame(B, A, 80, 1001, 9000, s2 + 1, 0x12)),
            (1_000_000_400, _frame(A, B, 1001, 80, s2 + 1, 9001, 0x10))]
    p = tmp_path / "zero.pcap"
    write_pcap(p, [t for t, _ in pkts], [f for _, f in pkts])
    tp = run_pass([p], rule="tcptrace")
    assert {k: tp.counters[k] for k in ("packets", "malformed_packets", "backwards_timestamps")} == {
        "packets": 16, "malformed_packets": 2, "backwards_timestamps": 0}
    f1, f2 = flow_table(tp).sort_values("sport").itertuples()
    assert (f1.handshake, f1.handshake_rtt_ns, f1.syn_to_synack_ns) == ("complete", 300, 0)
    assert (f2.handshake, f2.handshake_rtt_ns, f2.syn_to_synack_ns) == ("complete", 1_000_000_400, 1_000_000_100)
    assert (f2.orig_syn_segments, f2.orig_syn_retransmissions) == (3, 2)
    assert (f1.orig_packets, f1.orig_payload_segments, f1.orig_payload_bytes) == (6, 1, 100)
    assert f1.resp_payload_segments == 0
    assert (f1.orig_fin_segments, f1.orig_fin_retransmissions, f1.resp_fin_segments) == (2, 1, 1)


def test_an_mss_option_of_zero_is_recorded_as_zero(tmp_path: Path) -> None:
    """A SYN whose MSS option holds 0 (invalid, but on the wire) and whose window scale shift is 0 has mss_bytes 0
    and window_scale 0, as tshark reads them; the SYN-ACK without the options has -1 for both (no option)."""
    tcp = (struct.pack(">HHIIBBHHH", 1000, 80, 100, 0, 7 << 4, 0x02, 1000, 0, 0) + b"\x02\x04\x00\x00"
           + b"\x01\x03\x03\x00")
    ip = struct.pack(">BBHHHBBHII", 0x45, 0, 20 + len(tcp), 0, 0x4000, 64, 6, 0, A, B)
    syn = b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + ip + tcp
    p = tmp_path / "mss0.pcap"
    write_pcap(p, [0, 1000], [syn, _frame(B, A, 80, 1000, 700, 101, 0x12)])
    (r,) = flow_table(run_pass([p])).itertuples()
    assert (r.orig_mss_bytes, r.resp_mss_bytes, r.orig_window_scale, r.resp_window_scale) == (0, -1, 0, -1)
    vals = subprocess.run([require_program("tshark"), "-r", str(p), "-T", "fields", "-e", "tcp.options.mss_val",
                           "-e", "tcp.options.wscale.shift"], capture_output=True, text=True, check=True).stdout
    assert vals.split("\n")[:2] == ["0\t0", "\t"]


def test_a_pure_ack_does_not_move_wiresharks_nextseq_time_and_duplicate_acks_do_not_advance(tmp_path: Path) -> None:
    """Wireshark's out-of-order test looks at the time nextseq last moved: 100 bytes, a 100-byte gap, 100 bytes
    (nextseq 1300 at 1 us), a pure ACK from the same side 50 ms later (at nextseq: it does not move it), then the
    gap's bytes 0.5 ms after that: 50.5 ms after nextseq moved, past the 3 ms threshold, so a retransmission, not
    out of order (as tshark flags it). The peer's ACKs 1100, 1100, 1100, 1300: two advance (interval
    advancing_acks)."""
    def seg(t, seq, n):
        return t, _frame(A, B, 5000, 80, seq, 1, 0x10, b"z" * n)

    def ack(t, a):
        return t, _frame(B, A, 80, 5000, 1, a, 0x10)

    pkts = [seg(0, 1000, 100), seg(1_000, 1200, 100), ack(2_000, 1100), ack(3_000, 1100), ack(4_000, 1100),
            seg(50_000_000, 1300, 0), seg(50_500_000, 1100, 100), ack(50_600_000, 1300)]
    p = tmp_path / "nextseq.pcap"
    write_pcap(p, [t for t, _ in pkts], [f for _, f in pkts])
    tp = run_pass([p], rule="wireshark")
    (r,) = flow_table(tp).itertuples()
    assert (r.orig_retransmissions_wireshark, r.orig_out_of_order_wireshark) == (1, 0)
    assert (r.resp_first_time_ns, r.resp_last_time_ns, r.orig_first_time_ns) == (2_000, 50_600_000, 0)
    assert _tshark_rx_ooo(p)[6] == (True, False)
    iv = interval_table(tp.iv_rows, tp.t0_ns, tp.bin_ns)
    by_dir = iv.groupby("direction", observed=True)["advancing_acks"].sum()
    assert (by_dir["resp"], by_dir["orig"]) == (2, 1)  # orig's ACK field counts once B's direction exists
    gaps = iv[iv["direction"] == "resp"][["ack_interarrival_count", "ack_interarrival_sum_ns"]].sum()
    assert gaps.tolist() == [1, 50_600_000 - 2_000]  # between the two advancing ACKs


def test_a_one_byte_segment_with_a_timestamp_gives_its_echo_sample(tmp_path: Path) -> None:
    """A 1-byte segment carrying TSval 100 (a segment with payload: its TSval is remembered however short it
    is), echoed 10 us later by the peer's ACK (TSecr 100): one timestamp-echo sample of 10 us, besides the
    data-ACK sample of the same ACK. The peer's pure ACK carries TSval 900, which the next segment echoes: a
    segment without payload is not remembered, so that echo gives no sample."""
    p = tmp_path / "ts1.pcap"
    write_pcap(p, [1_000, 11_000, 31_000], [_ts_frame(A, B, 5000, 80, 1000, 1, 100, 0, b"k"),
                                            _ts_frame(B, A, 80, 5000, 1, 1001, 900, 100),
                                            _ts_frame(A, B, 5000, 80, 1001, 1, 101, 900, b"l")])
    rows: list[np.ndarray] = []
    tp = run_pass([p], on_rtt=lambda block: rows.append(block.copy()))
    (r,) = flow_table(tp).itertuples()
    assert (r.orig_timestamp_segments, r.resp_timestamp_segments) == (2, 1)
    got = np.concatenate(rows) if rows else np.zeros((0, rt.N_R), np.int64)
    kinds = sorted((int(r[rt.R_KIND]), int(r[rt.R_RTT])) for r in got)
    assert kinds == sorted([(rt.KIND_DATA_ACK, 10_000), (rt.KIND_TS_ECHO, 10_000)])


def test_an_ack_without_the_timestamp_option_gives_no_echo_sample(tmp_path: Path) -> None:
    """A flow whose sender stamps its segments (TSval 0 and TSecr 0: a timestamp clock may read 0) and whose peer
    sends its ACK without the option (a middlebox stripping it one way): the ACK echoes nothing, so its only
    sample is the data-ACK one, 10 us. The parser keeps the last TSecr it read in its packet row; only the
    option's presence says whether this packet carries one."""
    p = tmp_path / "ts_one_way.pcap"
    write_pcap(p, [1_000, 11_000], [_ts_frame(A, B, 5000, 80, 1000, 1, 0, 0, b"m" * 10, flags=0x18),
                                    _frame(B, A, 80, 5000, 1, 1010, 0x10)])
    rows: list[np.ndarray] = []
    tp = run_pass([p], on_rtt=lambda block: rows.append(block.copy()))
    (r,) = flow_table(tp).itertuples()
    assert (r.orig_timestamp_segments, r.resp_timestamp_segments) == (1, 0)
    got = np.concatenate(rows) if rows else np.zeros((0, rt.N_R), np.int64)
    assert sorted((int(x[rt.R_KIND]), int(x[rt.R_RTT])) for x in got) == [(rt.KIND_DATA_ACK, 10_000)]


def test_a_sequence_number_unwraps_to_the_nearest_position_and_behind_at_exactly_half_the_space() -> None:
    """_unwrap places a 32-bit sequence number at the 64-bit position nearest the reference, across a wrap either
    way; exactly 2**31 away (both candidates equally near) it takes the one behind, as RFC 1982 leaves it open
    and a segment that far ahead cannot be in any window."""
    isn = 0xFFFFFF00
    for ref in (0, 10, 2**32 + 77, 5 * 2**32 - 3):
        for d in (0, 1, -1, 2**31 - 1, -(2**31) + 1, 1000, -1000):
            v32 = (isn + ref + d) & 0xFFFFFFFF
            assert tf._unwrap(v32, isn, ref) == ref + d, (ref, d)
        assert tf._unwrap((isn + ref + 2**31) & 0xFFFFFFFF, isn, ref) == ref - 2**31


def test_sack_segments_are_counted_each_as_tshark_sees_them(tmp_path: Path) -> None:
    """Two ACKs with one SACK block each (and one without): sack_segments counts 2, the frames in which tshark
    finds a SACK option."""
    def sack_ack(t, a, blocks):
        opts = b"".join(struct.pack(">II", lo, hi) for lo, hi in blocks)
        opts = (b"\x01\x01\x05" + bytes([2 + len(opts)]) + opts) if blocks else b""
        tcp = struct.pack(">HHIIBBHHH", 80, 5000, 1, a, (5 + len(opts) // 4) << 4, 0x10, 1000, 0, 0) + opts
        ip = struct.pack(">BBHHHBBHII", 0x45, 0, 20 + len(tcp), 0, 0x4000, 64, 6, 0, B, A)
        return t, b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + ip + tcp

    pkts = [(0, _frame(A, B, 5000, 80, 1000, 1, 0x10, b"a" * 100)),
            (10, _frame(A, B, 5000, 80, 1200, 1, 0x10, b"b" * 100)),
            sack_ack(20, 1100, [(1200, 1300)]), sack_ack(30, 1100, [(1200, 1300)]), sack_ack(40, 1300, [])]
    p = tmp_path / "sack.pcap"
    write_pcap(p, [t for t, _ in pkts], [f for _, f in pkts])
    (r,) = flow_table(run_pass([p])).itertuples()
    sacks = subprocess.run([require_program("tshark"), "-r", str(p), "-Y", "tcp.options.sack_le", "-T", "fields",
                            "-e", "frame.number"], capture_output=True, text=True, check=True).stdout.split()
    assert (r.resp_sack_segments, r.orig_sack_segments) == (len(sacks), 0) == (2, 0)


def test_an_ack_stamped_with_its_segments_own_time_gives_a_zero_sample(tmp_path: Path) -> None:
    """Timestamps of microsecond resolution can give a segment and its ACK the same time: the data-ACK sample is 0
    ns and kept (the histograms record it as 1 ns, their lowest value), not dropped."""
    p = tmp_path / "zero_rtt.pcap"
    write_pcap(p, [5_000, 5_000], [_frame(A, B, 5000, 80, 1000, 1, 0x10, b"q" * 100),
                                   _frame(B, A, 80, 5000, 1, 1100, 0x10)])
    rows: list[np.ndarray] = []
    tp = run_pass([p], on_rtt=lambda block: rows.append(block.copy()))
    got = np.concatenate(rows) if rows else np.zeros((0, rt.N_R), np.int64)
    assert [(int(r[rt.R_KIND]), int(r[rt.R_RTT])) for r in got] == [(rt.KIND_DATA_ACK, 0)]
    assert tp.rtt_hist[(0, 0)].total_count == 1


def test_bytes_below_a_mid_stream_flows_first_segment_are_new_and_a_syns_sequence_reused_is_not_a_syn(
        tmp_path: Path) -> None:
    """A flow seen from its middle: 100 bytes at 1000, then 100 at 800: the earlier bytes are new (unique 200)
    and the 100 between them a hole (missed). Another flow's SYN at 100, then 10 data bytes at 100 without the
    SYN flag: no SYN was sent again."""
    pkts = [_frame(A, B, 5000, 80, 1000, 1, 0x10, b"m" * 100), _frame(A, B, 5000, 80, 800, 1, 0x10, b"n" * 100),
            _frame(A, B, 6000, 80, 100, 0, 0x02), _frame(A, B, 6000, 80, 100, 1, 0x10, b"o" * 10)]
    p = tmp_path / "below.pcap"
    write_pcap(p, [1_000 * k for k in range(1, 5)], pkts)
    mid, syn = flow_table(run_pass([p], rule="tcptrace")).sort_values("sport").itertuples()
    assert (mid.orig_unique_bytes, mid.orig_missed_bytes) == (200, 100)
    assert mid.orig_seq_span_bytes == 100  # from the first segment seen: unique + missed exceed it (docs/tcp.md)
    assert (syn.orig_syn_segments, syn.orig_syn_retransmissions) == (1, 0)


def test_a_flow_seen_without_its_syn_keeps_wiresharks_default_threshold(tmp_path: Path) -> None:
    """A flow whose SYN the capture missed has no first RTT: Wireshark's out-of-order threshold stays its 3 ms
    default, however late the first packet is (here 1 s after the epoch). The gap's bytes 10 ms after nextseq
    moved are then a retransmission, as tshark flags them, not out of order."""
    pkts = [(0, _frame(A, B, 5000, 80, 1000, 7001, 0x10, b"a" * 100)),
            (1_000_000, _frame(A, B, 5000, 80, 1200, 7001, 0x10, b"c" * 100)),
            (11_000_000, _frame(A, B, 5000, 80, 1100, 7001, 0x10, b"b" * 100))]
    p = tmp_path / "nosyn.pcap"
    write_pcap(p, [10**9 + t for t, _ in pkts], [f for _, f in pkts])
    (r,) = flow_table(run_pass([p], rule="wireshark")).itertuples()
    assert not r.start_seen
    assert (r.orig_retransmissions_wireshark, r.orig_out_of_order_wireshark) == (1, 0)
    assert _tshark_rx_ooo(p)[2] == (True, False)


def test_timestamps_stepping_back_are_counted_each_and_named(tmp_path: Path) -> None:
    """Two packets stamped earlier than the packet before them (captures concatenated, not merged by time): the
    pass counts each (backwards_timestamps 2) and says so in its messages; a repeated time is not backwards."""
    seg = [_frame(A, B, 5000, 80, 1000 + 10 * k, 1, 0x10, b"x" * 10) for k in range(6)]
    p = tmp_path / "back.pcap"
    write_pcap(p, [1_000, 3_000, 2_000, 2_000, 5_000, 4_000], seg)
    tp = run_pass([p])
    assert tp.counters["backwards_timestamps"] == 2
    assert any(m.startswith("2 packet(s) stamped earlier than the packet before them") for m in tp.messages), \
        tp.messages


def test_ack_interarrivals_in_one_bin_are_counted_each(tmp_path: Path) -> None:
    """Three advancing ACKs 2 ms and 3 ms apart within one 100 ms bin: two inter-arrivals, 5 ms in all, a mean of
    2.5 ms; a duplicate ACK between them does not advance and adds none."""
    def seg(t, seq):
        return t, _frame(A, B, 5000, 80, seq, 1, 0x10, b"s" * 100)

    def ack(t, a):
        return t, _frame(B, A, 80, 5000, 1, a, 0x10)

    pkts = [seg(0, 1000), ack(1_000_000, 1100), seg(1_500_000, 1100), ack(3_000_000, 1200), ack(4_000_000, 1200),
            seg(4_500_000, 1200), ack(6_000_000, 1300)]
    p = tmp_path / "iat.pcap"
    write_pcap(p, [10**9 + t for t, _ in pkts], [f for _, f in pkts])
    tp = run_pass([p])
    iv = interval_table(tp.iv_rows, tp.t0_ns, tp.bin_ns)
    (resp,) = iv[iv["direction"] == "resp"].itertuples()
    assert (resp.advancing_acks, resp.ack_interarrival_count, resp.ack_interarrival_sum_ns) == (3, 2, 5_000_000)
    assert resp.ack_interarrival_mean_ns == 2_500_000


def test_a_syn_at_time_zero_gives_a_first_rtt_where_wireshark_takes_none(tmp_path: Path) -> None:
    """A documented difference (docs/tcp-corpus.md): a SYN stamped exactly at the epoch. Wireshark keeps its first
    RTT's SYN time as 0 for "none" and so stays at its 3 ms default; benchbook takes 0 as a time, so the first RTT
    is the 50 ms to the first ACK and the gap's bytes 10 ms after nextseq moved are out of order here, a
    retransmission to tshark. A capture one second later agrees (test_a_first_rtt_of_zero_...)."""
    pkts = [(0, _frame(A, B, 5000, 80, 999, 0, 0x02)), (0, _frame(B, A, 80, 5000, 7000, 1000, 0x12)),
            (50_000_000, _frame(A, B, 5000, 80, 1000, 7001, 0x10)),
            (60_000_000, _frame(A, B, 5000, 80, 1000, 7001, 0x10, b"a" * 100)),
            (61_000_000, _frame(A, B, 5000, 80, 1200, 7001, 0x10, b"c" * 100)),
            (71_000_000, _frame(A, B, 5000, 80, 1100, 7001, 0x10, b"b" * 100))]
    p = tmp_path / "syn0.pcap"
    write_pcap(p, [t for t, _ in pkts], [f for _, f in pkts])
    (r,) = flow_table(run_pass([p], rule="wireshark")).itertuples()
    assert (r.orig_retransmissions_wireshark, r.orig_out_of_order_wireshark) == (0, 1)
    assert _tshark_rx_ooo(p)[5] == (True, False)  # tshark: a retransmission


def test_a_first_rtt_of_zero_is_taken_again_from_the_next_ack(tmp_path: Path) -> None:
    """Wireshark's out-of-order threshold is the flow's first RTT (SYN to the first ACK), and a zero one is taken
    again from the next ACK: here the handshake's ACK shares the SYN's timestamp and the next ACK comes 50 ms
    later, so the threshold is 50 ms and the gap's bytes 10 ms after nextseq moved are out of order, not a
    retransmission (as tshark flags them; with the 3 ms default they would be one)."""
    pkts = [(0, _frame(A, B, 5000, 80, 999, 0, 0x02)), (0, _frame(B, A, 80, 5000, 7000, 1000, 0x12)),
            (0, _frame(A, B, 5000, 80, 1000, 7001, 0x10)), (50_000_000, _frame(A, B, 5000, 80, 1000, 7001, 0x10)),
            (60_000_000, _frame(A, B, 5000, 80, 1000, 7001, 0x10, b"a" * 100)),
            (61_000_000, _frame(A, B, 5000, 80, 1200, 7001, 0x10, b"c" * 100)),
            (71_000_000, _frame(A, B, 5000, 80, 1100, 7001, 0x10, b"b" * 100))]
    p = tmp_path / "rtt0.pcap"
    write_pcap(p, [10**9 + t for t, _ in pkts], [f for _, f in pkts])  # Wireshark takes a SYN at 0 for none
    (r,) = flow_table(run_pass([p], rule="wireshark")).itertuples()
    assert (r.orig_out_of_order_wireshark, r.orig_retransmissions_wireshark) == (1, 0)
    assert _tshark_rx_ooo(p)[6] == (False, True)


def test_mid_stream_flow_wrap_keepalive_and_zero_window_probe(tmp_path: Path) -> None:
    """A flow seen from the middle (no handshake) whose sequence numbers wrap, with two zero-window probes of the
    same byte, the byte sent again once the window opens, and a keep-alive: no handshake RTT, bytes counted across
    the wrap, probes and keep-alive counted apart as tshark flags them; tcptrace's unique bytes agree (its probe
    rule does not record the probe's byte either). The 1-byte keep-alive repeats a byte seen before: tcptrace
    (and Zeek) count it as a retransmission, so do their rules here; Wireshark does not."""
    seq = 2**32 - 1000
    frames, ts = [], []
    t = 0
    for k in range(5):  # 5 x 500 bytes across the wrap
        frames.append(_frame(A, B, 5000, 80, seq + 500 * k, 1, 0x10, b"x" * 500))
        frames.append(_frame(B, A, 80, 5000, 1, seq + 500 * (k + 1), 0x10, win=0 if k == 4 else 1000))
        ts += [t, t + 10]
        t += 1_000_000
    end = seq + 2500
    for _ in range(2):  # zero-window probes: 1 byte at nxt while the peer's window is 0 (nxt does not advance)
        frames += [_frame(A, B, 5000, 80, end, 1, 0x10, b"z"), _frame(B, A, 80, 5000, 1, end, 0x10, win=0)]
        ts += [t, t + 10]
        t += 200_000_000
    frames += [_frame(B, A, 80, 5000, 1, end, 0x10, win=1000), _frame(A, B, 5000, 80, end, 1, 0x18, b"z" * 100),
               _frame(B, A, 80, 5000, 1, end + 100, 0x10, win=1000)]
    ts += [t, t + 10, t + 20]
    frames.append(_frame(A, B, 5000, 80, end + 99, 1, 0x10, b"k"))  # keep-alive: 1 byte at nxt - 1
    ts.append(t + 5_000_000_000)
    p = tmp_path / "midstream.pcap"
    write_pcap(p, ts, frames)
    tp = run_pass([p], rule="zeek")
    (r,) = flow_table(tp).itertuples()
    at = f"{p}: at byte offset 24 (10.0.0.1:5000 > 10.0.0.2:80)"
    assert ("1 flow(s) started before the capture (start_seen false: a direction's first packet is not a SYN): "
            "sequence coverage from the lowest sequence number seen, so payload below a direction's first segment "
            f"is new; the first: {at}") in tp.messages
    assert any(m.startswith("1 keep-alive and 2 zero-window-probe segment(s) counted apart") and m.endswith(at)
               for m in tp.messages), tp.messages
    assert any(m.startswith("1 flow(s) wrap their 32-bit sequence numbers") and m.endswith(at) for m in tp.messages)
    assert r.handshake == "none" and r.handshake_rtt_ns is None or str(r.handshake_rtt_ns) == "<NA>"
    assert not r.start_seen and r.orig_window_scale == -1
    assert r.orig_unique_bytes == 2600 and r.orig_seq_span_bytes == 2600
    assert r.orig_zero_window_probes == 2 and r.orig_keepalives == 1
    assert r.orig_retransmissions_zeek == r.orig_retransmissions_tcptrace == 1
    assert r.orig_retransmissions_wireshark == 0
    assert (r.src, r.sport) == ("10.0.0.1", 5000)
    flags = subprocess.run(
        [require_program("tshark"), "-r", str(p), "-Y", "tcp.srcport == 5000", "-T", "fields", "-e",
         "tcp.analysis.zero_window_probe", "-e", "tcp.analysis.keep_alive", "-e", "tcp.analysis.retransmission",
         "-e", "tcp.window_size_scalefactor"], capture_output=True, text=True, check=True).stdout.splitlines()
    cols = [line.split("\t") for line in flags]
    assert (sum(bool(c[0]) for c in cols), sum(bool(c[1]) for c in cols), sum(bool(c[2]) for c in cols)) == (2, 1, 0)
    assert {c[3] for c in cols} == {"-1"}  # window scale unknown without the handshake: no scaling, as here
    text = subprocess.run([require_program("tcptrace"), "-l", "-n", str(p)], capture_output=True, text=True,
                          check=True).stdout
    assert re.search(r"unique bytes sent:\s+2600\b", text), text
    assert re.search(r"rexmt data pkts:\s+1\b", text), text  # the keep-alive's byte


@pytest.mark.parametrize("gaps", [16, 17])
def test_a_full_hole_list_forgets_its_lowest_hole(tmp_path: Path, gaps: int) -> None:
    """A direction keeps 16 holes (byte ranges not seen between its lowest and highest byte): 100-byte segments
    with a 100-byte gap before each after the first make `gaps` holes, then the lowest gap's bytes arrive. With 16
    holes they are new bytes and fill it; a 17th forgets the lowest hole (its 100 bytes count as missed for good,
    once in hole_list_overflows), so the late bytes are not new. Either way no byte is both seen and missed."""
    seq0 = 5000
    frames = [_frame(A, B, 5000, 80, seq0 + 200 * k, 1, 0x10, b"x" * 100) for k in range(gaps + 1)]
    frames.append(_frame(A, B, 5000, 80, seq0 + 100, 1, 0x10, b"y" * 100))
    p = tmp_path / f"holes{gaps}.pcap"
    write_pcap(p, [1000 * k for k in range(len(frames))], frames)
    tp = run_pass([p], rule="tcptrace")
    (r,) = flow_table(tp).itertuples()
    span = 200 * gaps + 100
    assert r.orig_seq_span_bytes == span
    if gaps == 16:
        assert tp.counters["hole_list_overflows"] == 0
        assert (r.orig_unique_bytes, r.orig_missed_bytes) == (100 * (gaps + 2), 100 * (gaps - 1))
    else:
        assert tp.counters["hole_list_overflows"] == 1
        assert (r.orig_unique_bytes, r.orig_missed_bytes) == (100 * (gaps + 1), 100 * gaps)
    assert r.orig_unique_bytes + r.orig_missed_bytes == span


@pytest.mark.parametrize("hole", [0, 3])
def test_a_segment_splitting_a_hole_of_a_full_list_keeps_every_byte_counted_once(tmp_path: Path, hole: int) -> None:
    """16 holes (the list is full), then 20 bytes strictly inside hole `hole`: the split makes 17 holes, so the
    lowest is forgotten. When the split hole is the lowest its lower 40 bytes go (the upper 40 stay a hole); else
    the lowest 100 go. The bytes missed are the same 1,580 either way and no byte is both seen and missed (the
    kernel once forgot the lowest hole before splitting it, wrote slot -1 and reported -1,420 missed bytes)."""
    seq0 = 5000
    frames = [_frame(A, B, 5000, 80, seq0 + 200 * k, 1, 0x10, b"x" * 100) for k in range(17)]
    frames.append(_frame(A, B, 5000, 80, seq0 + 200 * hole + 140, 1, 0x10, b"y" * 20))
    p = tmp_path / f"split{hole}.pcap"
    write_pcap(p, [1000 * k for k in range(len(frames))], frames)
    tp = run_pass([p], rule="tcptrace")
    (r,) = flow_table(tp).itertuples()
    assert tp.counters["hole_list_overflows"] == 1
    assert (r.orig_seq_span_bytes, r.orig_unique_bytes, r.orig_missed_bytes) == (3300, 1720, 1580)
    st = tp.st[0, 0]
    holes = tp.holes[0, 0, : st[tf.S_NHOLES]].tolist()
    assert st[tf.S_LOST_HOLE_BYTES] == (40 if hole == 0 else 100)
    assert len(holes) == 16 and all(a < b for a, b in holes) and holes == sorted(holes)
    lo = 200 * hole + 100
    assert [lo + 60, lo + 100] in holes and ([lo, lo + 40] in holes) == (hole != 0)
    assert holes[0][0] == (160 if hole == 0 else 300)  # the lowest hole is gone, or its lower part


def test_flow_table_grows_and_ipv6_vlan(tmp_path: Path) -> None:
    """More flows than the initial table (it grows and rehashes), IPv6 inside an 802.1Q tag."""
    frames = [_frame(A, B, 10000 + k, 80, 1, 0, 0x02) for k in range(300)]
    src6, dst6 = bytes(15) + b"\x01", bytes(15) + b"\x02"
    tcp = struct.pack(">HHIIBBHHH", 4000, 443, 7, 0, 5 << 4, 0x18, 100, 0, 0) + b"p" * 10
    v6 = b"\x02" * 12 + b"\x81\x00\x00\x05\x86\xdd" + struct.pack(">IHBB", 6 << 28, len(tcp), 6, 64) + src6 + dst6 + tcp
    frames.append(v6)
    p = tmp_path / "many.pcap"
    write_pcap(p, np.arange(len(frames)), frames)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        df = flow_table(run_pass([p]))
    assert len(df) == 301
    r = df[df["dport"] == 443].iloc[0]
    assert (r.src, r.dst, r.ip_version, r.orig_payload_bytes) == ("::1", "::2", 6, 10)
    assert tf.MAX_HOLES >= 8


def test_memory_bounded_by_concurrent_flows(tmp_path: Path) -> None:
    """5000 short connections one after another (SYN, SYN-ACK, data, FIN both ways; one every 0.5 s): flows
    finished for longer than the close timeout (5 s) leave the table, so it stays at its initial 64 slots while
    every flow is still reported with its bytes."""
    frames, ts = [], []
    t = 0
    for k in range(5000):
        port = 1024 + k
        for fr in (_frame(A, B, port, 80, 100, 0, 0x02), _frame(B, A, 80, port, 500, 101, 0x12),
                   _frame(A, B, port, 80, 101, 501, 0x18, b"q" * (k % 50 + 1)),
                   _frame(A, B, port, 80, 102 + k % 50, 501, 0x11), _frame(B, A, 80, port, 501, 103 + k % 50, 0x11)):
            frames.append(fr)
            ts.append(t)
            t += 100_000_000
    p = tmp_path / "short.pcap"
    write_pcap(p, ts, frames)
    tp = run_pass([p])
    assert tp.counters["flows"] == 5000
    assert tp.counters["evicted_flows"] > 4000
    assert tp.counters["flow_table_slots"] == 64
    df = flow_table(tp)
    assert df["sport"].tolist() == [1024 + k for k in range(5000)]
    assert df["orig_unique_bytes"].tolist() == [k % 50 + 1 for k in range(5000)]
    assert (df["handshake"] == "complete").all()  # the data segment ACKs the SYN-ACK
    assert (df["handshake_rtt_ns"] == 200_000_000).all()


def test_pcapng_zstd_and_linux_cooked_give_the_same_flows(synth, tmp_path: Path) -> None:
    """The same packets as nanosecond pcap, zstd-compressed pcap, pcapng (µs and ns resolution) and Linux cooked
    (link type 113, as `tcpdump -i any` writes) give identical flow tables (µs: identical counters)."""
    path, _ = synth
    want = flow_table(run_pass([path]))
    zst = tmp_path / "bulk.pcap.zst"
    zst.write_bytes(zstandard.ZstdCompressor().compress(path.read_bytes()))
    ts, frames, cooked = [], [], []
    for ch in open_capture(path):
        for i in range(len(ch)):
            fr = ch.frame(i)
            ts.append(int(ch.ts_ns[i]))
            frames.append(fr)
            cooked.append(b"\x00\x04\x00\x01\x00\x06" + fr[6:12] + b"\x00\x00" + fr[12:])  # SLL: 16-byte header
    ng = write_pcapng(tmp_path / "bulk.pcapng", ts, frames, tsresol=9)
    ng_us = write_pcapng(tmp_path / "bulk-us.pcapng", ts, frames, tsresol=6)
    sll = write_pcap(tmp_path / "cooked.pcap", ts, cooked, linktype=113)
    counters = [c for c in want.columns if c.startswith(("orig_", "resp_")) and "rtt" not in c
                and "time_ns" not in c and "wire_bytes" not in c]
    for other in (zst, ng, ng_us, sll):
        got = flow_table(run_pass([other]))
        assert got[counters].equals(want[counters]), other
        assert got[["src", "sport", "dst", "dport"]].equals(want[["src", "sport", "dst", "dport"]])
    assert flow_table(run_pass([zst])).equals(want.assign(first_file=str(zst)))


@pytest.mark.slow
def test_wireshark_rule_equals_tshark_analysis_flags(synth) -> None:
    """tshark's tcp.analysis.* flags per payload segment, counted per flow: retransmissions (incl. fast and
    spurious) and out-of-order segments equal the wireshark rule's; the largest tcp.analysis.bytes_in_flight
    equals the largest per-bin bytes in flight."""
    exe = require_program("tshark")
    path, _ = synth
    tp = run_pass([path], rule="wireshark")
    df = flow_table(tp)
    iv = interval_table(tp.iv_rows, tp.t0_ns, tp.bin_ns)
    theirs = tcp_reference.tshark_wireshark_rule(exe, path)
    for r in df.itertuples():
        infl = int(iv[(iv["flow"] == r.flow) & (iv["direction"] == "orig")]["bytes_in_flight_max"].max())
        assert theirs[int(r.sport)] == (r.orig_retransmissions_wireshark, r.orig_out_of_order_wireshark, infl)
    assert sum(v[0] for v in theirs.values()) > 0 and sum(v[1] for v in theirs.values()) > 0


@pytest.mark.parametrize("lowest", [0, 40])
@pytest.mark.parametrize("gid_spread", [10, 10**9])
def test_rtt_grouping_matches_a_plain_groupby(gid_spread: int, lowest: int) -> None:
    """tcp_rtt.group_samples (counting pass for nearby flow ids, stable sort for far-apart ones) gives, per
    (flow, direction), the RTT values in row order, clamped to at least 1 ns, like a plain Python group-by; also
    when the block's lowest flow id is not 0 (a later block of a long capture), and keys[j]'s values end where
    keys[j + 1]'s begin, the last at the block's end."""
    rng = np.random.default_rng(7)
    n = 5000
    rows = np.zeros((n, rt.N_R), np.int64)
    rows[:, rt.R_FLOW] = lowest + rng.choice(np.array([0, 3, 5, gid_spread]), n)
    rows[:, rt.R_DIR] = rng.integers(0, 2, n)
    rows[:, rt.R_RTT] = rng.integers(-2, 1000, n)
    keys, bounds, values = rt.group_samples(rows)
    expect: dict[int, list[int]] = {}
    for r in rows:
        expect.setdefault(int(r[rt.R_FLOW]) * 2 + int(r[rt.R_DIR]), []).append(max(int(r[rt.R_RTT]), 1))
    assert keys.tolist() == sorted(expect)
    assert bounds.size == keys.size + 1 and bounds[0] == 0 and bounds[-1] == n
    assert {int(k): values[bounds[j]:bounds[j + 1]].tolist() for j, k in enumerate(keys)} == expect
    empty = rt.group_samples(np.zeros((0, rt.N_R), np.int64))
    assert [a.size for a in empty] == [0, 1, 0]


@pytest.mark.parametrize("single", ["lowest", "highest", "both"])
def test_rtt_grouping_by_sort_with_a_one_row_group_at_either_end(single: str) -> None:
    """The sort path (flow ids 10**9 apart) when the lowest or the highest (flow, direction) has a single row:
    the groups are counted from each row's predecessor in key order (a count taken from the successor gets the
    number of groups wrong by one at one end or the other), and each gets its own values."""
    rng = np.random.default_rng(11)
    n = 300
    rows = np.zeros((n, rt.N_R), np.int64)
    rows[:, rt.R_FLOW] = rng.choice(np.array([5, 7, 10**9]), n)
    rows[:, rt.R_DIR] = rng.integers(0, 2, n)
    rows[:, rt.R_RTT] = rng.integers(1, 1000, n)
    if single in ("lowest", "both"):
        rows[17, rt.R_FLOW], rows[17, rt.R_DIR] = 0, 0
    if single in ("highest", "both"):
        rows[42, rt.R_FLOW], rows[42, rt.R_DIR] = 2 * 10**9, 1
    keys, bounds, values = rt.group_samples(rows)
    expect: dict[int, list[int]] = {}
    for r in rows:
        expect.setdefault(int(r[rt.R_FLOW]) * 2 + int(r[rt.R_DIR]), []).append(int(r[rt.R_RTT]))
    assert keys.tolist() == sorted(expect) and bounds.tolist()[0] == 0 and bounds.size == keys.size + 1
    assert {int(k): values[bounds[j]:bounds[j + 1]].tolist() for j, k in enumerate(keys)} == expect


def test_rtt_summary_in_ms_and_none_without_samples() -> None:
    nothing = {"min": None, "mean": None, "p99": None}
    assert rt.rtt_summary_ms(None) == nothing
    h = HdrHistogram(1, 3_600_000_000_000, 3)  # as tcp_pass records RTTs
    assert rt.rtt_summary_ms(h) == nothing
    h.record_value(2_000_000)
    assert rt.rtt_summary_ms(h) == {"min": 2.0, "mean": 2.0, "p99": h.value_at_percentile(99.0) / 1e6}
    assert abs(rt.rtt_summary_ms(h)["p99"] - 2.0) <= 0.002
    for v_ms in [1, *range(3, 201)]:  # with the 2 ms above, 1, 2, ..., 200 ms: p99 is the 198th, not the largest
        h.record_value(v_ms * 1_000_000)
    summary = rt.rtt_summary_ms(h)
    assert summary["min"] == 1.0 and abs(summary["p99"] - 198.0) <= 0.2 and summary["p99"] < 199.0


def test_rtt_grouping_counts_from_the_lowest_key_however_high_it_is() -> None:
    """Flow ids near 2**40 (a late block of a very long capture) lying close together take the counting pass, whose
    table spans the keys' range only: one spanning up to the highest key could not even be allocated."""
    rows = np.zeros((6, rt.N_R), np.int64)
    rows[:, rt.R_FLOW] = 2**40 + np.array([3, 0, 3, 1, 0, 3])
    rows[:, rt.R_DIR] = np.array([0, 1, 0, 0, 1, 1])
    rows[:, rt.R_RTT] = np.arange(10, 16)
    keys, bounds, values = rt.group_samples(rows)
    base = 2**41
    assert keys.tolist() == [base + 1, base + 2, base + 6, base + 7]
    assert bounds.tolist() == [0, 2, 3, 5, 6] and values.tolist() == [11, 14, 13, 10, 12, 15]


def test_prefetched_reader_hands_on_items_errors_and_stops_early() -> None:
    """The reader thread of the pass yields every item in order, raises the reader's exception in the consumer,
    and closes a generator the consumer leaves early."""
    assert list(prefetched(iter(range(100)))) == list(range(100))

    def failing():
        yield 1
        raise TcpAnalysisError("x.pcap: at byte offset 24: broken")

    got = []
    with pytest.raises(TcpAnalysisError, match="byte offset 24"):
        for v in prefetched(failing()):
            got.append(v)
    assert got == [1]
    closed = []

    def endless():
        try:
            k = 0
            while True:
                yield k
                k += 1
        finally:
            closed.append(True)

    for v in prefetched(endless()):
        if v == 3:
            break
    assert closed == [True]


def test_a_flow_is_evictable_once_closed_both_ways_and_quiet_past_the_timeout() -> None:
    """tcp_flows.evictable at its limits: a flow whose FINs went both ways (or that saw a RST) leaves the table
    after more than the close timeout without a packet, exactly the timeout is not enough, one FIN is not a close;
    any flow leaves after more than the idle timeout. The timeouts are the documented ones (docs/tcp.md: 5 s and
    300 s), written out here so that a changed default fails this test rather than moving with it."""
    state = tf.new_state(flows=8)
    t = 10**15
    state["c"][tf.C_NFLOWS], state["c"][tf.C_LAST_TS] = 7, t
    close, idle = 5_000_000_000, 300_000_000_000
    cases = [  # (FINs orig, FINs resp, RSTs orig, RSTs resp, time since the flow's last packet)
        (1, 1, 0, 0, close),          # 0: closed, exactly the timeout
        (1, 1, 0, 0, close + 1),      # 1: closed, past it
        (0, 1, 0, 0, close + 1),      # 2: only the responder's FIN
        (1, 0, 0, 0, close + 1),      # 3: only the originator's FIN
        (0, 0, 1, 0, close + 1),      # 4: a RST
        (0, 0, 0, 0, idle),           # 5: open, exactly the idle timeout
        (0, 0, 0, 0, idle + 1),       # 6: open, past it
    ]
    for f, (fin0, fin1, rst0, rst1, quiet) in enumerate(cases):
        state["st"][f, 0, tf.S_FINS], state["st"][f, 1, tf.S_FINS] = fin0, fin1
        state["st"][f, 0, tf.S_RSTS], state["st"][f, 1, tf.S_RSTS] = rst0, rst1
        state["fl"][f, tf.FL_LAST_TS] = t - quiet
    assert tf.evictable(state).tolist() == [1, 4, 6]


def test_interval_columns_are_named_and_sum_to_the_flow_table(synth) -> None:
    """intervals.parquet's columns by name (a renamed counter breaks every reader); per flow and direction the bins'
    counters add up to the flow table's (here: out-of-order segments under the tcptrace rule, the generator's
    reordered segments)."""
    path, truth = synth
    tp = run_pass([path], rule="tcptrace")
    iv = interval_table(tp.iv_rows, tp.t0_ns, tp.bin_ns)
    assert list(iv.columns) == [
        "flow", "direction", "bin", "start_time_ns", "packets", "wire_bytes", "payload_bytes", "goodput_bytes",
        "retransmitted_segments", "retransmitted_bytes", "out_of_order_segments", "advancing_acks",
        "ack_interarrival_sum_ns", "ack_interarrival_count", "bytes_in_flight_max", "throughput_bps", "goodput_bps",
        "retransmission_score", "ack_interarrival_mean_ns"]
    fl = flow_table(tp)
    sums = iv.groupby(["flow", "direction"], observed=True)[
        ["packets", "wire_bytes", "payload_bytes", "goodput_bytes", "retransmitted_segments", "retransmitted_bytes",
         "out_of_order_segments"]].sum()
    for d in ("orig", "resp"):
        per = sums.xs(d, level="direction").reindex(fl["flow"])
        assert per["packets"].tolist() == fl[f"{d}_packets"].tolist()
        assert per["wire_bytes"].tolist() == fl[f"{d}_wire_bytes"].tolist()
        assert per["payload_bytes"].tolist() == fl[f"{d}_payload_bytes"].tolist()
        assert per["goodput_bytes"].tolist() == fl[f"{d}_unique_bytes"].tolist()
        assert per["retransmitted_segments"].tolist() == fl[f"{d}_retransmissions_tcptrace"].tolist()
        assert per["retransmitted_bytes"].tolist() == fl[f"{d}_retransmitted_bytes_tcptrace"].tolist()
        assert per["out_of_order_segments"].tolist() == fl[f"{d}_out_of_order_tcptrace"].tolist()
    assert fl["orig_out_of_order_tcptrace"].tolist() == [t["reordered"] for t in truth.flows]
    ws = run_pass([path], rule="wireshark")  # the interval counters follow the rule of the pass
    fw = flow_table(ws)
    per = interval_table(ws.iv_rows, ws.t0_ns, ws.bin_ns).groupby(["flow", "direction"], observed=True)[
        ["retransmitted_segments", "retransmitted_bytes", "out_of_order_segments"]].sum().xs(
        "orig", level="direction").reindex(fw["flow"])
    assert per["out_of_order_segments"].tolist() == fw["orig_out_of_order_wireshark"].tolist()
    assert per["retransmitted_segments"].tolist() == fw["orig_retransmissions_wireshark"].tolist()
    assert per["retransmitted_bytes"].tolist() == fw["orig_retransmitted_bytes_wireshark"].tolist()
    assert fw["orig_out_of_order_wireshark"].sum() > len(fw)  # more than one per flow: not sums of 0 and 1
