"""Edges of the packet-latency matcher's front end (benchbook.analysis.latency): the packet-id key's limits and
texts, the content key's defaults, and the defaults a match runs with when none are given (a 5-s maximum latency,
exclusive; a window of 2**18 packets), recorded in its counts."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from benchbook.analysis.latency import ContentKey, IdKey, match_captures
from benchbook.capture import write_pcap
from capture_reference import frames_with_ids


@pytest.mark.parametrize("width", [1, 8])
def test_an_id_is_1_to_8_bytes(width):
    assert IdKey(0, width).width == width


@pytest.mark.parametrize("width", [0, 9, -1])
def test_an_id_outside_1_to_8_bytes_is_refused(width):
    with pytest.raises(ValueError, match=rf"^id width {width}: expected 1\.\.8 bytes$"):
        IdKey(0, width)


def test_an_id_offset_is_0_or_more():
    assert IdKey(0).offset == 0
    with pytest.raises(ValueError, match=r"^id offset -1: expected >= 0$"):
        IdKey(-1)
    with pytest.raises(ValueError, match=r"^byteorder must be 'little' or 'big'$"):
        IdKey(0, 4, "middle")


def test_key_texts_and_defaults():
    assert IdKey(42).describe() == "id: 8 bytes at offset 42 (little-endian)"
    assert IdKey(14, 2, "big").describe() == "id: 2 bytes at offset 14 (big-endian)"
    assert (ContentKey().start, ContentKey().end) == (12, 64)  # after the MAC addresses, MoonSniff's 64 bytes
    assert ContentKey().describe() == "content: bytes 12-64 with IPv4, UDP and TCP checksums zeroed"


def test_keys_are_values():
    """A key is a default argument (match_captures' IdKey(42)): it cannot be changed, and equal keys are equal."""
    assert IdKey(42) == IdKey(42) and ContentKey() == ContentKey() and ContentKey(0, 60) != ContentKey()
    assert hash(IdKey(42)) == hash(IdKey(42))
    for key in (IdKey(42), ContentKey()):
        with pytest.raises(dataclasses.FrozenInstanceError):
            key.offset = 1  # type: ignore[misc]


def test_the_defaults_are_a_5_s_maximum_latency_exclusive_and_a_2_pow_18_packet_window(tmp_path):
    """Two packets 5 s - 1 ns and exactly 5 s after their pre copies: with the defaults the first matches, the
    second does not (a latency must be below the maximum); the counts say which limits applied."""
    max_ns = 5_000_000_000
    pre_t = np.array([1_000, 2_000], np.int64)
    write_pcap(tmp_path / "pre.pcap", pre_t, frames_with_ids([7, 8]))
    write_pcap(tmp_path / "post.pcap", pre_t + np.array([max_ns - 1, max_ns]), frames_with_ids([7, 8]))
    res = match_captures(tmp_path / "pre.pcap", tmp_path / "post.pcap")
    assert dict(zip(res.id.tolist(), res.latency_ns.tolist(), strict=True)) == {7: max_ns - 1}
    assert (res.counts["max_latency_ns"], res.counts["window_limit"]) == (max_ns, 1 << 18)
    assert (res.counts["matched"], res.counts["lost"], res.counts["unmatched_post"]) == (1, 1, 1)
    assert res.key == "id: 8 bytes at offset 42 (little-endian)" and res.warnings == [] and res.parquet is None
