"""The retransmission rules of analysis/tcp_rules.py at their boundaries (issue 23): the kernels called directly
with the segment's numbers, each case one byte or one nanosecond on either side of a rule's limit. The rules are
Wireshark's sequence analysis (packet-tcp.c: spurious, fast retransmission within 20 ms of the peer's duplicate
ACKs, out-of-order within 3 ms of the highest segment, the one-byte-before-next exception of keep-alives),
Zeek's (a payload that ends at or below the highest byte seen) and tcptrace's (bytes seen before)."""

from __future__ import annotations

import pytest

from benchbook.analysis import tcp_rules as tr
from benchbook.analysis.tcp_rules import (
    DEFAULT_OOO_THRESHOLD_NS,
    FAST_RETRANSMISSION_WINDOW_NS,
    OOO_TT,
    OOO_WS,
    RX_TT,
    RX_WS,
    RX_ZEEK,
    payload_bits,
    rule_index,
    wireshark_bits,
)

NXT = 10_000          # the next expected sequence number of the direction
T = 10**12            # the segment's time


def ws(seq: int, seglen: int, *, synfin: int = 0, nxt: int = NXT, nxt_ok: bool = True, nxt_ts_ns: int = T - 10**9,
       ts_ns: int = T, peer_ack: int = 0, peer_ack_ok: bool = False, peer_dupacks: int = 0,
       peer_last_ts_ns: int = 0, ooo_threshold_ns: int = DEFAULT_OOO_THRESHOLD_NS) -> int:
    """Wireshark's bits for one segment; by default the highest segment is a second old (no out-of-order) and
    the peer has acknowledged nothing."""
    return wireshark_bits(seq, seglen, synfin, nxt, nxt_ok, nxt_ts_ns, ts_ns, peer_ack, peer_ack_ok, peer_dupacks,
                          peer_last_ts_ns, ooo_threshold_ns)


def test_rule_numbers_are_the_positions_of_their_names():
    assert [rule_index(r) for r in tr.RULES] == [tr.RULE_ZEEK, tr.RULE_WIRESHARK, tr.RULE_TCPTRACE] == [0, 1, 2]
    with pytest.raises(ValueError, match=r"^unknown retransmission rule 'ns': expected one of zeek, wireshark, "
                                         r"tcptrace$"):
        rule_index("ns")


def test_the_windows_are_wiresharks():
    """packet-tcp.c: a fast retransmission within 20 ms of the duplicate ACKs; out of order within 3 ms of the
    highest segment (its default ooo threshold)."""
    assert (FAST_RETRANSMISSION_WINDOW_NS, DEFAULT_OOO_THRESHOLD_NS) == (20_000_000, 3_000_000)


def test_a_segment_that_advances_is_nothing():
    assert ws(NXT, 100) == 0
    assert ws(NXT + 1, 100) == 0                                      # a gap ahead: still not a retransmission
    assert ws(NXT - 100, 100, nxt_ok=False) == 0                      # no next sequence number known yet


def test_one_byte_before_next_is_a_retransmission_only_for_a_segment_of_at_most_one_byte():
    """Keep-alive-like: seq = next - 1 with more than one byte is not "not advanced" (Wireshark's exception)."""
    assert ws(NXT - 1, 2) == 0
    assert ws(NXT - 1, 1) == RX_WS
    assert ws(NXT - 2, 2) == RX_WS
    assert ws(NXT - 1, 100) == 0


def test_a_segment_the_peer_acknowledged_whole_is_spurious_to_the_byte():
    """Even from a direction with no next sequence number (nothing else would flag it)."""
    assert ws(500, 1, nxt_ok=False, peer_ack=501, peer_ack_ok=True) == RX_WS     # ends exactly at the ACK
    assert ws(500, 1, nxt_ok=False, peer_ack=500, peer_ack_ok=True) == 0         # its one byte not acknowledged
    assert ws(500, 0, nxt_ok=False, peer_ack=900, peer_ack_ok=True) == 0         # no payload: not spurious
    assert ws(500, 1, nxt_ok=False, peer_ack=501, peer_ack_ok=False) == 0


def test_a_fast_retransmission_ends_one_nanosecond_before_twenty_ms():
    """Two duplicate ACKs for this sequence number, the segment within the window of the peer's last segment:
    fast (RX_WS); at exactly 20 ms it is what it would be without them: out of order, as the highest segment
    came 1 ms before."""
    fast = dict(peer_ack=NXT - 200, peer_ack_ok=True, peer_dupacks=2, nxt_ts_ns=T - 1_000_000)
    assert ws(NXT - 200, 100, peer_last_ts_ns=T - FAST_RETRANSMISSION_WINDOW_NS + 1, **fast) == RX_WS
    assert ws(NXT - 200, 100, peer_last_ts_ns=T - FAST_RETRANSMISSION_WINDOW_NS, **fast) == OOO_WS
    assert ws(NXT - 200, 100, peer_last_ts_ns=T, **{**fast, "peer_dupacks": 1}) == OOO_WS
    assert ws(NXT - 200, 100, peer_last_ts_ns=T, **{**fast, "peer_ack": NXT - 199}) == OOO_WS


def test_out_of_order_ends_one_nanosecond_before_the_threshold():
    assert ws(NXT - 100, 100, nxt_ts_ns=T - DEFAULT_OOO_THRESHOLD_NS + 1) == RX_WS   # fills the hole: a retransmission
    assert ws(NXT - 200, 100, nxt_ts_ns=T - DEFAULT_OOO_THRESHOLD_NS + 1) == OOO_WS
    assert ws(NXT - 200, 100, nxt_ts_ns=T - DEFAULT_OOO_THRESHOLD_NS) == RX_WS
    assert ws(NXT - 200, 100, nxt_ts_ns=T - 999, ooo_threshold_ns=1000) == OOO_WS
    assert ws(NXT - 200, 100, nxt_ts_ns=T - 1000, ooo_threshold_ns=1000) == RX_WS
    assert ws(NXT - 101, 100, synfin=1, nxt_ts_ns=T - 1) == RX_WS                       # with its FIN it ends at next


@pytest.mark.parametrize(("start", "end", "high", "overlap", "recorded", "bits"), [
    (0, 100, 100, 100, True, RX_ZEEK | RX_TT),       # ends exactly at the highest byte: Zeek's retransmission
    (0, 101, 100, 100, True, RX_TT),                 # one byte past it: new data to Zeek
    (50, 150, 100, 0, True, OOO_TT),                 # below the highest, bytes not seen: tcptrace's out of order
    (50, 150, 100, 0, False, 0),                     # nothing recorded before: not out of order
    (100, 200, 100, 0, True, 0),                     # starts at the highest: in order
    (0, 50, 100, 0, True, RX_ZEEK | OOO_TT),
])
def test_payload_bits_at_the_highest_byte(start, end, high, overlap, recorded, bits):
    assert payload_bits(start, end, high, overlap, recorded) == bits
