"""benchbook serve: real HTTP requests to the command's server; traversal in every spelling is refused."""

from __future__ import annotations

import http.client
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from benchbook.publish.serve import safe_relative_path

SECRET = "not-for-the-web-7f3a"


@pytest.fixture()
def server(tmp_path):
    """`benchbook serve` on a small site in tmp_path/site (a secret file beside it); yields its port."""
    site = tmp_path / "site"
    (site / "assets").mkdir(parents=True)
    (site / "runs" / "x" / "files").mkdir(parents=True)
    (site / "index.html").write_text("<!DOCTYPE html><title>i</title>")
    (site / "assets" / "site.css").write_text("body{}")
    (site / "assets" / "site.js").write_text("1;")
    (site / "runs" / "x" / "files" / "run.json").write_text("{}")
    (site / "runs" / "x" / "files" / "fig.svg").write_text("<svg xmlns='http://www.w3.org/2000/svg'/>")
    (site / "runs" / "x" / "files" / "l.hlog").write_text("#[hlog]\n")
    (site / "runs" / "x" / "files" / "c.zip").write_bytes(b"PK\x05\x06" + b"\0" * 18)
    (site / "pagefind").mkdir()
    (site / "pagefind" / "wasm.en.pagefind").write_bytes(b"\0asm")
    (tmp_path / "secret.txt").write_text(SECRET)
    proc = subprocess.Popen([sys.executable, "-m", "benchbook.cli", "serve", str(site), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True)
    try:
        line = proc.stdout.readline()
        assert "serving" in line and "http://127.0.0.1:" in line, line
        port = int(line.rsplit(":", 1)[1].split("/")[0])
        yield port
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)


def _get(port: int, path: str, method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.putrequest(method, path, skip_host=False, skip_accept_encoding=True)
        conn.endheaders()
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


@pytest.mark.parametrize("path", [
    "/../secret.txt", "/%2e%2e/secret.txt", "/%2E%2E/secret.txt", "/..%2fsecret.txt", "/%2e%2e%2fsecret.txt",
    "/runs/x/../../../secret.txt", "/runs/%2e%2e/%2e%2e/secret.txt", "/%252e%252e/secret.txt",
    "/assets/..%5c..%5csecret.txt", "/assets/%2e%2e/%2e%2e/secret.txt?x=1", "//../secret.txt",
])
def test_traversal_is_refused(server, path):
    status, _, body = _get(server, path)
    assert status == 404, f"{path}: status {status}"
    assert SECRET.encode() not in body


@pytest.mark.parametrize(("path", "mime"), [
    ("/", "text/html"), ("/index.html", "text/html"), ("/assets/site.css", "text/css"),
    ("/assets/site.js", "text/javascript"), ("/runs/x/files/run.json", "application/json"),
    ("/runs/x/files/fig.svg", "image/svg+xml"), ("/runs/x/files/l.hlog", "text/plain"),
    ("/runs/x/files/c.zip", "application/zip"), ("/pagefind/wasm.en.pagefind", "application/octet-stream"),
])
def test_files_are_served_with_their_mime_type(server, path, mime):
    status, headers, _ = _get(server, path)
    assert status == 200, path
    assert headers["content-type"].split(";")[0] == mime


def test_read_only_and_no_listings(server):
    assert _get(server, "/index.html", "POST")[0] == 405
    assert _get(server, "/index.html", "PUT")[0] == 405
    assert _get(server, "/index.html", "DELETE")[0] == 405
    assert _get(server, "/runs/x/files/")[0] == 404
    assert _get(server, "/runs/x/files")[0] == 301
    assert _get(server, "/missing.html")[0] == 404
    assert _get(server, "/index.html", "HEAD")[0] == 200


def test_serve_listens_on_loopback_only_by_default(server):
    listening = []
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        local, state = line.split()[1], line.split()[3]
        addr, port = local.split(":")
        if state == "0A" and int(port, 16) == server:
            listening.append(addr)
    assert listening == ["0100007F"], f"port {server} listens on {listening} (hex, little-endian IPv4)"


def test_serve_refuses_a_folder_that_is_not_a_site(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "benchbook.cli", "serve", str(tmp_path), "--port", "0"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "no index.html" in proc.stderr and str(tmp_path) in proc.stderr


def test_safe_relative_path():
    assert safe_relative_path("/runs/a/index.html?q=1#x") == "runs/a/index.html"
    assert safe_relative_path("/") == ""
    assert safe_relative_path("/a/%2e%2e/b") is None
    assert Path(safe_relative_path("/a/./b")) == Path("a/b")
