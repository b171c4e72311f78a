"""Retransmission and out-of-order rules of benchbook's TCP analysis, as the tools researchers use define them.

Every segment of a flow direction that carries payload, a SYN or a FIN is classified under all three rules at
once; ``--rule`` only picks which one the summary and the per-interval retransmission score show. Sequence
numbers are unwrapped to 64 bits per direction (the nearest position to the highest one seen, as Wireshark's
and tcptrace's modular comparisons do). Two "highest" positions are kept per direction: ``high``, the end of
the highest payload byte seen (Zeek's last sequence number, tcptrace's highest byte), and ``nxt``, Wireshark's
``nextseq``: the highest ``seq + payload + (1 for SYN or FIN)`` of any segment but a zero-window probe.

Keep-alives (at most 1 payload byte at ``nxt - 1``, no SYN/FIN/RST, as Wireshark flags them) are counted
apart; Wireshark never classifies them, while Zeek and tcptrace go by their byte, so under ``zeek`` and
``tcptrace`` a 1-byte keep-alive repeating a byte seen before is a retransmission (a lost 1-byte message sent
again looks the same). Zero-window probes (1 byte at ``nxt`` while the peer's last advertised window field is
0) are counted apart, never classified, do not advance ``nxt`` and are not recorded as seen bytes (tcptrace's
probe rule: the byte counts when it is sent again).

Control segments: a SYN (or SYN-ACK) repeating the sequence number of an earlier SYN of the direction is a
SYN retransmission; a FIN whose FIN position was reached by an earlier FIN of the direction is a FIN
retransmission. Both are counted in their own columns under every rule, and in the retransmission total of
the ``wireshark`` and ``tcptrace`` rules (each segment counted once, whether it carries payload or not).

``zeek`` (Zeek's history letters T/t, bro-tcp; ``update_last_seq`` in ``TCPSessionAdapter.cc``): a payload
  segment whose end does not pass ``high`` (``seq + len <= high``) is a retransmission; segments without
  payload never are, so retransmitted SYNs and FINs are not in this rule's total. Zeek has no out-of-order
  class: ``out_of_order`` is 0. Retransmitted bytes (for the score) are the segment's payload bytes.

``wireshark`` (``tcp_analyze_sequence_number`` in ``packet-tcp.c``, SACK ignored): a segment is "not
  advancing" when ``seq < nxt`` (but not when it carries more than 1 byte and starts at ``nxt - 1``). In this
  order: spurious retransmission if it carries payload ending at or below the peer's last ACK; fast
  retransmission if not advancing, the peer's last ACK equals ``seq``, the peer sent at least 2 duplicate ACKs
  and its last segment came less than 20 ms earlier; out of order if not advancing, less than the handshake
  RTT passed since the frame that set ``nxt`` and the segment does not end at ``nxt``; otherwise a
  retransmission if not advancing. The first two and the last count as retransmissions. The handshake RTT is
  the time from the most recent SYN (without ACK) to the first segment with ACK and without SYN after it;
  3 ms when there is none. A duplicate ACK repeats the direction's previous ACK number, sequence number
  ``nxt`` and non-zero window, carries no payload and no SYN/FIN/RST.

``tcptrace`` (``rexmit.c``, ``trace.c``): each direction keeps the byte ranges seen (the SYN's byte included).
  A segment with any byte seen before (payload, or the SYN or FIN it repeats) is a retransmission (its
  retransmitted bytes are the payload bytes seen before); otherwise a payload segment starting below ``high``
  of a direction that has recorded bytes fills a hole and is out of order. ``unique_bytes`` are the payload
  bytes seen for the first time.

Coverage when the start was not captured: a direction whose first packet is not a SYN keeps its byte ranges
from the lowest sequence number seen, so payload below its first segment is new (and, under ``tcptrace``, out
of order when bytes above it were seen), as tcptrace counts it; Zeek's and Wireshark's rules compare with
``high``/``nxt`` as those tools do, so there it is a retransmission or out of order.

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
def payload_bits(start, end, high, overlap, recorded):
    """Zeek and tcptrace result bits (RX_ZEEK, RX_TT, OOO_TT) of a payload segment [start, end).

    ``overlap``: payload bytes of the segment seen before (tcptrace's byte ranges); ``high``: the highest payload
    end before it; ``recorded``: whether the direction had recorded any byte (SYN or payload) before it."""
    bits = 0
    if end <= high:
        bits |= RX_ZEEK
    if overlap > 0:
        bits |= RX_TT
    elif recorded and start < high:
        bits |= OOO_TT
    return bits


@njit(cache=True, inline="always")
def wireshark_bits(seq, seglen, synfin, nxt, nxt_ok, nxt_ts_ns, ts_ns, peer_ack, peer_ack_ok, peer_dupacks,
                   peer_last_ts_ns, ooo_threshold_ns):
    """RX_WS, OOO_WS or 0 for a segment at position ``seq`` with ``seglen`` payload bytes and ``synfin`` (1 when
    it carries SYN or FIN), as Wireshark's sequence analysis flags it (keep-alives and zero-window probes are
    excluded by the caller). ``peer_ack``: the peer's last ACK number (its position in this direction);
    ``peer_dupacks`` its duplicate ACKs since the ACK number last changed; ``peer_last_ts_ns`` the time of the
    peer's last segment."""
    not_advanced = nxt_ok and seq < nxt
    if seglen > 1 and seq == nxt - 1:
        not_advanced = False
    if seglen > 0 and peer_ack_ok and seq + seglen <= peer_ack:
        return RX_WS  # spurious
    if (not_advanced and peer_dupacks >= 2 and peer_ack_ok and peer_ack == seq
            and ts_ns - peer_last_ts_ns < FAST_RETRANSMISSION_WINDOW_NS):
        return RX_WS  # fast
    if not_advanced and ts_ns - nxt_ts_ns < ooo_threshold_ns and nxt != seq + seglen + synfin:
        return OOO_WS
    if not_advanced:
        return RX_WS
    return 0
