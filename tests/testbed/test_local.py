"""Local testbed: names, topology descriptions, and that up/down leaves nothing behind
(normal exit, an exception in the body, SIGINT, SIGTERM, SIGKILL + start-up sweep)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from benchbook.testbed.backends import backend_names, get_backend
from benchbook.testbed.cleanup import sweep_leftovers
from benchbook.testbed.local import LocalBackend
from benchbook.testbed.names import make_name, new_token, token_of
from benchbook.testbed.topology import Topology
from conftest import require_program, require_root


def test_names_roundtrip_and_limits():
    tok = new_token()
    assert token_of(make_name(tok, "lg")) == tok
    assert token_of("bbf2ns") is None and token_of("bb-xyz-lg") is None and token_of("eth0") is None
    with pytest.raises(ValueError, match="15"):
        make_name(tok, "much-too-long", interface=True)
    with pytest.raises(ValueError, match="hex"):
        make_name("NOTHEX", "lg")


def test_topology_from_dict_validates():
    topo = Topology.from_dict({
        "name": "t",
        "roles": ["a", "b"],
        "links": [{"a": {"role": "a", "ifname": "a0"}, "b": {"role": "b", "ifname": "b0", "promisc": True}}],
    })
    assert topo.endpoint("b0").promisc
    with pytest.raises(ValueError, match="unknown role 'c'"):
        Topology.from_dict({
            "name": "t",
            "roles": ["a"],
            "links": [{"a": {"role": "a", "ifname": "a0"}, "b": {"role": "c", "ifname": "c0"}}],
        })
    with pytest.raises(ValueError, match="<dict>: bad topology"):
        Topology.from_dict({"roles": ["a"]})


def test_topology_from_toml_names_file(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text("name = 'x'\nroles = [\n")
    with pytest.raises(ValueError, match="bad.toml"):
        Topology.from_toml(p)


def _ours(token: str) -> dict[str, list[str]]:
    ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    return {"netns": [line.split()[0] for line in ns.splitlines() if token in line],
            "links": [line for line in links.splitlines() if token in line]}


@pytest.fixture
def root_ip():
    require_root()
    require_program("ip")


@pytest.mark.root
def test_up_down_leaves_nothing(root_ip):
    with LocalBackend().topology() as tb:
        tok = tb.token
        assert len(_ours(tok)["netns"]) == 3
        # the veth joins lg and dut: the DuT end is promiscuous as described
        out = tb.run("dut", ["ip", "-o", "link", "show", tb.ifname("din")]).stdout
        assert "PROMISC" in out
        proc = tb.host("ts").start(["sleep", "60"])
    assert proc.poll() is not None, "tracked process must be stopped at teardown"
    assert _ours(tok) == {"netns": [], "links": []}


@pytest.mark.root
def test_exception_in_body_still_tears_down(root_ip):
    tok = None
    with pytest.raises(RuntimeError, match="boom"):
        with LocalBackend().topology() as tb:
            tok = tb.token
            raise RuntimeError("boom")
    assert tok and _ours(tok) == {"netns": [], "links": []}


_CHILD = textwrap.dedent("""
    import sys, time
    from benchbook.testbed.local import LocalBackend
    with LocalBackend(sweep=False).topology() as tb:
        tb.host("dut").start(["sleep", "300"])
        print(tb.token, flush=True)
        time.sleep(300)
""")


def _start_child():
    proc = subprocess.Popen([sys.executable, "-c", _CHILD], stdout=subprocess.PIPE, text=True)
    token = proc.stdout.readline().strip()
    assert token_of(make_name(token, "lg")) == token, f"child printed {token!r}"
    assert len(_ours(token)["netns"]) == 3
    return proc, token


@pytest.mark.root
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_tears_down(root_ip, sig):
    proc, token = _start_child()
    proc.send_signal(sig)
    proc.wait(timeout=30)
    assert _ours(token) == {"netns": [], "links": []}


@pytest.mark.root
def test_sigkill_leftovers_removed_by_sweep_and_others_untouched(root_ip):
    foreign = f"bbtest-foreign-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", foreign], check=True)
    try:
        proc, token = _start_child()
        proc.kill()
        proc.wait(timeout=10)
        assert len(_ours(token)["netns"]) == 3, "SIGKILL cannot clean up: leftovers expected"
        rep = sweep_leftovers()
        assert _ours(token) == {"netns": [], "links": []}
        assert any(token in r for r in rep.removed)
        assert foreign in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    finally:
        subprocess.run(["ip", "netns", "del", foreign])


@pytest.mark.root
def test_sweep_keeps_live_runs(root_ip):
    with LocalBackend().topology() as tb:
        rep = sweep_leftovers()
        assert len(_ours(tb.token)["netns"]) == 3
        assert not any(tb.token in r for r in rep.removed)


def test_backend_registry():
    assert {"local", "ssh"} <= set(backend_names())
    assert get_backend("local", sweep=False).name == "local"
    with pytest.raises(KeyError, match="unknown testbed backend 'nope'"):
        get_backend("nope")


@pytest.mark.root
def test_toml_topology_up_with_addresses(root_ip, tmp_path):
    p = tmp_path / "pair.toml"
    p.write_text(textwrap.dedent("""
        name = "pair"
        roles = ["snd", "rcv"]
        [[links]]
        a = { role = "snd", ifname = "s0", address = "10.251.0.1/24" }
        b = { role = "rcv", ifname = "r0", address = "10.251.0.2/24" }
    """))
    with LocalBackend().topology(str(p)) as tb:
        assert tb.topology.name == "pair"
        assert "10.251.0.2/24" in tb.run("rcv", ["ip", "-o", "addr", "show", tb.ifname("r0")]).stdout
        assert f"dev {tb.ifname('s0')}" in tb.run("snd", ["ip", "route", "get", "10.251.0.2"]).stdout
        tok = tb.token
    assert _ours(tok) == {"netns": [], "links": []}
