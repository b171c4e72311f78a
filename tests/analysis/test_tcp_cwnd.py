"""tcp_probe records beside a capture: matched to its flows by both endpoints, in the sender's direction, on the
capture's clock when the recording's offset to CLOCK_REALTIME is known and on their own axis otherwise."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from benchbook.analysis.tcp_cwnd import CLOCK_OWN, match_records
from benchbook.tools import tcp_probe

DATA = Path(__file__).resolve().parents[1] / "data" / "tcp"


def _flows(src: str, sport: int, dst: str, dport: int, first_ns: int, last_ns: int) -> dict[str, np.ndarray]:
    return {"flow": np.array([0]), "src": np.array([src], object), "sport": np.array([sport]),
            "dst": np.array([dst], object), "dport": np.array([dport]), "first_time_ns": np.array([first_ns]),
            "last_time_ns": np.array([last_ns])}


def test_recorded_perf_script_matches_by_endpoints_on_its_own_clock() -> None:
    """The shipped recording (perf's default clock: 2116 s since boot) against a flow of the same endpoints
    captured at a wall-clock time: every record of that connection is matched, in the direction of its
    socket's sender, on its own time axis."""
    path = DATA / "perf-script-tcp_probe.txt"
    samples = tcp_probe.parse_script(path.read_text())
    records = tcp_probe.read_records(path, host=None)  # a text file: no program runs
    assert len(records) == len(samples) == 120
    assert records.time_ns[0] == 2116_207821_000  # exactly as printed, not through a float
    conn = [s for s in samples if {s.sport, s.dport} == {47516, 5301}]
    flows = _flows("127.0.0.1", 47516, "127.0.0.1", 5301, 1_763_900_000_000_000_000, 1_763_900_003_000_000_000)
    table, info = match_records(records, flows)
    assert info["clock"] == CLOCK_OWN and info["records"] == 120 and info["matched"] == len(conn) > 0
    client = sum(1 for s in conn if s.sport == 47516)  # the client's socket: the originator sends
    assert info["per_flow_direction"] == {"0/orig": client, "0/resp": len(conn) - client}
    assert 0 < client < len(conn)
    for d in (0, 1):
        t = table["time_ns"][table["direction"] == d]
        assert t.min() == 0 and (np.diff(t) >= 0).all()
    assert table["cwnd_segments"].tolist() == [s.cwnd for s in conn]
    # the same records with the flow's endpoints the other way round: directions swap
    swapped, _ = match_records(records, _flows("127.0.0.1", 5301, "127.0.0.1", 47516, 0, 1))
    assert (swapped["direction"] == 1 - table["direction"]).all()
    # no flow of these endpoints: nothing matched
    none, info = match_records(records, _flows("10.0.0.1", 47516, "127.0.0.1", 5301, 0, 1))
    assert info["matched"] == 0 and none["flow"].size == 0


def test_unreadable_probe_files_name_file_and_position(tmp_path: Path) -> None:
    binary = tmp_path / "x.data"
    binary.write_bytes(b"PERFILE3\xff\xfe")
    with pytest.raises(tcp_probe.TcpProbeError, match=r"x.data: at byte offset 8: not text"):
        tcp_probe.read_records(binary, host=None)
    empty = tmp_path / "e.txt"
    empty.write_text("# perf script of something else\n")
    with pytest.raises(tcp_probe.TcpProbeError, match=r"e.txt: no tcp:tcp_probe records"):
        tcp_probe.read_records(empty, host=None)
    with pytest.raises(tcp_probe.TcpProbeError, match=r"missing.txt: No such file"):
        tcp_probe.read_records(tmp_path / "missing.txt", host=None)
