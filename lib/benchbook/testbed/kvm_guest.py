"""A DuT guest VM booted with a chosen cgroup hierarchy: a real v1/v2 switch.

A DuT switches between cgroup v1 and v2 with the kernel parameter
``systemd.unified_cgroup_hierarchy=0|1``. A container cannot change its host's boot parameters,
but a guest VM can: this module boots Debian's own kernel (linux-image-amd64) with a debootstrap
root file system under qemu-system-x86_64, runs one shell script in the guest, reports the
guest's cgroup layout and the script's output, and powers off.

Acceleration: KVM where it can run a stock kernel. On this project's machines /dev/kvm is
provided by ``kvm_pvm`` (Pagetable-based Virtual Machine) in a Firecracker VM without VMX/SVM:
PVM runs only guest kernels built for PVM, and Debian's kernel prints nothing after the boot
loader (docs/kvm-dut.md has the exact errors). `kvm_capability` says so; ``accel="auto"``
then falls back to software emulation (TCG), which boots the same kernel and gives the real
cgroup switch in about half a minute per boot, but its timing means nothing: it serves
functional checks (hierarchy, isolation recipes), never latency numbers. Every result records
which accelerator ran and why.

Cached artefacts: the root file system tree (:mod:`benchbook.testbed.rootfs`, built once) and an
ext4 image made from it with ``mkfs.ext4 -d`` (no loop mount). Each boot writes only to a
temporary qcow2 overlay and a job disk, removed afterwards, also on errors and Ctrl-C.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchbook.errors import BenchbookError
from benchbook.testbed.rootfs import RootfsRecipe, cache_dir, ensure_rootfs
from benchbook.testbed.rootfs_recipes import GUEST_ROOTFS

HIERARCHY_PARAM = {"v1": "systemd.unified_cgroup_hierarchy=0", "v2": "systemd.unified_cgroup_hierarchy=1"}
# what /sys/fs/cgroup is in the guest: tmpfs (v1 controllers, hybrid) or the cgroup2 file system
EXPECTED_FSTYPE = {"v1": "tmpfs", "v2": "cgroup2fs"}

class GuestError(BenchbookError, RuntimeError):
    """The guest did not boot or did not report; the message holds the serial console tail."""


def kvm_capability() -> tuple[bool, str]:
    """Can qemu boot a stock Debian kernel with KVM here? (ok, reason). Reads only /dev, /proc, /sys."""
    if not os.path.exists("/dev/kvm"):
        return False, "/dev/kvm does not exist"
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return False, "/dev/kvm exists but cannot be opened read-write by this user"
    if shutil.which("qemu-system-x86_64") is None:
        return False, "qemu-system-x86_64 not installed (apt-get install qemu-system-x86)"
    try:
        flags = set(Path("/proc/cpuinfo").read_text().split())
    except OSError:
        flags = set()
    if Path("/sys/module/kvm_pvm").exists() and not ({"vmx", "svm"} & flags):
        return False, (
            "/dev/kvm is provided by kvm_pvm (Pagetable-based Virtual Machine) on a CPU without "
            "VMX/SVM: it runs only PVM-enabled guest kernels; Debian's linux-image-amd64 hangs "
            "after the boot loader with no kernel output (qemu -cpu host also aborts: 'failed to "
            "set MSR 0x10a'); see docs/kvm-dut.md. Software emulation (TCG) works but gives no "
            "meaningful timing"
        )
    if not ({"vmx", "svm"} & flags):
        return False, "the CPU exposes neither VMX nor SVM; /dev/kvm cannot run a stock guest"
    return True, "/dev/kvm with hardware virtualisation (VMX/SVM)"


def tcg_capability() -> tuple[bool, str]:
    if shutil.which("qemu-system-x86_64") is None:
        return False, "qemu-system-x86_64 not installed (apt-get install qemu-system-x86)"
    if shutil.which("mkfs.ext4") is None or shutil.which("qemu-img") is None:
        return False, "mkfs.ext4 (e2fsprogs) or qemu-img (qemu-utils) not installed"
    return True, "qemu TCG software emulation"


def guest_image(recipe: RootfsRecipe = GUEST_ROOTFS, size: str = "2G") -> tuple[Path, Path, Path]:
    """(ext4 image, vmlinuz, initrd) for the guest, built once from the cached tree."""
    tree = ensure_rootfs(recipe)
    kernels = sorted((tree / "boot").glob("vmlinuz-*"))
    initrds = sorted((tree / "boot").glob("initrd.img-*"))
    if not kernels or not initrds:
        raise GuestError(f"{tree}/boot holds no vmlinuz-*/initrd.img-* (linux-image-amd64 not installed?)")
    image = cache_dir() / f"guest-{recipe.name}-{recipe.key()}.img"
    if not image.is_file():
        partial = image.with_suffix(".img.partial")
        proc = subprocess.run(["mkfs.ext4", "-q", "-F", "-L", "bbroot", "-d", str(tree), str(partial), size],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            partial.unlink(missing_ok=True)
            raise GuestError(f"mkfs.ext4 -d {tree} {partial} failed: {proc.stderr.strip()}")
        os.rename(partial, image)
    return image, kernels[-1], initrds[-1]


@dataclass
class GuestResult:
    hierarchy: str
    accel: str
    accel_note: str
    cgroup_fstype: str | None
    cpuset_hierarchy: str | None  # "0" = cpuset on the unified (v2) hierarchy
    v2_controllers: str | None
    kernel: str | None
    cmdline: str | None
    output: str
    returncode: int | None
    boot_seconds: float
    command: list[str]
    serial_tail: str = ""
    facts: dict[str, Any] = field(default_factory=dict)

    @property
    def cgroup_version(self) -> str | None:
        return {"tmpfs": "v1", "cgroup2fs": "v2"}.get(self.cgroup_fstype or "")

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__} | {"cgroup_version": self.cgroup_version}


_MARK = re.compile(r"^(BB-[A-Z0-9-]+)=(.*)$")


def parse_serial(text: str) -> dict[str, Any]:
    """The runner's BB-KEY=value lines and the job output between BB-JOB-BEGIN/END."""
    clean = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text.replace("\r", ""))
    facts: dict[str, Any] = {}
    out_lines: list[str] = []
    in_job = False
    for line in clean.splitlines():
        if line.startswith("BB-JOB-BEGIN"):
            in_job = True
            continue
        if line.startswith("BB-JOB-END"):
            in_job = False
            m = re.search(r"rc=(\d+)", line)
            facts["rc"] = int(m.group(1)) if m else None
            continue
        if line.startswith("BB-DONE"):
            facts["done"] = True
            continue
        if in_job:
            out_lines.append(line)
            continue
        m = _MARK.match(line.strip())
        if m:
            facts[m.group(1)] = m.group(2).strip()
    facts["output"] = "\n".join(out_lines)
    return facts


class GuestVM:
    """Boot the DuT guest with a cgroup hierarchy ("v1" or "v2"), run a script, power off."""

    def __init__(self, hierarchy: str = "v2", accel: str = "auto", memory_mb: int = 1024, smp: int = 2,
                 timeout_s: float = 300.0, extra_cmdline: tuple[str, ...] = (),
                 recipe: RootfsRecipe = GUEST_ROOTFS) -> None:
        if hierarchy not in HIERARCHY_PARAM:
            raise ValueError(f"hierarchy must be 'v1' or 'v2', not {hierarchy!r}")
        if accel not in ("auto", "kvm", "tcg"):
            raise ValueError(f"accel must be 'auto', 'kvm' or 'tcg', not {accel!r}")
        self.hierarchy = hierarchy
        self.accel = accel
        self.memory_mb = memory_mb
        self.smp = smp
        self.timeout_s = timeout_s
        self.extra_cmdline = extra_cmdline
        self.recipe = recipe

    def _choose_accel(self) -> tuple[str, str]:
        kvm_ok, kvm_why = kvm_capability()
        if self.accel == "kvm":
            if not kvm_ok:
                raise GuestError(f"accel=kvm requested but KVM cannot boot this guest here: {kvm_why}")
            return "kvm", kvm_why
        if self.accel == "tcg" or not kvm_ok:
            ok, why = tcg_capability()
            if not ok:
                raise GuestError(why)
            note = "software emulation (TCG) requested" if self.accel == "tcg" else \
                f"software emulation (TCG) substituted for KVM: {kvm_why}"
            return "tcg", note
        return "kvm", kvm_why

    def qemu_command(self, accel: str, image: Path, kernel: Path, initrd: Path, overlay: Path,
                     job: Path, serial: Path) -> list[str]:
        cmdline = ["root=/dev/vda", "rw", "console=ttyS0", "quiet", "systemd.show_status=0",
                   "systemd.unit=bb.target", HIERARCHY_PARAM[self.hierarchy], *self.extra_cmdline]
        cmd = ["qemu-system-x86_64", "-accel", accel]
        if accel == "kvm":
            cmd += ["-cpu", "host"]
        cmd += ["-m", str(self.memory_mb), "-smp", str(self.smp), "-nodefaults", "-no-reboot",
                "-display", "none", "-monitor", "none", "-net", "none",
                "-serial", f"file:{serial}",
                "-kernel", str(kernel), "-initrd", str(initrd), "-append", " ".join(cmdline),
                "-drive", f"file={overlay},if=virtio,format=qcow2",
                "-drive", f"file={job},if=virtio,format=raw"]
        return cmd

    def run(self, script: str = "true\n") -> GuestResult:
        accel, note = self._choose_accel()
        image, kernel, initrd = guest_image(self.recipe)
        work = Path(tempfile.mkdtemp(prefix="bb-guest-"))
        proc: subprocess.Popen[bytes] | None = None
        try:
            overlay, job, serial = work / "overlay.qcow2", work / "job.sh", work / "serial.log"
            subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", "-b", str(image), "-F", "raw",
                            str(overlay)], check=True, capture_output=True)
            body = script if script.endswith("\n") else script + "\n"
            data = (body + "exit $?\n").encode()
            job.write_bytes(data + b"\n" * (-len(data) % 512))  # whole sectors; no NULs for sh
            cmd = self.qemu_command(accel, image, kernel, initrd, overlay, job, serial)
            t0 = time.monotonic()
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            try:
                out, _ = proc.communicate(timeout=self.timeout_s)
            except subprocess.TimeoutExpired as exc:
                proc.kill()
                out, _ = proc.communicate()
                raise GuestError(f"guest did not power off within {self.timeout_s:.0f} s ({accel}); "
                                 f"serial console tail:\n{_tail(serial)}") from exc
            seconds = time.monotonic() - t0
            text = serial.read_text(errors="replace") if serial.exists() else ""
            facts = parse_serial(text)
            if not facts.get("done"):
                raise GuestError(f"guest exited (qemu rc {proc.returncode}) without reporting; qemu said: "
                                 f"{out.decode(errors='replace').strip()[-800:]}\nserial tail:\n{_tail(serial)}")
            return GuestResult(
                hierarchy=self.hierarchy, accel=accel, accel_note=note,
                cgroup_fstype=facts.get("BB-CGROUP-FSTYPE"), cpuset_hierarchy=facts.get("BB-CPUSET-HIERARCHY"),
                v2_controllers=facts.get("BB-V2-CONTROLLERS"), kernel=facts.get("BB-KERNEL"),
                cmdline=facts.get("BB-CMDLINE"), output=facts.get("output", ""), returncode=facts.get("rc"),
                boot_seconds=round(seconds, 1), command=cmd, serial_tail=text[-3000:],
                facts={k: v for k, v in facts.items() if k.startswith("BB-")},
            )
        except BaseException:
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                proc.wait()
            raise
        finally:
            shutil.rmtree(work, ignore_errors=True)


def _tail(path: Path, n: int = 25) -> str:
    try:
        text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", path.read_text(errors="replace").replace("\r", ""))
        return "\n".join(text.splitlines()[-n:])
    except OSError:
        return "(no serial output)"


# The paper's isolation recipes, applied inside the guest and read back (functional check only).
RECIPE_SCRIPTS = {
    "v1": """set -e
c=/sys/fs/cgroup/cpuset
mkdir $c/bb-hk $c/bb-dut
echo 0 > $c/bb-hk/cpuset.cpus; echo 0 > $c/bb-hk/cpuset.mems
echo 1 > $c/bb-dut/cpuset.cpus; echo 0 > $c/bb-dut/cpuset.mems
echo 1 > $c/bb-dut/cpuset.cpu_exclusive
echo 0 > $c/bb-dut/cpuset.sched_load_balance
echo 0 > $c/cpuset.sched_load_balance
echo "RECIPE dut.cpus=$(cat $c/bb-dut/cpuset.cpus) \
dut.sched_load_balance=$(cat $c/bb-dut/cpuset.sched_load_balance) \
root.sched_load_balance=$(cat $c/cpuset.sched_load_balance)"
""",
    "v2": """set -e
c=/sys/fs/cgroup
echo +cpuset > $c/cgroup.subtree_control
mkdir $c/bb-dut
echo 1 > $c/bb-dut/cpuset.cpus
echo root > $c/bb-dut/cpuset.cpus.partition
echo "RECIPE dut.cpus=$(cat $c/bb-dut/cpuset.cpus.effective) dut.partition=$(cat $c/bb-dut/cpuset.cpus.partition)"
""",
}


def parse_recipe(output: str) -> dict[str, str]:
    """The ``RECIPE key=value ...`` line a RECIPE_SCRIPTS script prints, as a dict."""
    for line in output.splitlines():
        if line.startswith("RECIPE "):
            return dict(item.split("=", 1) for item in line.split()[1:] if "=" in item)
    return {}
