"""Declarative local topologies: roles (one network namespace each) joined by veth pairs.

A topology is plain data (dataclasses, loadable from TOML or a dict); the local backend
turns it into namespaces and links named ``bb-<token>-<role>`` / ``bb-<token>-<ifname>``.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Endpoint:
    role: str          # the namespace (role) holding this end
    ifname: str        # short interface name inside the role, e.g. "lg0"; prefixed when created
    promisc: bool = False
    address: str | None = None  # CIDR, e.g. "10.250.0.1/24"


@dataclass(frozen=True)
class Link:
    a: Endpoint
    b: Endpoint


@dataclass
class Topology:
    name: str
    roles: list[str]
    links: list[Link] = field(default_factory=list)
    description: str = ""

    def endpoint(self, ifname: str) -> Endpoint:
        for link in self.links:
            for ep in (link.a, link.b):
                if ep.ifname == ifname:
                    return ep
        raise KeyError(f"topology {self.name!r} has no interface {ifname!r}")

    def validate(self) -> None:
        seen: set[str] = set()
        for link in self.links:
            for ep in (link.a, link.b):
                if ep.role not in self.roles:
                    raise ValueError(f"topology {self.name!r}: link end {ep.ifname!r} in unknown role {ep.role!r}")
                if ep.ifname in seen:
                    raise ValueError(f"topology {self.name!r}: interface {ep.ifname!r} appears twice")
                seen.add(ep.ifname)

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "<dict>") -> Topology:
        try:
            links = [Link(Endpoint(**ln["a"]), Endpoint(**ln["b"])) for ln in data.get("links", [])]
            topo = cls(name=data["name"], roles=list(data["roles"]), links=links,
                       description=data.get("description", ""))
        except (KeyError, TypeError) as exc:
            raise ValueError(f"{source}: bad topology description ({exc!r}); expected name, roles, "
                             "[[links]] with a = {role, ifname, ...} and b = {...}") from exc
        topo.validate()
        return topo

    @classmethod
    def from_toml(cls, path: Path) -> Topology:
        with open(path, "rb") as fh:
            try:
                data = tomllib.load(fh)
            except tomllib.TOMLDecodeError as exc:
                raise ValueError(f"{path}: {exc}") from exc
        return cls.from_dict(data, source=str(path))


def loadgen_dut_timestamper() -> Topology:
    """The paper's set-up, scaled to one host.

    lg:lg0 ── dut:din   (DuT ingress; the timestamper captures lg0's egress = DuT ingress)
    dut:dout ── ts:ts0  (DuT egress; the timestamper captures at ts0, the "tap" after the DuT)
    The DuT ends are promiscuous (DPDK's net_af_packet needs that on veth).
    """
    return Topology(
        name="loadgen-dut-timestamper",
        roles=["lg", "dut", "ts"],
        links=[
            Link(Endpoint("lg", "lg0"), Endpoint("dut", "din", promisc=True)),
            Link(Endpoint("dut", "dout", promisc=True), Endpoint("ts", "ts0", promisc=True)),
        ],
        description="LoadGen -> DuT -> Timestamper sink; captures at LoadGen egress and sink ingress",
    )


def dumbbell(n_senders: int = 2, delayed: tuple[int, ...] = ()) -> Topology:
    """Senders -> bottleneck router -> receiver (the link emulation is benchbook.testbed.dumbbell's).

    s<i>:s<i>e (198.18.<i>.1/24) ── rtr:r<i> (198.18.<i>.254/24), for i = 1..n_senders
    rtr:rb (198.19.0.254/24) ── rcv:rcv0 (198.19.0.1/24); the bottleneck is rtr:rb's egress
    For each i in ``delayed`` a delay namespace sits on sender i's link, bridging two promiscuous ends:
    s<i>:s<i>e ── d<i>:d<i>a   d<i>:d<i>b ── rtr:r<i>   (the delay line runs in d<i>)
    """
    if not 1 <= n_senders <= 8:
        raise ValueError(f"dumbbell: 1..8 senders, got {n_senders}")
    if any(not 1 <= i <= n_senders for i in delayed):
        raise ValueError(f"dumbbell: delayed senders {delayed} outside 1..{n_senders}")
    links = []
    for i in range(1, n_senders + 1):
        s_end = Endpoint(f"s{i}", f"s{i}e", address=f"198.18.{i}.1/24")
        r_end = Endpoint("rtr", f"r{i}", address=f"198.18.{i}.254/24")
        if i in delayed:
            links += [Link(s_end, Endpoint(f"d{i}", f"d{i}a", promisc=True)),
                      Link(Endpoint(f"d{i}", f"d{i}b", promisc=True), r_end)]
        else:
            links.append(Link(s_end, r_end))
    links.append(Link(Endpoint("rtr", "rb", address="198.19.0.254/24"),
                      Endpoint("rcv", "rcv0", address="198.19.0.1/24")))
    roles = [f"s{i}" for i in range(1, n_senders + 1)] + [f"d{i}" for i in sorted(set(delayed))] + ["rtr", "rcv"]
    return Topology(name="dumbbell", roles=roles, links=links,
                    description="senders -> bottleneck router -> receiver; bottleneck on the router's egress rb")


BUILTIN = {"loadgen-dut-timestamper": loadgen_dut_timestamper, "dumbbell": dumbbell}
