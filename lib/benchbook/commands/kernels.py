"""`benchbook kernels build|status`: the ahead-of-time build of the numba kernels (see benchbook.kernels).

`build` imports every kernel module, runs a warm-up on small generated captures under numba's JIT (TCP
analysis; latency matching in each key mode, an interval log and a MoonGen histogram read back: two parts at
once) and compiles every overload the warm-up used with numba's pycc, one extension module each, for this
machine's CPU, with a manifest of the sources it was compiled from. It does nothing when that manifest is
current. `make` runs it after installing the venv.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

KERNEL_IMPORT = re.compile(r"^from benchbook\.kernels import .*\bnjit\b", re.M)


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="The ahead-of-time build of the numba kernels (start-up without numba).",
                        no_args_is_help=True)
    group.command("build")(build)
    group.command("status")(status)
    app.add_typer(group, name="kernels")


def build(force: bool = typer.Option(False, "--force", help="Rebuild even when the build is current.")) -> None:
    """Compile the kernels ahead of time (build/kernels/); a no-op when the build is current."""
    from benchbook import kernels as kn

    sources = kernel_sources()
    digest = kn.sources_digest([kn._package_root() / s for s in sources])
    manifest_path = kn.KERNELS_DIR / kn.MANIFEST
    if not force and os.environ.get(kn.MODE_ENV, "auto") == "auto":
        try:
            old = json.loads(manifest_path.read_text())
        except (OSError, ValueError):
            old = {}
        if (old.get("sources_sha256") == digest and old.get("sources") == sources
                and old.get("cpu") == kn.cpu_fingerprint()
                and all((kn.KERNELS_DIR / e["extension"]).is_file() for e in old.get("exports", []))):
            typer.echo(f"kernels: AOT build current ({len(old['exports'])} overloads, {manifest_path})")
            return
    t0 = time.monotonic()
    try:
        manifest = compile_kernels(sources, digest)
    except Exception as exc:  # the JIT path still works: say why there is no AOT build, do not fail make
        typer.echo(f"kernels: no AOT build ({type(exc).__name__}: {exc}); the kernels run under numba's JIT",
                   err=True)
        raise typer.Exit(1) from None
    typer.echo(f"kernels: compiled {len(manifest['exports'])} overloads of {len(manifest['kernels'])} kernels "
               f"in {time.monotonic() - t0:.0f} s -> {manifest_path}")


def status() -> None:
    """Say whether the AOT build is in use, and why not."""
    from benchbook import kernels as kn

    typer.echo(kn.aot_status())


def kernel_sources() -> list[str]:
    """Package-relative paths of every module that defines kernels and of every benchbook module they import
    (constants, intrinsics; benchbook.kernels.dependency_sources): an edit in any of them makes the build stale."""
    from benchbook import kernels as kn

    root = kn._package_root()
    defining = [path for path in sorted(root.rglob("*.py"))
                if "__pycache__" not in path.parts and KERNEL_IMPORT.search(path.read_text(encoding="utf-8"))]
    rels = {path.relative_to(root).as_posix() for path in kn.dependency_sources(defining)}
    return ["kernels.py", *sorted(rels - {"kernels.py"})]


def _module_name(rel: str) -> str:
    return "benchbook." + rel.removesuffix(".py").replace("/", ".")


def compile_kernels(sources: list[str], digest: str) -> dict[str, Any]:
    """Warm up under the JIT, then pycc-compile what the warm-up used; returns the manifest written.

    One process pool does both: each part of the warm-up (WARM_UP_PARTS) runs in a worker, and every overload a
    part compiled is pycc-compiled in whichever worker is free, the largest first, while other parts still warm
    up; meanwhile this process compiles the C sources every module links (_compile_shared_mixins)."""
    import heapq
    import importlib
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait

    import llvmlite.binding as llvm

    from benchbook import kernels as kn

    for rel in sources[1:]:
        importlib.import_module(_module_name(rel))
    kn.activate_jit()
    out_dir = kn.KERNELS_DIR
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".kernels-", dir=out_dir.parent))
    try:
        cpu = llvm.get_host_cpu_name()
        exports: list[tuple[str, str, Any, list]] = []  # kernel key, symbol, signature, pattern
        files: dict[int, str] = {}
        pending: list[tuple[int, int]] = []  # (-size, export index): a heap, the largest first
        workers = max(1, min(len(WARM_UP_PARTS), os.cpu_count() or 1))
        # one extension per overload: pycc typed one of the matcher kernels wrongly when it compiled every kernel
        # into one module (numba 0.68), while each alone compiles and runs as under the JIT. Forked workers
        # inherit the imported kernel modules and the JIT's targets.
        _REPORTS[:] = [multiprocessing.get_context("fork").SimpleQueue()]
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            running: dict[Future, int | None] = {pool.submit(_warm_up_part, part): None for part in WARM_UP_PARTS}
            os.nice(5)  # this process only compiles the C sources and waits: the first part's chain goes first
            mixins = _compile_shared_mixins(work / "mixins")
            while running:
                done, _ = wait(running, timeout=0.1, return_when=FIRST_COMPLETED)
                for fut in done:
                    i = running.pop(fut)
                    result = fut.result()  # a failed warm-up or compilation raises here
                    if i is not None:
                        files[i] = result
                while not _REPORTS[0].empty():
                    for key, sig, pattern, size in _REPORTS[0].get():
                        if any(e[0] == key and str(e[2]) == str(sig) for e in exports):
                            continue  # reported before, or another part compiled it too
                        symbol = re.sub(r"\W", "_", f"{key}__{sum(1 for e in exports if e[0] == key)}")
                        heapq.heappush(pending, (-size, len(exports)))
                        exports.append((key, symbol, sig, pattern))
                # a warm-up part holds a worker too; the parts' last reports are read before the loop ends
                while pending and len(running) < workers:
                    _, i = heapq.heappop(pending)
                    key, symbol, sig, _ = exports[i]
                    running[pool.submit(_compile_one, i, key, symbol, sig, mixins, work, cpu)] = i
        if not exports:
            raise RuntimeError("the warm-up compiled no kernel")
        manifest = {
            "sources": sources, "sources_sha256": digest, "cpu": kn.cpu_fingerprint(),
            "llvm_cpu": cpu, "python": list(sys.version_info[:2]),
            "kernels": sorted({key for key, *_ in exports}),
            # in the order of the kernels and their signatures, whichever part finished first
            "exports": sorted(({"kernel": key, "extension": f, "module": kn.EXTENSION, "symbol": symbol,
                                "signature": str(sig), "pattern": pattern}
                               for i, (key, symbol, sig, pattern) in enumerate(exports) for f in [files[i]]),
                              key=lambda e: (e["kernel"], e["signature"])),
        }
        shutil.rmtree(work / "mixins")
        (work / kn.MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
        # whole or not at all: the new directory replaces the old in one rename
        old = out_dir.with_name(out_dir.name + ".old")
        shutil.rmtree(old, ignore_errors=True)
        if out_dir.exists():
            out_dir.rename(old)
        work.rename(out_dir)
        shutil.rmtree(old, ignore_errors=True)
        return manifest
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _warm_up_part(part: str) -> None:
    """Run one part of the warm-up in this (forked) worker; after each of its steps, put what it has compiled so
    far into _REPORTS (_overloads), so that pycc can start on a kernel while the part goes on."""
    if part != next(iter(WARM_UP_PARTS)):
        os.nice(5)  # the first part and the pycc of its largest kernel are the longest chain: let it run first
    with tempfile.TemporaryDirectory(prefix="benchbook-kernels-") as tmp:
        WARM_UP_PARTS[part](Path(tmp), lambda: _REPORTS[0].put(_overloads()))
    _REPORTS[0].put(_overloads())


def _overloads() -> list[tuple[str, Any, list, int]]:
    """Each overload compiled in this process as (kernel key, signature, argument pattern, size of its LLVM IR
    with what it inlined: a proxy for how long pycc takes)."""
    from benchbook import kernels as kn

    found = []
    for k in kn.kernels():
        if k.inline or k.dispatcher is None:
            continue
        for args, cres in sorted(k.dispatcher.overloads.items(), key=lambda kv: str(kv[0])):
            pattern = [kn.arg_pattern(t) for t in args]
            if all(p is not None for p in pattern):
                # a kernel another part compiled first is loaded from numba's cache, whose IR cannot be read
                size = 0 if getattr(cres.library, "_disable_inspection", False) else len(cres.library.get_llvm_str())
                found.append((k.key, cres.signature, pattern, size))
    return found


_REPORTS: list[Any] = []  # the queue the warm-up workers report on (set before the pool forks them)


def _compile_shared_mixins(build_dir: Path) -> list[str]:
    """Compile once the C sources numba's pycc links into every extension module (its module glue, numba's
    helper library, dict, list and set objects, the NRT): 2.8 s of the 3.6 s each module took when each
    compiled them again. Every module has the same name (EXTENSION, in files of their own), so the glue, which
    holds the name, is the same for all."""
    from numba.pycc import CC

    from benchbook import kernels as kn

    cc = CC(kn.EXTENSION)
    return cc._toolchain.compile_objects(cc._get_mixin_sources(), str(build_dir),
                                         include_dirs=cc._toolchain.get_python_include_dirs(),
                                         macros=cc._get_mixin_defines(), extra_cflags=cc._get_extra_cflags())


def _compile_one(i: int, key: str, symbol: str, sig: Any, mixins: list[str], work: Path, cpu: str) -> str:
    """pycc-compile one overload of kernel `key` into its own extension module, named EXTENSION in the file
    {EXTENSION}_{i}; returns the file name."""
    from numba.pycc import CC
    from numba.pycc import compiler as pycc_compiler

    from benchbook import kernels as kn

    class ReleaseGil(pycc_compiler.Flags):  # the wrappers release the GIL, as the JIT's nogil kernels do
        def __init__(self, *a: Any, **kw: Any) -> None:
            super().__init__(*a, **kw)
            self.release_gil = True

    class SharedMixinCC(CC):  # links the C sources compiled once (_compile_shared_mixins)
        def _compile_mixins(self, build_dir: str) -> list[str]:
            return list(mixins)

    cc = SharedMixinCC(kn.EXTENSION)
    cc.output_file = cc.output_file.replace(kn.EXTENSION, f"{kn.EXTENSION}_{i}", 1)
    cc.output_dir = str(work)
    cc.target_cpu = cpu
    cc.verbose = False
    cc.export(symbol, sig)(next(k for k in kn.kernels() if k.key == key).py_func)
    saved = pycc_compiler.Flags
    pycc_compiler.Flags = ReleaseGil
    try:
        cc.compile()
    finally:
        pycc_compiler.Flags = saved
    so = work / cc.output_file
    if not so.is_file():
        raise RuntimeError(f"pycc wrote no {so.name} for {symbol}")
    return so.name


def _warm_up_tcp(tmp: Path, report: Callable[[], None]) -> None:
    """TCP analysis of a generated capture, as pcap and as pcapng."""
    import warnings

    import numpy as np

    from benchbook.analysis import tcp_flows
    from benchbook.analysis.tcp_report import analyze_tcp
    from benchbook.capture.reader import open_capture
    from benchbook.capture.tcp_synth import make_tcp_capture
    from benchbook.capture.writer import write_pcapng

    tmp.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tcp = tmp / "tcp.pcap"
        make_tcp_capture(tcp, flows=3, segments=400, loss=0.01, reorder=0.01, seed=1)
        report()
        analyze_tcp([tcp], tmp / "tcp-out")
        report()  # the flow kernel, the largest: pycc can start on it
        for ch in open_capture(tcp, 1 << 16):  # the same packets as pcapng
            write_pcapng(tmp / "tcp.pcapng", ch.ts_ns, (ch.data, ch.offsets, ch.caplen.astype(np.int64)))
            break
        analyze_tcp([tmp / "tcp.pcapng"], tmp / "tcp-out-ng")
        state = tcp_flows.new_state(flows=2)  # a flow table that grows
        tcp_flows.grow_flows(state)


def _warm_up_latency(tmp: Path, report: Callable[[], None]) -> None:
    """Latency matching in each key mode, an interval log read back, a MoonGen histogram, pcap writing."""
    import contextlib
    import warnings

    import numpy as np

    from benchbook.analysis.hdr import HdrHistogram
    from benchbook.analysis.hist_report import load_histograms
    from benchbook.analysis.latency import ContentKey, IdKey
    from benchbook.analysis.latency_report import analyze_captures
    from benchbook.capture.synth import make_capture_pair
    from benchbook.capture.writer import PcapWriter
    from benchbook.tools.moongen_histogram import read_moongen_histogram

    tmp.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pre, post = tmp / "pre.pcap", tmp / "post.pcap"
        make_capture_pair(pre, post, 20_000, loss=0.01, duplicate=0.01, reorder=0.01, seed=1)
        for i, key in enumerate((IdKey(offset=42), IdKey(offset=42, byteorder="big"), ContentKey())):
            analyze_captures(pre, post, tmp / f"lat-{i}", key)
        report()

        def no_exact(path: Path) -> Any:
            raise ValueError(f"{path}: not an interval log")

        load_histograms([tmp / "lat-0" / "latency.hlog"], no_exact)
        # kernels that only some inputs reach: a value a histogram refuses, pcap writing
        h = HdrHistogram(1, 1_000_000, 3)
        h.counts_indices(np.arange(1, 100, dtype=np.int64))
        with contextlib.suppress(ValueError):
            h.record(np.array([5, 10**9], np.int64))
        with PcapWriter(tmp / "w.pcap") as w:
            w.write(np.arange(3, dtype=np.int64), [b"\0" * 60] * 3)
        # large enough for the compiled scan (COMPILED_SCAN_BYTES)
        (tmp / "moongen.csv").write_text("".join(f"{v}.5,{v % 7 + 1}\n" for v in range(100, 80_000)))
        read_moongen_histogram(tmp / "moongen.csv")


# the warm-up in parts that run at once (compile_kernels), the longest first; each calls its report argument
# after a step whose kernels pycc can start on
WARM_UP_PARTS: dict[str, Callable[[Path, Callable[[], None]], None]] = {
    "tcp": _warm_up_tcp, "latency": _warm_up_latency}
