"""A frame's recordings from the client: the list, the sidecar's lines and steps, the video, a picture decoded at
a time (docs/protocol.md, "Recordings"). Read with the client's control token, or its view token when the service
lets viewers read recordings (FRAMESTREAM_RECORD_VIEWERS=on).

    recordings = await client.recordings.of_frame("f1")
    steps = await client.recordings.steps("f1", since_us=t)
    png = (await client.recordings.picture_at_step("f1", steps[-1])).png
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from framestream.client.errors import ServiceError
from framestream.client.grants import token_now
from framestream.client.http import FramesApi

__all__ = ["Recording", "RecordingPicture", "RecordingsApi"]


@dataclass(frozen=True)
class Recording:
    id: str
    frame: str
    start_us: int
    end_us: int | None  # None while it is being written
    bytes: int
    steps: int
    reason: str | None
    width: int
    height: int
    css_width: int
    css_height: int
    dpr: int
    video: str  # the video's path with a ticket, good for 10 minutes (a <video> src)

    @property
    def active(self) -> bool:
        return self.end_us is None

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Recording:
        end = obj.get("end_us")
        return cls(str(obj["id"]), str(obj["frame"]), int(obj["start_us"]), None if end is None else int(end),
                   int(obj.get("bytes", 0)), int(obj.get("steps", 0)),
                   None if obj.get("reason") is None else str(obj["reason"]), int(obj["width"]),
                   int(obj["height"]), int(obj["css_width"]), int(obj["css_height"]), int(obj["dpr"]),
                   str(obj.get("video", "")))


@dataclass(frozen=True)
class RecordingPicture:
    png: bytes
    picture_us: int  # the capture-clock time of the picture shown (at or before the time asked for)


class RecordingsApi:
    def __init__(self, api: FramesApi) -> None:
        self._api = api

    def _token(self) -> str:
        try:
            return self._api._control_token()
        except ServiceError:
            return token_now(self._api._token)

    async def of_frame(self, frame: str) -> list[Recording]:
        data = await self._api._json("GET", f"/frames/{frame}/recordings", self._token())
        return [Recording.from_json(r) for r in data["recordings"]]

    async def events(self, frame: str, recording: str, *, since_us: int | None = None) -> list[dict[str, Any]]:
        """The sidecar's lines (each a dict with `t_us` and `type`), from `since_us` when given."""
        query = "" if since_us is None else f"?since_us={int(since_us)}"
        resp = await self._api._call("GET", f"/frames/{frame}/recordings/{recording}/events{query}", self._token())
        async with resp:
            body = await resp.read()
        return [json.loads(line) for line in body.splitlines() if line.strip()]

    async def steps(self, frame: str, *, since_us: int = 0) -> list[dict[str, Any]]:
        """Every step of the frame's recordings from `since_us` on, oldest first, each with its `recording`."""
        out: list[dict[str, Any]] = []
        for rec in await self.of_frame(frame):
            if rec.end_us is not None and rec.end_us < since_us:
                continue
            for line in await self.events(frame, rec.id, since_us=since_us):
                if line.get("type") == "step":
                    out.append({**line, "recording": rec.id})
        return out

    async def video(self, frame: str, recording: str) -> bytes:
        resp = await self._api._call("GET", f"/frames/{frame}/recordings/{recording}.mp4", self._token())
        async with resp:
            return await resp.read()

    async def picture(self, frame: str, recording: str, t_us: int) -> RecordingPicture:
        """The picture the recording shows at `t_us` (capture clock), decoded by the service, as PNG."""
        resp = await self._api._call("GET", f"/frames/{frame}/recordings/{recording}/picture?t_us={int(t_us)}",
                                     self._token())
        async with resp:
            png = await resp.read()
            at = resp.headers.get("X-Picture-Time-Us", "0")
        return RecordingPicture(png, int(at) if at.isdigit() else 0)

    async def picture_at_step(self, frame: str, step: dict[str, Any], *, after_s: float = 0.5) -> RecordingPicture:
        """The picture `after_s` after a step ended (a line of `steps()`): what it did."""
        return await self.picture(frame, str(step["recording"]), int(step.get("end_us") or step["t_us"])
                                  + int(after_s * 1e6))

    async def delete(self, frame: str, recording: str) -> None:
        resp = await self._api._call("DELETE", f"/frames/{frame}/recordings/{recording}", self._api._control_token())
        resp.release()
