"""Retransmission and out-of-order rules of benchbook's TCP analysis, as the tools researchers use define them.

Every payload segment of a flow direction is classified under all three rules at once; ``--rule`` only picks
which one the summary and the per-interval retransmission score show. Sequence numbers are unwrapped to
64 bits per direction, so "highest" means the highest segment end seen so far in that direction (``high``),
compared before the segment updates it. Keep-alives (at most 1 payload byte at ``high - 1``, no SYN/FIN/RST)
are counted apart and are never retransmissions or out of order under any rule; zero-window probes (1 byte at
``high`` while the peer's last advertised window is 0) are counted apart as well and are otherwise new data.

``zeek`` (Zeek's history letters T/t, bro-tcp): a payload segment whose end does not pass ``high``
  (``seq + len <= high``) is a retransmission. Zeek has no out-of-order class: ``out_of_order`` is 0.
  Retransmitted bytes (for the score) are the segment's payload bytes.

``wireshark`` (``packet-tcp.c``, SACK ignored): a payload segment that starts below ``high`` is checked in
  this order: spurious retransmission if its end is at or below the peer's highest ACK; fast retransmission
  if the peer sent at least 2 duplicate ACKs, the segment starts at that ACK and the last duplicate ACK came
  less than 20 ms earlier; out of order if less than the handshake RTT (SYN to the ACK completing the
  handshake; 3 ms when the handshake was not seen) passed since the frame that set ``high``; otherwise a
  retransmission. The first two and the last count as retransmissions. A duplicate ACK is a segment without
  payload, SYN, FIN or RST that repeats the previous cumulative ACK.

``tcptrace`` (``rexmit.c``): each direction keeps the byte ranges seen. A payload segment with any byte seen
  before is a retransmission (its retransmitted bytes are the bytes seen before); otherwise one starting
  below ``high`` fills a hole and is out of order. ``unique_bytes`` are the bytes seen for the first time.

Goodput under every rule is new payload by sequence coverage (the bytes seen for the first time), so bytes
arriving out of order still count once.
"""

from __future__ import annotations

from benchbook.kernels import njit

RULES = ("zeek", "wireshark", "tcptrace")
RULE_ZEEK, RULE_WIRESHARK, RULE_TCPTRACE = 0, 1, 2

FAST_RETRANSMISSION_WINDOW_NS = 20_000_000
DEFAULT_OOO_THRESHOLD_NS = 3_000_000

# classification result bits
RX_ZEEK, RX_WS, OOO_WS, RX_TT, OOO_TT = 1, 2, 4, 8, 16


def rule_index(rule: str) -> int:
    """The kernel's number for a rule name; ValueError naming the choices otherwise."""
    try:
        return RULES.index(rule)
    except ValueError:
        raise ValueError(f"unknown retransmission rule {rule!r}: expected one of {', '.join(RULES)}") from None


@njit(cache=True, inline="always")
def classify(start, end, high, overlap, ts_ns, peer_acked, peer_acked_valid, peer_dupacks, peer_dupack_ts_ns,
             high_ts_ns, ooo_threshold_ns):
    """Result bits (RX_*, OOO_*) of one payload segment [start, end) under the three rules.

    ``overlap``: bytes of the segment seen before (tcptrace's byte ranges); ``high``: highest end before it.
    """
    bits = 0
    if end <= high:
        bits |= RX_ZEEK
    if overlap > 0:
        bits |= RX_TT
    elif start < high:
        bits |= OOO_TT
    if start < high:
        if peer_acked_valid and end <= peer_acked:
            bits |= RX_WS
        elif (peer_dupacks >= 2 and start == peer_acked
              and ts_ns - peer_dupack_ts_ns < FAST_RETRANSMISSION_WINDOW_NS):
            bits |= RX_WS
        elif ts_ns - high_ts_ns < ooo_threshold_ns:
            bits |= OOO_WS
        else:
            bits |= RX_WS
    return bits
