"""The differential TCP corpus (tests/tcp_corpus.py): every capture against tshark and tcptrace run on the
same file, every documented deviation asserted as a deviation; and the cases of issue 22 on real captures.

- A capture that starts mid-connection (bbgen-midflow-excerpt.pcap, cut from a real transfer captured after its
  handshake, losses made by a router): a retransmission lies below the first sequence number of the excerpt;
  its bytes are new (tcptrace's unique bytes), it is out of order, not retransmitted, under the tcptrace rule;
  the flow says start_seen false.
- SYN, SYN-ACK and FIN retransmissions (bbgen-syn-retransmissions.pcapng, bbgen-fin-retransmission.pcap, and
  Zeek's ssh-dups.pcap with 2 FIN retransmissions each way) counted as tshark's tcp.analysis flags and
  tcptrace's rexmt data pkts count them.
"""

from __future__ import annotations

import ipaddress
import json
import re
import subprocess
from pathlib import Path

import pytest

import tcp_corpus as tc
import tcp_reference
from benchbook.analysis.tcp_pass import run_pass
from benchbook.analysis.tcp_report import analyze_tcp, flow_table
from conftest import require_program

ENTRIES = {e.name: e for e in tc.CORPUS}


def _available(name: str) -> Path:
    e = ENTRIES[name]
    why = e.unavailable()
    if why:
        pytest.skip(why)
    require_program("tshark")
    require_program("tcptrace")
    return e.file()


def test_corpus_size_and_sources() -> None:
    """At least 20 captures from at least 5 independent sources, pcap and pcapng, with each kind the issue names."""
    assert len(tc.CORPUS) >= 20
    sources = {e.source.split(":")[-1] if e.source != "repo" else "bbgen" for e in tc.CORPUS}
    assert len(sources) >= 5, sources
    assert {Path(e.path).suffix for e in tc.CORPUS} >= {".pcap", ".pcapng"}
    assert all(set(k[1:]) <= {"tshark", "tcptrace"} | set(tc.TSHARK_FIELDS) | set(tc.TCPTRACE_FIELDS)
               and k[0] in ENTRIES for k in tc.DEVIATIONS)


@pytest.mark.parametrize("name", [e.name for e in tc.CORPUS])
def test_corpus_file_agrees_with_tshark_and_tcptrace(name: str) -> None:
    """Per flow direction: packets, payload bytes, Wireshark-rule retransmissions and out-of-order segments, SYN and
    FIN retransmissions, keep-alives, zero-window probes and the flow's first and last times against tshark;
    packets, payload, unique bytes, tcptrace-rule retransmissions (segments and bytes) and out-of-order segments,
    SYN and FIN segments against tcptrace. Equal, or different exactly where DEVIATIONS says why."""
    _available(name)
    c = tc.compare(ENTRIES[name])
    assert c.flows > 0
    assert c.compared.get("tshark", 0) > 0, c.skipped
    unexplained = {k: v for k, v in c.diffs.items() if (name, *k) not in tc.DEVIATIONS}
    assert not unexplained, unexplained
    documented = {(t, f) for (n, t, f) in tc.DEVIATIONS if n == name}
    assert documented <= set(c.diffs), f"documented deviations that no longer show: {documented - set(c.diffs)}"
    if name != "bbgen/sll2":  # tcptrace 6.6.7 does not read Linux cooked v2
        assert c.compared.get("tcptrace", 0) > 0, c.skipped
    else:
        assert "tcptrace exits" in c.skipped["tcptrace"][0]


def test_docs_table_is_current() -> None:
    """docs/tcp-corpus.md shows the agreement the comparisons give (rewrite: python tests/tcp_corpus.py
    --write-docs)."""
    missing = [e.unavailable() for e in tc.CORPUS if e.unavailable()]
    if missing:
        pytest.skip(f"not every corpus file is here: {missing[0]}")
    require_program("tshark")
    require_program("tcptrace")
    doc = (tc.REPO / "docs" / "tcp-corpus.md").read_text()
    table = doc.split("<!-- corpus-table -->\n")[1].split("<!-- /corpus-table -->")[0]
    assert table == tc.docs_table([tc.compare(e) for e in tc.CORPUS])
    for name, tool, f in tc.DEVIATIONS:  # each with its reason in the text
        assert f"`{name}` ({tool}: " in doc and f in doc, (name, tool, f)


# ---- the cases of issue 22 -----------------------------------------------------------------------------------


def test_midflow_excerpt_counts_bytes_below_the_first_segment_as_new(tmp_path: Path) -> None:
    """The server's retransmission fills the hole below the excerpt's first segment: tcptrace counts it as unique
    bytes and out of order, 0 retransmissions; so does the tcptrace rule here, the goodput counts those bytes, and
    the flow, the summary and report.html say its start was not seen."""
    path = _available("bbgen/midflow-excerpt")
    text = subprocess.run(["tcptrace", "-l", "-n", str(path)], capture_output=True, text=True, check=True).stdout
    unique = [int(x) for x in re.findall(r"unique bytes sent:\s+(\d+)", text)[0:1]]
    rexmt = re.findall(r"rexmt data pkts:\s+(\d+)\s+rexmt data pkts:\s+(\d+)", text)[0]
    ooo = re.findall(r"outoforder pkts:\s+(\d+)\s+outoforder pkts:\s+(\d+)", text)[0]
    summary, flows, messages = analyze_tcp([path], tmp_path / "out", rule="tcptrace")
    (f,) = summary["flows"]
    df = flow_table(run_pass([path], rule="tcptrace"))
    (r,) = df.itertuples()
    sender = "orig_" if r.orig_payload_bytes > r.resp_payload_bytes else "resp_"
    assert getattr(r, sender + "unique_bytes") == unique[0] == getattr(r, sender + "payload_bytes")
    assert (f["retransmissions"], f["out_of_order"]) == (sum(map(int, rexmt)), sum(map(int, ooo))) == (0, 1)
    dur_s = (r.last_time_ns - r.first_time_ns) / 1e9
    assert f["goodput_bps"] == pytest.approx(unique[0] * 8 / dur_s)
    assert f["start_seen"] is False and not r.start_seen
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["flows"][0]["start_seen"] is False
    html = (tmp_path / "out" / "report.html").read_text()
    assert "start not captured" in html and 'id="start-not-captured"' in html
    assert any("started before the capture (start_seen false" in m for m in messages)
    # the zeek and wireshark rules compare with the highest sequence number, as Zeek and tshark do
    theirs, _ = tc.tshark(path)
    key = next(k for k, v in theirs.items() if v["payload_bytes"] > 0)
    assert getattr(r, sender + "retransmissions_wireshark") == theirs[key]["retransmissions_wireshark"] == 1


def test_syn_and_synack_retransmissions_as_tshark_and_tcptrace_count_them() -> None:
    """Two handshakes that took several tries: the retransmitted SYNs and SYN-ACKs are in their own columns and in
    the wireshark and tcptrace totals, as tshark flags them and tcptrace's rexmt data pkts count them; never in the
    zeek total (Zeek counts payload segments only)."""
    path = _available("bbgen/syn-retransmissions")
    df = flow_table(run_pass([path]))
    theirs, _ = tc.tshark(path)
    tt, _ = tc.tcptrace(path)
    syn = synack = 0
    for r in df.itertuples():
        a, b = (tc._norm(r.src), int(r.sport)), (tc._norm(r.dst), int(r.dport))
        for prefix, key in (("orig_", a + b), ("resp_", b + a)):
            n = getattr(r, prefix + "syn_retransmissions")
            assert n == theirs[key]["syn_retransmissions"]
            assert getattr(r, prefix + "retransmissions_wireshark") == theirs[key]["retransmissions_wireshark"]
            assert getattr(r, prefix + "retransmissions_tcptrace") == tt[key]["retransmissions_tcptrace"]
            assert n == tt[key]["syn_segments"] - 1 if tt[key]["syn_segments"] else n == 0
            assert getattr(r, prefix + "retransmissions_zeek") == 0
        syn += r.orig_syn_retransmissions
        synack += r.resp_syn_retransmissions
    assert syn >= 4 and synack >= 2, (syn, synack)


@pytest.mark.parametrize("name", ["bbgen/fin-retransmission", "zeek/ssh-dups"])
def test_fin_retransmissions_as_tshark_and_tcptrace_count_them(name: str) -> None:
    """A FIN sent again because its ACK was lost (made here) and Zeek's ssh-dups.pcap (3 FINs each way): each
    retransmitted FIN is one fin_retransmission and one more retransmission under wireshark and tcptrace."""
    path = _available(name)
    df = flow_table(run_pass([path]))
    theirs, _ = tc.tshark(path)
    tt, _ = tc.tcptrace(path)
    total = 0
    for r in df.itertuples():
        a, b = (tc._norm(r.src), int(r.sport)), (tc._norm(r.dst), int(r.dport))
        for prefix, key in (("orig_", a + b), ("resp_", b + a)):
            n = getattr(r, prefix + "fin_retransmissions")
            assert n == theirs[key]["fin_retransmissions"] == max(tt[key]["fin_segments"] - 1, 0)
            assert getattr(r, prefix + "retransmissions_tcptrace") == tt[key]["retransmissions_tcptrace"]
            assert getattr(r, prefix + "retransmissions_wireshark") == theirs[key]["retransmissions_wireshark"]
            total += n
    assert total >= 2


@pytest.mark.parametrize("name", [e.name for e in tc.CORPUS])
def test_kernel_matches_plain_reference_on_corpus(name: str) -> None:
    """Every counter of the numba pass equals the plain-Python reference (tests/tcp_reference.py) on every real
    capture of the corpus: the three rules, SYN/FIN retransmissions, keep-alives, probes, unique bytes."""
    e = ENTRIES[name]
    why = e.unavailable()
    if why:
        pytest.skip(why)
    rows = {(r.src, int(r.sport), r.dst, int(r.dport)): r for r in flow_table(run_pass([e.file()])).itertuples()}
    ref = tcp_reference.analyse([e.file()])
    assert len(ref) == len(rows)
    for (src, sport, dst, dport), dirs in ref.items():
        r = rows[(str(ipaddress.ip_address(src)), sport, str(ipaddress.ip_address(dst)), dport)]
        for prefix, d in zip(("orig_", "resp_"), dirs, strict=True):
            want = tcp_reference.counts(d)
            assert {k: getattr(r, prefix + k) for k in want} == want, prefix
