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

from framestream.core.errors import FRAME_ERRORS, ConfigError, ProtocolError, protocol_error
from framestream.core.tokens import Claims
from framestream.core.urls import without_query
from framestream.core.wire import parse_input_body
from framestream.frames.frame import Frame
from framestream.frames.urls import check_url
from framestream.server import recording_routes, tab_routes
from framestream.server.context import ServiceContext
from framestream.server.http_common import (
    _ctx,
    _frame,
    _json_body,
    _require,
    bearer,
    encode_png,
    error,
    errors_middleware,
)
from framestream.server.inputs import apply_step
from framestream.server.metrics import metrics
from framestream.server.ws import handle_ws
from framestream.service.config import DEFAULT_CSS_SIZE, DEFAULT_DPR, frame_size
from framestream.tokens import mint_token

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
async def healthz(request: web.Request) -> web.Response:
    # Still 200 when the state dir cannot be written: frames keep streaming, so the pod must not be restarted.
    body: dict[str, object] = {"ok": True}
    if (problem := _ctx(request).manager.registry.write_error) is not None:
        body["state_dir_error"] = problem
    if unrestorable := _ctx(request).manager.registry.unrestorable:
        body["unrestorable_frames"] = [str(item.get("id")) for item in unrestorable]
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
        url = check_url(body.get("url"), ctx.settings.allowed_url_hosts, ctx.settings.port)
        size = frame_size(body.get("width", DEFAULT_CSS_SIZE[0]), body.get("height", DEFAULT_CSS_SIZE[1]),
                          body.get("dpr", DEFAULT_DPR))
    except (ValueError, ConfigError) as exc:
        raise ProtocolError("bad-message", str(exc)) from exc
    record = body.get("record")
    if record is not None and not isinstance(record, bool):
        raise ProtocolError("bad-message", "record must be true or false")
    try:
        frame = await ctx.manager.create(url, size, record=record)
    except FRAME_ERRORS as exc:
        raise protocol_error(exc) from exc
    return web.json_response(frame.describe(), status=201)


def _described(frame: Frame, claims: Claims) -> dict[str, Any]:
    """A frame object; a view-only token gets its URL without query and fragment (as in frame-state)."""
    described = frame.describe()
    if not (claims.allows("drive", frame.id) or claims.allows("control", frame.id)):
        described["url"] = without_query(str(described["url"]))
    return described


async def list_frames(request: web.Request) -> web.Response:
    claims = _require(request, "view", "control")
    frames = [_described(f, claims) for f in _ctx(request).manager.frames.values() if claims.allows("view", f.id)]
    return web.json_response({"frames": frames})


async def get_frame(request: web.Request) -> web.Response:
    frame = _frame(request)
    claims = _require(request, "view", "control", frame_id=frame.id)
    return web.json_response(_described(frame, claims))


async def resize_frame(request: web.Request) -> web.Response:
    """`PATCH /frames/{id}`: a new CSS size (and dpr, 2 unless given, as `POST /frames` takes them), in place while
    the dpr stays (frames/resizing.py)."""
    frame = _frame(request)
    _require(request, "control", frame_id=frame.id)
    body = await _json_body(request)
    if not isinstance(body, dict):
        raise ProtocolError("bad-message", "the body must be a JSON object")
    if "width" not in body or "height" not in body:
        raise ProtocolError("bad-message", "width and height are required")
    try:
        size = frame_size(body["width"], body["height"], body.get("dpr", DEFAULT_DPR))
    except ConfigError as exc:
        raise ProtocolError("bad-message", str(exc)) from exc
    try:
        await frame.resizing.resize(size)
    except FRAME_ERRORS as exc:
        raise protocol_error(exc, frame=frame.id) from exc
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
    snap = await frame.fresh_snapshot(10.0)
    if snap is None:
        return error("internal", "the frame has no picture yet", 503)
    picture, capture_us, _ = snap
    png = await asyncio.get_running_loop().run_in_executor(None, encode_png, picture)
    return web.Response(body=png, content_type="image/png", headers={"X-Capture-Time-Us": str(capture_us)})


async def post_input(request: web.Request) -> web.Response:
    ctx = _ctx(request)
    frame = _frame(request)
    grant = bearer(request)
    seq, events = parse_input_body(await _json_body(request))
    applied = await apply_step(ctx, frame, grant, seq, events)
    picture_us = await frame.feed.wait_change(applied.started_us, CHANGE_WINDOW_S)
    if picture_us is None:
        # Nothing changed on the display for the whole window: the picture as of now is the one to trust.
        return web.json_response({"seq": seq, "applied": True, "changed": False,
                                  "picture_us": time.time_ns() // 1000})
    return web.json_response({"seq": seq, "applied": True, "changed": True, "picture_us": picture_us})


async def dev_token(request: web.Request) -> web.Response:
    """`--insecure-dev` only (its key is public and it serves on loopback only): a fresh token for the demo page,
    which asks again before each one expires (a connection ends with its token). Never served otherwise."""
    settings = _ctx(request).settings
    role = request.query.get("role", "drive")
    if role not in ("view", "drive"):
        raise ProtocolError("bad-message", "role must be view or drive")
    token = mint_token(settings.secret, role=role, sandbox_id=settings.sandbox_id, subject="demo")
    return web.json_response({"token": token}, headers={"Cache-Control": "no-store"})


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
    app.router.add_patch("/frames/{id}", resize_frame)
    app.router.add_delete("/frames/{id}", delete_frame)
    app.router.add_get("/frames/{id}/screenshot", screenshot)
    app.router.add_post("/frames/{id}/input", post_input)
    tab_routes.add_routes(app)
    recording_routes.add_routes(app)
    if ctx.settings.insecure_dev:
        app.router.add_get("/dev/token", dev_token)
    app.router.add_get("/", index)
    if WEB_DIR.is_dir():
        app.router.add_static("/web/", WEB_DIR, show_index=False, follow_symlinks=False)
    app.on_response_prepare.append(_revalidate_viewer)
    return app


def viewer_policy(allowed_origins: tuple[str, ...]) -> str:
    """The viewer page's Content-Security-Policy: its own scripts only (no inline script, no eval), its own
    connections (HTTP and the WebSocket), pictures from blobs, and embedded only by itself or by the origins
    FRAMESTREAM_ALLOWED_ORIGINS lets connect (issue 32: the viewer page had neither CSP nor frame-ancestors)."""
    ancestors = " ".join(("'self'", *allowed_origins))
    return ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' blob: data:; "
            "media-src 'self' blob:; connect-src 'self' blob:; object-src 'none'; base-uri 'none'; "
            f"form-action 'none'; frame-ancestors {ancestors}")


async def _revalidate_viewer(request: web.Request, response: web.StreamResponse) -> None:
    """The viewer's files revalidate on every load (Last-Modified makes that cheap), so an upgrade is seen; the
    viewer page gets its policy (the demo page, which a frame shows, keeps its inline script)."""
    if request.path == "/" or request.path.startswith("/web/"):
        response.headers["Cache-Control"] = "no-cache"
    if request.path in ("/", "/web/index.html"):
        response.headers["Content-Security-Policy"] = viewer_policy(_ctx(request).settings.allowed_origins)
        response.headers["X-Content-Type-Options"] = "nosniff"


__all__ = ["build_app", "encode_png"]
