"""Plant each known bug in a copy of the tree and run the tests that must catch it.

Every mutation is one exact text replacement in one library file, found by its text (so it still applies
when the file moves; a mutation lists the text of each form the code has had). For each, the tree (without
.venv and .git) is copied to a temporary folder, the bug is planted there, and pytest runs the named tests
against the copy with a short per-test timeout: a mutation is caught when at least one test fails or the
timeout ends the run (a hang). The same tests must pass on the unplanted tree first.

    .venv/bin/python tests/mutations/plant.py            # every mutation (make mutate)
    .venv/bin/python tests/mutations/plant.py --list
    .venv/bin/python tests/mutations/plant.py zero-latency-accepted

Exit status 0 when every mutation is caught, 1 when one survives or no longer applies.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LIB = REPO / "lib" / "benchbook"


@dataclass(frozen=True)
class Mutation:
    name: str
    what: str
    edits: tuple[tuple[str, str], ...]  # (text, planted text): the first text found in lib/ is planted
    tests: tuple[str, ...]
    hint: str = ""  # a file name to prefer when the text occurs in several files


MUTATIONS = (
    Mutation(
        "percentile-guard-removed",
        "discrete percentile rank computed in binary floating point (ceil(p/100*N) without exact decimals): "
        "rank 1000 instead of 999 at N = 1000, p = 99.9",
        (("r = math.ceil(p * total / 100)", "r = math.ceil(float(p) / 100 * total)"),),
        ("tests/analysis/test_percentiles.py",),
        hint="percentiles.py",
    ),
    Mutation(
        "relative-overrides-absolute",
        "with both tolerances set, the relative one replaces the absolute one instead of the larger winning",
        (("dev = max(dev, _dec(self.tolerance_rel) * abs(_dec(self.value)))",
          "dev = _dec(self.tolerance_rel) * abs(_dec(self.value))"),
         ("dev = max(dev, float(self.tolerance_rel) * abs(self.value))",
          "dev = float(self.tolerance_rel) * abs(self.value)")),
        ("tests/reproduce/test_tolerance.py",),
    ),
    Mutation(
        "tolerance-abs-removed",
        "the tolerance band made one-sided: computed - published <= allowed, without abs()",
        (("return abs(shown - _dec(self.value)) <= self._allowed_deviation()",
          "return (shown - _dec(self.value)) <= self._allowed_deviation()"),
         ("return abs(float(computed) - self.value) <= dev", "return (float(computed) - self.value) <= dev")),
        ("tests/reproduce/test_tolerance.py",),
    ),
    Mutation(
        "zero-latency-accepted",
        "the match kernel keeps a latency of 0 (lat < 0 rejected instead of lat <= 0)",
        (("if lat <= 0 or lat >= max_latency:", "if lat < 0 or lat >= max_latency:"),),
        ("tests/analysis/test_latency.py",),
    ),
    Mutation(
        "window-eviction-off-by-one",
        "the full-window eviction runs one entry late (tail - head > window): the ring overwrites the oldest "
        "waiting packet before it leaves the table, so its slot is freed for the wrong packet",
        (("if tail - head >= window:", "if tail - head > window:"),),
        ("tests/analysis/test_latency.py",),
    ),
    Mutation(
        "deletion-without-tombstone",
        "a packet leaving the match table always empties its slot (never a tombstone): keys further along its "
        "probe run become unreachable and their post copies go unmatched",
        (("    if tab[2 * ((s + 1) & tmask)] == EMPTY:\n        tab[2 * s] = EMPTY",
          "    if True:\n        tab[2 * s] = EMPTY"),),
        ("tests/analysis/test_latency.py",),
    ),
    Mutation(
        "kernel-cache-ignores-dependencies",
        "numba's disk cache keyed on the kernel's own file only: a kernel keeps running the code it inlined from "
        "another module before that module changed",
        (('    if options.get("cache") and getattr(d, "_cache", None) is not None:', "    if False:"),),
        ("tests/test_kernel_cache.py",),
    ),
    Mutation(
        "content-key-ipv6-checksum-kept",
        "the content key zeroes the UDP/TCP checksum over IPv4 only: an IPv6 capture with offloaded checksums "
        "matches 0 of 50",
        (("        elif etype == 0x86DD and L >= l3 + 40:", "        elif False:"),),
        ("tests/analysis/test_content_key.py",),
    ),
    Mutation(
        "hdr-accepts-one-past-range",
        "the recording kernel's range check one slot late: the first untrackable value is written past the "
        "counts array instead of refused",
        (("        if idx >= limit:\n            n_bad += 1", "        if idx > limit:\n            n_bad += 1"),),
        ("tests/analysis/test_hdr_properties.py",),
    ),
    Mutation(
        "pcapng-section-keeps-interfaces",
        "a new pcapng section keeps the previous section's interfaces: its packets take the first section's "
        "timestamp resolution (x1000 from microseconds)",
        (("                seen_shb = True\n                ifs = _Interfaces()\n",
          "                seen_shb = True\n"),),
        ("tests/capture/test_reader.py::test_second_pcapng_section_uses_its_own_interfaces_and_byte_order",),
    ),
    Mutation(
        "sweep-resume-keeps-killed-run",
        "sweep --resume counts a run left 'running' by a killed process as done instead of moving it aside "
        "and running the point again",
        (('        if status == "complete":\n            p["status"] = "complete"',
          '        if status in ("complete", "running"):\n            p["status"] = "complete"'),),
        ("tests/experiment/test_sweep_resume.py",),
    ),
    Mutation(
        "publish-ignores-changed-output",
        "publishing accepts a run whose output changed after it was recorded (the digest compared with itself)",
        (('        if digest != entry["sha256"]:', '        if digest != digest:'),),
        ("tests/publish/test_verify.py",),
    ),
)


def find_target(m: Mutation) -> tuple[Path, str, str]:
    """(file, text, planted text) of the first of the mutation's edits that applies to exactly one place."""
    sources = {p: p.read_text() for p in LIB.rglob("*.py")}
    problems = []
    for old, new in m.edits:
        hits = [p for p, text in sources.items() if old in text]
        if len(hits) > 1 and m.hint:
            hits = [p for p in hits if p.name == m.hint]
        if len(hits) == 1 and sources[hits[0]].count(old) == 1:
            return hits[0], old, new
        where = ", ".join(f"{p.relative_to(REPO)} ({sources[p].count(old)} times)" for p in hits) or "no file"
        problems.append(f"{old!r} occurs in {where}")
    raise LookupError(f"{m.name}: no edit applies to exactly one place under lib/benchbook: " + "; ".join(problems))


def copy_tree(dest: Path) -> None:
    shutil.copytree(REPO, dest, symlinks=True, ignore=shutil.ignore_patterns(
        ".venv", ".git", "__pycache__", ".pytest_cache", ".ipynb_checkpoints", "runs", "mutate", "mutate-site",
        "fuzz", "fuzz-site", "*.sock"))


def run_pytest(root: Path, tests: tuple[str, ...], timeout_s: int) -> tuple[int, str, float]:
    env = dict(os.environ, PYTHONPATH=str(root / "lib"), PYTHONDONTWRITEBYTECODE="1")
    env.setdefault("BENCHBOOK_SHARED", str(REPO.parent / "shared"))
    cmd = [str(REPO / ".venv" / "bin" / "python"), "-m", "pytest", "-v", "-p", "no:cacheprovider",
           f"--timeout={timeout_s}", "-o", "timeout_method=thread", *tests]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True)
    return proc.returncode, proc.stdout + proc.stderr, time.monotonic() - t0


def verdict_of(rc: int, out: str) -> tuple[bool, list[str]]:
    """(caught, [what failed]) from a pytest run on the planted copy."""
    failed = re.findall(r"^(?:FAILED|ERROR) (\S+)", out, re.M)
    if "Timeout" in out and "+++++" in out:
        started = re.findall(r"^(tests/\S+::\S+)", out, re.M)
        failed.append(f"{started[-1] if started else '?'} (TIMEOUT: the run was ended by pytest-timeout)")
    return rc != 0 and bool(failed), failed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="mutations to plant (default: all)")
    ap.add_argument("--list", action="store_true", help="list the mutations and exit")
    ap.add_argument("--timeout", type=int, default=120, help="per-test timeout in seconds on the planted copy")
    ap.add_argument("--keep", action="store_true", help="keep the planted copies and their pytest output")
    args = ap.parse_args(argv)
    chosen = [m for m in MUTATIONS if not args.names or m.name in args.names]
    unknown = set(args.names) - {m.name for m in MUTATIONS}
    if unknown:
        ap.error(f"unknown mutation(s): {', '.join(sorted(unknown))}")
    if args.list:
        for m in MUTATIONS:
            print(f"{m.name}: {m.what}")
            for old, new in m.edits:
                print(f"    {old!r} -> {new!r}")
            print(f"    tests: {' '.join(m.tests)}")
        return 0
    survived = 0
    for m in chosen:
        try:
            target, old, new = find_target(m)
        except LookupError as exc:
            print(f"NOT APPLIED  {exc}")
            survived += 1
            continue
        rel = target.relative_to(REPO)
        rc, out, secs = run_pytest(REPO, m.tests, args.timeout)
        if rc != 0:
            print(f"BASELINE FAILS  {m.name}: {' '.join(m.tests)} fail on the unplanted tree; fix that first")
            print(out[-3000:])
            survived += 1
            continue
        tmp = Path(tempfile.mkdtemp(prefix=f"bb-mutate-{m.name}-"))
        try:
            copy_tree(tmp / "tree")
            planted = tmp / "tree" / rel
            planted.write_text(planted.read_text().replace(old, new, 1))
            rc, out, secs = run_pytest(tmp / "tree", m.tests, args.timeout)
            (tmp / "pytest.log").write_text(out)
            caught, failed = verdict_of(rc, out)
            status = "CAUGHT  " if caught else "SURVIVED"
            print(f"{status} {m.name} in {rel} ({secs:.0f} s): {m.what}")
            for f in failed:
                print(f"           failed: {f}")
            if not caught:
                survived += 1
                print(out[-2000:])
        finally:
            if args.keep:
                print(f"           kept: {tmp}")
            else:
                shutil.rmtree(tmp, ignore_errors=True)
    print(f"{len(chosen) - survived} of {len(chosen)} planted bugs caught")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
