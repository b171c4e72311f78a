"""Regenerate the TCP captures of the corpus that were made here (the ``bbgen-*`` files beside this script).

Real Linux TCP between two network namespaces joined by a veth pair (offloads off, so the capture holds the
segments as the kernel sends them), captured with tcpdump or dumpcap. Each case sets up what it needs (nft
rules that drop chosen segments, VLAN sub-interfaces, a slow reader, keep-alive timers) and the namespaces
are removed afterwards, also on failure and Ctrl-C. Needs root, tcpdump, dumpcap, editcap, tshark, nft,
tcprewrite (Debian tcpreplay).

    python tests/data/tcp-corpus/make_captures.py            # every case, into this folder
    python tests/data/tcp-corpus/make_captures.py syn-retransmissions -o /tmp/x

The captures differ from run to run (times, ISNs, ports); the tests compare each file with what tshark and
tcptrace say about that same file, so any regenerated set serves. What each case is for: CASES below.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
A4, B4, A6, B6 = "10.77.0.1", "10.77.0.2", "fd77::1", "fd77::2"

# A small TCP server and client (standard library only), run inside the namespaces.
PEER = textwrap.dedent('''
    import socket, sys, time
    role, family, host, port, nbytes, chunk, pause_s = sys.argv[1:8]
    extra = dict(a.split("=", 1) for a in sys.argv[8:])
    fam = socket.AF_INET6 if family == "6" else socket.AF_INET
    nbytes, chunk, pause_s = int(nbytes), int(chunk), float(pause_s)
    def sock():
        s = socket.socket(fam, socket.SOCK_STREAM)
        if "rcvbuf" in extra:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, int(extra["rcvbuf"]))
        if "keepalive" in extra:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, 1)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, 1)
        return s
    if role == "server":  # accept one connection per "conns", send nbytes on each, wait "linger" s, close
        ls = sock()
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind((host, int(port)))
        ls.listen(16)
        print("listening", flush=True)
        for _ in range(int(extra.get("conns", 1))):
            c, _ = ls.accept()
            time.sleep(float(extra.get("before_s", 0)))
            sent = 0
            while sent < nbytes:
                c.sendall(b"d" * min(chunk, nbytes - sent))
                sent += min(chunk, nbytes - sent)
                time.sleep(pause_s)
            time.sleep(float(extra.get("linger", 0)))
            c.shutdown(socket.SHUT_WR)
            while c.recv(65536):
                pass
            c.close()
    else:  # connect, read everything (slowly if asked), wait "hold" s, close
        s = sock()
        s.settimeout(float(extra.get("timeout", 30)))
        s.connect((host, int(port)))
        got = 0
        while True:
            b = s.recv(int(extra.get("read", 65536)))
            if not b:
                break
            got += len(b)
            time.sleep(float(extra.get("read_pause_s", 0)))
        time.sleep(float(extra.get("hold", 0)))
        s.close()
        print("got", got, flush=True)
''')


class Pair:
    """Namespaces ``bbc-<token>-a`` (client) and ``-b`` (server) joined by a veth pair, or with ``routed`` through a
    router namespace ``-r`` (two veth pairs, forwarding on; drops there happen after the server's segmentation,
    one segment at a time); removed on exit."""

    def __init__(self, mtu: int = 1408, routed: bool = False) -> None:
        self.token = secrets.token_hex(3)
        self.a, self.b, self.r = f"bbc-{self.token}-a", f"bbc-{self.token}-b", f"bbc-{self.token}-r"
        self.ia, self.ib = f"bbc{self.token}a", f"bbc{self.token}b"
        self.mtu = mtu
        self.routed = routed
        self.procs: list[subprocess.Popen] = []

    def sh(self, ns: str | None, *argv: str, check: bool = True) -> subprocess.CompletedProcess:
        cmd = (["ip", "netns", "exec", ns] if ns else []) + list(argv)
        return subprocess.run(cmd, check=check, capture_output=True, text=True)

    def start(self, ns: str, *argv: str) -> subprocess.Popen:
        p = subprocess.Popen(["ip", "netns", "exec", ns, *argv], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True)
        self.procs.append(p)
        return p

    def _link(self, ns1: str, if1: str, ns2: str, if2: str) -> None:
        self.sh(None, "ip", "link", "add", if1, "netns", ns1, "type", "veth", "peer", "name", if2, "netns", ns2)
        for ns, ifn in ((ns1, if1), (ns2, if2)):
            self.sh(ns, "ip", "link", "set", ifn, "mtu", str(self.mtu), "up")
            self.sh(ns, "ethtool", "-K", ifn, "tso", "off", "gso", "off", "gro", "off", check=False)

    def __enter__(self) -> Pair:
        for ns in (self.a, self.b) + ((self.r,) if self.routed else ()):
            self.sh(None, "ip", "netns", "add", ns)
            self.sh(ns, "ip", "link", "set", "lo", "up")
        if not self.routed:
            self._link(self.a, self.ia, self.b, self.ib)
            for ns, ifn, v4, v6 in ((self.a, self.ia, A4, A6), (self.b, self.ib, B4, B6)):
                self.sh(ns, "ip", "addr", "add", f"{v4}/16", "dev", ifn)
                self.sh(ns, "ip", "addr", "add", f"{v6}/64", "dev", ifn, "nodad")
            return self
        ra, rb = f"bbc{self.token}ra", f"bbc{self.token}rb"
        self._link(self.a, self.ia, self.r, ra)
        self._link(self.b, self.ib, self.r, rb)
        self.sh(self.r, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1")
        self.sh(self.r, "sysctl", "-q", "-w", "net.ipv6.conf.all.forwarding=1")
        for ns, ifn, rif, v4, r4, v6, r6 in ((self.a, self.ia, ra, A4, "10.77.0.254", A6, "fd77::fe"),
                                             (self.b, self.ib, rb, "10.79.0.2", "10.79.0.254", "fd79::2",
                                              "fd79::fe")):
            self.sh(ns, "ip", "addr", "add", f"{v4}/24", "dev", ifn)
            self.sh(ns, "ip", "addr", "add", f"{v6}/64", "dev", ifn, "nodad")
            self.sh(self.r, "ip", "addr", "add", f"{r4}/24", "dev", rif)
            self.sh(self.r, "ip", "addr", "add", f"{r6}/64", "dev", rif, "nodad")
            self.sh(ns, "ip", "route", "add", "default", "via", r4)
            self.sh(ns, "ip", "-6", "route", "add", "default", "via", r6)
        return self

    def __exit__(self, *exc: object) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for ns in (self.a, self.b, self.r):
            self.sh(None, "ip", "netns", "del", ns, check=False)


def wait_line(p: subprocess.Popen, text: str, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        line = p.stdout.readline()
        if text in line:
            return
        if not line and p.poll() is not None:
            break
    raise RuntimeError(f"{p.args}: never printed {text!r}")


def capture(pair: Pair, ns: str, out: Path, *args: str, tool: str = "tcpdump") -> subprocess.Popen:
    """Start tcpdump (pcap) or dumpcap (pcapng) in ``ns`` writing ``out``; returns once it listens."""
    if tool == "tcpdump":
        p = pair.start(ns, "tcpdump", "--immediate-mode", "-U", "-n", "-w", str(out), *args)
        wait_line(p, "listening")
    else:
        p = pair.start(ns, "dumpcap", "-q", "-w", str(out), *args)
        time.sleep(1.0)  # dumpcap -q prints nothing once it runs
    return p


def stop(p: subprocess.Popen) -> None:
    time.sleep(0.3)
    p.send_signal(signal.SIGINT)
    p.wait(timeout=10)


def run_transfer(pair: Pair, family: str, host: str, nbytes: int, chunk: int = 16384, pause_s: float = 0.0,
                 port: int = 5001, server: tuple[str, ...] = (), client: tuple[str, ...] = (),
                 during=None) -> str:
    script = Path(tempfile.gettempdir()) / f"bbc-peer-{pair.token}.py"
    script.write_text(PEER)
    srv = pair.start(pair.b, sys.executable, str(script), "server", family, "::" if family == "6" else "0.0.0.0",
                     str(port), str(nbytes), str(chunk), str(pause_s), *server)
    wait_line(srv, "listening")
    cli = pair.start(pair.a, sys.executable, str(script), "client", family, host, str(port), "0", "0", "0", *client)
    if during is not None:
        during()
    out, _ = cli.communicate(timeout=120)
    srv.wait(timeout=30)
    return out


def nft(pair: Pair, ns: str, *rules: str) -> None:
    pair.sh(ns, "nft", "add", "table", "inet", "bbc")
    for chain in ("input", "output", "forward"):
        pair.sh(ns, "nft", "add", "chain", "inet", "bbc", chain, f"{{ type filter hook {chain} priority 0 ; }}")
    for rule in rules:
        pair.sh(ns, "nft", *f"add rule inet bbc {rule}".split())


def nft_flush(pair: Pair, ns: str) -> None:
    pair.sh(ns, "nft", "delete", "table", "inet", "bbc", check=False)


# ---- the cases ------------------------------------------------------------------------------------------


def midflow(out: Path) -> None:
    """A download captured at the client from after the handshake (no SYN in the file), with every 40th data
    segment of the server dropped by a router (so the client sees holes, SACKs and the retransmissions), and a
    short excerpt of it that starts just after a lost segment: its retransmission then lies below the first
    sequence number of the excerpt (tcptrace: new bytes, out of order, not a retransmission)."""
    with Pair(routed=True) as pair:
        full = out / "bbgen-midflow-download.pcap"
        tmp = out / ".midflow-tmp.pcap"

        def during() -> None:
            time.sleep(0.4)  # connected and sending
            dump = capture(pair, pair.a, tmp, "-i", pair.ia, "-s", "96", "tcp port 5001")
            time.sleep(0.4)
            stop(dump)
        nft(pair, pair.r, "forward tcp sport 5001 meta length > 1000 numgen inc mod 40 == 7 drop")
        run_transfer(pair, "4", "10.79.0.2", 1_500_000, chunk=8192, pause_s=0.01, during=during)
        shutil.move(tmp, full)
        # the excerpt: from the segment after the first lost one to the retransmission that fills its hole
        rows = subprocess.run(
            ["tshark", "-r", str(full), "-Y", "tcp.srcport == 5001 && tcp.len > 0", "-T", "fields", "-e",
             "frame.number", "-e", "tcp.seq_raw", "-e", "tcp.len", "-e", "tcp.analysis.retransmission",
             "-e", "tcp.analysis.fast_retransmission", "-e", "tcp.analysis.out_of_order"],
            capture_output=True, text=True, check=True).stdout.splitlines()
        segs = [r.split("\t") for r in rows]
        by_seq = {int(s[1]): int(s[0]) for s in segs}
        for s in segs:
            if any(s[3:]):
                after = by_seq.get(int(s[1]) + int(s[2]))
                if after is not None and after < int(s[0]) and int(s[0]) - after <= 12:
                    subprocess.run(["editcap", "-r", str(full), str(out / "bbgen-midflow-excerpt.pcap"),
                                    f"{after}-{int(s[0]) + 1}"], check=True)
                    return
        raise RuntimeError(f"{full}: no retransmission within 12 packets of the segment after its hole")


def syn_retransmissions(out: Path) -> None:
    """Two connection attempts whose handshakes take several tries (pcapng, dumpcap at the client): port 5001's
    SYNs are dropped at the server's input for 2.5 s (the client retransmits its SYN), port 5002's SYN-ACKs at the
    client's input (the server retransmits its SYN-ACK and the client its SYN); then both connect, exchange a
    little data and close."""
    with Pair() as pair:
        f = out / "bbgen-syn-retransmissions.pcapng"
        dump = capture(pair, pair.a, f, "-i", pair.ia, tool="dumpcap")
        nft(pair, pair.b, "input tcp dport 5001 tcp flags & (syn|ack) == syn drop")
        nft(pair, pair.a, "input tcp sport 5002 tcp flags & (syn|ack) == syn|ack drop")

        def lift() -> None:
            time.sleep(2.5)
            nft_flush(pair, pair.a)
            nft_flush(pair, pair.b)
        script = Path(tempfile.gettempdir()) / f"bbc-peer-{pair.token}.py"
        script.write_text(PEER)
        srvs = [pair.start(pair.b, sys.executable, str(script), "server", "4", "0.0.0.0", str(port), "3000", "3000",
                           "0") for port in (5001, 5002)]
        for s in srvs:
            wait_line(s, "listening")
        clis = [pair.start(pair.a, sys.executable, str(script), "client", "4", B4, str(port), "0", "0", "0")
                for port in (5001, 5002)]
        lift()
        for p in clis + srvs:
            p.wait(timeout=60)
        stop(dump)


def fin_retransmission(out: Path) -> None:
    """The ACK of the server's FIN is dropped at the client's output for 1.5 s (pure ACKs of port 5001 while the
    data is long acknowledged), so the server retransmits its FIN; captured at the server (pcap)."""
    with Pair() as pair:
        f = out / "bbgen-fin-retransmission.pcap"
        dump = capture(pair, pair.b, f, "-i", pair.ib, "tcp port 5001")

        def during() -> None:
            time.sleep(0.5)  # the data (sent at once) is acknowledged; the server waits 1 s before its FIN
            nft(pair, pair.a, "output tcp dport 5001 tcp flags == ack drop")
            time.sleep(1.5)
            nft_flush(pair, pair.a)
        run_transfer(pair, "4", B4, 20_000, server=("linger=1",), client=("hold=3",), during=during)
        stop(dump)


def ipv6_sack(out: Path) -> None:
    """An IPv6 bulk transfer with every 25th data segment dropped by a router (SACK blocks, fast
    retransmissions, RACK), captured at the client with a 128-byte snap length (pcapng via dumpcap)."""
    with Pair(routed=True) as pair:
        f = out / "bbgen-ipv6-sack.pcapng"
        dump = capture(pair, pair.a, f, "-i", pair.ia, "-s", "128", tool="dumpcap")
        nft(pair, pair.r, "forward tcp sport 5001 meta length > 1000 numgen inc mod 25 == 3 drop")
        run_transfer(pair, "6", "fd79::2", 600_000, chunk=8192, pause_s=0.002)
        stop(dump)


def vlan(out: Path) -> None:
    """IPv4 and IPv6 transfers captured on the veth, then given an 802.1Q tag (VLAN 42) by tcprewrite
    (--enet-vlan=add): the kernel this was made on has no VLAN device type, so the tag is the one field not
    written by the sender's kernel."""
    with Pair() as pair:
        tmp = out / ".vlan-tmp.pcap"
        dump = capture(pair, pair.a, tmp, "-i", pair.ia, "-s", "160")
        run_transfer(pair, "4", B4, 150_000, port=5001)
        run_transfer(pair, "6", B6, 150_000, port=5002)
        stop(dump)
    subprocess.run(["tcprewrite", "--enet-vlan=add", "--enet-vlan-tag=42", "--enet-vlan-cfi=0", "--enet-vlan-pri=0",
                    f"--infile={tmp}", f"--outfile={out / 'bbgen-vlan.pcap'}"], check=True)
    tmp.unlink()


def cooked(out: Path) -> None:
    """`tcpdump -i any` in the client's namespace: Linux cooked v1 (-y LINUX_SLL) and v2 (the default)."""
    for name, extra in (("bbgen-sll.pcap", ("-y", "LINUX_SLL")), ("bbgen-sll2.pcap", ())):
        with Pair() as pair:
            dump = capture(pair, pair.a, out / name, "-i", "any", "-s", "160", *extra, "tcp")
            run_transfer(pair, "4", B4, 200_000)
            stop(dump)


def snaplen96(out: Path) -> None:
    """A bulk transfer with timestamps captured with `-s 96`: 30 payload bytes per segment captured, the rest
    counted from the IP length."""
    with Pair() as pair:
        dump = capture(pair, pair.a, out / "bbgen-snaplen96.pcap", "-i", pair.ia, "-s", "96")
        run_transfer(pair, "4", B4, 300_000)
        stop(dump)


def zero_window(out: Path) -> None:
    """A slow reader (4 kB receive buffer, 1 kB reads every 20 ms) behind a fast sender: the client's window
    closes and opens again, the server probes it."""
    with Pair() as pair:
        dump = capture(pair, pair.a, out / "bbgen-zero-window.pcap", "-i", pair.ia, "-s", "160")
        run_transfer(pair, "4", B4, 60_000, client=("rcvbuf=4096", "read=1024", "read_pause_s=0.02"))
        stop(dump)


def keepalive(out: Path) -> None:
    """An idle connection with keep-alives every second (TCP_KEEPIDLE/INTVL 1 s) on both ends, for 4 s."""
    with Pair() as pair:
        dump = capture(pair, pair.a, out / "bbgen-keepalive.pcap", "-i", pair.ia)
        run_transfer(pair, "4", B4, 100, server=("keepalive=1", "before_s=4"), client=("keepalive=1",))
        stop(dump)


CASES = {"midflow": midflow, "syn-retransmissions": syn_retransmissions, "fin-retransmission": fin_retransmission,
         "ipv6-sack": ipv6_sack, "vlan": vlan, "cooked": cooked, "snaplen96": snaplen96,
         "zero-window": zero_window, "keepalive": keepalive}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases", nargs="*", choices=[*CASES, []], help="cases to make (default: all)")
    ap.add_argument("-o", "--out", type=Path, default=HERE)
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("make_captures: needs root (network namespaces, nft)", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run the cleanup of the open Pair
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.cases or CASES:
        print(f"make_captures: {name}", flush=True)
        CASES[name](args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
