"""HTTP on the service's port: health, config, the frames API, screenshots, agent input, the viewer."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

from aiohttp import web

from framestream.config import DEFAULT_CSS_SIZE, DEFAULT_DPR, frame_size
from framestream.core.tokens import Claims
from framestream.core.wire import parse_input_body
from framestream.errors import FRAME_ERRORS, ConfigError, ProtocolError, TokenError, protocol_error
from framestream.frames import Frame, check_url
from framestream.server.context import ServiceContext
from framestream.server.inputs import apply_step
from framestream.server.metrics import metrics
from framestream.server.ws import handle_ws

log = logging.getLogger(__name__)

def _web_dir() -> Path:
    """The viewer's files: FRAMESTREAM_WEB_DIR, the checkout's web/ (editable install), or the copy a regular
    install puts under <prefix>/share/framestream/web."""
    candidates = [os.environ.get("FRAMESTREAM_WEB_DIR", ""), str(Path(__file__).resolve().parents[2] / "web"),
                  os.path.join(sys.prefix, "share", "framestream", "web")]
    for candidate in candidates:
        if candidate and (Path(candidate) / "index.html").is_file():
            return Path(candidate)
    return Path(candidates[1])


WEB_DIR = _web_dir()
CHANGE_WINDOW_S = 0.25
_STATUS = {"unauthorized": 401, "expired": 401, "forbidden": 403, "shared-frames-off": 403, "unknown-frame": 404,
           "capacity": 409, "bad-message": 400, "bad-input": 400, "superseded": 409, "replayed": 409,
           "rate-limited": 429, "internal": 500}


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


async def healthz(request: web.Request) -> web.Response:
    # Still 200 when the state dir cannot be written: frames keep streaming, so the pod must not be restarted.
    body: dict[str, object] = {"ok": True}
    if (problem := _ctx(request).manager.registry.write_error) is not None:
        body["state_dir_error"] = problem
    return web.json_response(body)


async def config(request: web.Request) -> web.Response:
    s = _ctx(request).settings
    return web.json_response({"protocol": 1, "shared_frames": s.shared_frames, "max_browsers": s.max_browsers,
                              "sandbox": s.sandbox_id})


async def create_frame(request: web.Request) -> web.Response:
    ctx = _ctx(request)
    _require(request, "control")
    if not ctx.settings.shared_frames:
        return error("shared-frames-off", "SHARED_FRAMES=off: frames stay private to their viewer")
    body = await _json_body(request)
    if not isinstance(body, dict):
        raise ProtocolError("bad-message", "the body must be a JSON object")
    try:
        url = check_url(body.get("url"), ctx.settings.allowed_url_hosts)
        size = frame_size(body.get("width", DEFAULT_CSS_SIZE[0]), body.get("height", DEFAULT_CSS_SIZE[1]),
                          body.get("dpr", DEFAULT_DPR))
    except (ValueError, ConfigError) as exc:
        raise ProtocolError("bad-message", str(exc)) from exc
    try:
        frame = await ctx.manager.create(url, size)
    except FRAME_ERRORS as exc:
        raise protocol_error(exc) from exc
    return web.json_response(frame.describe(), status=201)


async def list_frames(request: web.Request) -> web.Response:
    claims = _require(request, "view", "control")
    frames = [f.describe() for f in _ctx(request).manager.frames.values() if claims.allows("view", f.id)]
    return web.json_response({"frames": frames})


async def get_frame(request: web.Request) -> web.Response:
    frame = _frame(request)
    _require(request, "view", "control", frame_id=frame.id)
    return web.json_response(frame.describe())


async def delete_frame(request: web.Request) -> web.Response:
    frame = _frame(request)
    _require(request, "control", frame_id=frame.id)
    purge = request.query.get("purge") in ("1", "true")
    await _ctx(request).manager.delete(frame.id, purge=purge)
    return web.json_response({"id": frame.id, "deleted": True, "purged": purge})


async def screenshot(request: web.Request) -> web.Response:
    frame = _frame(request)
    _require(request, "view", frame_id=frame.id)
    try:
        await frame.ensure_running()
    except FRAME_ERRORS as exc:
        raise protocol_error(exc, frame=frame.id) from exc
    snap = frame.snapshot()
    if snap is None:
        await frame.feed.wait_change(0, 10.0)
        snap = frame.snapshot()
    if snap is None:
        return error("internal", "the frame has no picture yet", 503)
    picture, capture_us, _ = snap
    png = await asyncio.get_running_loop().run_in_executor(None, encode_png, picture)
    return web.Response(body=png, content_type="image/png", headers={"X-Capture-Time-Us": str(capture_us)})


def encode_png(bgrx: Any) -> bytes:
    """PNG of a BGRX picture, through PyAV's PNG encoder (imported here: only screenshots need it)."""
    import av
    import numpy as np

    rgb = np.ascontiguousarray(bgrx[:, :, 2::-1])
    ctx = av.CodecContext.create("png", "w")
    ctx.width, ctx.height, ctx.pix_fmt = rgb.shape[1], rgb.shape[0], "rgb24"
    ctx.options = {"compression_level": "1"}  # fast: an agent waits for this picture
    packets = ctx.encode(av.VideoFrame.from_ndarray(rgb, format="rgb24"))
    return b"".join(bytes(p) for p in packets)


async def post_input(request: web.Request) -> web.Response:
    ctx = _ctx(request)
    frame = _frame(request)
    header = request.headers.get("Authorization", "")
    scheme, _, grant = header.partition(" ")
    if scheme.lower() != "bearer" or not grant.strip():
        raise ProtocolError("unauthorized", "missing grant: send Authorization: Bearer <drive grant>")
    seq, events = parse_input_body(await _json_body(request))
    applied = await apply_step(ctx, frame, grant.strip(), seq, events)
    picture_us = await frame.feed.wait_change(applied.started_us, CHANGE_WINDOW_S)
    if picture_us is None:
        # Nothing changed on the display for the whole window: the picture as of now is the one to trust.
        return web.json_response({"seq": seq, "applied": True, "changed": False,
                                  "picture_us": time.time_ns() // 1000})
    return web.json_response({"seq": seq, "applied": True, "changed": True, "picture_us": picture_us})


async def index(request: web.Request) -> web.StreamResponse:
    return web.FileResponse(WEB_DIR / "index.html", headers={"Cache-Control": "no-cache"})


def build_app(ctx: ServiceContext) -> web.Application:
    app = web.Application(client_max_size=ctx.settings.max_message_bytes, middlewares=[errors_middleware])
    app["ctx"] = ctx
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/config", config)
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/ws", handle_ws)
    app.router.add_post("/frames", create_frame)
    app.router.add_get("/frames", list_frames)
    app.router.add_get("/frames/{id}", get_frame)
    app.router.add_delete("/frames/{id}", delete_frame)
    app.router.add_get("/frames/{id}/screenshot", screenshot)
    app.router.add_post("/frames/{id}/input", post_input)
    app.router.add_get("/", index)
    if WEB_DIR.is_dir():
        app.router.add_static("/web/", WEB_DIR, show_index=False, follow_symlinks=False)
    app.on_response_prepare.append(_revalidate_viewer)
    return app


async def _revalidate_viewer(request: web.Request, response: web.StreamResponse) -> None:
    """The viewer's files revalidate on every load (Last-Modified makes that cheap), so an upgrade is seen."""
    if request.path == "/" or request.path.startswith("/web/"):
        response.headers["Cache-Control"] = "no-cache"


__all__ = ["build_app", "encode_png"]
