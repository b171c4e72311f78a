"""benchbook.tools.udp_probe: the real probe program on loopback (every packet back with its sequence number and a
non-negative one-way latency), a receiver that cannot bind named with its error, and the log reader's errors."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import numpy as np
import pytest

from benchbook.tools import udp_probe
from benchbook.tools.host import LocalHost


def _free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.timeout(60)
def test_every_packet_sent_on_loopback_is_logged_with_its_latency(tmp_path: Path) -> None:
    host = LocalHost()
    port = _free_udp_port()
    out = tmp_path / "probe.txt"
    receiver = udp_probe.start_receiver(host, udp_probe.recv_argv(port, 2.0, out))
    sender, start_ns = udp_probe.start_sender(host, udp_probe.send_argv("127.0.0.1", port, 200, 0.25, 100))
    assert sender.wait(timeout_s=30) == 0 and sender.output().splitlines()[-1] == "50"
    assert receiver.wait(timeout_s=30) == 0 and receiver.output().splitlines()[-1] == "50"
    log = udp_probe.read_log(out)
    assert np.array_equal(log.seq, np.arange(50))
    assert (log.latency_ns >= 0).all() and (log.latency_ns < 1_000_000_000).all()
    due_ns = start_ns + log.seq * 5_000_000        # paced at 200 packets/s from the start it reported, never early
    assert (log.send_ns >= due_ns).all()


@pytest.mark.timeout(60)
def test_a_receiver_with_an_idle_limit_stops_once_the_sender_is_done(tmp_path: Path) -> None:
    """With IDLE_S the receiver ends IDLE_S after the last packet, not at its 30 s deadline, and keeps every packet;
    before the first packet the idle limit does not apply (a sender slow to start is waited for)."""
    host = LocalHost()
    port = _free_udp_port()
    out = tmp_path / "probe.txt"
    receiver = udp_probe.start_receiver(host, udp_probe.recv_argv(port, 30.0, out, idle_s=0.5))
    time.sleep(1.0)                                  # longer than the idle limit before anything is sent
    sender, _ = udp_probe.start_sender(host, udp_probe.send_argv("127.0.0.1", port, 200, 0.25, 100))
    assert sender.wait(timeout_s=30) == 0
    assert receiver.wait(timeout_s=20) == 0 and receiver.output().splitlines()[-1] == "50"
    assert np.array_equal(udp_probe.read_log(out).seq, np.arange(50))


def test_a_receiver_that_cannot_bind_is_named_with_its_error(tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as busy:
        busy.bind(("0.0.0.0", 0))
        port = busy.getsockname()[1]
        with pytest.raises(udp_probe.ProbeError, match="not listening.*Address already in use"):
            udp_probe.start_receiver(LocalHost(), udp_probe.recv_argv(port, 1.0, tmp_path / "x.txt"))


def test_the_log_reader_names_the_file_and_line_it_cannot_read(tmp_path: Path) -> None:
    p = tmp_path / "probe.txt"
    p.write_text("0 100 250\n1 200 ten\n")
    with pytest.raises(udp_probe.ProbeError, match=r"probe.txt: line 2: expected 'seq send_ns recv_ns'.*'1 200 ten'"):
        udp_probe.read_log(p)
    p.write_text("")
    assert udp_probe.read_log(p).seq.size == 0
    p.write_text("7 100 250\n")
    log = udp_probe.read_log(p)
    assert (int(log.seq[0]), int(log.latency_ns[0])) == (7, 150)
