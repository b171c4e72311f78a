"""numba checks a cached kernel against its own source file only, yet the compiled code holds what it inlined
from other modules. benchbook.kernels keys every kernel's cache on the sources of the modules it imports as
well: in a copy of the package, a kernel runs under the JIT with its on-disk cache, a helper in another module
is changed, and a fresh interpreter (no cache cleared) must run the new code, then load it from the cache."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchbook import kernels as kn
from benchbook.paths import REPO_ROOT

# id_keys reads 8-byte little-endian ids through match_intrinsics.load8 (an intrinsic, inlined)
ID_KEYS = """
import json
import numpy as np
from benchbook.analysis import match_kernel as mk
n = 5
data = np.zeros(n * 64, np.uint8)
for k in range(n):
    data[k * 64 + 42] = k
hi, lo, ok = np.empty(n, np.uint64), np.empty(n, np.uint64), np.empty(n, np.bool_)
mk.id_keys(data, np.arange(n, dtype=np.int64) * 64, np.full(n, 64, np.uint32), 42, 8, False, hi, lo, ok)
st = mk.id_keys.stats
print(json.dumps({"ids": lo.tolist(), "hits": sum(st.cache_hits.values()), "misses": sum(st.cache_misses.values()),
                  "module": mk.__file__}))
"""

# payload_bits (tcp_rules, an @njit(inline="always") helper) reached through a kernel of another module: a copy of
# the shape tcp_flows has, so that the test does not compile the whole TCP kernel
CALLER = '''
from benchbook.analysis import tcp_rules as tr
from benchbook.kernels import njit


@njit(cache=True)
def zeek_retransmission(start, end, high):
    return tr.payload_bits(start, end, high, 0, False) & tr.RX_ZEEK
'''
PAYLOAD_BITS = """
import json
from benchbook.analysis import mutant_caller as mc
r = mc.zeek_retransmission(10, 20, 20)
st = mc.zeek_retransmission.stats
print(json.dumps({"ids": [int(r)], "hits": sum(st.cache_hits.values()), "misses": sum(st.cache_misses.values()),
                  "module": mc.__file__}))
"""


def _copy_package(tmp: Path) -> Path:
    lib = tmp / "lib"
    shutil.copytree(REPO_ROOT / "lib" / "benchbook", lib / "benchbook",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return lib


def _run(lib: Path, code: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "NUMBA_DISABLE_JIT")}
    env.update(PYTHONPATH=str(lib), BENCHBOOK_KERNELS="jit")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=lib, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.splitlines()[-1])
    assert Path(out["module"]).is_relative_to(lib), "the copy, not the checkout, must be imported"
    return out


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1, f"{old!r} not once in {path}"
    path.write_text(text.replace(old, new))
    later = time.time() + 5  # a distinct modification time, as an edit gives
    os.utime(path, (later, later))


@pytest.mark.parametrize("case", ["intrinsic", "inlined-helper"])
def test_a_changed_helper_takes_effect_without_clearing_the_cache(tmp_path, case):
    lib = _copy_package(tmp_path)
    pkg = lib / "benchbook" / "analysis"
    if case == "intrinsic":
        code, expect_before, expect_after = ID_KEYS, [0, 1, 2, 3, 4], [255, 254, 253, 252, 251]
        helper, old, new = (pkg / "match_intrinsics.py", "        return word\n",
                            "        return builder.xor(word, ir.Constant(i64, 0xFF))\n")
    else:
        (pkg / "mutant_caller.py").write_text(CALLER)
        code, expect_before, expect_after = PAYLOAD_BITS, [1], [0]  # [10, 20) does not pass high = 20: zeek's T
        helper, old, new = pkg / "tcp_rules.py", "    if end <= high:\n", "    if end < high:\n"
    first = _run(lib, code)
    assert first["ids"] == expect_before
    assert first["misses"] == 1 and first["hits"] == 0
    again = _run(lib, code)
    assert again["ids"] == expect_before and again["hits"] == 1, "numba's disk cache is in use"
    assert list((pkg / "__pycache__").glob("*.nbi")), "numba cached the kernel in the copy"

    _edit(helper, old, new)
    changed = _run(lib, code)
    assert changed["ids"] == expect_after, "the kernel ran the code compiled before the helper changed"
    assert changed["misses"] == 1 and changed["hits"] == 0
    cached = _run(lib, code)
    assert cached["ids"] == expect_after and cached["hits"] == 1, "the new code is cached in its turn"


def test_dependency_sources_follow_benchbook_imports_and_numba_globals():
    root = kn._package_root()
    names = {p.relative_to(root).as_posix() for p in kn.dependency_sources([root / "analysis" / "match_kernel.py"])}
    assert names == {"analysis/match_kernel.py", "analysis/match_intrinsics.py", "kernels.py", "paths.py"}
    names = {p.relative_to(root).as_posix() for p in kn.dependency_sources([root / "analysis" / "tcp_flows.py"])}
    assert {"analysis/tcp_parse.py", "analysis/tcp_rtt.py", "analysis/tcp_rules.py"} <= names
    assert kn.module_digest("benchbook.analysis.match_kernel") == kn.sources_digest(
        kn.dependency_sources([root / "analysis" / "match_kernel.py"]))
