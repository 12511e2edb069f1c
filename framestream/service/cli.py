"""`framestream serve`, `framestream token` and `framestream mcp`."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from framestream.core.errors import ConfigError
from framestream.core.tokens import MAX_TTL, ROLES
from framestream.service import logs
from framestream.service.config import Settings, load_settings


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="framestream", description="Share live browser pages over one WebSocket.")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the service")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (0.0.0.0 inside a sandbox)")
    serve.add_argument("--port", type=int, default=7682)
    serve.add_argument("--frame", action="append", default=[], metavar="URL[@WxH]",
                       help="make a frame live at start (repeatable); default size 1280x800, dpr 2")
    serve.add_argument("--insecure-dev", action="store_true",
                       help="run without TERMINAL_AUTH_SECRET using a public key: local demos only")
    serve.add_argument("--log-level", default=os.environ.get("FRAMESTREAM_LOG_LEVEL", "info"))
    serve.add_argument("--log-format", default=os.environ.get("FRAMESTREAM_LOG_FORMAT", "text"),
                       help="text (for people) or json (one object a line, with frame ids as fields)")
    token = sub.add_parser("token", help="print a token signed with this sandbox's key")
    token.add_argument("--role", choices=ROLES, required=True)
    token.add_argument("--frame", default="*")
    token.add_argument("--subject", default="user")
    token.add_argument("--ttl", type=float, default=None, help="seconds; at most the role's lifetime")
    token.add_argument("--step", action="store_true", help="an agent's one-step drive grant (at most 30 s)")
    token.add_argument("--insecure-dev", action="store_true")
    mcp = sub.add_parser("mcp", help="computer-use tools for an agent over MCP (stdio; --http for streamable HTTP)")
    mcp.add_argument("--url", default="http://127.0.0.1:7682", help="the framestream service")
    mcp.add_argument("--subject", default="agent", help="who the agent's step grants name (the `sub` claim)")
    mcp.add_argument("--key-file", default=None,
                     help="a file holding the secret (default: TERMINAL_AUTH_SECRET); SANDBOX_ID names the sandbox")
    mcp.add_argument("--sandbox", default=None, help="the sandbox id (default: SANDBOX_ID, else local)")
    mcp.add_argument("--http", default=None, metavar="HOST:PORT",
                     help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio; needs a bearer secret "
                          "in FRAMESTREAM_MCP_TOKEN (and FRAMESTREAM_MCP_ALLOWED_HOSTS for other Host names)")
    mcp.add_argument("--no-control", action="store_true", help="leave out open_frame and close_frame")
    mcp.add_argument("--settle-ms", type=int, default=300,
                     help="quiet time before an action's picture is taken (ms)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "serve":
        try:
            logs.configure(args.log_level, args.log_format)
        except ValueError as exc:  # an unknown level or format
            print(f"framestream: {exc}", file=sys.stderr)
            return 2
        try:
            settings = load_settings(host=args.host, port=args.port, insecure_dev=args.insecure_dev,
                                     frames=tuple(args.frame))
        except ConfigError as exc:
            print(f"framestream: {exc}", file=sys.stderr)
            return 2
        if settings.insecure_dev:
            print("framestream: WARNING: --insecure-dev: tokens are signed with a PUBLIC key. "
                  "Anyone who can reach this port can watch and drive. Local demos only.", file=sys.stderr)
        from framestream.service.heap import map_large_blocks
        map_large_blocks()
        try:
            import uvloop
            return uvloop.run(_serve(settings))
        except KeyboardInterrupt:
            return 130
    if args.command == "token":
        try:
            settings = load_settings(insecure_dev=args.insecure_dev)
        except ConfigError as exc:
            print(f"framestream: {exc}", file=sys.stderr)
            return 2
        from framestream.tokens import mint_token
        if args.ttl is not None and args.ttl > MAX_TTL[args.role]:
            print(f"framestream: --ttl is capped at {MAX_TTL[args.role]} s for {args.role}", file=sys.stderr)
        try:
            print(mint_token(settings.secret, role=args.role, sandbox_id=settings.sandbox_id, frame=args.frame,
                             subject=args.subject, ttl=args.ttl, step=args.step))
        except ValueError as exc:
            print(f"framestream: {exc}", file=sys.stderr)
            return 2
        return 0
    if args.command == "mcp":
        return _mcp(args)
    return 2


def _mcp(args: argparse.Namespace) -> int:
    from framestream.mcp.server import build_server, load_key  # the mcp SDK loads only here

    try:
        key = load_key(key_file=args.key_file, sandbox=args.sandbox, subject=args.subject)
    except (OSError, ValueError) as exc:
        print(f"framestream: {exc}", file=sys.stderr)
        return 2
    security = None
    if args.http:
        from framestream.mcp.http_security import http_security

        host, _, port_text = args.http.rpartition(":")
        host = host.strip("[]") or "127.0.0.1"
        try:
            port = int(port_text)
            security = http_security(host, port, os.environ)
        except ValueError as exc:
            print(f"framestream: {exc}", file=sys.stderr)
            return 2
        os.environ.pop("FRAMESTREAM_MCP_TOKEN", None)  # held by `security` from now on
    server = build_server(args.url, key, control=not args.no_control, settle_ms=args.settle_ms)
    if security is not None:
        from framestream.mcp.serve_http import serve_http

        serve_http(server, security, host, port)
    else:
        server.run("stdio")
    return 0


async def _serve(settings: Settings) -> int:
    from framestream.service.app import run  # the server stack loads only for `serve`, not for `token`

    return await run(settings)


__all__ = ["main"]
