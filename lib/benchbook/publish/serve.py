"""A read-only HTTP server for a published site (`benchbook serve`): GET and HEAD only, no
directory listings, no path outside the site (".." in any spelling, percent-encoded included, is
refused with 404), explicit MIME types for what the site holds."""

from __future__ import annotations

import http.server
import posixpath
import urllib.parse
from functools import partial
from pathlib import Path

from benchbook.publish.runs import PublishError

MIME_TYPES = {
    ".html": "text/html; charset=utf-8", ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8", ".mjs": "text/javascript; charset=utf-8",
    ".json": "application/json", ".svg": "image/svg+xml", ".png": "image/png", ".wasm": "application/wasm",
    ".zip": "application/zip", ".ipynb": "application/x-ipynb+json", ".parquet": "application/vnd.apache.parquet",
    ".hlog": "text/plain; charset=utf-8", ".scm": "text/plain; charset=utf-8", ".txt": "text/plain; charset=utf-8",
    ".csv": "text/csv; charset=utf-8", ".pcap": "application/vnd.tcpdump.pcap",
    ".pcapng": "application/octet-stream", ".pf_meta": "application/octet-stream",
    ".pf_index": "application/octet-stream", ".pf_fragment": "application/octet-stream",
    ".pagefind": "application/octet-stream",
}


def safe_relative_path(url_path: str) -> str | None:
    """The site-relative file path a request names, or None when it could leave the site.

    Decoding is repeated until stable, so %2e%2e and %252e%252e are both seen as "..".
    """
    path = urllib.parse.urlsplit(url_path).path
    for _ in range(4):
        decoded = urllib.parse.unquote(path)
        if decoded == path:
            break
        path = decoded
    else:
        return None
    if "\x00" in path or "\\" in path:
        return None
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        return None
    rel = posixpath.join(*parts) if parts else ""
    return rel


class SiteHandler(http.server.SimpleHTTPRequestHandler):
    """Serves one directory read-only; a directory answers with its index.html or 404."""

    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, **MIME_TYPES}
    server_version = "benchbook-serve"

    def __init__(self, *args, site: Path, **kwargs):
        self.site = Path(site).resolve()
        super().__init__(*args, directory=str(self.site), **kwargs)

    def translate_path(self, path: str) -> str:
        rel = safe_relative_path(path)
        if rel is None:
            return ""
        return str(self.site / rel)

    def send_head(self):
        rel = safe_relative_path(self.path)
        if rel is None:
            self.send_error(404, "Not found")
            return None
        target = self.site / rel
        if target.is_dir():
            if not urllib.parse.urlsplit(self.path).path.endswith("/"):
                self.send_response(301)
                self.send_header("Location", urllib.parse.urlsplit(self.path).path + "/")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return None
            if not (target / "index.html").is_file():
                self.send_error(404, "Not found")
                return None
        elif not target.is_file():
            self.send_error(404, "Not found")
            return None
        return super().send_head()

    def list_directory(self, path):
        self.send_error(404, "Not found")
        return None

    def _refuse(self) -> None:
        self.send_error(405, "Method not allowed: this server is read-only")

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse  # http.server's method names

    def log_message(self, format, *args):  # the base class's signature
        if getattr(self.server, "quiet", False):
            return
        super().log_message(format, *args)


def make_server(site: Path, host: str = "127.0.0.1", port: int = 8000, quiet: bool = False):
    """A ThreadingHTTPServer for ``site`` (not yet serving; call serve_forever)."""
    site = Path(site)
    if not (site / "index.html").is_file():
        raise PublishError(f"{site}: no index.html (not a site written by `benchbook publish`)")
    server = http.server.ThreadingHTTPServer((host, port), partial(SiteHandler, site=site))
    server.quiet = quiet
    return server
