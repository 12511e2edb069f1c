"""What every HTTP handler shares: error answers, the token of a request, its frame, its JSON body."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from framestream.core.tokens import Claims
from framestream.errors import ProtocolError, TokenError
from framestream.frames import Frame
from framestream.server.context import ServiceContext

_STATUS = {"unauthorized": 401, "expired": 401, "forbidden": 403, "shared-frames-off": 403, "unknown-frame": 404,
           "capacity": 409, "bad-message": 400, "bad-input": 400, "superseded": 409, "replayed": 409,
           "rate-limited": 429, "internal": 500, "unknown-page": 404, "unknown-dialog": 404,
           "unknown-file-chooser": 404, "unknown-download": 404, "dialog-open": 409, "unresponsive": 409,
           "page-limit": 409, "navigation-failed": 502}


def error(code: str, message: str, status: int | None = None) -> web.Response:
    return web.json_response({"error": code, "message": message}, status=status or _STATUS.get(code, 400))


def _ctx(request: web.Request) -> ServiceContext:
    ctx: ServiceContext = request.app["ctx"]
    return ctx


def _claims(request: web.Request) -> Claims:
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise ProtocolError("unauthorized", "missing token: send Authorization: Bearer <token>")
    try:
        return _ctx(request).verify(token.strip())
    except TokenError as exc:
        raise ProtocolError(exc.code, exc.message) from exc


def _require(request: web.Request, *roles: str, frame_id: str | None = None) -> Claims:
    claims = _claims(request)
    if not any(claims.allows(role, frame_id) for role in roles):
        raise ProtocolError("forbidden", f"this token may not do this (needs {' or '.join(roles)})")
    return claims


def _frame(request: web.Request) -> Frame:
    frame = _ctx(request).manager.get(request.match_info["id"])
    if frame is None:
        raise ProtocolError("unknown-frame", f"no frame {request.match_info['id']!r}")
    return frame


async def _json_body(request: web.Request) -> Any:
    try:
        return await request.json()
    except (ValueError, UnicodeDecodeError) as exc:
        raise ProtocolError("bad-message", "the body must be JSON") from exc


@web.middleware
async def errors_middleware(request: web.Request, handler: Any) -> web.StreamResponse:
    try:
        response: web.StreamResponse = await handler(request)
        return response
    except ProtocolError as exc:
        return error(exc.code, exc.message)
    except web.HTTPRequestEntityTooLarge:
        return error("bad-message", "the request body is too large", 413)
    except web.HTTPException as exc:
        if exc.status >= 400 and exc.content_type != "application/json":
            code = {404: "unknown-frame", 405: "bad-message"}.get(exc.status, "bad-message")
            return error(code, exc.reason, exc.status)
        raise



def bearer(request: web.Request) -> str:
    """The grant a step is sent under (`Authorization: Bearer <drive grant>`)."""
    scheme, _, grant = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not grant.strip():
        raise ProtocolError("unauthorized", "missing grant: send Authorization: Bearer <drive grant>")
    return grant.strip()


ctx_of = _ctx
frame_of = _frame
json_body = _json_body
