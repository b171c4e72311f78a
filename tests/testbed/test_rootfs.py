"""Cached root file systems: recipe identity, and a failed debootstrap leaves nothing that looks
built (real debootstrap against an unreachable mirror)."""

from __future__ import annotations

import pytest

from benchbook.testbed.rootfs import RootfsError, RootfsRecipe, ensure_rootfs, is_built
from benchbook.testbed.rootfs_recipes import TESTPMD_ROOTFS
from conftest import require_program, require_root


def test_recipe_identity():
    a = RootfsRecipe(name="t", include=("dpdk", "dpdk-dev"))
    assert a.key() == RootfsRecipe(name="t", include=("dpdk-dev", "dpdk")).key()  # order does not matter
    assert a.key() != RootfsRecipe(name="t", include=("dpdk",)).key()
    assert a.key() != RootfsRecipe(name="t", include=("dpdk", "dpdk-dev"), suite="trixie").key()
    with_file = RootfsRecipe(name="t", include=("dpdk", "dpdk-dev"), files=(("/etc/x", "1\n", 0o644),))
    assert with_file.key() != a.key()
    other_file = RootfsRecipe(name="t", include=("dpdk", "dpdk-dev"), files=(("/etc/x", "2\n", 0o644),))
    assert with_file.key() != other_file.key()
    assert a.path().name == f"rootfs-t-{a.key()}"
    cmd = TESTPMD_ROOTFS.debootstrap_command(a.path())
    assert cmd[:3] == ["debootstrap", "--variant=minbase", "--arch=amd64"] and "--include=dpdk,dpdk-dev" in cmd


@pytest.mark.root
def test_failed_debootstrap_is_reported_and_leaves_no_tree(tmp_path, monkeypatch):
    require_root()
    require_program("debootstrap")
    monkeypatch.setenv("BENCHBOOK_CACHE", str(tmp_path))
    bad = RootfsRecipe(name="unreachable", mirror="http://127.0.0.1:9/debian")
    messages: list[str] = []
    with pytest.raises(RootfsError, match="failed") as err:
        ensure_rootfs(bad, log=messages.append)
    log = tmp_path / f"{bad.path(tmp_path).name}.log"
    assert str(log) in str(err.value) and log.read_text().startswith("$ debootstrap")
    assert not bad.path(tmp_path).exists() and not is_built(bad, tmp_path)
    assert not (tmp_path / f"{bad.path(tmp_path).name}.partial").exists()
    assert messages and "once" in messages[0] and "debootstrap" in messages[0]
