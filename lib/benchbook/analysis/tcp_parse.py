"""numba helpers that decode one frame down to its TCP header: link layer, VLAN tags, IPv4/IPv6, TCP options.

Link types: Ethernet (1, with up to two 802.1Q/802.1ad tags), Linux cooked v1 (113) and v2 (276), raw IP
(101, 12, 14, 228, 229) and BSD loopback (0, 108). IPv4 fragments other than a first fragment carrying the
whole TCP header, and IPv6 fragment headers, are not TCP packets here. The TCP payload length comes from
the IP length fields, not the captured length, so a snap length shorter than the packet still counts
every payload byte (Ethernet padding is never payload). TCP options parsed: MSS (2), window scale (3),
SACK permitted (4), SACK blocks (5), timestamps (8).

``parse_frame`` writes its fields into a small int64 array ``p`` (slots P_*) and returns a status.
"""

from __future__ import annotations

import numpy as np

from benchbook.kernels import njit

# parse status
TCP_OK = 0
NOT_TCP = 1  # not IP, or IP carrying another protocol, or a non-first fragment
MALFORMED = 2  # IP/TCP header cut short by the captured length or impossible lengths

# slots of the parsed-packet array
P_A_HI, P_A_LO, P_B_HI, P_B_LO = 0, 1, 2, 3  # source (A) and destination (B) address as two uint64 halves
P_SPORT, P_DPORT, P_SEQ, P_ACK, P_FLAGS, P_WIN = 4, 5, 6, 7, 8, 9
P_LEN = 10  # TCP payload bytes
P_MSS, P_WSCALE, P_SACKOK, P_SACKN, P_TSVAL, P_TSECR, P_HAS_TS = 11, 12, 13, 14, 15, 16, 17
P_IPV = 18
P_IPLEN = 19  # IP packet bytes (header + payload) from the IP length fields
P_CAPPAY = 20  # payload bytes actually captured (within the captured length)
N_P = 21

FIN, SYN, RST, PSH, ACK, URG, ECE, CWR = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80

V4_MAPPED = np.uint64(0xFFFF00000000)


@njit(cache=True, inline="always")
def _be16(buf, p):
    return (np.int64(buf[p]) << 8) | np.int64(buf[p + 1])


@njit(cache=True, inline="always")
def _be32(buf, p):
    return (np.int64(buf[p]) << 24) | (np.int64(buf[p + 1]) << 16) | (np.int64(buf[p + 2]) << 8) | np.int64(buf[p + 3])


@njit(cache=True, inline="always")
def _be64(buf, p):
    return (np.uint64(_be32(buf, p)) << np.uint64(32)) | np.uint64(_be32(buf, p + 4))


@njit(cache=True, inline="always")
def _ip_start(buf, o, n, linktype):
    """Offset of the IP header and the IP version (4/6), or (-1, 0) when the frame holds no IP."""
    if linktype == 1:
        if n < 14:
            return -1, 0
        et = _be16(buf, o + 12)
        q = o + 14
        k = 0
        while (et == 0x8100 or et == 0x88A8 or et == 0x9100) and k < 3:
            if q + 4 > o + n:
                return -1, 0
            et = _be16(buf, q + 2)
            q += 4
            k += 1
        if et == 0x0800:
            return q, 4
        if et == 0x86DD:
            return q, 6
        return -1, 0
    if linktype == 113:
        if n < 16:
            return -1, 0
        et = _be16(buf, o + 14)
        q = o + 16
    elif linktype == 276:
        if n < 20:
            return -1, 0
        et = _be16(buf, o)
        q = o + 20
    elif linktype == 0 or linktype == 108:
        if n < 4:
            return -1, 0
        q = o + 4
        fam = np.int64(buf[o]) | (np.int64(buf[o + 3]) if buf[o] == 0 else 0)
        et = 0x0800 if fam == 2 else (0x86DD if fam == 24 or fam == 28 or fam == 30 else 0)
    elif linktype == 101 or linktype == 12 or linktype == 14 or linktype == 228 or linktype == 229:
        if n < 1:
            return -1, 0
        v = buf[o] >> 4
        return (o, 4) if v == 4 else ((o, 6) if v == 6 else (-1, 0))
    else:
        return -1, 0
    if et == 0x0800:
        return q, 4
    if et == 0x86DD:
        return q, 6
    return -1, 0


@njit(cache=True, inline="always")
def parse_frame(buf, o, n, linktype, p):
    """Decode frame buf[o:o+n]; fill p[P_*]; return TCP_OK, NOT_TCP or MALFORMED."""
    end = o + n
    q, ipv = _ip_start(buf, o, n, linktype)
    if q < 0:
        return NOT_TCP
    if ipv == 4:
        if q + 20 > end:
            return MALFORMED
        if (buf[q] >> 4) != 4:
            return MALFORMED
        ihl = np.int64(buf[q] & 0x0F) * 4
        total = _be16(buf, q + 2)
        if buf[q + 9] != 6:
            return NOT_TCP
        frag = _be16(buf, q + 6)
        if (frag & 0x1FFF) != 0:
            return NOT_TCP
        if ihl < 20 or total < ihl:
            return MALFORMED
        p[P_A_HI] = 0
        p[P_A_LO] = np.int64(V4_MAPPED | np.uint64(_be32(buf, q + 12)))
        p[P_B_HI] = 0
        p[P_B_LO] = np.int64(V4_MAPPED | np.uint64(_be32(buf, q + 16)))
        t = q + ihl
        ip_payload = total - ihl
        p[P_IPLEN] = total
    else:
        if q + 40 > end:
            return MALFORMED
        plen = _be16(buf, q + 4)
        nh = np.int64(buf[q + 6])
        p[P_A_HI] = np.int64(_be64(buf, q + 8))
        p[P_A_LO] = np.int64(_be64(buf, q + 16))
        p[P_B_HI] = np.int64(_be64(buf, q + 24))
        p[P_B_LO] = np.int64(_be64(buf, q + 32))
        t = q + 40
        ip_payload = plen
        p[P_IPLEN] = plen + 40
        k = 0
        while (nh == 0 or nh == 43 or nh == 60) and k < 8:
            if t + 8 > end:
                return MALFORMED
            hl = (np.int64(buf[t + 1]) + 1) * 8
            nh = np.int64(buf[t])
            t += hl
            ip_payload -= hl
            k += 1
        if nh != 6:
            return NOT_TCP
    if t + 20 > end:
        return MALFORMED
    doff = np.int64(buf[t + 12] >> 4) * 4
    if doff < 20 or ip_payload < doff:
        return MALFORMED
    p[P_IPV] = ipv
    p[P_SPORT] = _be16(buf, t)
    p[P_DPORT] = _be16(buf, t + 2)
    p[P_SEQ] = _be32(buf, t + 4)
    p[P_ACK] = _be32(buf, t + 8)
    p[P_FLAGS] = np.int64(buf[t + 13])
    p[P_WIN] = _be16(buf, t + 14)
    p[P_LEN] = ip_payload - doff
    p[P_CAPPAY] = max(np.int64(0), min(p[P_LEN], end - (t + doff)))
    p[P_MSS] = -1
    p[P_WSCALE] = -1
    p[P_SACKOK] = 0
    p[P_SACKN] = 0
    p[P_HAS_TS] = 0
    if doff > 20:
        x = t + 20
        oend = min(t + doff, end)
        while x < oend:
            kind = buf[x]
            if kind == 0:
                break
            if kind == 1:
                x += 1
                continue
            if x + 1 >= oend:
                break
            ln = np.int64(buf[x + 1])
            if ln < 2 or x + ln > oend:
                break
            if kind == 2 and ln == 4:
                p[P_MSS] = _be16(buf, x + 2)
            elif kind == 3 and ln == 3:
                p[P_WSCALE] = np.int64(buf[x + 2])
            elif kind == 4:
                p[P_SACKOK] = 1
            elif kind == 5:
                p[P_SACKN] = (ln - 2) // 8
            elif kind == 8 and ln == 10:
                p[P_TSVAL] = _be32(buf, x + 2)
                p[P_TSECR] = _be32(buf, x + 6)
                p[P_HAS_TS] = 1
            x += ln
    return TCP_OK
