"""HTTP for what goes in and out of a frame: navigation, file choosers' answers (uploads) and downloads.

Each takes a drive grant (`Authorization: Bearer`), like `POST /frames/{id}/input`: a navigation and a file
chooser's answer are steps under the same arbitration; a download is fetched by whoever may drive the frame.
"""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path
from urllib.parse import quote

from aiohttp import BodyPartReader, web

from framestream.core.wire import parse_navigate_body
from framestream.errors import ProtocolError
from framestream.frames import Frame
from framestream.frames.browsing import CancelFileChooser, ChooseFiles
from framestream.frames.files import safe_name
from framestream.server.http_common import bearer, ctx_of, frame_of, json_body
from framestream.server.inputs import apply_step

CHUNK = 256 * 1024


def _next_seq() -> int:
    return time.time_ns() // 1000  # HTTP steps carry no seq of their own; this one names it in errors and logs


async def navigate(request: web.Request) -> web.Response:
    ctx, frame = ctx_of(request), frame_of(request)
    grant = bearer(request)
    action = parse_navigate_body(await json_body(request), frame=frame.id, grant=grant)
    await apply_step(ctx, frame, grant, action.seq, action)
    return web.json_response({"seq": action.seq, "applied": True, "url": frame.url})


async def answer_file_chooser(request: web.Request) -> web.Response:
    ctx, frame = ctx_of(request), frame_of(request)
    grant = bearer(request)
    chooser_id = request.match_info["chooser"]
    ctx.verify_drive(grant, frame.id)  # before reading a byte of the upload
    if chooser_id not in frame.browsing.choosers:
        raise ProtocolError("unknown-file-chooser", f"no open file chooser {chooser_id!r}")
    folder = await asyncio.to_thread(frame.files.upload_folder)
    try:
        paths = await _receive_files(request, folder, ctx.settings.upload_max_bytes)
    except BaseException:
        await asyncio.to_thread(_remove_tree, folder)
        raise
    await apply_step(ctx, frame, grant, _next_seq(), ChooseFiles(chooser_id, tuple(paths)))
    return web.json_response({"applied": True, "files": [p.name for p in paths]})


async def cancel_file_chooser(request: web.Request) -> web.Response:
    ctx, frame = ctx_of(request), frame_of(request)
    grant = bearer(request)
    await apply_step(ctx, frame, grant, _next_seq(), CancelFileChooser(request.match_info["chooser"]))
    return web.json_response({"applied": True})


async def _receive_files(request: web.Request, folder: Path, limit: int) -> list[Path]:
    """Save each part named "file" in `folder`; 413 past `limit` bytes in all (nothing is handed to the page)."""
    if not request.content_type.startswith("multipart/"):
        raise ProtocolError("bad-message", "send the files as multipart/form-data, parts named \"file\"")
    reader = await request.multipart()
    paths: list[Path] = []
    total = 0
    while (part := await reader.next()) is not None:
        if not isinstance(part, BodyPartReader) or part.name != "file":
            continue
        name = safe_name(part.filename or "", f"file{len(paths) + 1}")
        path = folder / name
        k = 1
        while path.exists() or path in paths:
            k += 1
            path = folder / f"{k}-{name}"
        with open(path, "wb") as fh:  # noqa: ASYNC230 - small chunks to a local state dir
            while chunk := await part.read_chunk(CHUNK):
                total += len(chunk)
                if total > limit:
                    raise web.HTTPRequestEntityTooLarge(max_size=limit, actual_size=total)
                fh.write(chunk)
        paths.append(path)
    if not paths:
        raise ProtocolError("bad-message", "no part named \"file\" in the upload")
    return paths


def _remove_tree(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)


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
    app.router.add_get("/frames/{id}/downloads", list_downloads)
    app.router.add_get("/frames/{id}/downloads/{download}", get_download)


__all__ = ["add_routes"]
