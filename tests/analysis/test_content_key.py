"""The content key (MoonSniff/pos: frame bytes 12-64 with the checksums zeroed) against checksums offloaded to the
NIC: a capture taken on the sending host before the NIC fills a checksum in holds 0 where the other capture
holds the real checksum. Every header the key zeroes is tried, over IPv4, 802.1Q and IPv6, with frames built by
dpkt (which computes the real checksums); matching must find every pair. A property test checks the key is
independent of exactly the fields it zeroes."""

from __future__ import annotations

import ctypes
import mmap

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


# -- the kernel against a plain reference of the key (issue 23) ------------------------------------------------------

U64 = (1 << 64) - 1


def _mix(h: int, w: int, m: int) -> int:
    h ^= (w * m) & U64
    h = ((h << 31) | (h >> 33)) & U64
    return (h * int(mk.GOLDEN)) & U64


def _fmix(h: int) -> int:
    h ^= h >> 33
    h = (h * int(mk.F1)) & U64
    h ^= h >> 33
    h = (h * int(mk.F2)) & U64
    return h ^ (h >> 33)


def reference_key(frame: bytes, start: int, end: int) -> tuple[int, int, bool]:
    """The content key written out plainly (match_kernel.content_keys' docstring): the captured bytes of
    [start, end) with the IPv4 header checksum and the UDP/TCP checksum zeroed (after one 802.1Q tag too; IPv6
    without extension headers), as little-endian 64-bit words padded with zeros to the key's full width, hashed
    twice; no key when the frame ends at or before `start`."""
    if len(frame) <= start:
        return 0, 0, False
    m = min(len(frame), end) - start
    key = bytearray(frame[start : start + m])

    def zero(q: int) -> None:
        if start <= q < start + m:
            key[q - start] = 0

    l3, etype = 14, (int.from_bytes(frame[12:14], "big") if len(frame) >= 14 else 0)
    if etype == 0x8100 and len(frame) >= 18:
        l3, etype = 18, int.from_bytes(frame[16:18], "big")
    l4, proto = -1, 0
    if etype == 0x0800 and len(frame) >= l3 + 20:
        proto, l4 = frame[l3 + 9], l3 + (frame[l3] & 0xF) * 4
        zero(l3 + 10)
        zero(l3 + 11)
    elif etype == 0x86DD and len(frame) >= l3 + 40:
        proto, l4 = frame[l3 + 6], l3 + 40
    if l4 >= 0 and proto in (6, 17):
        cs = l4 + (16 if proto == 6 else 6)
        zero(cs)
        zero(cs + 1)
    n_words = (end - start + 7) // 8
    key += bytes(8 * n_words - len(key))
    h1, h2 = (m * int(mk.M3)) & U64, m ^ 0x27D4EB2F165667C5
    for w in range(n_words):
        v = int.from_bytes(key[8 * w : 8 * w + 8], "little")
        h1 = _mix(h1, v, int(mk.M2))
        h2 = _mix(h2, v ^ 0x9FB21C651E98DF25, int(mk.M3))
    return h2 ^ (h2 >> 29), _fmix(h1), True


def _header_edge_frames(rng: np.random.Generator) -> list[bytes]:
    """Frames whose headers end exactly at or one byte before a length the key's header parsing checks: an
    Ethernet header cut at 13 and 14 bytes, a tag cut at 17 and 18, IPv4 at 33/34 (and 37/38 tagged), IPv6 at
    53/54, an IPv4 header with options (IHL 6) and one claiming IHL 0, and an unknown transport protocol."""
    out = []
    for kind in KINDS:
        frame, _ = build(kind, int(rng.integers(1000)), rng)
        l3 = 18 if kind.endswith("vlan") else 14
        need = l3 + (40 if kind.startswith("ipv6") else 20)
        out += [frame[:need - 1], frame[:need], frame[:l3 - 1], frame[:l3], frame[:13], frame[:12]]
    v4, _ = build("ipv4-udp", 7, rng)
    out.append(v4[:14] + bytes([0x46]) + v4[15:34] + b"\x01\x02\x03\x04" + v4[34:])  # IHL 6: UDP 4 bytes later
    out.append(v4[:14] + bytes([0x40]) + v4[15:])                                    # IHL 0: "UDP" at the IP header
    out.append(v4[:23] + b"\x84" + v4[24:])                                          # protocol 132 (SCTP): no L4 sum
    for proto in (6, 17):  # neither IPv4 nor IPv6 (EtherType 0x88B5), long enough for either, "next header" 6/17
        body = bytearray(rng.bytes(66))
        body[6] = proto
        out.append(MAC_B + MAC_A + b"\x88\xb5" + bytes(body))
    return out


@pytest.mark.parametrize("seed", range(4))
def test_kernel_keys_equal_the_plain_reference_for_any_range_length_and_neighbour(seed: int) -> None:
    """Real frames of every kind, cut at random lengths and at the header edges, packed into one buffer with
    random bytes between them (a partial last word loaded past a frame's end must not take its neighbour's bytes;
    the last frame ends the buffer), keyed over random ranges [start, end): every key equals the reference."""
    rng = np.random.default_rng(seed)
    frames = []
    for i in range(120):
        frame, _ = build(KINDS[i % len(KINDS)], i, rng)
        frames.append(frame[: int(rng.integers(0, len(frame) + 1))] if i % 3 == 0 else frame)
    frames += _header_edge_frames(rng)
    rng.shuffle(frames)
    buf, offsets = bytearray(), []
    for k, frame in enumerate(frames):
        offsets.append(len(buf))
        buf += frame
        if k + 1 < len(frames):
            buf += rng.bytes(int(rng.integers(0, 12)))
    data = np.frombuffer(bytes(buf), np.uint8)
    caplen = np.array([len(f) for f in frames], np.uint32)
    n = len(frames)
    for start, end in [(12, 64), (0, 14), (0, 1), (14, 15), (20, 90), (12, 13),
                       *[(s, s + int(rng.integers(1, 80))) for s in rng.integers(0, 70, 6).tolist()]]:
        hi, lo, ok = np.empty(n, np.uint64), np.empty(n, np.uint64), np.empty(n, np.bool_)
        mk.content_keys(data, np.array(offsets, np.int64), caplen, start, end, hi, lo, ok)
        got = [(int(a), int(b), bool(c)) for a, b, c in zip(hi, lo, ok, strict=True)]
        want = [reference_key(f, start, end) for f in frames]
        bad = [k for k in range(n) if got[k] != want[k]]
        assert not bad, (start, end, [(len(frames[k]), got[k], want[k]) for k in bad[:3]])


def _buffer_before_a_guard_page(payload: bytes) -> tuple[np.ndarray, mmap.mmap]:
    """`payload` as a uint8 array ending exactly where a PROT_NONE page begins: a read past its end faults (the
    mmap is returned too, to keep the mapping alive as long as the array)."""
    page = mmap.PAGESIZE
    mm = mmap.mmap(-1, 2 * page)
    arr = np.frombuffer(mm, np.uint8)
    if ctypes.CDLL(None, use_errno=True).mprotect(ctypes.c_void_p(arr.ctypes.data + page), ctypes.c_size_t(page),
                                                   0) != 0:  # PROT_NONE (mmap has no name for it)
        raise OSError(ctypes.get_errno(), "mprotect")
    view = arr[page - len(payload) : page]
    view[:] = np.frombuffer(payload, np.uint8)
    return view, mm


def test_keys_of_the_last_frame_read_nothing_past_the_buffer():
    """The last frame of a buffer that ends right before an unreadable page, keyed over ranges whose last word is
    partial (1 to 7 bytes): the key is built without loading the 8-byte word that would run into the next page
    (a read past the buffer kills the process), and equals the reference; so does an id key that ends the
    buffer."""
    rng = np.random.default_rng(5)
    frames = [build(kind, i, rng)[0] for i, kind in enumerate(KINDS)]
    frames += [f[:n] for f in frames for n in (13, 15, 17, 20, 33, 37, 53)]  # headers cut short: nothing read past
    for frame in frames:
        data, mm = _buffer_before_a_guard_page(frame)
        one = np.zeros(1, np.int64), np.array([len(frame)], np.uint32)
        for start, end in [(12, 64), (12, len(frame)), (0, len(frame) - 1), (len(frame) - 3, len(frame) + 5)]:
            hi, lo, ok = np.empty(1, np.uint64), np.empty(1, np.uint64), np.empty(1, np.bool_)
            mk.content_keys(data, *one, start, end, hi, lo, ok)
            assert (int(hi[0]), int(lo[0]), bool(ok[0])) == reference_key(frame, start, end), (len(frame), start)
        hi, lo, ok = np.empty(1, np.uint64), np.empty(1, np.uint64), np.empty(1, np.bool_)
        if len(frame) >= 8:
            mk.id_keys(data, *one, len(frame) - 8, 8, False, hi, lo, ok)
            assert bool(ok[0]) and int(lo[0]) == int.from_bytes(frame[-8:], "little")
        del data
        mm.close()
