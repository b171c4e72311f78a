"""The root file systems benchbook builds (once, cached): the container DuT's and the KVM guest's.

``python -m benchbook.testbed.rootfs_recipes [NAME ...]`` builds them and lists the cached trees.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from benchbook.testbed.rootfs import RootfsError, RootfsRecipe, ensure_rootfs, rootfs_info

# The DuT container: dpdk-testpmd (Debian 12 ships it in dpdk-dev) and the PMD plugins (dpdk).
TESTPMD_ROOTFS = RootfsRecipe(name="testpmd", include=("dpdk", "dpdk-dev"))


_RUNNER = r"""#!/bin/sh
# benchbook guest runner: report the cgroup layout, run the job from /dev/vdb, power off.
exec > /dev/ttyS0 2>&1
echo "BB-CGROUP-FSTYPE=$(stat -fc %T /sys/fs/cgroup)"
echo "BB-CPUSET-HIERARCHY=$(awk '$1=="cpuset"{print $2}' /proc/cgroups)"
for f in /sys/fs/cgroup/cgroup.controllers /sys/fs/cgroup/unified/cgroup.controllers; do
  [ -f "$f" ] && echo "BB-V2-CONTROLLERS=$(cat "$f")" && break
done
echo "BB-KERNEL=$(uname -r)"
echo "BB-CMDLINE=$(cat /proc/cmdline)"
if [ -b /dev/vdb ]; then
  tr -d '\000' < /dev/vdb > /run/bb-job.sh
  echo "BB-JOB-BEGIN"
  sh /run/bb-job.sh
  echo "BB-JOB-END rc=$?"
fi
echo "BB-DONE"
sync
echo o > /proc/sysrq-trigger
"""

_SERVICE = """[Unit]
Description=benchbook guest job
DefaultDependencies=no
After=systemd-remount-fs.service

[Service]
Type=oneshot
ExecStart=/usr/local/sbin/bb-run
StandardOutput=tty
TTYPath=/dev/ttyS0
"""

_TARGET = """[Unit]
Description=benchbook guest job target
Requires=bb-run.service
After=bb-run.service
AllowIsolate=yes
"""

GUEST_ROOTFS = RootfsRecipe(
    name="kvm-guest",
    include=("systemd-sysv", "udev", "linux-image-amd64", "initramfs-tools", "zstd"),
    files=(
        ("/usr/local/sbin/bb-run", _RUNNER, 0o755),
        ("/etc/systemd/system/bb-run.service", _SERVICE, 0o644),
        ("/etc/systemd/system/bb.target", _TARGET, 0o644),
        ("/etc/fstab", "/dev/vda / ext4 defaults 0 1\n", 0o644),
        ("/etc/hostname", "bb-guest\n", 0o644),
        # a small initramfs: only what finds and mounts the virtio root disk (faster boots)
        ("/etc/initramfs-tools/conf.d/benchbook", "MODULES=list\nCOMPRESS=zstd\n", 0o644),
        ("/etc/initramfs-tools/modules", "virtio_pci\nvirtio_blk\next4\n", 0o644),
    ),
    post=("update-initramfs -u -k all",),
)



def known_recipes() -> dict[str, RootfsRecipe]:
    return {TESTPMD_ROOTFS.name: TESTPMD_ROOTFS, GUEST_ROOTFS.name: GUEST_ROOTFS}


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m benchbook.testbed.rootfs_recipes [NAME ...]``: build (once) and list the cached trees."""
    recipes = known_recipes()
    names = list(argv if argv is not None else sys.argv[1:]) or list(recipes)
    for name in names:
        if name not in recipes:
            print(f"unknown root file system {name!r}; known: {', '.join(recipes)}", file=sys.stderr)
            return 2
        try:
            path = ensure_rootfs(recipes[name])
        except RootfsError as exc:
            print(f"benchbook: {exc}", file=sys.stderr)
            return 1
        info = rootfs_info(recipes[name])
        print(f"{name}: {path} (built {info.get('built_at', '?')}, {info.get('seconds', '?')} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
