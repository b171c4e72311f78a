"""`benchbook serve SITE [--port N] [--host H]`: serve a published site read-only (127.0.0.1 by default)."""

from __future__ import annotations

from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    """Add `benchbook serve` to the app."""

    @app.command("serve")
    def serve(
        site: Path = typer.Argument(..., help="a folder written by `benchbook publish`"),
        port: int = typer.Option(8000, "--port", help="TCP port (0: any free one)"),
        host: str = typer.Option("127.0.0.1", "--host", help="address to bind (default: this machine only)"),
    ) -> None:
        """Serve a published site over http (GET/HEAD only, no listings, nothing outside SITE)."""
        from benchbook.publish.serve import make_server

        server = make_server(site, host=host, port=port)
        bound_host, bound_port = server.server_address[:2]
        typer.echo(f"serving {site.resolve()} at http://{bound_host}:{bound_port}/ (Ctrl-C stops)", err=False)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            server.server_close()
