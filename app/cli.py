"""Command line: `attnscope serve`."""

from __future__ import annotations

import argparse
import sys

import uvicorn

from .settings import Settings


def bind_warning(host: str) -> str | None:
    """A warning when the address exposes the server beyond this machine."""
    if host in ("0.0.0.0", "::", ""):
        return f"warning: binding {host or 'all interfaces'} exposes attnscope to every network this machine is on"
    return None


def main(argv: list[str] | None = None) -> int:
    settings = Settings()
    parser = argparse.ArgumentParser(prog="attnscope", description="See what attention does inside a transformer.")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve the explorer and the REST API")
    serve.add_argument("--host", default=settings.host, help=f"address to bind (default {settings.host})")
    serve.add_argument("--port", type=int, default=settings.port, help=f"port (default {settings.port})")
    args = parser.parse_args(argv)

    if args.command == "serve":
        warning = bind_warning(args.host)
        if warning:
            print(warning, file=sys.stderr)
        print(f"attnscope: serving on http://{args.host}:{args.port}", file=sys.stderr)
        uvicorn.run("app.main:create_app", factory=True, host=args.host, port=args.port, log_level="info")
    return 0


if __name__ == "__main__":
    sys.exit(main())
