"""The differential TCP corpus: where each capture is, and what tshark, tcptrace and benchbook say about it.

Used by tests/analysis/test_tcp_corpus.py and, as a script, to rewrite the agreement table in
docs/tcp-corpus.md from the same comparisons:

    .venv/bin/python tests/tcp_corpus.py --write-docs

Sources (licences and versions in tests/data/tcp-corpus/SOURCES.md): the shared datasets tcpdump-tcp-tests and
zeek-tcp-baselines, the captures that ship in the PyPI sdist of pypacker 5.4 and the npm package pcap-parser
0.2.1 (fetched into build/tcp-corpus/ by tests/data/tcp-corpus/fetch.py), and captures made here with real
Linux TCP (tests/data/tcp-corpus/bbgen-*, made by make_captures.py beside them).

Every field is compared per flow direction (or per flow for the times) on every flow that tshark and tcptrace
each see as one connection: each tool runs once per file. A difference is either listed in DEVIATIONS with its
reason (and then must show), or a failure.
"""

from __future__ import annotations

import functools
import ipaddress
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "lib"))

from benchbook.analysis import tcp_rtt as rt  # noqa: E402  (lib on the path first when run as a script)
from benchbook.analysis.tcp_pass import run_pass  # noqa: E402
from benchbook.analysis.tcp_report import flow_table  # noqa: E402
from benchbook.paths import SHARED_DATASETS  # noqa: E402

BUILD = REPO / "build" / "tcp-corpus"
OWN = REPO / "tests" / "data" / "tcp-corpus"


@dataclass(frozen=True)
class Entry:
    name: str
    source: str  # shared:<dataset> | build:<folder> | repo
    path: str  # inside the source
    what: str

    def file(self) -> Path:
        kind, _, where = self.source.partition(":")
        if kind == "shared":
            return SHARED_DATASETS / where / self.path
        if kind == "build":
            return BUILD / where / self.path
        return OWN / self.path

    def unavailable(self) -> str | None:
        """Why the file is not here (None when it is)."""
        if self.file().is_file():
            return None
        kind, _, where = self.source.partition(":")
        if kind == "build":
            marker = BUILD / where / "UNAVAILABLE"
            why = marker.read_text().strip() if marker.is_file() else "not fetched yet"
            return f"{self.file()}: {why} (make tcp-corpus fetches it)"
        return f"{self.file()} not found"


def _e(name: str, source: str, path: str, what: str) -> Entry:
    return Entry(name, source, path, what)


TD, ZK = "shared:tcpdump-tcp-tests", "shared:zeek-tcp-baselines"
CORPUS = (
    _e("tcpdump/mptcp-v0", TD, "mptcp-v0.pcap", "MPTCP v0 SSH session, SACK, timestamps, window scale"),
    _e("tcpdump/tcp-handshake-nano", TD, "tcp-handshake-nano.pcap", "handshake, nanosecond pcap"),
    _e("tcpdump/accecn_handshake", TD, "accecn_handshake.pcap", "AccECN handshake"),
    _e("tcpdump/tcp_rst_data", TD, "tcp_rst_data.pcap", "RST carrying data"),
    _e("tcpdump/print-flags", TD, "print-flags.pcap", "every flag combination"),
    _e("zeek/retransmit-fast009", ZK, "Traces/tcp/retransmit-fast009.pcap", "fast retransmission, gaps"),
    _e("zeek/wikipedia", ZK, "Traces/wikipedia.pcap", "a page load, 10 connections"),
    _e("zeek/http-post-large", ZK, "Traces/http/http-post-large.pcap", "loopback HTTP POSTs"),
    _e("zeek/timestamp", ZK, "Traces/tcp/timestamp.pcap", "timestamps option"),
    _e("zeek/ssh-dups", ZK, "Traces/tcp/ssh-dups.pcap", "duplicated segments, FIN retransmissions"),
    _e("zeek/bigtransfer", ZK, "Traces/ftp/bigtransfer.pcap", "5.4 GB transfer cut down, 32-bit wrap"),
    _e("zeek/reassembly", ZK, "Traces/tcp/reassembly.pcap", "overlapping segments"),
    _e("pypacker/ether.pcapng", "build:pypacker", "ether.pcapng", "pcapng, HTTP, mid-flow"),
    _e("pypacker/ip6_sr-header", "build:pypacker", "ip6_sr-header.pcap", "IPv6 with a routing header"),
    _e("pypacker/mqtt_over_linuxcc", "build:pypacker", "mqtt_over_linuxcc.pcap", "Linux cooked v1, MQTT"),
    _e("pypacker/ssl2_certs", "build:pypacker", "ssl2_certs.pcap", "TLS, mid-flow"),
    _e("pypacker/bgp2", "build:pypacker", "bgp2.pcap", "BGP session"),
    _e("pypacker/mqtt", "build:pypacker", "mqtt.pcap", "MQTT"),
    _e("pypacker/linuxcc", "build:pypacker", "linuxcc.pcap", "Linux cooked v1, 4 packets"),
    _e("npm-pcap-parser/smtp", "build:npm-pcap-parser", "smtp.pcap", "SMTP session"),
    _e("bbgen/midflow-excerpt", "repo", "bbgen-midflow-excerpt.pcap",
       "10 packets from mid-flow: a retransmission below the first segment"),
    _e("bbgen/midflow-download", "repo", "bbgen-midflow-download.pcap",
       "download captured after the handshake, losses, SACK, snap length 96"),
    _e("bbgen/syn-retransmissions", "repo", "bbgen-syn-retransmissions.pcapng",
       "pcapng, SYN and SYN-ACK retransmissions"),
    _e("bbgen/fin-retransmission", "repo", "bbgen-fin-retransmission.pcap", "FIN retransmissions"),
    _e("bbgen/ipv6-sack", "repo", "bbgen-ipv6-sack.pcapng", "IPv6, pcapng, losses, SACK"),
    _e("bbgen/vlan", "repo", "bbgen-vlan.pcap", "802.1Q, IPv4 and IPv6"),
    _e("bbgen/sll", "repo", "bbgen-sll.pcap", "tcpdump -i any, Linux cooked v1"),
    _e("bbgen/sll2", "repo", "bbgen-sll2.pcap", "tcpdump -i any, Linux cooked v2"),
    _e("bbgen/snaplen96", "repo", "bbgen-snaplen96.pcap", "snap length 96"),
    _e("bbgen/zero-window", "repo", "bbgen-zero-window.pcap", "slow reader: zero windows"),
    _e("bbgen/keepalive", "repo", "bbgen-keepalive.pcap", "keep-alives"),
)

TSHARK_FIELDS = ("packets", "payload_bytes", "retransmissions_wireshark", "out_of_order_wireshark",
                 "syn_retransmissions", "fin_retransmissions", "keepalives", "zero_window_probes", "first_time_ns",
                 "last_time_ns")
TCPTRACE_FIELDS = ("packets", "payload_bytes", "unique_bytes", "retransmissions_tcptrace",
                   "retransmitted_bytes_tcptrace", "out_of_order_tcptrace", "syn_segments", "fin_segments")

# (corpus entry, tool, field) -> why benchbook differs there; the comparison must show the difference.
_JUMP = ("the trace is cut from a 5.4 GB transfer: between its first and last packets the sequence numbers jump by "
         "more than 2^31, whose direction modulo 2^32 is ambiguous; benchbook unwraps to the nearest position and "
         "matches Zeek's conn.log (test_zeek_bigtransfer_sequence_wrap_and_missed_bytes), tcptrace's quadrant "
         "bookkeeping takes the 752 bytes after the jump as seen before")
_SHORT = ("5 frames hold fewer bytes than their IP total length says (frame length 1506 < 14 + 1500): benchbook "
          "and tcptrace count the payload from the IP length (as Zeek does), tshark the bytes the frame holds")
_SRV6 = ("the server's 4 packets are IPv6 in IPv6 behind a segment-routing header (next header 41): tshark "
         "dissects the inner packet; benchbook reads TCP directly over IPv4/IPv6 (extension headers 0, 43, 60 "
         "skipped, no IP-in-IP) and counts them as non-TCP packets")
DEVIATIONS: dict[tuple[str, str, str], str] = {
    ("zeek/bigtransfer", "tcptrace", "unique_bytes"): _JUMP,
    ("zeek/bigtransfer", "tcptrace", "retransmissions_tcptrace"): _JUMP,
    ("zeek/bigtransfer", "tcptrace", "retransmitted_bytes_tcptrace"): _JUMP,
    ("zeek/reassembly", "tshark", "payload_bytes"): _SHORT,
    ("pypacker/ip6_sr-header", "tshark", "packets"): _SRV6,
    ("pypacker/ip6_sr-header", "tshark", "payload_bytes"): _SRV6,
}
# Fields compared after an adjustment whose reason is a definition, not a deviation of a file:
# retransmitted_bytes_tcptrace: tcptrace's "rexmt data bytes" counts 1 for each retransmitted SYN and FIN (their
# sequence number), benchbook's retransmitted bytes are payload bytes: compared as ours + SYN + FIN retransmissions.


Key = tuple[str, int, str, int]  # sender address, port, receiver address, port


@dataclass
class Comparison:
    entry: Entry
    flows: int = 0
    compared: dict[str, int] = field(default_factory=dict)  # tool -> flows compared
    skipped: dict[str, list[str]] = field(default_factory=dict)  # tool -> flows left out and why
    diffs: dict[tuple[str, str], list[str]] = field(default_factory=dict)  # (tool, field) -> differences
    fields: dict[str, tuple[str, ...]] = field(default_factory=dict)  # tool -> fields compared


def _norm(addr: str) -> str:
    return str(ipaddress.ip_address(addr))


def _ns(epoch: str) -> int:
    return int(Decimal(epoch) * 1_000_000_000)


@functools.cache
def ours(path: Path) -> dict[Key, dict[str, int | float]]:
    """benchbook's per-direction values, keyed by (sender, sport, receiver, dport)."""
    rows: list[np.ndarray] = []
    tp = run_pass([path], rule="tcptrace", on_rtt=lambda r: rows.append(r.copy()))
    df = flow_table(tp)
    rtt = np.concatenate(rows) if rows else np.zeros((0, rt.N_R), np.int64)
    rtt = rtt[rtt[:, rt.R_KIND] == rt.KIND_DATA_ACK]
    out: dict[Key, dict[str, int | float]] = {}
    for r in df.itertuples():
        for d, p in enumerate(("orig_", "resp_")):
            src, sport, dst, dport = ((r.src, r.sport, r.dst, r.dport) if d == 0 else (r.dst, r.dport, r.src, r.sport))
            v = {k[len(p):]: getattr(r, k) for k in df.columns if k.startswith(p)}
            v["first_time_ns"], v["last_time_ns"] = int(r.first_time_ns), int(r.last_time_ns)
            v["retransmitted_bytes_tcptrace"] = int(v["retransmitted_bytes_tcptrace"] + v["syn_retransmissions"]
                                                    + v["fin_retransmissions"])
            s = rtt[(rtt[:, rt.R_FLOW] == r.flow) & (rtt[:, rt.R_DIR] == d), rt.R_RTT]
            v["rtt_samples"] = int(s.size)
            v["rtt_min_ms"] = round(float(s.min()) / 1e6, 1) if s.size else 0.0
            v["rtt_max_ms"] = round(float(s.max()) / 1e6, 1) if s.size else 0.0
            out[(_norm(src), int(sport), _norm(dst), int(dport))] = v
    return out


@functools.cache
def tshark(path: Path) -> tuple[dict[Key, dict[str, int]], set[Key]]:
    """Per-direction counts from tshark's own analysis (one run), and the endpoint pairs it splits into several
    streams (left out)."""
    fields = ("tcp.stream", "ip.src", "ipv6.src", "tcp.srcport", "ip.dst", "ipv6.dst", "tcp.dstport",
              "frame.time_epoch", "tcp.len", "tcp.flags.syn", "tcp.flags.fin", "tcp.analysis.retransmission",
              "tcp.analysis.fast_retransmission", "tcp.analysis.spurious_retransmission",
              "tcp.analysis.out_of_order", "tcp.analysis.keep_alive", "tcp.analysis.zero_window_probe")
    argv = [shutil.which("tshark") or "tshark", "-n", "-r", str(path), "-Y", "tcp && !icmp && !icmpv6", "-T", "fields",
            "-E", "separator=|", "-E", "occurrence=l"]
    for f in fields:
        argv += ["-e", f]
    text = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    out: dict[Key, dict[str, int]] = {}
    streams: dict[frozenset, set[str]] = {}
    times: dict[frozenset, list[int]] = {}
    for line in text.splitlines():
        (stream, s4, s6, sport, d4, d6, dport, epoch, tlen, syn, fin, rx, fast, spur, ooo, ka,
         zwp) = line.split("|")
        if not sport:
            continue  # TCP header cut short
        key = (_norm(s4 or s6), int(sport), _norm(d4 or d6), int(dport))
        pair = frozenset((key[:2], key[2:]))
        streams.setdefault(pair, set()).add(stream)
        t = _ns(epoch)
        times.setdefault(pair, [t, t])[1] = t
        v = out.setdefault(key, dict.fromkeys(TSHARK_FIELDS, 0))
        n = int(tlen or 0)
        retx = bool(rx or fast or spur)
        v["packets"] += 1
        v["payload_bytes"] += n
        v["retransmissions_wireshark"] += retx
        v["out_of_order_wireshark"] += bool(ooo)
        v["syn_retransmissions"] += retx and syn == "1"
        v["fin_retransmissions"] += retx and fin == "1"
        v["keepalives"] += bool(ka)
        v["zero_window_probes"] += bool(zwp)
    for key, v in out.items():
        v["first_time_ns"], v["last_time_ns"] = times[frozenset((key[:2], key[2:]))]
    return out, {k for k in out if len(streams[frozenset((k[:2], k[2:]))]) > 1}


class ToolCannotRead(Exception):
    """The reference tool refuses the file (e.g. tcptrace 6.6.7 and Linux cooked v2)."""


_HOST = re.compile(r"host (\w+):\s+(\S+)")


@functools.cache
def tcptrace(path: Path) -> tuple[dict[Key, dict[str, int | float]], set[Key]]:
    """Per-direction values of `tcptrace -l -n -r` (one run), and the endpoint pairs it splits into several
    connections (left out)."""
    ran = subprocess.run([shutil.which("tcptrace") or "tcptrace", "-l", "-n", "-r", str(path)],
                         capture_output=True, text=True)
    if ran.returncode != 0:
        raise ToolCannotRead(f"tcptrace exits {ran.returncode}: {ran.stderr.strip().splitlines()[-1:]}")
    text = ran.stdout
    out: dict[Key, dict[str, int | float]] = {}
    seen: dict[frozenset, int] = {}
    labels = {"total packets": "packets", "actual data bytes": "payload_bytes", "unique bytes sent": "unique_bytes",
              "rexmt data pkts": "retransmissions_tcptrace", "rexmt data bytes": "retransmitted_bytes_tcptrace",
              "outoforder pkts": "out_of_order_tcptrace", "RTT samples": "rtt_samples", "RTT min": "rtt_min_ms",
              "RTT max": "rtt_max_ms"}
    for block in re.split(r"^TCP connection \d+:$", text, flags=re.M)[1:]:
        hosts = _HOST.findall(block)[:2]
        if len(hosts) < 2:
            raise ValueError(f"{path}: tcptrace printed a connection without two hosts: {block[:200]!r}")
        ends = []
        for _, hp in hosts:
            addr, _, port = hp.rpartition(":")
            ends.append((_norm(addr), int(port)))
        a2b, b2a = (ends[0] + ends[1]), (ends[1] + ends[0])
        pair = frozenset(ends)
        seen[pair] = seen.get(pair, 0) + 1
        va: dict[str, int | float] = {}
        vb: dict[str, int | float] = {}
        for line in block.splitlines():
            m = re.match(r"\s+([\w /]+?):\s+(\S+)(?: \w+)?\s+([\w /]+?):\s+(\S+)", line)
            if not m or m.group(1) != m.group(3):
                continue
            label = m.group(1)
            if label == "SYN/FIN pkts sent":
                for v, val in ((va, m.group(2)), (vb, m.group(4))):
                    v["syn_segments"], v["fin_segments"] = (int(x) for x in val.split("/"))
            elif label in labels:
                for v, val in ((va, m.group(2)), (vb, m.group(4))):
                    v[labels[label]] = float(val) if label.startswith("RTT m") else int(val)
        if "packets" not in vb:
            vb["packets"] = 0
        out[a2b], out[b2a] = va, vb
    return out, {k for k in out if seen[frozenset((k[:2], k[2:]))] > 1}


def compare(entry: Entry) -> Comparison:
    path = entry.file()
    mine = ours(path)
    cmp = Comparison(entry, flows=len(mine) // 2)
    for tool, fields, run in (("tshark", TSHARK_FIELDS, tshark), ("tcptrace", TCPTRACE_FIELDS, tcptrace)):
        try:
            theirs, split = run(path)
        except ToolCannotRead as exc:
            cmp.skipped[tool] = [str(exc)]
            continue
        cmp.fields[tool] = fields
        done = 0
        for key, v in mine.items():
            if key in split:
                cmp.skipped.setdefault(tool, []).append(f"{key}: {tool} splits it into several connections")
                continue
            t = theirs.get(key)
            if t is None:
                if v["packets"]:
                    cmp.skipped.setdefault(tool, []).append(f"{key}: not a connection for {tool}")
                continue
            done += 1
            for f in fields:
                if f not in t:
                    continue
                if f.startswith("rtt_m") and not t.get("rtt_samples"):
                    continue
                if v[f] != t[f]:
                    cmp.diffs.setdefault((tool, f), []).append(f"{key}: benchbook {v[f]}, {tool} {t[f]}")
        cmp.compared[tool] = done
    return cmp


def docs_table(comparisons: list[Comparison]) -> str:
    """The Markdown table of docs/tcp-corpus.md: per file and field, = (agrees on every flow direction compared),
    D (documented deviation) for tshark (first mark) and tcptrace (second)."""
    fields = sorted(set(TSHARK_FIELDS) | set(TCPTRACE_FIELDS), key=lambda f: (
        f not in TSHARK_FIELDS, TSHARK_FIELDS.index(f) if f in TSHARK_FIELDS else TCPTRACE_FIELDS.index(f)))
    head = "| file | flows | " + " | ".join(fields) + " |"
    lines = [head, "|" + "---|" * (len(fields) + 2)]
    for c in comparisons:
        cells = []
        for f in fields:
            marks = ""
            for tool in ("tshark", "tcptrace"):
                if f not in c.fields.get(tool, ()):
                    marks += "·"
                elif (c.entry.name, tool, f) in DEVIATIONS:
                    marks += "D"
                else:
                    marks += "="
            cells.append(marks)
        lines.append(f"| {c.entry.name} | {c.flows} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    comparisons = []
    for e in CORPUS:
        why = e.unavailable()
        if why:
            print(f"{e.name}: {why}", file=sys.stderr)
            continue
        c = compare(e)
        comparisons.append(c)
        for (tool, f), d in sorted(c.diffs.items()):
            note = "documented" if (e.name, tool, f) in DEVIATIONS else "UNEXPLAINED"
            print(f"{e.name}: {tool} {f} differs on {len(d)} direction(s) [{note}]: {d[:2]}")
        for tool, s in c.skipped.items():
            print(f"{e.name}: {tool} left out {len(s)}: {s[:1]}")
    if "--write-docs" in argv:
        doc = REPO / "docs" / "tcp-corpus.md"
        text = doc.read_text()
        start, end = "<!-- corpus-table -->\n", "<!-- /corpus-table -->"
        i, j = text.index(start) + len(start), text.index(end)
        doc.write_text(text[:i] + docs_table(comparisons) + text[j:])
        print(f"wrote {doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
