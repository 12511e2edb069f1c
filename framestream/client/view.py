"""One watched frame as the client sees it: its config, state, driver, tab state and decoded pictures.

The connection feeds it every message about the frame; waiters (`picture_after`, `settle`, `wait_for`) are woken
on each change. Nothing here polls: everything comes from the stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import av

from framestream.client.errors import ClientError
from framestream.client.pictures import Picture, StreamDecoder

__all__ = ["FrameState", "FrameView", "VideoConfig"]


@dataclass(frozen=True)
class VideoConfig:
    slot: int
    codec: str
    width: int  # encoded pixels
    height: int
    css_width: int  # the coordinate space of input
    css_height: int

    @property
    def dpr(self) -> float:
        return self.width / self.css_width if self.css_width else 1.0


@dataclass(frozen=True)
class FrameState:
    """The last `frame-state`: `state` is launching, live, paused, closed or error."""

    state: str
    url: str
    viewers: int
    driver: str | None
    pages: tuple[dict[str, Any], ...] = ()
    message: str | None = None


@dataclass
class _PictureWaiter:
    after_us: int
    where: Callable[[Picture], bool] | None
    future: asyncio.Future[Picture]

    def offer(self, picture: Picture) -> bool:
        """Take `picture` if it is the first that qualifies."""
        if self.future.done() or picture.capture_us < self.after_us:
            return False
        if self.where is not None and not self.where(picture):
            return False
        self.future.set_result(picture)
        return True


# Frame states whose browser runs: any other (closed, error, a new browser launching) ends the page's cursor.
_BROWSER_RUNS = frozenset(("live", "paused"))


class FrameView:
    """A frame this connection watches. Made by `Connection.watch`; steps go through `framestream.client.Agent`."""

    def __init__(self, frame: str, *, decode: bool = True, video: bool = True,
                 on_keyframe_needed: Callable[[str], None]) -> None:
        self.frame = frame
        self.decode = decode
        # False: watched for its events alone (docs/protocol.md, `watch` without pictures): no config, no picture,
        # and the frame may pause meanwhile.
        self.video = video
        self.config: VideoConfig | None = None
        self.state: FrameState | None = None
        self.you_drive: bool | None = None  # from the last `control` message
        self.dialogs: dict[str, dict[str, Any]] = {}  # open dialogs by id
        self.file_choosers: dict[str, dict[str, Any]] = {}
        self.downloads: dict[str, dict[str, Any]] = {}
        self.clipboard: str | None = None  # the text the frame's pages copied last (told to a driver's watch)
        self.copies = 0  # how many copies were told since the watch began (the same text twice counts twice)
        self.cursor = "default"  # the page's cursor at the driver's pointer (`cursor` messages)
        self.latest: Picture | None = None
        self.last_change_at = 0.0  # monotonic time of the last picture that was not a refinement
        self.pictures_received = 0
        self._decoder = StreamDecoder()
        self._last_sequence: int | None = None
        self._changed = asyncio.Event()  # set (and replaced) on every change
        self._ask_keyframe = on_keyframe_needed
        self._waiters: list[_PictureWaiter] = []
        self._keyframe_asked_at = -1.0

    # -- fed by the connection ----------------------------------------------------------------------------------

    def on_message(self, msg: dict[str, Any]) -> None:
        kind = msg.get("type")
        if kind == "video-config":
            self.config = VideoConfig(int(msg["slot"]), str(msg["codec"]), int(msg["width"]), int(msg["height"]),
                                      int(msg["css_width"]), int(msg["css_height"]))
            self._decoder.reset()
            self._last_sequence = None
        elif kind == "frame-state":
            self.state = FrameState(str(msg["state"]), str(msg.get("url", "")), int(msg.get("viewers", 0)),
                                    msg.get("driver"), tuple(msg.get("pages") or ()), msg.get("message"))
            if self.state.state not in _BROWSER_RUNS:
                self.cursor = "default"  # the cursor goes with its browser: a new one tells its own
        elif kind == "control":
            self.you_drive = bool(msg.get("you"))
        elif kind == "dialog":
            self.dialogs[str(msg["id"])] = msg
        elif kind == "dialog-closed":
            self.dialogs.pop(str(msg.get("id")), None)
        elif kind == "file-chooser":
            self.file_choosers[str(msg["id"])] = msg
        elif kind == "file-chooser-closed":
            self.file_choosers.pop(str(msg.get("id")), None)
        elif kind == "download":
            self.downloads[str(msg["id"])] = msg
        elif kind == "clipboard":
            self.clipboard = str(msg.get("text", ""))
            self.copies += 1
        elif kind == "cursor":
            self.cursor = str(msg.get("cursor", "default"))
        self._wake()

    def on_video(self, flags: int, sequence: int, capture_us: int, payload: bytes) -> None:
        received_us, received_at = time.time_ns() // 1000, time.monotonic()
        self.pictures_received += 1
        if self._last_sequence is not None and (sequence - self._last_sequence) & 0xFFFFFFFF != 1:
            self._decoder.lose_sync()  # skipped pictures: the service resumes us at a keyframe
        self._last_sequence = sequence
        if not flags & 2:  # not a refinement: the page changed
            self.last_change_at = time.monotonic()
        if self.decode and not self._decoder.synced and not flags & 1:
            self._need_keyframe(received_at)  # out of step (skipped pictures): a keyframe brings it back
        if self.decode:
            try:
                picture = self._decoder.decode(payload, sequence=sequence, capture_us=capture_us, flags=flags,
                                               received_us=received_us, received_at=received_at)
            except av.FFmpegError:
                self._need_keyframe(received_at)
                picture = None
            if picture is not None:
                self.latest = picture
                for waiter in self._waiters:
                    waiter.offer(picture)
        self._wake()

    def on_patch(self, sequence: int, capture_us: int, payload: bytes) -> None:
        """A patch message (the connection asked for `patches`): drawn on the picture before it, when it directly
        follows that picture; after a gap it waits for a keyframe, as video does."""
        received_us, received_at = time.time_ns() // 1000, time.monotonic()
        self.pictures_received += 1
        follows = self._last_sequence is not None and (sequence - self._last_sequence) & 0xFFFFFFFF == 1
        self._last_sequence = sequence
        self.last_change_at = received_at
        if not self.decode:
            self._wake()
            return
        base = self.latest
        if not follows or not self._decoder.synced or base is None or base.sequence != (sequence - 1) & 0xFFFFFFFF:
            self._decoder.lose_sync()  # nothing to draw it on: the service resumes us at a keyframe
            self._need_keyframe(received_at)
        else:
            try:
                picture = base.with_patch(payload, sequence=sequence, capture_us=capture_us,
                                          received_us=received_us, received_at=received_at)
            except ValueError:
                self._decoder.lose_sync()
                self._need_keyframe(received_at)
            else:
                self.latest = picture
                for waiter in self._waiters:
                    waiter.offer(picture)
        self._wake()

    def _need_keyframe(self, now: float) -> None:
        # At most one request a second: the service coalesces them anyway, and sends one IDR a second at most.
        if now - self._keyframe_asked_at >= 1.0:
            self._keyframe_asked_at = now
            self._ask_keyframe(self.frame)

    def on_disconnect(self) -> None:
        """The socket went: the stream restarts with a new `video-config` once watched again."""
        self.config = None
        self.dialogs.clear()
        self.file_choosers.clear()
        self._decoder.reset()
        self._wake()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    # -- awaitables ---------------------------------------------------------------------------------------------

    async def wait_for(self, predicate: Callable[[FrameView], bool], timeout: float = 30.0) -> None:
        """Until `predicate(view)` holds (checked on every message and picture about the frame)."""
        async with asyncio.timeout(timeout):
            while not predicate(self):
                await self._changed.wait()

    async def wait_state(self, *states: str, timeout: float = 30.0) -> FrameState:
        await self.wait_for(lambda v: v.state is not None and v.state.state in states, timeout)
        assert self.state is not None
        return self.state

    async def picture(self, timeout: float = 30.0) -> Picture:
        """The newest decoded picture (waiting for the first one)."""
        self._require_decoding()
        await self.wait_for(lambda v: v.latest is not None, timeout)
        assert self.latest is not None
        return self.latest

    async def picture_after(self, after_us: int, where: Callable[[Picture], bool] | None = None,
                            timeout: float = 10.0) -> Picture:
        """The first picture captured at or after `after_us` (µs since the epoch) for which `where` holds.

        Every decoded picture is checked as it arrives, so none is missed; the newest picture already decoded
        counts too, if it qualifies."""
        self._require_decoding()
        waiter = _PictureWaiter(after_us, where, asyncio.get_running_loop().create_future())
        if self.latest is not None and waiter.offer(self.latest):
            return self.latest
        self._waiters.append(waiter)
        try:
            async with asyncio.timeout(timeout):
                return await waiter.future
        except TimeoutError:
            raise ClientError(f"no picture of frame {self.frame} after {after_us} within {timeout:g} s") from None
        finally:
            self._waiters.remove(waiter)

    async def settle(self, quiet: float = 0.3, timeout: float = 10.0) -> Picture:
        """Wait until the page has not changed for `quiet` seconds (no new picture but refinements), counted
        from the call at the earliest; the newest picture then."""
        self._require_decoding()
        start = time.monotonic()
        async with asyncio.timeout(timeout):
            while True:
                since = time.monotonic() - max(start, self.last_change_at)
                if since >= quiet and self.latest is not None:
                    return self.latest
                wait = max(0.001, quiet - since) if since < quiet else None
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(wait):
                        await self._changed.wait()

    def _require_decoding(self) -> None:
        if not self.decode:
            raise ClientError(f"frame {self.frame} is watched without decoding")
