"""The service's HTTP routes a client uses: frames (list, create, delete), screenshots, HTTP input and navigate,
and the frame's downloads (a page's files and prints).

Errors come back as the typed errors of `errors.py`, from the contract's `{"error": CODE, "message": M}` body.
"""

from __future__ import annotations

import asyncio
import mimetypes
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from framestream.client.errors import ServiceError, error_for
from framestream.client.grants import TokenSource, token_now
from framestream.client.pictures import png_size, scale_png
from framestream.client.wire import event_to_dict, navigate_body
from framestream.core.wire import InputEvent, NavigateAction

__all__ = ["Download", "FrameInfo", "FramesApi", "HttpStep", "Screenshot"]


@dataclass(frozen=True)
class FrameInfo:
    """A frame object (`GET /frames`): its CSS size, dpr and state."""

    id: str
    url: str
    state: str
    width: int
    height: int
    dpr: int
    viewers: int
    driver: str | None
    # The picture's size: the CSS size at the dpr, within 2560x1600.
    encoded_width: int = 0
    encoded_height: int = 0
    message: str | None = None  # why the frame is in its state (a launch's reason, a crash's)

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> FrameInfo:
        width, height, dpr = int(obj["width"]), int(obj["height"]), int(obj.get("dpr", 1))
        return cls(str(obj["id"]), str(obj.get("url", "")), str(obj.get("state", "")), width, height, dpr,
                   int(obj.get("viewers", 0)), None if obj.get("driver") is None else str(obj["driver"]),
                   int(obj.get("encoded_width", width * dpr)), int(obj.get("encoded_height", height * dpr)),
                   None if obj.get("message") is None else str(obj["message"]))


@dataclass(frozen=True)
class Screenshot:
    png: bytes
    width: int
    height: int
    capture_us: int | None  # the picture's capture time (X-Capture-Time-Us)


@dataclass(frozen=True)
class Download:
    """A file the frame's pages downloaded, or printed (`GET /frames/{id}/downloads`)."""

    id: str
    name: str
    size: int  # bytes received
    state: str  # "started", "done" or "failed"

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Download:
        return cls(str(obj["id"]), str(obj.get("name", "")), int(obj.get("size", 0)), str(obj.get("state", "")))


@dataclass(frozen=True)
class HttpStep:
    """The answer of `POST /frames/{id}/input`: whether a changed picture followed, and its capture time."""

    seq: int
    changed: bool
    picture_us: int | None


class FramesApi:
    """HTTP on the service's port. `token` (view or control) is sent as a Bearer token; grants per call."""

    def __init__(self, session: aiohttp.ClientSession, base: str, token: TokenSource,
                 control: TokenSource | None = None) -> None:
        self._session = session
        self.base = base.rstrip("/")
        self._token = token
        self._control = control

    async def _call(self, method: str, path: str, token: str, *, body: Any = None,
                    form: aiohttp.FormData | None = None) -> aiohttp.ClientResponse:
        resp = await self._session.request(method, self.base + path, json=body, data=form,
                                           headers={"Authorization": f"Bearer {token}"})
        if resp.status >= 400:
            try:
                data = await resp.json(content_type=None)
            except (ValueError, aiohttp.ClientError):
                data = {}
            finally:
                resp.release()
            code = str(data.get("error", "internal")) if isinstance(data, dict) else "internal"
            message = str(data.get("message", resp.reason)) if isinstance(data, dict) else str(resp.reason)
            frame = path.split("/")[2] if path.startswith("/frames/") else None
            raise error_for(code, message, frame=frame, status=resp.status)
        return resp

    async def _json(self, method: str, path: str, token: str, body: Any = None) -> Any:
        resp = await self._call(method, path, token, body=body)
        async with resp:
            return await resp.json()

    def _control_token(self) -> str:
        if self._control is None:
            raise ServiceError("this client has no control token", code="forbidden")
        return token_now(self._control)

    async def list_frames(self) -> list[FrameInfo]:
        data = await self._json("GET", "/frames", token_now(self._token))
        return [FrameInfo.from_json(f) for f in data["frames"]]

    async def frame(self, frame: str) -> FrameInfo:
        return FrameInfo.from_json(await self._json("GET", f"/frames/{frame}", token_now(self._token)))

    async def create_frame(self, url: str, width: int = 1280, height: int = 800, dpr: int | None = None
                           ) -> FrameInfo:
        body: dict[str, Any] = {"url": url, "width": width, "height": height}
        if dpr is not None:
            body["dpr"] = dpr
        return FrameInfo.from_json(await self._json("POST", "/frames", self._control_token(), body))

    async def resize_frame(self, frame: str, width: int, height: int, dpr: int | None = None) -> FrameInfo:
        body: dict[str, Any] = {"width": width, "height": height}
        if dpr is not None:
            body["dpr"] = dpr
        return FrameInfo.from_json(await self._json("PATCH", f"/frames/{frame}", self._control_token(), body))

    async def delete_frame(self, frame: str, *, purge: bool = False) -> None:
        resp = await self._call("DELETE", f"/frames/{frame}" + ("?purge=1" if purge else ""),
                                self._control_token())
        resp.release()

    async def screenshot(self, frame: str, *, css: bool = False) -> Screenshot:
        """The frame's last picture as PNG: at its encoded size, or scaled to its CSS size (`css`)."""
        resp = await self._call("GET", f"/frames/{frame}/screenshot", token_now(self._token))
        async with resp:
            png = await resp.read()
            header = resp.headers.get("X-Capture-Time-Us")
        capture_us = int(header) if header and header.isdigit() else None
        width, height = png_size(png)
        if css:
            info = await self.frame(frame)
            if (info.width, info.height) != (width, height):
                png = scale_png(png, info.width, info.height)
                width, height = info.width, info.height
        return Screenshot(png, width, height, capture_us)

    async def input(self, frame: str, grant: str, seq: int, events: Sequence[InputEvent]) -> HttpStep:
        """A step over HTTP: answered once applied, with the first changed picture's time (within 250 ms)."""
        body = {"seq": seq, "events": [event_to_dict(e) for e in events]}
        data = await self._json("POST", f"/frames/{frame}/input", grant, body)
        return HttpStep(int(data["seq"]), bool(data.get("changed")),
                        int(data["picture_us"]) if data.get("picture_us") is not None else None)

    async def navigate(self, frame: str, grant: str, seq: int, *, url: str | None = None,
                       action: NavigateAction | None = None) -> str:
        """Go to `url` (or back, forward, reload) over HTTP; the active page's URL once committed."""
        data = await self._json("POST", f"/frames/{frame}/navigate", grant, navigate_body(seq, url=url, action=action))
        return str(data.get("url", ""))

    async def upload(self, path: str, grant: str, files: Sequence[str | Path]) -> list[str]:
        """Files of this machine as multipart parts named "file" (a file chooser's answer, a drop): the names the
        page got them under."""
        form = aiohttp.FormData()
        for file in files:
            data = await asyncio.to_thread(Path(file).read_bytes)
            kind = mimetypes.guess_type(Path(file).name)[0] or "application/octet-stream"
            form.add_field("file", data, filename=Path(file).name, content_type=kind)
        resp = await self._call("POST", path, grant, form=form)
        async with resp:
            return [str(name) for name in (await resp.json())["files"]]

    async def downloads(self, frame: str, grant: str) -> list[Download]:
        """The frame's downloads, oldest first (a drive grant: only who may drive the frame sees its files)."""
        data = await self._json("GET", f"/frames/{frame}/downloads", grant)
        return [Download.from_json(d) for d in data["downloads"]]

    async def download(self, frame: str, grant: str, download: str) -> bytes:
        """A finished download's bytes."""
        resp = await self._call("GET", f"/frames/{frame}/downloads/{download}", grant)
        async with resp:
            return await resp.read()
