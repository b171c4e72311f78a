"""numba's cache of a kernel that inlines a helper from another module: without the guard the stale
compiled kernel keeps running after the helper changed; with drop_stale_cache it compiles afresh.
Real numba, real on-disk cache, fresh interpreters."""

from __future__ import annotations

import os
import subprocess
import sys
import time

HELPER = """from numba import njit


@njit(cache=True, inline="always")
def step(x):
    return x + {add}
"""

KERNEL = """from numba import njit

import helper
{guard_import}

@njit(cache=True)
def run(x):
    return helper.step(x)

{guard}
"""

GUARD_IMPORT = "from benchbook.analysis.kernel_cache import drop_stale_cache, module_dispatchers"
GUARD = "drop_stale_cache(module_dispatchers(globals(), __name__), [helper.__file__])"


def _run(folder, module: str) -> int:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["PYTHONPATH"] = os.pathsep.join([str(folder), *sys.path])
    out = subprocess.run([sys.executable, "-c", f"import {module}; print({module}.run(1))"], cwd=folder, env=env,
                         capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr
    return int(out.stdout.strip())


def _write_helper(folder, add: int) -> None:
    path = folder / "helper.py"
    path.write_text(HELPER.format(add=add))
    later = time.time() + add  # a distinct mtime, as an edit would give
    os.utime(path, (later, later))


def test_guard_recompiles_after_an_inlined_helper_changed(tmp_path):
    (tmp_path / "guarded.py").write_text(KERNEL.format(guard_import=GUARD_IMPORT, guard=GUARD))
    (tmp_path / "unguarded.py").write_text(KERNEL.format(guard_import="", guard=""))
    _write_helper(tmp_path, 1)
    assert _run(tmp_path, "guarded") == 2
    assert _run(tmp_path, "unguarded") == 2
    assert list((tmp_path / "__pycache__").glob("guarded.run-*.nbi")), "numba cached the kernel"
    _write_helper(tmp_path, 10)
    assert _run(tmp_path, "unguarded") == 2, "numba's own check misses the helper change (the hazard)"
    assert _run(tmp_path, "guarded") == 11
    assert _run(tmp_path, "guarded") == 11, "and caches the new kernel again"
