"""The recordings of a frame over HTTP (docs/protocol.md, "Recordings"): the list, the video with range requests,
the sidecar, a picture decoded at a time, and deletion.

A `control` token for the frame may do all of it; with FRAMESTREAM_RECORD_VIEWERS=on a `view` (or `drive`) token
for the frame may read. A browser's `<video>` cannot send a header, so each listed recording carries a link to its
video with a ticket (`?ticket=`, good for that one file for 10 minutes, recording/store.py) in place of a token.
"""

from __future__ import annotations

import asyncio
import time

from aiohttp import web

from framestream.core.errors import ProtocolError
from framestream.core.tokens import Claims
from framestream.recording.pictures import picture_at
from framestream.recording.store import ID_PATTERN, RecordingInfo, RecordingStore
from framestream.server.http_common import _claims, _ctx, encode_png, error

_FRAME_ID_MAX = 256
_FINISH_WAIT_S = 5.0  # the most a delete waits for a just-ended recording's writer to close its files


def _store(request: web.Request) -> RecordingStore:
    return _ctx(request).manager.recordings


def _frame_id(request: web.Request) -> str:
    frame_id = request.match_info["id"]
    if not frame_id or len(frame_id) > _FRAME_ID_MAX or "/" in frame_id or frame_id in (".", ".."):
        raise ProtocolError("unknown-frame", "no such frame")
    return frame_id


def _reader(request: web.Request, frame_id: str) -> Claims:
    """The request's claims when they may read this frame's recordings."""
    claims = _claims(request)
    if claims.allows("control", frame_id):
        return claims
    if _ctx(request).settings.record_viewers and claims.allows("view", frame_id):
        return claims
    needs = "control, or view with FRAMESTREAM_RECORD_VIEWERS=on" if not _ctx(request).settings.record_viewers \
        else "control or view"
    raise ProtocolError("forbidden", f"this token may not read this frame's recordings (needs {needs})")


def _known(request: web.Request, frame_id: str, recording_id: str) -> RecordingInfo:
    store = _store(request)
    if _ctx(request).manager.get(frame_id) is None and not store.of_frame(frame_id):
        raise ProtocolError("unknown-frame", f"no frame {frame_id!r}")
    info = store.get(frame_id, recording_id) if ID_PATTERN.match(recording_id) else None
    if info is None:
        raise ProtocolError("unknown-recording", f"frame {frame_id!r} has no recording {recording_id[:64]!r}")
    return info


def _described(store: RecordingStore, info: RecordingInfo) -> dict[str, object]:
    described = info.describe()
    described["video"] = f"/frames/{info.frame}/recordings/{info.id}.mp4?ticket={store.ticket(info)}"
    described["events"] = f"/frames/{info.frame}/recordings/{info.id}/events"
    return described


async def list_recordings(request: web.Request) -> web.Response:
    frame_id = _frame_id(request)
    _reader(request, frame_id)
    store = _store(request)
    infos = await asyncio.to_thread(store.of_frame, frame_id)  # (the first look scans the state dir)
    if _ctx(request).manager.get(frame_id) is None and not infos:
        raise ProtocolError("unknown-frame", f"no frame {frame_id!r}")
    return web.json_response({"recordings": [_described(store, i) for i in infos]})


async def video(request: web.Request) -> web.StreamResponse:
    frame_id = _frame_id(request)
    ticket = request.query.get("ticket")
    if ticket is None or "Authorization" in request.headers:
        _reader(request, frame_id)
        info = _known(request, frame_id, request.match_info["rid"])
    else:
        info = _known(request, frame_id, request.match_info["rid"])
        if (refused := _store(request).check_ticket(info, ticket)) is not None:
            raise ProtocolError(refused, "the link's ticket is not good for this recording"
                                if refused == "unauthorized" else "the link's ticket has expired: list again")
    path = _store(request).video_path(info)
    if not path.is_file():
        raise ProtocolError("unknown-recording", "the recording's video is gone")
    # aiohttp's FileResponse answers Range requests (206, Accept-Ranges), which a <video> seeks with.
    return web.FileResponse(path, headers={"Content-Type": "video/mp4", "Cache-Control": "no-store"})


async def events(request: web.Request) -> web.StreamResponse:
    frame_id = _frame_id(request)
    _reader(request, frame_id)
    info = _known(request, frame_id, request.match_info["rid"])
    since = request.query.get("since_us")
    path = _store(request).sidecar_path(info)
    if since is None:
        return web.FileResponse(path, headers={"Content-Type": "application/x-ndjson", "Cache-Control": "no-store"})
    if not since.isdigit():
        raise ProtocolError("bad-message", "since_us must be a whole number of microseconds")
    since_us = int(since)

    def read() -> bytes:
        import json

        keep = []
        with open(path, "rb") as f:
            for raw in f:
                try:
                    if int(json.loads(raw).get("t_us", 0)) >= since_us:
                        keep.append(raw)
                except (ValueError, AttributeError):
                    continue
        return b"".join(keep)

    body = await asyncio.to_thread(read)
    return web.Response(body=body, content_type="application/x-ndjson", headers={"Cache-Control": "no-store"})


async def picture(request: web.Request) -> web.Response:
    frame_id = _frame_id(request)
    _reader(request, frame_id)
    info = _known(request, frame_id, request.match_info["rid"])
    raw = request.query.get("t_us")
    if raw is None or not raw.isdigit():
        raise ProtocolError("bad-message", "t_us (capture-clock microseconds, as in the sidecar) is required")
    offset = max(0, int(raw) - info.start_us)
    path = _store(request).video_path(info)
    limit = info.bytes if info.end_us is None else None

    def decode() -> tuple[bytes, int] | None:
        found = picture_at(path, offset, limit_bytes=limit)
        if found is None:
            return None
        rgb, at = found
        return encode_png(rgb[:, :, ::-1]), at  # (encode_png takes BGR order)

    try:
        found = await asyncio.to_thread(decode)
    except Exception as exc:  # a file cut short where it was being read
        return error("internal", f"could not decode the recording: {exc}", 500)
    if found is None:
        return error("unknown-recording", "the recording has no picture at that time", 404)
    png, at = found
    return web.Response(body=png, content_type="image/png",
                        headers={"X-Picture-Time-Us": str(info.start_us + at), "Cache-Control": "no-store"})


async def delete(request: web.Request) -> web.Response:
    frame_id = _frame_id(request)
    claims = _claims(request)
    if not claims.allows("control", frame_id):
        raise ProtocolError("forbidden", "deleting a recording needs a control token for the frame")
    info = _known(request, frame_id, request.match_info["rid"])
    frame = _ctx(request).manager.get(frame_id)
    finishing = frame.recorder.finishing(info.id) if frame is not None and info.end_us is None else None
    if finishing is not None:
        # Ended by a pause or a close a moment ago, its last fragment still being written: deletable once done.
        await asyncio.to_thread(finishing.join, _FINISH_WAIT_S)
        info = _known(request, frame_id, info.id)
    if info.end_us is None:
        raise ProtocolError("recording-active", "the recording is still being written (it ends when the frame "
                                                "pauses or closes)")
    await asyncio.to_thread(_store(request).delete, info)
    return web.json_response({"id": info.id, "deleted": True, "at_us": time.time_ns() // 1000})


def add_routes(app: web.Application) -> None:
    app.router.add_get("/frames/{id}/recordings", list_recordings)
    app.router.add_get("/frames/{id}/recordings/{rid}.mp4", video)
    app.router.add_get("/frames/{id}/recordings/{rid}/events", events)
    app.router.add_get("/frames/{id}/recordings/{rid}/picture", picture)
    app.router.add_delete("/frames/{id}/recordings/{rid}", delete)
