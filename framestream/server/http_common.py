"""What every HTTP handler shares: error answers, the token of a request, its frame, its JSON body.

A body is parsed only after the request's token verified (`json_body` checks it first when the route has not):
an unauthenticated request never reaches the JSON parser, whatever its body (50,000 `[` answer 401).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from framestream.core.errors import ProtocolError, TokenError
from framestream.core.tokens import Claims
from framestream.frames.frame import Frame
from framestream.server.context import ServiceContext

_STATUS = {"unauthorized": 401, "expired": 401, "forbidden": 403, "shared-frames-off": 403, "unknown-frame": 404,
           "capacity": 409, "bad-message": 400, "bad-input": 400, "superseded": 409, "taken-over": 409,
           "replayed": 409, "rate-limited": 429, "internal": 500, "unknown-page": 404, "unknown-dialog": 404,
           "unknown-file-chooser": 404, "unknown-download": 404, "dialog-open": 409, "unresponsive": 409,
           "printing": 409, "page-limit": 409, "navigation-failed": 502, "unknown-recording": 404,
           "recording-active": 409}


def error(code: str, message: str, status: int | None = None) -> web.Response:
    return web.json_response({"error": code, "message": message}, status=status or _STATUS.get(code, 400))


def _ctx(request: web.Request) -> ServiceContext:
    ctx: ServiceContext = request.app["ctx"]
    return ctx


_VERIFIED = "framestream.claims"  # where a request keeps the claims of its verified token


def _claims(request: web.Request) -> Claims:
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise ProtocolError("unauthorized", "missing token: send Authorization: Bearer <token>")
    return _verified(request, token.strip())


def _verified(request: web.Request, token: str) -> Claims:
    """The claims of `token` (signature and lifetime checked), kept on the request; ProtocolError otherwise."""
    try:
        claims = _ctx(request).verify(token)
    except TokenError as exc:
        raise ProtocolError(exc.code, exc.message) from exc
    request[_VERIFIED] = claims
    return claims


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
    """The request's JSON body, parsed only once its bearer token verified (checked here if not yet)."""
    if _VERIFIED not in request:
        _claims(request)
    try:
        return await request.json()
    except (ValueError, UnicodeDecodeError) as exc:
        raise ProtocolError("bad-message", "the body must be JSON") from exc
    except RecursionError as exc:  # nested deeper than the parser's stack: not a body any route takes
        raise ProtocolError("bad-message", "the body is nested too deeply") from exc


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
    # Its signature and lifetime are checked now, before the body is read; role, frame and replay with the step.
    try:
        _verified(request, grant.strip())
    except ProtocolError as exc:
        ctx = _ctx(request)
        ctx.inputs_refused[exc.code] = ctx.inputs_refused.get(exc.code, 0) + 1
        raise
    return grant.strip()


def encode_png(bgrx: Any) -> bytes:
    """PNG of a BGRX picture, through PyAV's PNG encoder (imported here: only screenshots need it, and an idle
    service maps no media library). Here rather than in http.py so the recordings' routes can use it too."""
    import av
    import numpy as np

    rgb = np.ascontiguousarray(bgrx[:, :, 2::-1])
    ctx = av.CodecContext.create("png", "w")
    ctx.width, ctx.height, ctx.pix_fmt = rgb.shape[1], rgb.shape[0], "rgb24"
    ctx.options = {"compression_level": "1"}  # fast: an agent waits for this picture
    packets = ctx.encode(av.VideoFrame.from_ndarray(rgb, format="rgb24"))
    return b"".join(bytes(p) for p in packets)


ctx_of = _ctx
frame_of = _frame
json_body = _json_body
