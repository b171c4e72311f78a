"""Coverage-guided fuzz targets (atheris) for benchbook's readers; `make fuzz` runs each for a set
time. A reader may end in the packets/intervals/counters or a BenchbookError naming what is wrong;
any other exception is a finding (atheris stops and writes the input as crash-<sha1>).

    PYTHONPATH=build/fuzz-site .venv/bin/python tests/fuzz/fuzz_readers.py TARGET [libFuzzer options] [CORPUS...]

TARGET: pcap (pcap, pcapng, zstd: the reader tells them apart by magic), hlog, moongen, perf.
"""

from __future__ import annotations

import os
import sys
import tempfile
import warnings

import atheris

# numba compiles these from their bytecode: instrumented bytecode would not compile, so they stay plain.
NUMBA_MODULES = [
    "benchbook.capture.scan", "benchbook.capture.synth", "benchbook.capture.tcp_synth", "benchbook.capture.writer",
    "benchbook.analysis.hdr", "benchbook.analysis.hdr_codec", "benchbook.analysis.match_kernel",
    "benchbook.analysis.tcp_flows", "benchbook.analysis.tcp_parse", "benchbook.analysis.tcp_rtt",
    "benchbook.analysis.tcp_rules", "benchbook.tools.moongen_parse",
]

with atheris.instrument_imports(include=["benchbook"], exclude=NUMBA_MODULES):
    from benchbook.analysis.hlog import read_hlog
    from benchbook.capture import open_capture
    from benchbook.errors import BenchbookError
    from benchbook.tools.moongen_histogram import read_moongen_histogram
    from benchbook.tools.perf_reports import parse_perf_output

SCRATCH = tempfile.mkdtemp(prefix="benchbook-fuzz-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)


def _file(data: bytes, name: str) -> str:
    path = os.path.join(SCRATCH, name)
    with open(path, "wb") as fh:
        fh.write(data)
    return path


def target_pcap(data: bytes) -> None:
    path = _file(data, "x.cap")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            for chunk in open_capture(path, chunk_packets=64, buffer_bytes=4096):
                assert len(chunk.ts_ns) == len(chunk.caplen)
        except BenchbookError:
            pass


def target_hlog(data: bytes) -> None:
    try:
        for iv in read_hlog(_file(data, "x.hlog")).intervals:
            assert iv.histogram.total_count >= 0
    except BenchbookError:
        pass


def target_moongen(data: bytes) -> None:
    try:
        h = read_moongen_histogram(_file(data, "x.csv"))
        assert 0 <= h.count < 2**63
    except BenchbookError:
        pass


def target_perf(data: bytes) -> None:
    try:
        parse_perf_output(data.decode("utf-8", "replace"), source="fuzz")
    except BenchbookError:
        pass


TARGETS = {"pcap": target_pcap, "hlog": target_hlog, "moongen": target_moongen, "perf": target_perf}


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in TARGETS:
        sys.exit(f"usage: {sys.argv[0]} {{{','.join(TARGETS)}}} [libFuzzer options] [CORPUS...]")
    target = TARGETS[sys.argv[1]]
    atheris.Setup([sys.argv[0], *sys.argv[2:]], target)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
