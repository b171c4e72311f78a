"""Edges of the packet-latency matcher's front end (benchbook.analysis.latency): the packet-id key's limits and
texts, the content key's defaults, and the defaults a match runs with when none are given (a 5-s maximum latency,
exclusive; a window of 2**18 packets), recorded in its counts."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

from benchbook.analysis.latency import ContentKey, IdKey, match_captures
from benchbook.capture import write_pcap, write_pcapng
from benchbook.paths import REPO_ROOT
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


def test_a_snap_length_that_just_holds_the_id_is_enough(tmp_path):
    """IdKey(42) reads bytes 42..49: a snap length of 50 holds them (only a shorter one is refused up front)."""
    frames = [f[:50] for f in frames_with_ids([1, 2, 3])]
    ts = np.array([1_000, 2_000, 3_000], np.int64)
    write_pcap(tmp_path / "pre.pcap", ts, frames, snaplen=50)
    write_pcap(tmp_path / "post.pcap", ts + 500, frames, snaplen=50)
    res = match_captures(tmp_path / "pre.pcap", tmp_path / "post.pcap")
    assert res.id.tolist() == [1, 2, 3] and res.latency_ns.tolist() == [500, 500, 500]


def test_a_later_section_too_short_for_the_id_is_counted_not_refused(tmp_path):
    """The snap-length check refuses a capture whose first chunk cannot carry the id; a later pcapng section
    whose interface is too short keeps what came before: its packets are counted unkeyed, with the warning."""
    ids = list(range(8))
    ts = np.arange(1, 9, dtype=np.int64) * 1_000
    first = write_pcapng(tmp_path / "a.pcapng", ts[:4], frames_with_ids(ids[:4])).read_bytes()
    short = write_pcapng(tmp_path / "b.pcapng", ts[4:], [f[:40] for f in frames_with_ids(ids[4:])],
                         snaplen=40).read_bytes()
    (tmp_path / "pre.pcapng").write_bytes(first + short)
    write_pcap(tmp_path / "post.pcap", ts + 700, frames_with_ids(ids))
    with pytest.warns(UserWarning, match=r"pre\.pcapng: 4 pre packets are too short to carry the key"):
        res = match_captures(tmp_path / "pre.pcapng", tmp_path / "post.pcap", chunk_packets=4)
    assert res.id.tolist() == [0, 1, 2, 3] and res.counts["unkeyed_pre"] == 4


_FAILING_MATCH = """
import sys
from benchbook.analysis.latency import match_captures
try:
    match_captures(sys.argv[1], sys.argv[2], chunk_packets=4)
except Exception as exc:
    print(type(exc).__name__)
"""


def test_a_match_that_fails_leaves_no_thread_keeping_the_process(tmp_path):
    """The pre capture is corrupt in its second chunk while the post capture's reader thread waits to hand on
    its next chunk: the error ends the match, and the process exits (the reader threads are daemons)."""
    ts = np.arange(1, 401, dtype=np.int64) * 1_000
    frames = frames_with_ids(range(400))
    write_pcap(tmp_path / "post.pcap", ts + 700, frames)
    good = write_pcap(tmp_path / "pre.pcap", ts[:8], frames[:8]).read_bytes()
    corrupt = bytearray(good)
    corrupt[24 + 4 * (16 + 60) + 8: 24 + 4 * (16 + 60) + 12] = (10**6).to_bytes(4, "little")  # 5th caplen
    (tmp_path / "pre.pcap").write_bytes(bytes(corrupt))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "lib"), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", _FAILING_MATCH, str(tmp_path / "pre.pcap"),
                           str(tmp_path / "post.pcap")], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == "CaptureFormatError", proc.stderr[-2000:]


def test_every_warning_text_and_where_it_points(tmp_path):
    """The warnings are the result's too (res.warnings), word for word, and each points at the caller's line."""
    ts = np.array([1_000, 2_000, 3_000, 4_000], np.int64)
    frames = frames_with_ids([1, 2, 3, 4])
    pre, post, empty = tmp_path / "pre.pcap", tmp_path / "post.pcap", tmp_path / "empty.pcap"
    # pre: packet 3 cut to 40 bytes (too short for the id), packet 2 sent twice; post: its clock steps back once
    write_pcap(pre, np.array([1_000, 2_000, 2_500, 3_000, 4_000], np.int64),
               [frames[0], frames[1], frames[1], frames[2][:40], frames[3]])
    write_pcap(post, np.array([1_500, 2_600, 2_550, 4_500], np.int64), [frames[0], frames[1], frames[2], frames[3]])
    write_pcap(empty, np.zeros(0, np.int64), [])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = match_captures(pre, post)
    assert res.warnings == [
        f"{pre}: 1 pre packets are too short to carry the key (offset 42 + width 8); the first is the record at "
        f"byte offset {24 + 3 * (16 + 60)} with 40 captured bytes",
        f"{post}: timestamps go backwards 1 times in the post capture",
        "2 pre packets share a key with another waiting pre packet and were dropped",  # both copies
    ]
    assert [str(w.message) for w in caught] == res.warnings
    assert {w.filename for w in caught} == {__file__}
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        res = match_captures(empty, post, ContentKey(), out_parquet=tmp_path / "l.parquet")
    assert res.warnings[0] == f"{empty}: the pre capture holds no packets (nothing after its file header)"
    assert res.parquet == tmp_path / "l.parquet" and res.parquet.is_file()
    write_pcap(pre, ts[:1], [frames[0][:12]])
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        res = match_captures(pre, post, ContentKey())
    assert res.warnings[0] == (f"{pre}: 1 pre packets are too short to carry the key (more than 12 bytes); the "
                               "first is the record at byte offset 24 with 12 captured bytes")
