"""MoonGen: its histogram files (tools.moongen_histogram), its summary line (analysis.moongen_stats),
throughput logs (tools.moongen_output), command lines (tools.moongen). Fixtures in
tests/data/moongen are written by hand (see its README.md) in the exact formats of libmoon's histogram.lua (hist:save,
hist:print) and stats.lua (plain and CSV formatters); the summary is checked against a step-by-step
transcription of histogram.lua (tests/moongen_reference.py) and on a histogram derived from the
Wiedner et al. ITC'23 data."""

from __future__ import annotations

import io
import math
import random
import sys
from pathlib import Path

import numpy as np
import pytest
import zstandard

import benchbook.tools.moongen_histogram as mg
from benchbook.analysis.distribution import ExactDistribution
from benchbook.analysis.moongen_stats import (
    lua_quartile_positions,
    moongen_percentile,
    moongen_stats,
    moongen_summary,
)
from benchbook.tools.host import CommandLog, LocalHost, read_command_log
from benchbook.tools.moongen import build_command, run_moongen
from benchbook.tools.moongen_histogram import (
    MoonGenFormatError,
    MoonGenHistogram,
    read_histogram_csv,
    read_moongen_histogram,
    write_moongen_histogram,
)
from benchbook.tools.moongen_output import parse_histogram_summaries, parse_throughput, read_throughput_log
from moongen_reference import lua_calc, lua_percentile, lua_print, read_histogram_reference

DATA = Path(__file__).resolve().parents[1] / "data" / "moongen"


def as_lua_lists(h: MoonGenHistogram) -> tuple[list[float], list[int]]:
    return [float(x) for x in (h.values_scaled / h.scale)], h.counts.tolist()


def test_read_histogram_exact_decimals() -> None:
    h = read_moongen_histogram(DATA / "histogram.csv")
    assert h.decimals == 1
    assert h.values_scaled.tolist() == [19840, 20800, 20864, 22272, 22336, 24256, 24320, 32000, 128000]
    assert h.counts.tolist() == [2, 310, 1, 305, 1, 300, 290, 4, 1]
    assert h.count == 1214
    assert h.value_str(20864) == "2086.4" and h.value_str(24320) == "2432"
    assert h.warnings == ()


def test_summary_matches_histogram_lua_and_logged_line() -> None:
    h = read_moongen_histogram(DATA / "histogram.csv")
    line = moongen_summary(h)
    assert line == lua_print(*as_lua_lists(h))
    # ... and the summary line in the hand-written stdout fixture (tests/data/moongen/README.md: the line was
    # computed from histogram.csv, so this checks the throughput-log parser finds it, not MoonGen itself)
    logged = parse_histogram_summaries((DATA / "l2-load-latency.stdout").read_text())
    assert len(logged) == 1
    assert logged[0]["samples"] == 1214
    assert line in (DATA / "l2-load-latency.stdout").read_text()
    assert moongen_summary(h, prefix="Histogram") == "[Histogram] " + line


def test_empty_and_tiny_histograms_follow_lua_quirks() -> None:
    empty = MoonGenHistogram.from_values([], [])
    assert moongen_summary(empty) == "Samples: 0, Average: nan ns, StdDev: 0.0 ns, Quartiles: nan/nan/nan ns"
    assert moongen_summary(empty) == lua_print([], [])
    one = MoonGenHistogram.from_values(["1286.4"], [1])
    assert moongen_summary(one) == "Samples: 1, Average: 1286.4 ns, StdDev: nan ns, Quartiles: nan/nan/nan ns"
    three = MoonGenHistogram.from_values([1000, 1500, 2000], [1, 1, 1])
    # The if/elseif chain sets one quartile per sample: q1 at idx 1, q2 at idx 2, q3 never.
    assert moongen_summary(three).endswith("Quartiles: 1500.0/2000.0/nan ns")
    assert lua_quartile_positions(3) == [1, 2, None]
    assert lua_quartile_positions(2) == [1, None, None]
    assert lua_quartile_positions(8) == [2, 4, 6]


def test_summary_against_reference_on_random_histograms() -> None:
    rng = random.Random(2026)
    for n_values in list(range(0, 12)) + [40, 200]:
        for _ in range(5):
            vals = sorted(rng.sample(range(500, 60000), n_values))
            texts = [f"{v * 6.4:.1f}".rstrip("0").rstrip(".") for v in vals]
            counts = [rng.choice([1, 1, 2, 3, 17, 1000]) for _ in vals]
            h = MoonGenHistogram.from_values(texts, counts)
            ref_vals = [float(t) for t in texts]
            assert moongen_summary(h) == lua_print(ref_vals, counts), (texts, counts)
            n, avg, sd, q = lua_calc(ref_vals, counts)
            st = moongen_stats(h)
            assert st.samples == n
            for a, b in [(st.average, avg), (st.stddev, sd), *zip(st.quartiles, q, strict=True)]:
                assert (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, rel=1e-12)
            for p in (0, 1, 25, 50, 90, 99, 99.9, 100):
                assert moongen_percentile(h, p) == lua_percentile(ref_vals, counts, p)


@pytest.fixture(scope="module")
def wiedner_hist(shared_datasets: Path) -> tuple[np.ndarray, np.ndarray]:
    f = (shared_datasets / "containerized-low-latency/measurements/bare-metal/rt-optimized/"
         "latencies-pre-rate10000-repeat0.pcap.zst.bucket_size100.trim_ms0.hist.csv.zst")
    if not f.is_file():
        pytest.skip(f"{f} missing")
    with open(f, "rb") as fh:
        text = zstandard.ZstdDecompressor().stream_reader(fh).read().decode()
    arr = np.loadtxt(io.StringIO(text), delimiter=",", skiprows=1, dtype=np.int64)
    return arr[:, 0], arr[:, 1]


def test_summary_on_histogram_derived_from_real_data(tmp_path: Path, wiedner_hist) -> None:
    buckets, counts = wiedner_hist  # 100 ns buckets, ~1.6 M packets
    # As MoonGen would have saved it: the bucket values as written by Lua's tostring.
    p = tmp_path / "histogram.csv"
    p.write_text("".join(f"{b},{c}\n" for b, c in zip(buckets.tolist(), counts.tolist(), strict=True)))
    h = read_moongen_histogram(p)
    assert h.decimals == 0 and h.count == int(counts.sum())
    np.testing.assert_array_equal(h.values_scaled, buckets)
    line = moongen_summary(h)
    assert line == lua_print(buckets.astype(float).tolist(), counts.tolist())
    # Independent numpy computation (weighted mean, sample standard deviation).
    st = moongen_stats(h)
    mean = np.average(buckets, weights=counts)
    var = np.sum(counts * (buckets - mean) ** 2) / (counts.sum() - 1)
    assert st.average == pytest.approx(mean, rel=1e-12)
    assert st.stddev == pytest.approx(math.sqrt(var), rel=1e-9)
    cum = np.cumsum(counts)
    n = int(cum[-1])
    for j, q in zip((1, 2, 3), st.quartiles, strict=True):
        assert q == buckets[np.searchsorted(cum, math.ceil(j * n / 4), side="right")]

    # The same distribution in 6.4 ns timestamp ticks (value = bucket/100 ticks * 6.4 ns), as
    # decimals: read exactly and summarised like MoonGen.
    ticks = buckets // 100
    texts = [f"{t * 64 // 10}" + (f".{t * 64 % 10}" if t * 64 % 10 else "") for t in ticks.tolist()]
    p2 = tmp_path / "histogram-6.4.csv"
    p2.write_text("".join(f"{t},{c}\n" for t, c in zip(texts, counts.tolist(), strict=True)))
    h2 = read_moongen_histogram(p2)
    assert h2.decimals == 1
    np.testing.assert_array_equal(h2.values_scaled, ticks * 64)
    assert moongen_summary(h2) == lua_print([float(t) for t in texts], counts.tolist())
    # Round trip through the writer is byte-identical.
    out = write_moongen_histogram(tmp_path / "again.csv", h2)
    assert out.read_bytes() == p2.read_bytes()


def test_bad_histogram_lines(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("2080,310\n2086.4;1\n2227.2,305\n")
    with pytest.raises(MoonGenFormatError) as err:
        read_moongen_histogram(bad)
    msg = str(err.value)
    assert str(bad) in msg and "line 2" in msg and "byte offset 9" in msg and "value,count" in msg
    neg = tmp_path / "neg.csv"
    neg.write_text("2080,-3\n")
    with pytest.raises(MoonGenFormatError, match="count '-3'"):
        read_moongen_histogram(neg)
    header = tmp_path / "header.csv"
    header.write_text("value,count\n1,2\n")
    with pytest.raises(MoonGenFormatError, match="line 1"):
        read_moongen_histogram(header)
    # An interrupted write: the incomplete last line is dropped with a warning, the rest kept.
    cut = tmp_path / "cut.csv"
    cut.write_text("2080,310\n2086.4,1\n2227.2,")
    h = read_moongen_histogram(cut)
    assert h.count == 311
    assert len(h.warnings) == 1 and "line 3" in h.warnings[0] and "byte offset 18" in h.warnings[0]
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    assert read_moongen_histogram(empty).count == 0


def test_merge_keeps_exactness() -> None:
    a = MoonGenHistogram.from_values(["10", "12.8"], [1, 2])
    b = MoonGenHistogram.from_values(["12.8", "19.2", "20"], [3, 1, 1])
    m = a.merge(b)
    assert m.decimals == 1
    assert m.values_scaled.tolist() == [100, 128, 192, 200]
    assert m.counts.tolist() == [1, 5, 1, 1]


def test_plain_throughput_log() -> None:
    df = read_throughput_log(DATA / "l2-load-latency.stdout")
    assert len(df) == 10
    assert df.attrs["warnings"] == []
    upd = df[df["kind"] == "update"]
    fin = df[df["kind"] == "final"]
    assert len(upd) == 8 and len(fin) == 2
    assert set(df["device"]) == {"Device: id=0", "Device: id=1"}
    tx = upd[upd["direction"] == "TX"]
    assert tx["device_id"].tolist() == [0, 0, 0, 0]
    assert tx["seq"].tolist() == [0, 1, 2, 3]
    assert tx["mpps"].tolist() == [1.52, 1.52, 1.52, 0.98]  # the ^C line is still read
    assert tx["mbit_framing"].tolist() == [1021, 1022, 1021, 659]
    rx_final = fin[fin["direction"] == "RX"].iloc[0]
    assert rx_final["total_packets"] == 6083950 and rx_final["total_bytes"] == 389372800
    assert rx_final["mpps_stddev"] == 0.01 and rx_final["mbit_stddev"] == 2
    assert rx_final["line"] == 18


def test_csv_stats_and_truncated_lines() -> None:
    df = read_throughput_log(DATA / "moonsniff-stats.csv")
    assert len(df) == 5 and set(df["kind"]) == {"csv"}
    assert df["time_s"].iloc[0] == 1700000001
    assert df["mbit"].iloc[4] == pytest.approx(778.24056320001)
    assert df["total_packets"].iloc[4] == 4560016
    text = "[Device: id=0] TX: 1.52 Mpps, 778 Mbit/s (1021 Mbit/s with framing)\n[Device: id=0] TX: 1.5"
    d2 = parse_throughput(text, "run.log")
    assert len(d2) == 1
    assert len(d2.attrs["warnings"]) == 1 and "run.log: line 2" in d2.attrs["warnings"][0]
    legacy = parse_throughput(
        "[[Device: id=0]] Sent 1983681 packets, current rate 1.98 Mpps, 1015.60 MBit/s, 1332.98 MBit/s wire rate.\n"
        "[Device: id=1] Received 1983034 packets, current rate 1.98 Mpps, 1015.27 MBit/s, 1332.54 MBit/s wire rate.\n"
    )
    assert legacy["direction"].tolist() == ["TX", "RX"]
    assert legacy["total_packets"].tolist() == [1983681, 1983034]
    nan = parse_throughput("[Device: id=0] RX: nan Mpps, -nan Mbit/s (nan Mbit/s with framing)\n")
    assert len(nan) == 1 and math.isnan(nan["mpps"].iloc[0]) and math.isnan(nan["mbit"].iloc[0])


def test_build_command() -> None:
    assert build_command("l2-load-latency", {"dev1": 0, "dev2": 1, "rate": 778.0, "file": "hist.csv"}) == [
        "./build/MoonGen", "examples/l2-load-latency.lua", "0", "1", "--rate", "778", "--file", "hist.csv"]
    assert build_command("moonsniff-sniffer", {"devs": [2, 3], "output": "lat", "runtime": 60, "capture": True},
                         moongen="/opt/MoonGen/build/MoonGen", moongen_options=["--dpdk-config=d.lua"]) == [
        "/opt/MoonGen/build/MoonGen", "--dpdk-config=d.lua", "examples/moonsniff/sniffer.lua", "2", "3",
        "--output", "lat", "--runtime", "60", "--capture"]
    assert build_command("moonsniff-post-processing",
                         {"input": "lat-pre.pcap", "second_input": "lat-post.pcap", "output": "hist"})[2:] == [
        "--input", "lat-pre.pcap", "--second-input", "lat-post.pcap", "--output", "hist"]
    assert build_command("my/script.lua", ["0", "1", "-x"])[1:] == ["my/script.lua", "0", "1", "-x"]
    with pytest.raises(ValueError, match="unknown argument"):
        build_command("l2-load-latency", {"dev1": 0, "dev2": 1, "rat": 5})
    with pytest.raises(ValueError, match="missing required"):
        build_command("l2-load-latency", {"dev1": 0})
    with pytest.raises(ValueError, match="unknown MoonGen script"):
        build_command("l2-load-latenzy", {})
    with pytest.raises(ValueError, match="takes True/False"):
        build_command("moonsniff-sniffer", {"devs": [0, 1], "live": "yes"})


def test_run_moongen_keeps_output(tmp_path: Path) -> None:
    # A real process whose stdout is MoonGen output (MoonGen itself needs DPDK NICs).

    host = LocalHost(log=CommandLog(tmp_path))
    run = run_moongen(host, ["cat", str(DATA / "l2-load-latency.stdout")], name="l2")
    assert run.returncode == 0
    assert read_command_log(tmp_path)[0]["argv"][0] == "cat"
    assert run.stdout_path.read_bytes() == (DATA / "l2-load-latency.stdout").read_bytes()
    assert len(run.throughput) == 10 and run.summaries[0]["samples"] == 1214
    slow = run_moongen(host, [sys.executable, "-c", "import time; print('[Device: id=0] TX: 1.00 Mpps, 512 Mbit/s "
                        "(672 Mbit/s with framing)', flush=True); time.sleep(30)"], name="slow",
                       timeout_s=2)
    assert slow.returncode == -9
    assert len(slow.throughput) == 1  # what was printed before the timeout is kept
    assert "timeout" in slow.stderr_path.read_text()


def test_read_histogram_csv_gives_exact_distribution() -> None:
    d = read_histogram_csv(DATA / "histogram.csv")
    assert isinstance(d, ExactDistribution)
    assert d.count == 1214
    assert d.min == pytest.approx(1984) and d.max == pytest.approx(12800)
    assert moongen_summary(d) == moongen_summary(read_moongen_histogram(DATA / "histogram.csv"))


@pytest.mark.parametrize("path_kind", ["regex", "compiled"])
def test_fast_readers_equal_reference(tmp_path: Path, wiedner_hist, monkeypatch, path_kind: str) -> None:
    if path_kind == "compiled":
        monkeypatch.setattr(mg, "COMPILED_SCAN_BYTES", 0)
    else:
        monkeypatch.setattr(mg, "COMPILED_SCAN_BYTES", 1 << 40)
    buckets, counts = wiedner_hist
    ticks = (buckets // 100).tolist()
    rng = random.Random(5)
    cases = {
        "ints": "".join(f"{b},{c}\n" for b, c in zip(buckets.tolist(), counts.tolist(), strict=True)),
        "decimals": "".join(f"{t * 64 // 10}" + (f".{t * 64 % 10}" if t * 64 % 10 else "") + f",{c}\n"
                            for t, c in zip(ticks, counts.tolist(), strict=True)),
        # Unsorted, repeated values, blank lines, CRLF, spaces, trailing '.', no final newline.
        "messy": "".join(rng.choice(["", "\n", "  \r\n"]) + f" {rng.randint(1, 9999)}.{rng.choice(['', '5', '25'])} , "
                         f"{rng.randint(1, 99)} \r\n" for _ in range(500)) + "7,1",
    }
    for name, text in cases.items():
        p = tmp_path / f"{name}.csv"
        p.write_text(text)
        got = mg.read_moongen_histogram(p)
        ref_values, ref_counts, ref_decimals = read_histogram_reference(p)
        assert got.decimals == ref_decimals, name
        assert got.values_scaled.tolist() == ref_values, name
        assert got.counts.tolist() == ref_counts, name
    # Anything the fast paths do not accept goes to the line-by-line reader (and its messages).
    p = tmp_path / "exp.csv"
    p.write_text("1.5e3,2\n1500,1\n")
    h = mg.read_moongen_histogram(p)
    assert h.values_scaled.tolist() == [1500] and h.counts.tolist() == [3]
    p.write_text("100,1\n200,x\n300,1\n")
    with pytest.raises(MoonGenFormatError, match="line 2"):
        mg.read_moongen_histogram(p)
