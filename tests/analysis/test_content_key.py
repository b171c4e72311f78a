"""The content key (MoonSniff/pos: frame bytes 12-64 with the checksums zeroed) against checksums offloaded to the
NIC: a capture taken on the sending host before the NIC fills a checksum in holds 0 where the other capture
holds the real checksum. Every header the key zeroes is tried, over IPv4, 802.1Q and IPv6, with frames built by
dpkt (which computes the real checksums); matching must find every pair. A property test checks the key is
independent of exactly the fields it zeroes."""

from __future__ import annotations

import dpkt
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchbook.analysis import match_kernel as mk
from benchbook.analysis.latency import ContentKey, match_captures
from benchbook.capture import write_pcap

MAC_A, MAC_B = bytes.fromhex("020000000001"), bytes.fromhex("020000000002")


def build(kind: str, i: int, rng: np.random.Generator) -> tuple[bytes, list[int]]:
    """One real frame of ``kind`` (payload and ids vary with i) and the offsets of its checksum fields."""
    payload = rng.bytes(int(rng.integers(6, 40)))
    proto = "tcp" if "tcp" in kind else "udp"
    l4 = (dpkt.tcp.TCP(sport=40000 + i, dport=5201, seq=1000 * i, ack=1, flags=dpkt.tcp.TH_ACK, win=512,
                       data=payload) if proto == "tcp" else dpkt.udp.UDP(sport=40000 + i, dport=9, data=payload))
    if kind.startswith("ipv6"):
        l3 = dpkt.ip6.IP6(src=bytes(15) + b"\x01", dst=bytes(15) + b"\x02", nxt=6 if proto == "tcp" else 17,
                          hlim=64, data=l4, plen=len(bytes(l4)))
        l3.p = l3.nxt
        eth = dpkt.ethernet.Ethernet(src=MAC_A, dst=MAC_B, type=dpkt.ethernet.ETH_TYPE_IP6, data=l3)
        l3_at, ip_sum = 14, []
    else:
        l3 = dpkt.ip.IP(src=b"\x0a\x00\x00\x01", dst=b"\x0a\x00\x00\x02", p=6 if proto == "tcp" else 17, ttl=64,
                        id=i & 0xFFFF, data=l4)
        eth = dpkt.ethernet.Ethernet(src=MAC_A, dst=MAC_B, type=dpkt.ethernet.ETH_TYPE_IP, data=l3)
        l3_at, ip_sum = 14, [14 + 10]
    frame = bytes(eth)
    if kind.endswith("vlan"):
        frame = frame[:12] + b"\x81\x00\x00\x64" + frame[12:]
        l3_at, ip_sum = 18, [at + 4 for at in ip_sum]
    l4_at = l3_at + (40 if kind.startswith("ipv6") else 20)
    return frame, [*ip_sum, l4_at + (16 if proto == "tcp" else 6)]


def offloaded(frame: bytes, at: int) -> bytes:
    return frame[:at] + b"\0\0" + frame[at + 2:]


KINDS = ["ipv4-udp", "ipv4-tcp", "ipv4-udp-vlan", "ipv4-tcp-vlan", "ipv6-udp", "ipv6-tcp", "ipv6-udp-vlan"]


@pytest.mark.parametrize("kind", KINDS)
def test_matching_survives_each_offloaded_checksum(tmp_path, kind):
    rng = np.random.default_rng(KINDS.index(kind))
    n = 50
    built = [build(kind, i, rng) for i in range(n)]
    fields = built[0][1]
    for field_at in fields:  # one capture with this checksum offloaded (0), the other with the real one
        real = [f for f, _ in built]
        assert all(f[field_at : field_at + 2] != b"\0\0" for f in real), "dpkt filled the checksum in"
        pre = write_pcap(tmp_path / "pre.pcap", np.arange(n) * 10_000 + 1_000_000,
                         [offloaded(f, field_at) for f in real])
        post = write_pcap(tmp_path / "post.pcap", np.arange(n) * 10_000 + 1_004_000, real)
        r = match_captures(pre, post, ContentKey())
        assert r.counts["matched"] == n, (kind, field_at, r.counts)
        assert r.latency_ns.tolist() == [4_000] * n
    # and the key is not blind: one byte of the key (not a checksum) changed in transit is no match
    real = [f for f, _ in built]
    pre = write_pcap(tmp_path / "pre.pcap", np.arange(n) * 10_000 + 1_000_000, real)
    bent = [f[:46] + bytes([f[46] ^ 1]) + f[47:] for f in real]
    post = write_pcap(tmp_path / "post.pcap", np.arange(n) * 10_000 + 1_004_000, bent)
    assert match_captures(pre, post, ContentKey()).counts["matched"] == 0


def _key(frame: bytes, start: int = 12, end: int = 64) -> tuple[int, int, bool]:
    data = np.frombuffer(frame + bytes(8), np.uint8)  # the kernel may load a word past the frame's end
    hi, lo, ok = np.empty(1, np.uint64), np.empty(1, np.uint64), np.empty(1, np.bool_)
    mk.content_keys(data, np.zeros(1, np.int64), np.array([len(frame)], np.uint32), start, end, hi, lo, ok)
    return int(hi[0]), int(lo[0]), bool(ok[0])


@settings(max_examples=60, deadline=None)
@given(kind=st.sampled_from(KINDS), seed=st.integers(0, 2**32 - 1), junk=st.binary(min_size=2, max_size=2),
       other=st.integers(12, 63))
def test_the_key_ignores_exactly_the_fields_it_zeroes(kind, seed, junk, other):
    frame, fields = build(kind, seed % 1000, np.random.default_rng(seed))
    base = _key(frame)
    assert base[2]
    for at in fields:  # any value in a zeroed field: the same key
        assert _key(frame[:at] + junk + frame[at + 2:]) == base
    if other < len(frame) and not any(at <= other < at + 2 for at in fields):
        flipped = frame[:other] + bytes([frame[other] ^ 0x5A]) + frame[other + 1:]
        assert _key(flipped) != base  # any other byte of the key is part of it
