"""A frame given a new size (`PATCH /frames/{id}`): in place while the dpr stays (its pages keep their state), else
a relaunch at the new size; resizes queued behind one under way (a canvas's frame being dragged) coalesced to the
newest.

The frame (frames/frame.py) owns one; it works under the frame's lock and asks the frame, through `Resizable`, to
resume, tear down and launch, as recovery does (frames/recovery.py). The frame's pictures (frames/pictures.py) show
nothing of the new pipeline until the page has painted at the new size.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

from framestream.core.errors import BrowserError, FrameGone
from framestream.core.lifecycle import FrameState
from framestream.frames.pictures import FramePictures
from framestream.frames.runtime import Runtime
from framestream.service.config import FrameSize

log = logging.getLogger("framestream.frames")  # the frame's logger: one logger for a frame's whole story


class Resizable(Protocol):
    """What a resize asks of a frame; the `_locked` calls only while holding the frame's lock."""

    id: str
    size: FrameSize
    state: FrameState
    pictures: FramePictures

    @property
    def gone(self) -> bool: ...

    @property
    def runtime(self) -> Runtime | None: ...

    def sized(self) -> None: ...

    def set_state(self, state: FrameState, message: str | None = None) -> None: ...

    def resume_locked(self) -> None: ...

    async def teardown_locked(self) -> None: ...

    async def launch_locked(self) -> None: ...


class FrameResizing:
    def __init__(self, frame: Resizable, lock: asyncio.Lock) -> None:
        self._frame = frame
        self._lock = lock  # the frame's (what runs)
        self._newest: FrameSize | None = None  # the newest size asked for: older queued resizes step aside

    async def resize(self, size: FrameSize) -> None:
        """Give the frame `size`. A running browser takes it in place when the dpr stays; otherwise it relaunches
        at the new size, at its URL, with its profile (a browser cannot change its scale factor), as does one whose
        page did not take the size. A paused frame resumes for it (and pauses again when unwatched); a closed one
        opens at the new size. Its viewers get a `video-config` of the new size before its first keyframe; a
        recording ends and the next starts at the new size (`Resizable.sized`)."""
        frame = self._frame
        self._newest = size
        async with self._lock:
            if frame.gone:  # (a shutdown that got the lock first has torn it down: a relaunch would outlive it)
                raise FrameGone(frame.id)
            if size == frame.size or self._newest is not size:
                return
            log.info("resized to %dx%d at dpr %d", size.css_width, size.css_height, size.dpr,
                     extra={"frame": frame.id})
            frame.size = size
            frame.sized()
            runtime = frame.runtime
            if runtime is None:  # (closed: it opens at the new size)
                return
            if frame.state is FrameState.PAUSED:
                frame.resume_locked()
            frame.pictures.launched(runtime)  # a new pipeline: nothing shows until the page painted at the size
            try:
                in_place = await runtime.resize(size)
            except BrowserError as exc:
                log.warning("the page did not take the new size (%s): relaunching", exc, extra={"frame": frame.id})
                in_place = False
            if in_place:
                await runtime.painted(relaid=True)
                frame.pictures.show_fresh()
                return
            frame.set_state(FrameState.LAUNCHING, "resized; reopening at the new size")
            await frame.teardown_locked()
            await frame.launch_locked()


__all__ = ["FrameResizing", "Resizable"]
