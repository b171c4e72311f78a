"""The DuT guest: Debian's kernel booted with systemd.unified_cgroup_hierarchy=0 or =1 really
gets a v1 (tmpfs with per-controller mounts) or v2 (cgroup2fs with cpuset) layout. Boots once
per hierarchy: KVM where it can run a stock kernel, otherwise software emulation (TCG), which
the result labels as such."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from benchbook.testbed.kvm_guest import (
    EXPECTED_FSTYPE,
    GUEST_ROOTFS,
    RECIPE_SCRIPTS,
    GuestVM,
    guest_image,
    kvm_capability,
    parse_recipe,
    parse_serial,
)
from conftest import require_program, require_root, require_rootfs

# the first test that needs the cached root file system builds it with debootstrap (minutes on a slow mirror)
pytestmark = pytest.mark.timeout(2400)


def test_parse_serial_markers_and_job_output():
    text = ("\x1b[0;32m  OK  \x1b[0m] Reached target\r\nBB-CGROUP-FSTYPE=cgroup2fs\r\nBB-CPUSET-HIERARCHY=0\r\n"
            "BB-V2-CONTROLLERS=cpuset cpu io memory\r\nBB-JOB-BEGIN\r\n\x1b[Kline one\r\nBB-NOT-A-FACT=inside job\r\n"
            "BB-JOB-END rc=3\r\nBB-DONE\r\n")
    facts = parse_serial(text)
    assert facts["BB-CGROUP-FSTYPE"] == "cgroup2fs" and facts["BB-CPUSET-HIERARCHY"] == "0"
    assert facts["output"] == "line one\nBB-NOT-A-FACT=inside job"
    assert facts["rc"] == 3 and facts["done"] is True
    assert "BB-NOT-A-FACT" not in facts


def test_kvm_capability_explains_pvm():
    ok, why = kvm_capability()
    flags = set(Path("/proc/cpuinfo").read_text().split())
    if Path("/sys/module/kvm_pvm").exists() and not ({"vmx", "svm"} & flags):
        assert not ok and "kvm_pvm" in why and "docs/kvm-dut.md" in why
    elif not os.path.exists("/dev/kvm"):
        assert not ok and "/dev/kvm" in why
    assert isinstance(why, str) and why


def test_bad_arguments():
    with pytest.raises(ValueError, match="hierarchy"):
        GuestVM(hierarchy="v3")
    with pytest.raises(ValueError, match="accel"):
        GuestVM(accel="xen")


@pytest.fixture(scope="module")
def guest_ready():
    require_root()  # building the cached root file system (debootstrap) needs root
    for prog in ("qemu-system-x86_64", "qemu-img", "mkfs.ext4", "debootstrap"):
        require_program(prog)

    require_rootfs(GUEST_ROOTFS)
    guest_image(GUEST_ROOTFS)  # one-time (minutes), then cached; a failed build fails the tests


def _qemu_pids() -> set[int]:
    out = subprocess.run(["pgrep", "-f", "qemu-system-x86_64.*bb-guest-"], capture_output=True, text=True).stdout
    return {int(p) for p in out.split()}


@pytest.mark.root
@pytest.mark.slow
@pytest.mark.parametrize("hierarchy", ["v1", "v2"])
def test_boot_with_hierarchy(guest_ready, hierarchy):
    before = set(Path("/tmp").glob("bb-guest-*"))
    script = "echo job-ran $((6*7))\n" + RECIPE_SCRIPTS[hierarchy] + "exit 3\n"
    res = GuestVM(hierarchy=hierarchy, timeout_s=300).run(script)
    assert res.cgroup_fstype == EXPECTED_FSTYPE[hierarchy], res.serial_tail[-1500:]
    assert res.cgroup_version == hierarchy
    assert f"systemd.unified_cgroup_hierarchy={0 if hierarchy == 'v1' else 1}" in (res.cmdline or "")
    if hierarchy == "v2":  # the paper's v2 recipe needs cpuset on the unified hierarchy: here it is
        assert res.cpuset_hierarchy == "0" and "cpuset" in (res.v2_controllers or "").split()
    else:
        assert res.cpuset_hierarchy not in (None, "0")
    assert res.output.strip().splitlines()[0] == "job-ran 42" and res.returncode == 3
    # the paper's isolation recipe of this hierarchy applies and reads back inside the guest
    recipe = parse_recipe(res.output)
    if hierarchy == "v1":
        assert recipe == {"dut.cpus": "1", "dut.sched_load_balance": "0", "root.sched_load_balance": "0"}, res.output
    else:
        assert recipe == {"dut.cpus": "1", "dut.partition": "root"}, res.output
    kvm_ok, kvm_why = kvm_capability()
    assert res.accel == ("kvm" if kvm_ok else "tcg")
    if not kvm_ok:
        assert kvm_why in res.accel_note and "software emulation" in res.accel_note
    assert not _qemu_pids()
    assert set(Path("/tmp").glob("bb-guest-*")) == before
