"""HTTP for what goes in and out of a frame: navigation, uploads (a file chooser's answer, files dropped on the
page) and downloads.

Each takes a drive grant (`Authorization: Bearer`), like `POST /frames/{id}/input`: a navigation, a file chooser's
answer and a drop are steps under the same arbitration; a download is fetched by whoever may drive the frame.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from urllib.parse import quote

from aiohttp import web

from framestream.core.errors import FRAME_ERRORS, ProtocolError, protocol_error
from framestream.core.tokens import Claims
from framestream.core.wire import parse_navigate_body
from framestream.frames.browsing import AdmitDrop, AdmitFiles, CancelFileChooser, ChooseFiles, DropFiles, FrameAction
from framestream.frames.files import remove_folders
from framestream.frames.frame import Frame
from framestream.server.context import ServiceContext
from framestream.server.http_common import bearer, ctx_of, error, frame_of, json_body
from framestream.server.inputs import apply_step
from framestream.server.uploads import UploadRefused, check_headers, receive_files


def _next_seq() -> int:
    return time.time_ns() // 1000  # HTTP steps carry no seq of their own; this one names it in errors and logs


async def navigate(request: web.Request) -> web.Response:
    ctx, frame = ctx_of(request), frame_of(request)
    grant = bearer(request)
    action = parse_navigate_body(await json_body(request), frame=frame.id, grant=grant)
    await apply_step(ctx, frame, grant, action.seq, action)
    return web.json_response({"seq": action.seq, "applied": True, "url": frame.url})


async def answer_file_chooser(request: web.Request) -> web.Response:
    """The driver's files for a chooser: admitted first (the newest drive grant, the chooser open), then received
    within the limits (server/uploads.py), then handed to the page under the same grant. Whatever fails, what was
    written is deleted and the page gets nothing."""
    return await _within_limits(request, _answer_file_chooser)


async def _within_limits(request: web.Request,
                         handle: Callable[[web.Request, ServiceContext, Frame], Awaitable[web.Response]],
                         ) -> web.Response:
    """An upload route's answer, or its refusal past an upload limit (counted as a refused input)."""
    ctx, frame = ctx_of(request), frame_of(request)
    try:
        return await handle(request, ctx, frame)
    except UploadRefused as exc:
        ctx.inputs_refused[exc.code] = ctx.inputs_refused.get(exc.code, 0) + 1
        return error(exc.code, exc.message, exc.status)


async def _answer_file_chooser(request: web.Request, ctx: ServiceContext, frame: Frame) -> web.Response:
    grant = bearer(request)
    chooser_id = request.match_info["chooser"]
    claims = ctx.verify_drive(grant, frame.id)  # before reading a byte of the upload
    if chooser_id not in frame.browsing.choosers:
        raise ProtocolError("unknown-file-chooser", f"no open file chooser {chooser_id!r}")
    check_headers(request, max_bytes=ctx.settings.upload_max_bytes)  # refused on its headers: nothing changes
    seq = _next_seq()
    # Arbitration before the body: a superseded (or replayed) grant's upload is never read.
    await apply_step(ctx, frame, grant, seq, AdmitFiles(chooser_id))
    chooser = frame.browsing.choosers.get(chooser_id)
    if chooser is None:
        raise ProtocolError("unknown-file-chooser", f"no open file chooser {chooser_id!r}")
    paths = await _upload(request, ctx, frame, multiple=chooser.multiple,
                          apply=lambda paths: _apply_admitted(ctx, frame, claims, seq,
                                                              ChooseFiles(chooser_id, tuple(paths))))
    return web.json_response({"applied": True, "files": [p.name for p in paths]})


async def _upload(request: web.Request, ctx: ServiceContext, frame: Frame, *, multiple: bool,
                  apply: Callable[[list[Path]], Awaitable[None]]) -> list[Path]:
    """Receive the body's files into a fresh uploads folder and `apply` them; whatever fails, the folder goes and
    the page gets nothing."""
    files = frame.files
    folder = files.begin_upload()
    kept = False
    try:
        paths = await receive_files(request, files, folder, max_bytes=ctx.settings.upload_max_bytes,
                                    multiple=multiple)
        await apply(paths)
        kept = True
    finally:
        files.end_upload(folder, kept=kept)
        if not kept:
            await asyncio.shield(asyncio.to_thread(remove_folders, [folder]))
    return paths


async def drop_files(request: web.Request) -> web.Response:
    """Files the driver drops on the active page at `?x=&y=` (CSS pixels), as from their desktop: admitted and
    bounds-checked first, then received within the upload limits, then dropped under the same grant."""
    return await _within_limits(request, _drop_files)


def _drop_point(request: web.Request, frame: Frame) -> tuple[float, float]:
    try:
        x, y = float(request.query["x"]), float(request.query["y"])
    except (KeyError, ValueError) as exc:
        raise ProtocolError("bad-input", "a drop needs ?x=&y=: where, in the frame's CSS pixels") from exc
    width, height = frame.size.css_width, frame.size.css_height
    if not (0 <= x <= width and 0 <= y <= height):  # (NaN too) the input's bounds rule, edges included
        raise ProtocolError("bad-input", f"the drop at ({x:g}, {y:g}) is outside the frame's {width}x{height} CSS "
                            "pixels")
    return x, y


async def _drop_files(request: web.Request, ctx: ServiceContext, frame: Frame) -> web.Response:
    grant = bearer(request)
    claims = ctx.verify_drive(grant, frame.id)  # before reading a byte of the upload
    x, y = _drop_point(request, frame)
    check_headers(request, max_bytes=ctx.settings.upload_max_bytes)
    seq = _next_seq()
    await apply_step(ctx, frame, grant, seq, AdmitDrop(x, y))  # arbitration before the body
    paths = await _upload(request, ctx, frame, multiple=True,
                          apply=lambda paths: _apply_admitted(ctx, frame, claims, seq, DropFiles(x, y, tuple(paths))))
    return web.json_response({"applied": True, "files": [p.name for p in paths]})


async def _apply_admitted(ctx: ServiceContext, frame: Frame, claims: Claims, seq: int, action: FrameAction) -> None:
    """The rest of a step already admitted by `apply_step` (its step grant spent there): admitted again, so a grant
    superseded meanwhile is refused, then applied."""
    try:
        await frame.apply_action(claims, seq, action)
    except ProtocolError as exc:
        ctx.inputs_refused[exc.code] = ctx.inputs_refused.get(exc.code, 0) + 1
        if exc.seq is None:
            raise ProtocolError(exc.code, exc.message, seq=seq, frame=frame.id) from exc
        raise
    except FRAME_ERRORS as exc:
        raise protocol_error(exc, frame=frame.id, seq=seq) from exc


async def cancel_file_chooser(request: web.Request) -> web.Response:
    ctx, frame = ctx_of(request), frame_of(request)
    grant = bearer(request)
    await apply_step(ctx, frame, grant, _next_seq(), CancelFileChooser(request.match_info["chooser"]))
    return web.json_response({"applied": True})


def _driver_frame(request: web.Request) -> Frame:
    ctx, frame = ctx_of(request), frame_of(request)
    ctx.verify_drive(bearer(request), frame.id)
    return frame


async def list_downloads(request: web.Request) -> web.Response:
    frame = _driver_frame(request)
    return web.json_response({"downloads": [d.describe() for d in frame.files.downloads.values()]})


async def get_download(request: web.Request) -> web.StreamResponse:
    frame = _driver_frame(request)
    download_id = request.match_info["download"]
    path = frame.files.path(download_id)
    if path is None or not path.is_file():
        raise ProtocolError("unknown-download", f"no finished download {download_id!r}")
    name = frame.files.downloads[download_id].name
    return web.FileResponse(path, headers={
        "Content-Disposition": f"attachment; filename*=UTF-8''{quote(name)}",
        "Content-Type": "application/octet-stream",
    })


def add_routes(app: web.Application) -> None:
    app.router.add_post("/frames/{id}/navigate", navigate)
    app.router.add_post("/frames/{id}/file-chooser/{chooser}", answer_file_chooser)
    app.router.add_delete("/frames/{id}/file-chooser/{chooser}", cancel_file_chooser)
    app.router.add_post("/frames/{id}/drop", drop_files)
    app.router.add_get("/frames/{id}/downloads", list_downloads)
    app.router.add_get("/frames/{id}/downloads/{download}", get_download)


__all__ = ["add_routes"]
