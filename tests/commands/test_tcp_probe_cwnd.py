"""`benchbook tcp --probe` end to end, as root in a namespace this test creates: an iperf3 transfer over the
namespace's loopback, captured by tcpdump while perf records tcp:tcp_probe with CLOCK_MONOTONIC and the measured
offset to CLOCK_REALTIME; every record of the transfer's connections is matched to a captured flow and lies inside
that flow's time span."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from benchbook.testbed.local import LocalBackend
from benchbook.testbed.topology import Topology
from benchbook.tools import tcp_probe
from conftest import require_program, require_root

PORT = 5296


@pytest.mark.root
def test_probe_records_land_on_the_capture_clock(tmp_path: Path) -> None:
    require_root()
    for prog in ("perf", "iperf3", "tcpdump"):
        require_program(prog)

    pcap, data = tmp_path / "lo.pcap", tmp_path / "probe.data"
    with LocalBackend(sweep=False).topology(Topology("one", ["t"])) as tb:
        host = tb.host("t")
        ok, why = tcp_probe.probe_available(host)
        if not ok:
            pytest.skip(f"tcp:tcp_probe not available: {why}")
        srv = host.start(["iperf3", "-s", "-p", str(PORT), "--forceflush", "-1"])
        assert srv.wait_for("Server listening", timeout_s=10)
        dump = host.start(["tcpdump", "-i", "lo", "-s", "128", "-U", "-w", str(pcap), "tcp", "port", str(PORT)],
                          what="tcpdump", merge_stderr=True)
        assert dump.wait_for("listening", timeout_s=10.0)
        rec = tcp_probe.Recording(host, data, port=PORT).start()
        deadline = time.monotonic() + 20   # perf writes its header once the tracepoint is enabled
        while time.monotonic() < deadline and not (data.exists() and data.stat().st_size > 0):
            time.sleep(0.05)
        host.run(["iperf3", "-c", "127.0.0.1", "-p", str(PORT), "-t", "1", "-b", "50M"], timeout_s=30)
        srv.wait(timeout_s=10.0)
        samples = rec.stop()
        dump.interrupt_and_wait(10.0)
    assert samples, "perf recorded no tcp_probe record of the transfer"
    assert "0 packets dropped by kernel" in dump.output("stdout"), dump.output("stdout")[-300:]
    out = tmp_path / "report"
    r = subprocess.run([sys.executable, "-m", "benchbook.cli", "tcp", str(pcap), "--probe", str(data), "-o", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    cwnd = json.loads((out / "summary.json").read_text())["cwnd"]
    # every record of the transfer's sockets (the port filter of the recording) belongs to a captured flow
    assert cwnd["clock"] == "realtime" and cwnd["matched"] == len(samples), (cwnd, len(samples))
    table = pq.read_table(out / "cwnd.parquet").to_pandas()
    flows = pq.read_table(out / "flows.parquet").to_pandas().set_index("flow")
    assert len(table) == len(samples)
    # on the capture's clock: each record (an ACK the socket processed) lies within its flow's captured packets
    # (tcpdump on lo sees each packet as it is sent, before the receiving socket processes it)
    for f, rows in table.groupby("flow"):
        assert rows["time_ns"].min() >= flows.loc[f, "first_time_ns"], f
        assert rows["time_ns"].max() <= flows.loc[f, "last_time_ns"] + 100_000_000, f
    data_flow = int(flows["orig_unique_bytes"].idxmax())  # the iperf3 data connection; the client originates it
    sender = table[(table["flow"] == data_flow) & (table["direction"] == "orig")]
    assert len(sender) > 0 and sender["cwnd_segments"].max() >= 10
    assert "cwnd (segments, tcp_probe)" in (out / "report.html").read_text()
    assert f"cwnd: {len(samples)} of " in r.stdout
