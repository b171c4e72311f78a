"""The testbed inventory: the hosts of the three roles (loadgen, dut, timestamper) of the ssh backend.

A TOML file (format in docs/testbed-inventory.md, example in examples/testbed.toml) names each host's
role, address, user, port, interfaces (kernel name, PCI id, DPDK port, cabling), cores, housekeeping
cores, working directory and what it has installed; ``[testbed]`` holds the ssh options and an optional
``known_hosts`` file that pins the host keys. ``Inventory.from_toml`` checks every key and names the
file and the key of anything malformed; ``Inventory.ssh_host(role)`` is the role's
:class:`~benchbook.testbed.ssh_host.SshHost`.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchbook.errors import BenchbookError
from benchbook.testbed.ssh_host import SshHost
from benchbook.tools.host import CommandLog

ROLES = ("loadgen", "dut", "timestamper")
_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]+$")
_PCI_RE = re.compile(r"^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")


class InventoryError(BenchbookError, ValueError):
    """The inventory file is malformed; the message names the file and the key."""


@dataclass(frozen=True)
class Interface:
    name: str                 # kernel name (before DPDK takes it), e.g. "ens1f0"
    pci: str = ""             # PCI address, e.g. "0000:03:00.0"; "" = a kernel interface (no DPDK NIC)
    port: int = 0             # DPDK port number on that host (order of the allow-list)
    peer: str = ""            # "<host>:<interface>" on the other end of the cable/tap


@dataclass(frozen=True)
class InventoryHost:
    name: str
    role: str
    address: str
    user: str = "root"
    port: int = 22
    identity_file: str | None = None      # ssh -i
    proxy_jump: str | None = None         # ssh -J (scp: -J as well)
    interfaces: tuple[Interface, ...] = ()
    cores: tuple[int, ...] = ()           # cores benchbook may use on this host
    housekeeping_cores: tuple[int, ...] = ()
    workdir: str = "/srv/benchbook"
    moongen_dir: str = "/opt/MoonGen"     # loadgen, timestamper
    boot_parameters: tuple[str, ...] = ()  # expected on the kernel command line (checked, recorded)
    driver: str = "vfio-pci"              # DPDK driver the NICs are bound to
    hugepages: int = 0                    # 2 MiB pages to reserve (0: leave as is)
    bb_loadgen: str | None = None         # loadgen: bb-loadgen on the host (else this machine's, copied or shared)

    @property
    def kernel_interfaces(self) -> bool:
        """No interface has a PCI id: the host's NICs stay with the kernel (no DPDK binding)."""
        return not any(i.pci for i in self.interfaces)

    @property
    def target(self) -> str:
        return f"{self.user}@{self.address}"

    def interface(self, name: str) -> Interface:
        for i in self.interfaces:
            if i.name == name:
                return i
        raise KeyError(f"host {self.name} has no interface {name!r}")


@dataclass(frozen=True)
class Inventory:
    name: str
    hosts: tuple[InventoryHost, ...]
    ssh_options: tuple[str, ...] = ("-o", "BatchMode=yes", "-o", "ConnectTimeout=10")
    source: str = "<dict>"
    known_hosts: str | None = None        # pinned host keys: StrictHostKeyChecking=yes against this file only

    @property
    def connect_options(self) -> tuple[str, ...]:
        """ssh/scp options as used: the pinned known_hosts first (ssh keeps the first value of an option)."""
        pin = ("-o", "StrictHostKeyChecking=yes", "-o", f"UserKnownHostsFile={self.known_hosts}",
               "-o", "GlobalKnownHostsFile=/dev/null") if self.known_hosts else ()
        return pin + self.ssh_options

    def role(self, role: str) -> InventoryHost:
        for h in self.hosts:
            if h.role == role:
                return h
        raise KeyError(f"{self.source}: no host with role {role!r}")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "<dict>") -> Inventory:
        def need(d: Mapping[str, Any], key: str, where: str, kind: type | tuple[type, ...] = str) -> Any:
            if key not in d:
                raise InventoryError(f"{source}: {where}: missing key {key!r}")
            if not isinstance(d[key], kind):
                raise InventoryError(f"{source}: {where}.{key}: expected {getattr(kind, '__name__', kind)}, "
                                     f"got {type(d[key]).__name__} {d[key]!r}")
            return d[key]

        tb = data.get("testbed", {})
        if not isinstance(tb, Mapping):
            raise InventoryError(f"{source}: [testbed] must be a table")
        raw_hosts = data.get("hosts")
        if not isinstance(raw_hosts, list) or not raw_hosts:
            raise InventoryError(f"{source}: expected one or more [[hosts]] tables")
        hosts = []
        for n, h in enumerate(raw_hosts):
            where = f"hosts[{n}]"
            name = need(h, "name", where)
            where = f"hosts[{n}] ({name})"
            if not _NAME_RE.match(name):
                raise InventoryError(f"{source}: {where}: name may hold letters, digits, '_', '.', '-'")
            role = need(h, "role", where)
            if role not in ROLES:
                raise InventoryError(f"{source}: {where}.role: {role!r} is not one of {', '.join(ROLES)}")
            ifaces = []
            for k, i in enumerate(h.get("interfaces", [])):
                iw = f"{where}.interfaces[{k}]"
                pci = str(i.get("pci", ""))
                if pci and not _PCI_RE.match(pci):
                    raise InventoryError(f"{source}: {iw}.pci: {pci!r} is not a PCI address like 0000:03:00.0")
                ifaces.append(Interface(name=need(i, "name", iw), pci=pci, port=int(i.get("port", k)),
                                        peer=str(i.get("peer", ""))))
            cores = h.get("cores", [])
            hk = h.get("housekeeping_cores", [])
            for key, val in (("cores", cores), ("housekeeping_cores", hk)):
                if not isinstance(val, list) or not all(isinstance(c, int) and c >= 0 for c in val):
                    raise InventoryError(f"{source}: {where}.{key}: expected a list of core numbers")
            known = {"name", "role", "address", "user", "port", "interfaces", "cores", "housekeeping_cores",
                     "workdir", "moongen_dir", "boot_parameters", "driver", "hugepages", "identity_file",
                     "proxy_jump", "bb_loadgen"}
            unknown = sorted(set(h) - known)
            if unknown:
                raise InventoryError(f"{source}: {where}: unknown key(s) {unknown}; known: {sorted(known)}")
            hosts.append(InventoryHost(
                name=name, role=role, address=need(h, "address", where), user=str(h.get("user", "root")),
                port=int(h.get("port", 22)),
                identity_file=str(h["identity_file"]) if h.get("identity_file") else None,
                proxy_jump=str(h["proxy_jump"]) if h.get("proxy_jump") else None,
                interfaces=tuple(ifaces), cores=tuple(cores),
                housekeeping_cores=tuple(hk), workdir=str(h.get("workdir", "/srv/benchbook")),
                moongen_dir=str(h.get("moongen_dir", "/opt/MoonGen")),
                boot_parameters=tuple(str(p) for p in h.get("boot_parameters", [])),
                driver=str(h.get("driver", "vfio-pci")), hugepages=int(h.get("hugepages", 0)),
                bb_loadgen=str(h["bb_loadgen"]) if h.get("bb_loadgen") else None,
            ))
        roles = [h.role for h in hosts]
        for r in ROLES:
            if roles.count(r) != 1:
                raise InventoryError(f"{source}: expected exactly one host with role {r!r}, found {roles.count(r)}")
        dut = next(h for h in hosts if h.role == "dut")
        if len(dut.interfaces) != 2:
            raise InventoryError(f"{source}: the dut host needs two interfaces (ingress, egress), "
                                 f"has {len(dut.interfaces)}")
        if not dut.cores:
            raise InventoryError(f"{source}: the dut host needs cores = [<DuT core>, ...]")
        for r in ("loadgen", "timestamper"):
            h = next(x for x in hosts if x.role == r)
            if len(h.interfaces) < 2:
                raise InventoryError(f"{source}: the {r} host needs two interfaces, has {len(h.interfaces)}")
        opts = tb.get("ssh_options")
        known_hosts = tb.get("known_hosts")
        if known_hosts is not None:
            if not isinstance(known_hosts, str) or not known_hosts:
                raise InventoryError(f"{source}: [testbed].known_hosts: expected the path of a known_hosts file")
            kh = Path(known_hosts).expanduser()
            if not kh.is_absolute() and source != "<dict>":
                kh = Path(source).parent / kh
            known_hosts = str(kh)
            for o in opts or ():
                if re.fullmatch(r"(?i)(StrictHostKeyChecking|UserKnownHostsFile)[= ].*", str(o)):
                    raise InventoryError(f"{source}: [testbed].ssh_options: {o!r} conflicts with known_hosts "
                                         "(host keys are checked strictly against that file)")
        return cls(name=str(tb.get("name", "testbed")), hosts=tuple(hosts), source=source,
                   ssh_options=tuple(opts) if opts is not None else cls.ssh_options, known_hosts=known_hosts)

    def ssh_host(self, role: str, log: CommandLog | None = None) -> SshHost:
        """The host of a role, reached with ssh/scp with this inventory's options."""
        h = self.role(role)
        return SshHost(name=role, address=h.address, user=h.user, port=h.port, identity_file=h.identity_file,
                       proxy_jump=h.proxy_jump, options=self.connect_options, log=log or CommandLog())

    @classmethod
    def from_toml(cls, path: str | Path) -> Inventory:
        p = Path(path)
        try:
            with open(p, "rb") as fh:
                data = tomllib.load(fh)
        except tomllib.TOMLDecodeError as exc:
            raise InventoryError(f"{p}: {exc}") from exc
        except OSError as exc:
            raise InventoryError(f"{p}: cannot read the inventory: {exc.strerror}") from exc
        return cls.from_dict(data, source=str(p))
