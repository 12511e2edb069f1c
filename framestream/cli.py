"""`framestream serve` and `framestream token`."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from framestream import logs
from framestream.config import Settings, load_settings
from framestream.core.tokens import MAX_TTL, ROLES
from framestream.errors import ConfigError


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
    return 2


async def _serve(settings: Settings) -> int:
    from framestream.app import run  # the server stack loads only for `serve`, not for `token`

    return await run(settings)


__all__ = ["main"]
