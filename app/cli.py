"""Command line: `attnscope serve`."""

from __future__ import annotations

import argparse
import sys

import uvicorn

from .settings import Settings


def main(argv: list[str] | None = None) -> int:
    settings = Settings()
    parser = argparse.ArgumentParser(prog="attnscope", description="See what attention does inside a transformer.")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve the explorer and the REST API")
    serve.add_argument("--host", default=settings.host, help=f"address to bind (default {settings.host})")
    serve.add_argument("--port", type=int, default=settings.port, help=f"port (default {settings.port})")
    args = parser.parse_args(argv)

    if args.command == "serve":
        if args.host in ("0.0.0.0", "::"):
            print(f"warning: binding {args.host} exposes attnscope to every network interface", file=sys.stderr)
        print(f"attnscope: serving on http://{args.host}:{args.port}", file=sys.stderr)
        uvicorn.run("app.main:create_app", factory=True, host=args.host, port=args.port, log_level="info")
    return 0


if __name__ == "__main__":
    sys.exit(main())
