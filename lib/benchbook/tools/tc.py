"""tc: builders for the bottleneck qdiscs (htb, tbf, pfifo, bfifo) and read-back of their statistics.

Builders return argv lists (nothing runs until a host runs them). ``qdisc_stats`` runs
``tc -s -j qdisc show dev IF`` on a host and returns one `QdiscStats` per qdisc: kind, handle,
parent, bytes, packets, drops, overlimits, requeues, backlog and qlen as the kernel counts them.

``run_batch`` runs several built commands in one ``tc -batch -`` process (the commands on its stdin, one a
line, ``batch_input``): one process start instead of one per command, where a change must take effect at a
set time (a link schedule's step). tc stops at the first command that fails ("Command failed -:N") and exits
non-zero. ``batch_shell`` renders the same as one shell line, for plans printed before a run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from benchbook.errors import BenchbookError
from benchbook.tools.host import CommandResult, Host


class TcError(BenchbookError, ValueError):
    """A qdisc request tc cannot express, or tc output that is not what ``-j`` prints."""


def _rate(rate_bps: int) -> str:
    if rate_bps <= 0:
        raise TcError(f"rate must be > 0 bit/s, got {rate_bps}")
    return f"{int(rate_bps)}bit"


def delete_root(dev: str) -> list[str]:
    return ["tc", "qdisc", "del", "dev", dev, "root"]


def htb_root(dev: str, *, handle: str = "1:", default_class: str = "10") -> list[str]:
    return ["tc", "qdisc", "replace", "dev", dev, "root", "handle", handle, "htb", "default", default_class]


def htb_class(dev: str, rate_bps: int, *, parent: str = "1:", classid: str = "1:10", ceil_bps: int | None = None,
              quantum_bytes: int | None = 1514, prio: int | None = None) -> list[str]:
    """An htb class; quantum 1514 keeps htb from warning about big quanta at high rates; a lower ``prio``
    is served first when classes borrow."""
    argv = ["tc", "class", "replace", "dev", dev, "parent", parent, "classid", classid, "htb", "rate", _rate(rate_bps)]
    if ceil_bps:
        argv += ["ceil", _rate(ceil_bps)]
    if prio is not None:
        argv += ["prio", str(prio)]
    if quantum_bytes:
        argv += ["quantum", str(quantum_bytes)]
    return argv


def u32_udp_dport(dev: str, dport: int, flowid: str, *, parent: str = "1:", prio: int = 1) -> list[str]:
    """A u32 filter sending IPv4 UDP to ``dport`` into class ``flowid``."""
    if not 0 < dport < 65536:
        raise TcError(f"UDP port must be 1-65535, got {dport}")
    return ["tc", "filter", "replace", "dev", dev, "parent", parent, "protocol", "ip", "prio", str(prio), "u32",
            "match", "ip", "protocol", "17", "0xff", "match", "ip", "dport", str(dport), "0xffff", "flowid", flowid]


def tbf(dev: str, rate_bps: int, *, burst_bytes: int = 32768, latency_ms: float | None = None,
        limit_bytes: int | None = None, parent: str = "root", handle: str | None = None) -> list[str]:
    """Token bucket; exactly one of latency_ms and limit_bytes bounds its queue."""
    if (latency_ms is None) == (limit_bytes is None):
        raise TcError("tbf needs exactly one of latency_ms and limit_bytes")
    argv = ["tc", "qdisc", "replace", "dev", dev, *(["root"] if parent == "root" else ["parent", parent])]
    if handle:
        argv += ["handle", handle]
    argv += ["tbf", "rate", _rate(rate_bps), "burst", str(burst_bytes)]
    argv += ["latency", f"{latency_ms:g}ms"] if latency_ms is not None else ["limit", str(limit_bytes)]
    return argv


def pfifo(dev: str, limit_packets: int, *, parent: str = "root", handle: str | None = None) -> list[str]:
    if limit_packets < 1:
        raise TcError(f"pfifo limit must be >= 1 packet, got {limit_packets}")
    argv = ["tc", "qdisc", "replace", "dev", dev, *(["root"] if parent == "root" else ["parent", parent])]
    return argv + (["handle", handle] if handle else []) + ["pfifo", "limit", str(limit_packets)]


def bfifo(dev: str, limit_bytes: int, *, parent: str = "root", handle: str | None = None) -> list[str]:
    if limit_bytes < 1:
        raise TcError(f"bfifo limit must be >= 1 byte, got {limit_bytes}")
    argv = ["tc", "qdisc", "replace", "dev", dev, *(["root"] if parent == "root" else ["parent", parent])]
    return argv + (["handle", handle] if handle else []) + ["bfifo", "limit", str(limit_bytes)]


def htb_bottleneck(dev: str, rate_bps: int, limit_packets: int) -> list[list[str]]:
    """htb at ``rate_bps`` with a pfifo of ``limit_packets`` under its one class (all traffic)."""
    return [htb_root(dev), htb_class(dev, rate_bps), pfifo(dev, limit_packets, parent="1:10", handle="10:")]


def htb_isolated_bottleneck(dev: str, rate_bps: int, limit_packets: int, udp_dport: int,
                            isolated_rate_bps: int) -> list[list[str]]:
    """htb at ``rate_bps`` with two classes under one parent, each with its own pfifo of ``limit_packets``:
    UDP to ``udp_dport`` gets ``isolated_rate_bps`` guaranteed at priority 0 (class 1:20), everything else
    the rest (class 1:10, the default); either may borrow up to the link rate."""
    if not 0 < isolated_rate_bps < rate_bps:
        raise TcError(f"isolated rate must be between 0 and the link rate {rate_bps}, got {isolated_rate_bps}")
    return [htb_root(dev), htb_class(dev, rate_bps, classid="1:1", ceil_bps=rate_bps),
            htb_class(dev, rate_bps - isolated_rate_bps, parent="1:1", classid="1:10", ceil_bps=rate_bps, prio=1),
            htb_class(dev, isolated_rate_bps, parent="1:1", classid="1:20", ceil_bps=rate_bps, prio=0),
            pfifo(dev, limit_packets, parent="1:10", handle="10:"),
            pfifo(dev, limit_packets, parent="1:20", handle="20:"),
            u32_udp_dport(dev, udp_dport, "1:20")]


def show_argv(dev: str | None = None) -> list[str]:
    return ["tc", "-s", "-j", "qdisc", "show", *(["dev", dev] if dev else [])]


@dataclass(frozen=True)
class QdiscStats:
    dev: str | None
    kind: str
    handle: str
    parent: str | None
    bytes: int
    packets: int
    drops: int
    overlimits: int
    requeues: int
    backlog_bytes: int
    qlen: int
    options: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def parse_stats(text: str, dev: str | None = None, source: str = "tc -s -j qdisc show") -> list[QdiscStats]:
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise TcError(f"{source}: not JSON ({exc})") from exc
    if not isinstance(doc, list):
        raise TcError(f"{source}: expected a JSON list of qdiscs")
    out = []
    for n, q in enumerate(doc):
        try:
            out.append(QdiscStats(dev=q.get("dev", dev), kind=q["kind"], handle=q["handle"],
                                  parent=None if q.get("root") else q.get("parent"), bytes=int(q["bytes"]),
                                  packets=int(q["packets"]), drops=int(q["drops"]),
                                  overlimits=int(q.get("overlimits", 0)), requeues=int(q.get("requeues", 0)),
                                  backlog_bytes=int(q.get("backlog", 0)), qlen=int(q.get("qlen", 0)),
                                  options=dict(q.get("options", {}))))
        except (KeyError, TypeError, ValueError) as exc:
            raise TcError(f"{source}: qdisc [{n}] lacks statistics ({exc!r}); run tc with -s -j") from exc
    return out


BATCH_ARGV = ("tc", "-batch", "-")


def batch_input(commands: list[list[str]]) -> str:
    """stdin of ``tc -batch -`` running ``commands`` (argv lists as the builders return them, each starting with
    "tc") in order. tc splits a batch line at blanks and reads quotes and ``#`` specially: an argument with any
    of those, or a command that is not tc's, is refused."""
    lines = []
    for n, argv in enumerate(commands):
        if len(argv) < 2 or argv[0] != "tc":
            raise TcError(f"tc batch: command [{n}] is not a tc command: {argv!r}")
        bad = [a for a in argv[1:] if not a or any(c.isspace() or c in "\"'#\\" for c in a)]
        if bad:
            raise TcError(f"tc batch: command [{n}] has arguments a batch line cannot carry: {bad!r}")
        lines.append(" ".join(argv[1:]))
    return "".join(f"{ln}\n" for ln in lines)


def batch_shell(commands: list[list[str]]) -> str:
    """``commands`` as one tc batch in one shell line (bash's here-string), e.g.
    ``tc -batch - <<< $'qdisc replace dev x ...\\nqdisc replace dev x ...'``."""
    lines = batch_input(commands).rstrip("\n").split("\n")
    return " ".join(BATCH_ARGV) + " <<< $'" + "\\n".join(lines) + "'"


def run_batch(host: Host, commands: list[list[str]], *, what: str = "",
              timeout_s: float | None = 60.0) -> CommandResult:
    """Run ``commands`` in one tc process on ``host`` (raises CommandError naming the failed line when one
    fails; the commands before it are in force). The command log's description carries the batch (its stdin)."""
    text = batch_input(commands)
    lines = " | ".join(text.rstrip("\n").split("\n"))
    return host.run(list(BATCH_ARGV), input_text=text, timeout_s=timeout_s,
                    what=f"{what or 'tc batch'} (stdin: {lines})")


def qdisc_stats(host: Host, dev: str) -> list[QdiscStats]:
    r = host.run(show_argv(dev), what=f"tc qdisc stats {dev}")
    return parse_stats(r.stdout, dev=dev, source=f"tc -s -j qdisc show dev {dev}")


__all__ = ["BATCH_ARGV", "QdiscStats", "TcError", "batch_input", "batch_shell", "bfifo", "delete_root",
           "htb_bottleneck", "htb_class", "htb_root", "parse_stats", "pfifo", "qdisc_stats", "run_batch", "show_argv",
           "tbf"]
