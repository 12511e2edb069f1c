"""`Client`: the one object an agent or an app holds: HTTP routes, the WebSocket, watched frames and steps.

    async with await Client.connect("http://127.0.0.1:7682", key=SandboxKey(secret, "local")) as client:
        view = await client.watch("f1")
        step = await client.click("f1", 100, 60)
        picture = await view.picture_after(step.sent_us)
"""

from __future__ import annotations

import asyncio
import math
import time
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import aiohttp

from framestream.client import steps
from framestream.client.connection import HEARTBEAT_S, Connection
from framestream.client.errors import ClientError
from framestream.client.grants import GrantSource, SandboxKey, TokenSource, grant_for
from framestream.client.http import Download, FrameInfo, FramesApi, HttpStep, Screenshot
from framestream.client.recordings import RecordingsApi
from framestream.client.view import FrameView
from framestream.core.wire import (
    ClientMessage,
    DialogAnswer,
    Input,
    InputEvent,
    MouseButton,
    Navigate,
    NavigateAction,
    PageAction,
    PageRequest,
    Release,
    RequestHelp,
    TakeOver,
)

__all__ = ["Client", "Step"]


@dataclass(frozen=True)
class Step:
    """A step the service applied: its `seq`, and when it was sent and acknowledged (this machine's wall clock,
    µs). `picture_after(step.sent_us)` is the first picture that can show its effect."""

    frame: str
    seq: int
    sent_us: int
    acked_us: int


def _now_us() -> int:
    return time.time_ns() // 1000


class Client:
    """A framestream client. Make it with `Client.connect`; close it with `close()` or `async with`."""

    def __init__(self, session: aiohttp.ClientSession, api: FramesApi, connection: Connection,
                 grants: GrantSource | None) -> None:
        self._session = session
        self.api = api
        self.recordings = RecordingsApi(api)  # (framestream/client/recordings.py)
        self.connection = connection
        self._grants = grants

    @classmethod
    async def connect(cls, url: str = "http://127.0.0.1:7682", *, token: TokenSource | None = None,
                      grants: GrantSource | None = None, control: TokenSource | None = None,
                      key: SandboxKey | None = None, reconnect: bool = True,
                      backoff: tuple[float, float] = (0.1, 5.0), patches: bool = True,
                      heartbeat: float = HEARTBEAT_S) -> Client:
        """Connect to the service at `url` (its HTTP base).

        `token` (view, drive or control) says hello and reads over HTTP; `grants` drives: a drive token, or a
        callable minting one per step. With `key` (the sandbox's secret), every token is minted as needed: a
        drive token for the connection and reading (it hears file choosers, the page's cursor and downloads,
        told only to those who may drive, and drives nothing itself), control for frames, a one-step grant per
        step. `patches`: small changes come as lossless patches, drawn on the picture before
        (`Picture.patched`); off, every change is H.264. `heartbeat`: seconds of silence after which the socket is
        pinged, and half as long again without any answer before it is given up and reconnected."""
        if key is not None:
            token = token or key.drive
            grants = grants or key.step
            control = control or key.control
        if token is None:
            raise ValueError("connect needs a token (or a key)")
        base = url.rstrip("/")
        ws_url = ("wss://" + base[len("https://"):] if base.startswith("https://")
                  else "ws://" + base.removeprefix("http://")) + "/ws"
        session = aiohttp.ClientSession()
        try:
            connection = await Connection.open(session, ws_url, token, reconnect=reconnect, backoff=backoff,
                                               patches=patches, heartbeat=heartbeat)
        except BaseException:
            await session.close()
            raise
        return cls(session, FramesApi(session, base, token, control), connection, grants)

    async def close(self) -> None:
        """Close the socket, end the reader task and the HTTP session: nothing of the client stays open."""
        try:
            await self.connection.close()
        finally:
            await self._session.close()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.close()

    # -- frames ---------------------------------------------------------------------------------------------------

    async def list_frames(self) -> list[FrameInfo]:
        return await self.api.list_frames()

    async def frame_info(self, frame: str) -> FrameInfo:
        return await self.api.frame(frame)

    async def create_frame(self, url: str, width: int = 1280, height: int = 800, dpr: int | None = None
                           ) -> FrameInfo:
        """Make a frame live (control token); returns at once, while it launches."""
        return await self.api.create_frame(url, width, height, dpr)

    async def resize_frame(self, frame: str, width: int, height: int, dpr: int | None = None, *,
                           timeout: float = 30.0) -> FrameInfo:
        """Give a frame a new CSS size (and dpr, 2 unless given; control token): in place while the dpr stays (the
        page keeps its state), else its browser relaunches at the new size. Returns the frame as the service
        answers; when this client watches it, only once its view has the `video-config` of that size (the service
        answers HTTP before the socket brings it), so what comes next is of the new size. TimeoutError when that
        config does not come within `timeout`."""
        info = await self.api.resize_frame(frame, width, height, dpr)
        view = self.connection.views.get(frame)
        if view is not None and view.video:
            size = (info.encoded_width, info.encoded_height)
            await view.wait_for(lambda v: v.config is not None and (v.config.width, v.config.height) == size,
                                timeout)
        return info

    async def delete_frame(self, frame: str, *, purge: bool = False) -> None:
        await self.api.delete_frame(frame, purge=purge)

    async def watch(self, frame: str, *, decode: bool = True, video: bool = True, timeout: float = 60.0,
                    ) -> FrameView:
        """Watch `frame` (resuming or reopening it): its pictures decoded unless `decode` is false. Without `video`,
        only what happens to it (state, who drives, dialogs, requests for help): nothing is encoded for this client,
        and the frame pauses as one nobody views. Watching it again with `video` turns its pictures on."""
        return await self.connection.watch(frame, decode=decode, video=video, timeout=timeout)

    async def unwatch(self, frame: str) -> None:
        await self.connection.unwatch(frame)

    def listen(self, callback: Callable[[dict[str, Any]], None]) -> Callable[[], None]:
        """Call `callback` with every JSON message the service sends (frame-state, control, dialog, error...), as
        it arrives; returns the function that stops it. For awaiting one condition, `FrameView.wait_for`."""
        return self.connection.listen(callback)

    def view(self, frame: str) -> FrameView | None:
        return self.connection.views.get(frame)

    async def screenshot(self, frame: str, *, css: bool = False) -> Screenshot:
        """The frame's current picture as PNG (lossless), at its encoded size or its CSS size (`css`)."""
        return await self.api.screenshot(frame, css=css)

    async def downloads(self, frame: str, *, grant: str | None = None) -> list[Download]:
        """What the frame's pages downloaded or printed, oldest first, with a grant that may drive it."""
        return await self.api.downloads(frame, await self._grant(frame, grant))

    async def download(self, frame: str, download: str, *, grant: str | None = None) -> bytes:
        """A finished download's bytes (ids from `downloads`)."""
        return await self.api.download(frame, await self._grant(frame, grant), download)

    async def choose_files(self, frame: str, chooser: str, paths: Sequence[str | Path], *,
                           grant: str | None = None) -> list[str]:
        """Answer a page's open file chooser (its id from `view.file_choosers`) with files of this machine, as a
        person picking them; the names the page got them under."""
        return await self.api.upload(f"/frames/{frame}/file-chooser/{chooser}", await self._grant(frame, grant),
                                     paths)

    async def drop_files(self, frame: str, x: float, y: float, paths: Sequence[str | Path], *,
                         grant: str | None = None) -> list[str]:
        """Drop files of this machine on the frame's active page at (x, y) CSS pixels, as a person's drag from
        their desktop (the page's drop zone there gets them); the names the page got them under."""
        where = urllib.parse.urlencode({"x": x, "y": y})
        return await self.api.upload(f"/frames/{frame}/drop?{where}", await self._grant(frame, grant), paths)

    # -- steps ----------------------------------------------------------------------------------------------------

    async def _grant(self, frame: str, grant: str | None) -> str:
        if grant is not None:
            return grant
        if self._grants is None:
            raise ClientError("this client has no grants: connect with grants= or key=")
        return await grant_for(self._grants, frame)

    async def _step(self, frame: str, grant: str | None, message: Callable[[str, int], ClientMessage],
                    timeout: float = 30.0) -> Step:
        """Send `message(grant, seq)` and wait for its ack, all within `timeout` s. While the socket reconnects the
        step waits for it first: its one-step grant is minted and its `sent_us` read only then, so a picture
        after `sent_us` is one after the step."""
        deadline = asyncio.get_running_loop().time() + timeout
        await self.connection.until_connected(timeout)
        token = await self._grant(frame, grant)
        sent_us = _now_us()
        left = max(0.0, deadline - asyncio.get_running_loop().time())
        answer = await self.connection.request(lambda seq: message(token, seq), left)
        return Step(frame, int(answer["seq"]), sent_us, _now_us())

    async def send(self, frame: str, events: Sequence[InputEvent], *, grant: str | None = None,
                   timeout: float = 30.0) -> Step:
        """Apply `events` as one step; returns once acknowledged. Raises `Superseded`, `Forbidden`, `Expired`,
        `RateLimited`, `UnknownFrame`, `BadInput`... as the service answers."""
        if not 1 <= len(events) <= 256:
            raise ValueError("a step has 1 to 256 events")
        return await self._step(frame, grant, lambda token, seq: Input(frame, token, seq, tuple(events)), timeout)

    async def click(self, frame: str, x: float, y: float, *, button: MouseButton = "left", modifiers: int = 0,
                    grant: str | None = None) -> Step:
        return await self.send(frame, steps.click(x, y, button=button, modifiers=modifiers), grant=grant)

    async def double_click(self, frame: str, x: float, y: float, *, grant: str | None = None) -> Step:
        return await self.send(frame, steps.click(x, y, count=2), grant=grant)

    async def move(self, frame: str, x: float, y: float, *, grant: str | None = None) -> Step:
        return await self.send(frame, steps.move(x, y), grant=grant)

    async def drag(self, frame: str, x0: float, y0: float, x1: float, y1: float, *, moves: int = 10,
                   grant: str | None = None) -> Step:
        return await self.send(frame, steps.drag(x0, y0, x1, y1, steps=moves), grant=grant)

    async def scroll(self, frame: str, x: float, y: float, dx: float = 0.0, dy: float = 0.0, *,
                     grant: str | None = None) -> Step:
        return await self.send(frame, steps.scroll(x, y, dx, dy), grant=grant)

    async def type_text(self, frame: str, text: str, *, grant: str | None = None) -> Step:
        return await self.send(frame, steps.text(text), grant=grant)

    async def press(self, frame: str, keys: str, *, grant: str | None = None) -> Step:
        """A key or chord: "Enter", "Control+A", "Shift+Tab"."""
        return await self.send(frame, steps.chord(keys), grant=grant)

    async def navigate(self, frame: str, url: str | None = None, *, action: NavigateAction | None = None,
                       grant: str | None = None, timeout: float = 40.0) -> Step:
        """Load `url` in the active page, or go back, forward or reload; returns once committed."""
        return await self._step(frame, grant, lambda token, seq: Navigate(frame, token, seq, url, action), timeout)

    async def page(self, frame: str, action: PageAction, page: str, *, grant: str | None = None) -> Step:
        """Activate, close or reload one of the frame's pages (ids from `view.state.pages`)."""
        return await self._step(frame, grant, lambda token, seq: PageRequest(frame, token, seq, action, page))

    async def answer_dialog(self, frame: str, dialog: str, accept: bool, text: str | None = None, *,
                            grant: str | None = None) -> Step:
        """OK (`accept`) or Cancel an open dialog (ids from `view.dialogs`); `text` answers a prompt."""
        return await self._step(frame, grant,
                                lambda token, seq: DialogAnswer(frame, token, seq, dialog, accept, text))

    # -- handing over -------------------------------------------------------------------------------------------

    async def take_over(self, frame: str, *, grant: str | None = None) -> Step:
        """Take the frame with a person's grant (not a one-step grant) without acting on the page: agent steps are
        refused `taken-over` until `release`, FRAMESTREAM_PERSON_HOLD_S without input, or this connection ends."""
        return await self._step(frame, grant, lambda token, seq: TakeOver(frame, token, seq))

    async def release(self, frame: str, note: str = "", *, grant: str | None = None) -> Step:
        """Hand the frame back (the driver only): nobody drives, every watcher gets `control` with the note, and
        an open request for help is answered with it."""
        return await self._step(frame, grant, lambda token, seq: Release(frame, token, seq, note))

    async def request_help(self, frame: str, reason: str, timeout: float = 300.0) -> str | None:
        """Ask a person to take the frame over (a login, a CAPTCHA, a payment), under a one-step grant; returns
        their note once they hand it back, or None when nobody did within `timeout` seconds (1 to 3600). Raises
        ClientError when the request was cancelled (a newer request on the frame, the frame deleted)."""
        timeout_s = max(1, min(3600, math.ceil(timeout)))
        await self.connection.until_connected()
        token = await self._grant(frame, None)
        ended: dict[str, dict[str, Any]] = {}  # help-ended by request id: it may arrive before our ack is read
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        wanted: list[str] = []

        def heard(message: dict[str, Any]) -> None:
            if message.get("type") == "help-ended" and message.get("frame") == frame:
                ended[str(message.get("id"))] = message
                if wanted and wanted[0] in ended and not waiter.done():
                    waiter.set_result(None)

        stop = self.connection.listen(heard)
        try:
            answer = await self.connection.request(lambda seq: RequestHelp(frame, token, seq, reason, timeout_s))
            wanted.append(str(answer.get("id")))
            if wanted[0] not in ended:
                async with asyncio.timeout(timeout_s + 10):  # the service ends it at timeout_s: a margin for it
                    await waiter
        finally:
            stop()
        outcome = ended[wanted[0]]
        if outcome.get("outcome") == "answered":
            return str(outcome.get("note") or "")
        if outcome.get("outcome") == "timeout":
            return None
        raise ClientError(f"the request for help on frame {frame} was cancelled")

    async def send_http(self, frame: str, events: Sequence[InputEvent], *, grant: str | None = None) -> HttpStep:
        """The same step over `POST /frames/{id}/input` (no WebSocket needed): tells whether a picture changed."""
        token = await self._grant(frame, grant)
        return await self.api.input(frame, token, self.connection.next_seq(), events)

    def __repr__(self) -> str:
        return f"Client({self.api.base!r})"


