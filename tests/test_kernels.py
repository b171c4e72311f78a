"""benchbook.kernels: the AOT build of the numba kernels gives what numba's JIT gives, is used only while
current, and lets a command run without importing numba.

The commands run in fresh processes on generated captures with known truth. Under the JIT
(BENCHBOOK_KERNELS=jit) they always run and must give the truth, so a changed kernel is tested whether or not the
build is current; the same commands on the AOT build (`make` builds it) must give the same tables. Only the
comparisons with the build skip, saying why, where there is no current build (edited kernel sources, a copy of
the tree without build/, a mutation run).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from benchbook import kernels as kn
from benchbook.analysis import match_kernel as mk
from benchbook.capture.synth import make_capture_pair
from benchbook.capture.tcp_synth import make_tcp_capture
from benchbook.commands.kernels import kernel_sources
from benchbook.paths import REPO_ROOT

BENCHBOOK = str(REPO_ROOT / ".venv" / "bin" / "benchbook")


def _require_build() -> dict:
    status = _run(["kernels", "status"], "auto").stdout
    if not status.startswith("AOT build"):
        pytest.skip(f"no current AOT kernel build here ({status.strip()}); `make kernels` builds it (the JIT "
                    f"tests of this file ran regardless)")
    return json.loads((kn.KERNELS_DIR / kn.MANIFEST).read_text())


def _run(args: list[str], mode: str, **env: str) -> subprocess.CompletedProcess:
    e = dict(os.environ, BENCHBOOK_KERNELS=mode, **env)
    return subprocess.run([BENCHBOOK, *args], capture_output=True, text=True, env=e)


def _tables_equal(a, b, name: str) -> None:
    ta, tb = pq.read_table(a / name), pq.read_table(b / name)
    assert ta.num_rows > 0, name
    assert ta.schema == tb.schema, name
    # pandas' equals: NaN in the same cell counts as equal (a flow without samples has a NaN mean)
    assert ta.to_pandas().equals(tb.to_pandas()), f"{name} differs between the JIT and the AOT build"


def _summary(path) -> dict:
    return json.loads((path / "summary.json").read_text())


@pytest.fixture(scope="module")
def captures(tmp_path_factory):
    d = tmp_path_factory.mktemp("kernels")
    truth_tcp = make_tcp_capture(d / "tcp.pcap", flows=5, segments=3000, loss=0.002, reorder=0.002, seed=11)
    truth_lat = make_capture_pair(d / "pre.pcap", d / "post.pcap", 200_000, loss=0.001, duplicate=0.001,
                                  reorder=0.001, seed=5)
    return d, truth_tcp, truth_lat


LATENCY_KEYS = {"id": ["--id-offset", "42"], "id-big-endian": ["--id-offset", "42", "--id-big-endian"],
                "content": ["--content-key"]}


@pytest.fixture(scope="module")
def jit_outputs(captures, tmp_path_factory) -> dict[str, Path]:
    """`benchbook tcp` and `benchbook latency` in each key mode under the JIT, once for the file."""
    d, _, _ = captures
    out = tmp_path_factory.mktemp("jit")
    runs = {"tcp": ["tcp", str(d / "tcp.pcap")],
            **{k: ["latency", str(d / "pre.pcap"), str(d / "post.pcap"), *v] for k, v in LATENCY_KEYS.items()}}
    for name, args in runs.items():
        r = _run([*args, "-o", str(out / name)], "jit")
        assert r.returncode == 0, (name, r.stderr)
    return {name: out / name for name in runs}


def test_tcp_analysis_under_the_jit_gives_the_truth(captures, jit_outputs):
    _, truth, _ = captures
    s = _summary(jit_outputs["tcp"])
    assert s["packets"] == truth.packets
    flows = pq.read_table(jit_outputs["tcp"] / "flows.parquet").to_pandas()
    assert len(flows) == len(truth.flows)
    by_port = flows.set_index("sport")
    for t in truth.flows:
        r = by_port.loc[t["sport"]]
        assert r["orig_unique_bytes"] == t["unique_bytes"]
        assert r["orig_payload_bytes"] == t["payload_bytes"]
        assert r["orig_retransmissions_tcptrace"] == t["retransmissions"]


@pytest.mark.parametrize("key", list(LATENCY_KEYS))
def test_latency_matching_under_the_jit_gives_the_truth(captures, jit_outputs, key):
    _, _, truth = captures
    s = _summary(jit_outputs[key])
    for name in ("pre", "post", "matched", "lost", "duplicates"):
        assert s[name] == getattr(truth, name), name
    lat = pq.read_table(jit_outputs[key] / "latencies.parquet").to_pandas()
    assert len(lat) == truth.matched
    kept = truth.latency_ns[truth.latency_ns >= 0]
    assert sorted(lat["latency_ns"].tolist()) == sorted(kept.tolist())


def test_tcp_analysis_is_the_same_under_the_aot_build_and_the_jit(captures, jit_outputs, tmp_path):
    _require_build()
    d, truth, _ = captures
    out = tmp_path / "auto"
    r = _run(["tcp", str(d / "tcp.pcap"), "-o", str(out)], "auto")
    assert r.returncode == 0, r.stderr
    for name in ("flows.parquet", "intervals.parquet", "rtt.parquet"):
        _tables_equal(jit_outputs["tcp"], out, name)
    s = _summary(out)
    assert s == _summary(jit_outputs["tcp"])
    assert s["packets"] == truth.packets


@pytest.mark.parametrize("key", list(LATENCY_KEYS))
def test_latency_matching_is_the_same_under_the_aot_build_and_the_jit(captures, jit_outputs, tmp_path, key):
    _require_build()
    d, _, truth = captures
    out = tmp_path / "auto"
    r = _run(["latency", str(d / "pre.pcap"), str(d / "post.pcap"), "-o", str(out), *LATENCY_KEYS[key]], "auto")
    assert r.returncode == 0, r.stderr
    _tables_equal(jit_outputs[key], out, "latencies.parquet")
    assert (jit_outputs[key] / "latency.hlog").read_bytes().split(b"\n")[3:] == \
        (out / "latency.hlog").read_bytes().split(b"\n")[3:]
    assert _summary(out)["matched"] == truth.matched


def _tcp_and_latency(d, tmp_path) -> list[list[str]]:
    """The two commands that run kernels in reader threads, on the generated captures."""
    return [["tcp", str(d / "tcp.pcap"), "-o", str(tmp_path / "t")],
            ["latency", str(d / "pre.pcap"), str(d / "post.pcap"), "-o", str(tmp_path / "l"), "--content-key"]]


def test_a_command_on_the_aot_build_never_imports_numba(captures, tmp_path):
    _require_build()
    d, _, _ = captures
    code = ("import sys; from benchbook.cli import main\n"
            "try:\n    main()\nexcept SystemExit as e:\n    rc = e.code\n"
            "print('NUMBA' if 'numba' in sys.modules else 'NO-NUMBA', rc)\n")
    for args in _tcp_and_latency(d, tmp_path):
        r = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                           env=dict(os.environ, BENCHBOOK_KERNELS="auto"))
        assert r.stdout.splitlines()[-1] in ("NO-NUMBA 0", "NO-NUMBA None"), (args[0], r.stdout[-500:], r.stderr)
    r = subprocess.run([sys.executable, "-c", code, "tcp", str(d / "tcp.pcap"), "-o", str(tmp_path / "j")],
                       capture_output=True, text=True, env=dict(os.environ, BENCHBOOK_KERNELS="jit"))
    assert r.stdout.splitlines()[-1].startswith("NUMBA "), r.stdout[-500:]


def test_a_stale_build_is_not_used(captures, tmp_path):
    """A manifest whose sources, CPU, Python or extensions do not match is not loaded (no build needed: the
    checks come before any extension is opened)."""
    d, truth, _ = captures
    copy = tmp_path / "kernels"
    copy.mkdir()
    sources = kernel_sources()
    good = {"sources": sources, "sources_sha256": kn.sources_digest([kn._package_root() / s for s in sources]),
            "cpu": kn.cpu_fingerprint(), "python": list(sys.version_info[:2]),
            "exports": [{"kernel": "benchbook.analysis.match_kernel.id_keys", "extension": "absent.so",
                         "symbol": "x", "pattern": []}]}

    def status(**change) -> str:
        (copy / kn.MANIFEST).write_text(json.dumps({**good, **change}))
        return _run(["kernels", "status"], "auto", BENCHBOOK_KERNELS_DIR=str(copy)).stdout

    assert "kernel sources changed" in status(sources_sha256="0" * 64)  # as after an edit of a kernel source
    assert "no longer matches the package" in status(sources=[*sources, "analysis/gone.py"])
    assert "another CPU" in status(cpu="another-cpu")
    assert "another Python" in status(python=[3, 1])
    assert "absent.so is missing" in status()
    r = _run(["tcp", str(d / "tcp.pcap"), "-o", str(tmp_path / "out")], "auto", BENCHBOOK_KERNELS_DIR=str(copy))
    assert r.returncode == 0, r.stderr
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["packets"] == truth.packets
    assert "BENCHBOOK_KERNELS=jit" in _run(["kernels", "status"], "jit").stdout


def test_calls_the_build_was_not_compiled_for_take_the_jit_with_the_same_result(tmp_path):
    """In process: id_keys on arrays of other types (int32 caplen, a writable buffer) than the build's (on
    whichever path is in use here)."""

    rng = np.random.default_rng(3)
    n = 1000
    data = rng.integers(0, 256, n * 64, dtype=np.uint8)
    offsets = np.arange(n, dtype=np.int64) * 64
    caplen = np.full(n, 64, np.uint32)
    outs = []
    for cap, buf in ((caplen, data), (caplen.astype(np.int32), data.copy())):
        hi, lo, ok = np.empty(n, np.uint64), np.empty(n, np.uint64), np.empty(n, np.bool_)
        mk.id_keys(buf, offsets, cap, 42, 8, False, hi, lo, ok)
        outs.append(lo)
    expect = np.frombuffer(data.reshape(n, 64)[:, 42:50].tobytes(), "<u8")
    assert np.array_equal(outs[0], expect)
    assert np.array_equal(outs[1], expect)


def test_argument_patterns_refuse_what_the_compiled_code_cannot_take():
    pat = kn._pattern_types([["a", "<i8", 1, "C", False], ["s", "int"], ["a", "|u1", 1, "C", True]])
    a = np.zeros(4, np.int64)
    ro = np.zeros(4, np.uint8)
    ro.flags.writeable = False
    assert kn._fits(pat, (a, 3, ro))
    assert kn._fits(pat, (a, np.int64(3), np.zeros(4, np.uint8)))  # a writable buffer where read-only compiled
    assert not kn._fits(pat, (a.astype(np.int32), 3, ro))  # dtype
    assert not kn._fits(pat, (a[::2], 3, ro))  # not C-contiguous
    assert not kn._fits(pat, (np.zeros((2, 2), np.int64), 3, ro))  # dimensions
    assert not kn._fits(pat, (a, 3.0, ro))  # a float where an int64 was compiled
    assert not kn._fits(pat, (a, True, ro))  # a bool is not an int here: the JIT types it as boolean
    assert not kn._fits(pat, (a, 3))  # arity
    mutable = kn._pattern_types([["a", "|u1", 1, "C", False]])
    assert not kn._fits(mutable, (ro,))  # read-only data where the code may write


def test_on_the_jit_numba_is_imported_before_the_reader_threads(captures, tmp_path):
    """A worker thread importing numba while another thread imports modules can end in importlib's
    _DeadlockError (a JIT run of `benchbook latency` in the suite did): the commands import it in the main
    thread before they start their readers."""
    d, _, _ = captures
    code = ("import sys, threading\n"
            "seen = []\n"
            "class Spy:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name == 'numba':\n"
            "            seen.append(threading.current_thread().name)\n"
            "sys.meta_path.insert(0, Spy())\n"
            "from benchbook.cli import main\n"
            "try:\n    main()\nexcept SystemExit as e:\n    rc = e.code\n"
            "print('IMPORTED-IN', seen, rc)\n")
    for args in _tcp_and_latency(d, tmp_path):
        r = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                           env=dict(os.environ, BENCHBOOK_KERNELS="jit"))
        assert r.stdout.splitlines()[-1] in ("IMPORTED-IN ['MainThread'] 0", "IMPORTED-IN ['MainThread'] None"), (
            args[0], r.stdout[-500:], r.stderr[-500:])
