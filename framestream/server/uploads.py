"""Receiving an upload (the body of `POST /frames/{id}/file-chooser/{C}`, a file chooser's answer, or of
`POST /frames/{id}/drop`, files dropped on the page) within its limits.

The route admits the grant before this reads a byte (`AdmitFiles`, `AdmitDrop`: the newest drive grant, the chooser
open).
Then: a `Content-Length` past the limit is refused unread; at most `FRAMESTREAM_UPLOAD_MAX_FILES` parts (64),
`FRAMESTREAM_UPLOAD_MAX_BYTES` in all (the body as read, boundaries and headers included, plus a little), and the
frame's `FRAMESTREAM_UPLOAD_QUOTA_BYTES` of uploads on disk (the oldest answers' folders make room); a second
file for a chooser that takes one is refused as it starts. Names are made unique in a fresh folder without
looking at the disk, and every open, write and close runs off the event loop. On any failure the caller deletes
the folder (`_upload` in server/tab_routes.py).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import BinaryIO

from aiohttp import BodyPartReader, MultipartReader, web

from framestream.core.errors import ProtocolError
from framestream.frames.files import FrameFiles, UniqueNames, make_folder, remove_folders, safe_name

CHUNK = 256 * 1024
OVERHEAD = 64 * 1024  # what multipart framing may add to the files' bytes before the body is refused


class UploadRefused(Exception):
    """An answer past a limit: HTTP `status` with the contract's `code` and a message saying which limit."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def _too_large(max_bytes: int) -> UploadRefused:
    return UploadRefused(413, "bad-message",
                         f"an upload is at most {max_bytes} bytes (FRAMESTREAM_UPLOAD_MAX_BYTES)")


def check_headers(request: web.Request, *, max_bytes: int) -> None:
    """What the headers alone tell: not multipart (ProtocolError), or a `Content-Length` past the limit."""
    if not request.content_type.startswith("multipart/"):
        raise ProtocolError("bad-message", "send the files as multipart/form-data, parts named \"file\"")
    length = request.content_length
    if length is not None and length > max_bytes + OVERHEAD:
        raise _too_large(max_bytes)


async def receive_files(request: web.Request, files: FrameFiles, folder: Path, *, max_bytes: int,
                        multiple: bool) -> list[Path]:
    """Save each part named "file" in `folder` (made here); the paths in order. Raises UploadRefused past a
    limit, ProtocolError for a body that is not an answer; what it wrote stays for the caller to delete."""
    check_headers(request, max_bytes=max_bytes)
    try:
        reader = await request.multipart()
    except (ValueError, AssertionError) as exc:
        raise ProtocolError("bad-message", f"not a multipart body: {exc}") from exc
    await asyncio.to_thread(make_folder, folder)
    names = UniqueNames()
    paths: list[Path] = []
    parts = 0
    while True:
        try:
            part = await reader.next()
        except ValueError as exc:
            raise ProtocolError("bad-message", f"a malformed multipart body: {exc}") from exc
        if part is None:
            break
        parts += 1
        if parts > files.upload_max_files:
            raise UploadRefused(413, "bad-message", f"an upload has at most {files.upload_max_files}"
                                " parts (FRAMESTREAM_UPLOAD_MAX_FILES)")
        _check_read(request, max_bytes)
        if isinstance(part, MultipartReader):
            raise ProtocolError("bad-message", "nested multipart bodies are not taken: one part a file")
        if part.name != "file":
            await _drain(request, part, max_bytes)
            continue
        if paths and not multiple:
            raise ProtocolError("bad-input", "this file chooser takes one file")
        path = folder / names.take(safe_name(part.filename or "", f"file{len(paths) + 1}"))
        await _save(request, part, files, folder, path, max_bytes=max_bytes)
        paths.append(path)
    if not paths:
        raise ProtocolError("bad-message", "no part named \"file\" in the upload")
    return paths


def _check_read(request: web.Request, max_bytes: int) -> None:
    # Every byte of the body counts (headers, boundaries, parts not named "file"), with or without Content-Length.
    if request.content.total_bytes > max_bytes + OVERHEAD:
        raise _too_large(max_bytes)


async def _drain(request: web.Request, part: BodyPartReader, max_bytes: int) -> None:
    while await part.read_chunk(CHUNK):
        _check_read(request, max_bytes)


async def _save(request: web.Request, part: BodyPartReader, files: FrameFiles, folder: Path, path: Path, *,
                max_bytes: int) -> None:
    fh: BinaryIO = await asyncio.to_thread(open, path, "xb")
    try:
        while chunk := await part.read_chunk(CHUNK):
            _check_read(request, max_bytes)
            evicted = files.grow_upload(folder, len(chunk))
            if files.received(folder) > max_bytes:
                raise _too_large(max_bytes)
            if evicted is None:
                raise UploadRefused(413, "bad-message", "the frame's uploads would pass "
                                    f"{files.upload_quota_bytes} bytes (FRAMESTREAM_UPLOAD_QUOTA_BYTES)")
            if evicted:
                await asyncio.to_thread(remove_folders, evicted)
            await asyncio.to_thread(fh.write, chunk)
    finally:
        await asyncio.shield(asyncio.to_thread(fh.close))


__all__ = ["UploadRefused", "check_headers", "receive_files"]
