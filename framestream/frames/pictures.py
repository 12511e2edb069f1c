"""Which of a frame's pictures reach its viewers and its recording, and the keyframes asked of its pipeline.

Only the running pipeline's pictures count (one posted by a pipeline stopped since is not the page as it is), and
only once they show the page: not while the browser starts and loads it (a blank window), and none captured before
a fresh keyframe was asked for (docs/architecture.md, "Fresh pictures"). The frame (frames/frame.py) owns one and
tells it when its runtime starts, stops, resumes and has painted the page. While the light stream is made it also
owns the timer that lets its viewers look at their links between pictures (`FrameFeed.follow_links`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from framestream.fanout.feed import FrameFeed
from framestream.fanout.link import LINK_CHECK_S
from framestream.frames.runtime import Runtime
from framestream.media.picture import Picture


class FramePictures:
    def __init__(self, feed: FrameFeed, runtime: Callable[[], Runtime | None],
                 record: Callable[[Picture], None]) -> None:
        """`runtime` gives the frame's running runtime (None: none runs); `record` takes each picture viewers get
        on the full stream (the frame's recorder)."""
        self._feed = feed
        self._runtime = runtime
        self._record = record
        self._published = 0  # pictures of the current pipeline handed out on the loop
        # Whether the current pipeline's pictures show the page: not while the browser starts and loads it
        # (a blank window), from the fresh keyframe asked for once it is loaded.
        self.showing = False
        self._fresh_after_us = 0  # pictures captured before this (wall µs) are older than a fresh request
        self._light_kbps: int | None = None  # the light stream's cap while slow viewers watch
        self._link_check: asyncio.TimerHandle | None = None  # the light viewers' links, looked at between pictures

    # -- what the frame tells it ---------------------------------------------------------------------------

    def launched(self, runtime: Runtime) -> None:
        """A new runtime starts: nothing of it shows the page until `show_fresh`."""
        runtime.set_light(self._light_kbps)
        self._feed.restarted()
        self._published = 0
        self.showing = False

    def show_fresh(self) -> None:
        """From now on the pipeline's pictures show the page; the first a viewer gets is a keyframe made now."""
        self._feed.restarted()
        self.showing = True
        self._fresh_after_us = time.time_ns() // 1000
        if (runtime := self._runtime()) is not None:
            runtime.request_fresh_keyframe()

    def resumed(self) -> None:
        # The kept keyframe may be older than the screen (the page can paint between the pipeline's pause and
        # its processes' stop): joiners wait for the keyframe of a full grab the resume makes.
        self._feed.forget()
        self._fresh_after_us = time.time_ns() // 1000  # (one still on its way from before the pause: dropped)

    def stopped(self) -> None:
        """The runtime is gone (or going): its late pictures are dropped, and the kept keyframe with them."""
        self.showing = False
        self._feed.forget()

    # -- keyframes and the light stream ----------------------------------------------------------------------

    def request_keyframe(self) -> None:
        if (runtime := self._runtime()) is not None:
            runtime.request_keyframe(self._published)

    def request_light_keyframe(self) -> None:
        if (runtime := self._runtime()) is not None:
            runtime.request_light_keyframe()

    def set_light(self, kbps: int | None) -> None:
        """The light stream's cap (media/light.py), as the feed wants it for its slow viewers."""
        self._light_kbps = kbps
        if (runtime := self._runtime()) is not None:
            runtime.set_light(kbps)
        if kbps is None and self._link_check is not None:
            self._link_check.cancel()
            self._link_check = None
        elif kbps is not None:
            self._schedule_link_check()

    def _schedule_link_check(self) -> None:
        if self._link_check is None:
            self._link_check = asyncio.get_running_loop().call_later(LINK_CHECK_S, self._check_links)

    def _check_links(self) -> None:
        # While the light stream is made: a viewer on it goes back to the full stream once its link allows, whether
        # or not the page changes (FrameFeed.follow_links). The feed's last light viewer gone ends it (set_light).
        self._link_check = None
        self._feed.follow_links()
        if self._light_kbps is not None:
            self._schedule_link_check()

    # -- pictures ------------------------------------------------------------------------------------------

    def on_picture(self, pipeline: object, picture: Picture) -> None:
        runtime = self._runtime()
        if runtime is None or pipeline is not runtime.pipeline:
            return  # posted by a pipeline stopped since (perhaps still stopping): not the page as it is
        showing = self.showing and picture.capture_us >= self._fresh_after_us
        if picture.light:
            if showing:
                self._feed.publish_light(picture)
            return
        self._published += 1  # (dropped ones too: the pipeline counts what it handed over)
        if showing:
            self._feed.publish(picture)
            self._record(picture)

    def snapshot(self) -> tuple[Any, int, int] | None:
        """The last captured picture while it shows the page (None while launching or just resumed)."""
        runtime = self._runtime()
        if runtime is None or not self.showing:
            return None
        return runtime.snapshot()

    async def fresh_snapshot(self, timeout: float) -> tuple[Any, int, int] | None:
        """`snapshot()`, waiting up to `timeout` for a picture that shows the page (after a launch or resume)."""
        deadline = time.monotonic() + timeout
        while (snap := self.snapshot()) is None and (left := deadline - time.monotonic()) > 0:
            await self._feed.wait_picture(0, left)
        return snap


__all__ = ["FramePictures"]
