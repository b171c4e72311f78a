"""``ss -tin``: TCP socket internals (cwnd, ssthresh, rtt, delivery and pacing rate, BBR state).

``parse`` turns one ``ss -tin`` output into one dict per socket (units in the key names: rtt_ms,
delivery_rate_bps, bbr_bw_bps ...); ``Sampler`` runs ``ss -tin`` on a host at a set interval in a
background thread and keeps every sample with the time it was taken (time.monotonic_ns). Fields ss
does not print for a socket are absent from its dict, never zero.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from benchbook.tools.host import Host

_ADDR_LINE = re.compile(r"^(?P<state>[A-Z-]+)\s+(?P<recvq>\d+)\s+(?P<sendq>\d+)\s+(?P<local>\S+)\s+(?P<peer>\S+)")
_RATE = re.compile(r"^([0-9.]+)([KMG]?)bps$")
_RATE_MULT = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9}
_INT_FIELDS = {"cwnd": "cwnd", "ssthresh": "ssthresh", "mss": "mss_bytes", "bytes_sent": "bytes_sent",
               "bytes_acked": "bytes_acked", "bytes_received": "bytes_received", "bytes_retrans": "bytes_retrans",
               "segs_out": "segs_out", "segs_in": "segs_in", "data_segs_out": "data_segs_out",
               "unacked": "unacked", "lost": "lost", "reord_seen": "reord_seen", "delivered": "delivered",
               "snd_wnd": "snd_wnd_bytes", "notsent": "notsent_bytes", "rcv_space": "rcv_space_bytes"}


def argv(filter_expr: str | None = None) -> list[str]:
    """``ss -tinH`` (no header), optionally with a filter such as ``dport = :5201``."""
    out = ["ss", "-tinH"]
    if filter_expr:
        out.append(filter_expr)
    return out


def _rate_bps(text: str) -> float | None:
    m = _RATE.match(text)
    return float(m.group(1)) * _RATE_MULT[m.group(2)] if m else None


def _split_hostport(text: str) -> tuple[str, int | None]:
    host, _, port = text.rpartition(":")
    host = host.strip("[]")
    return host, int(port) if port.isdigit() else None


def _parse_bbr(inner: str, out: dict[str, Any]) -> None:
    for part in inner.split(","):
        key, _, val = part.partition(":")
        if key == "bw":
            out["bbr_bw_bps"] = _rate_bps(val)
        elif key == "mrtt":
            out["bbr_min_rtt_ms"] = float(val)
        elif key in ("pacing_gain", "cwnd_gain"):
            out[f"bbr_{key}"] = float(val)


def _parse_info(line: str, out: dict[str, Any]) -> None:
    tokens = line.split()
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok in ("cubic", "bbr", "reno", "vegas", "dctcp", "westwood", "htcp", "illinois") and "cca" not in out:
            out["cca"] = tok
        elif tok.startswith("bbr:("):
            _parse_bbr(tok[5:].rstrip(")"), out)
        elif tok in ("send", "pacing_rate", "delivery_rate") and i + 1 < len(tokens):
            out[f"{tok}_bps" if tok != "send" else "send_rate_bps"] = _rate_bps(tokens[i + 1])
            i += 1
        elif ":" in tok:
            key, _, val = tok.partition(":")
            if key == "rtt":
                rtt, _, var = val.partition("/")
                out["rtt_ms"], out["rttvar_ms"] = float(rtt), float(var) if var else None
            elif key == "minrtt":
                out["min_rtt_ms"] = float(val)
            elif key == "retrans":
                cur, _, total = val.partition("/")
                out["retrans_now"], out["retrans_total"] = int(cur), int(total) if total else None
            elif key in _INT_FIELDS and val.isdigit():
                out[_INT_FIELDS[key]] = int(val)
        i += 1


def parse(text: str) -> list[dict[str, Any]]:
    """Sockets of one ``ss -tin`` (or ``-tinH``) output, in order."""
    socks: list[dict[str, Any]] = []
    cur: dict[str, Any] | None = None
    for line in text.splitlines():
        if not line.strip() or line.startswith("State"):
            continue
        m = _ADDR_LINE.match(line)
        if m and not line[0].isspace():
            lh, lp = _split_hostport(m.group("local"))
            ph, pp = _split_hostport(m.group("peer"))
            cur = {"state": m.group("state"), "local": lh, "local_port": lp, "peer": ph, "peer_port": pp,
                   "send_q_bytes": int(m.group("sendq")), "recv_q_bytes": int(m.group("recvq"))}
            socks.append(cur)
        elif cur is not None:
            _parse_info(line, cur)
    return socks


@dataclass
class Sampler:
    """``ss -tin`` every ``interval_s`` on ``host`` until ``stop()``; samples carry t_ns (monotonic)."""

    host: Host
    interval_s: float = 0.1
    filter_expr: str | None = None
    samples: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> Sampler:
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        cmd = argv(self.filter_expr)
        next_t = time.monotonic()
        while not self._stop.is_set():
            t_ns = time.monotonic_ns()
            r = self.host.run(cmd, check=False, timeout_s=5.0, what="ss sample")
            if r.exit_code != 0:
                self.errors.append(r.stderr.strip()[-200:])
            else:
                for s in parse(r.stdout):
                    s["t_ns"] = t_ns
                    self.samples.append(s)
            next_t += self.interval_s
            self._stop.wait(max(0.0, next_t - time.monotonic()))

    def stop(self) -> list[dict[str, Any]]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        return self.samples


__all__ = ["Sampler", "argv", "parse"]
