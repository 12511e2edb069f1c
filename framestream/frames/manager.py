"""The frame manager: every frame, the cap on running browsers, the registry on disk, every background task.

It decides who gets a browser (core/lifecycle's rules, one decision at a time), asks frames to change through
their own methods, and ends everything in order on shutdown: tasks, browsers (profiles flushed), the last save.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import shutil
from collections.abc import Coroutine
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from framestream.browser.process import end_leftover_browsers
from framestream.core.lifecycle import FrameState, choose_browser_to_close
from framestream.frames.frame import Frame
from framestream.frames.owner import BrowserSeeker
from framestream.frames.registry import Registry, SavedFrame
from framestream.frames.runtime import FrameRuntime, Runtime, RuntimeFactory, RuntimeHooks
from framestream.frames.urls import check_url
from framestream.recording.store import RecordingStore
from framestream.service.config import FrameSize, Settings

log = logging.getLogger("framestream.frames")  # one logger for a frame's whole story


class FrameManager:
    """Owns every frame, the cap on running browsers, the registry on disk and every background task.

    `new_runtime` makes the processes of one launch (a fake in tests; FrameRuntime by default)."""

    def __init__(self, settings: Settings, *, new_runtime: RuntimeFactory | None = None) -> None:
        self.settings = settings
        self.frames: dict[str, Frame] = {}
        self._new_runtime = new_runtime or self._real_runtime
        self._room = asyncio.Lock()  # one capacity decision (and the close it may need) at a time
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closing: dict[str, asyncio.Task[None]] = {}  # browsers closing to make room, by frame (not cancelled)
        self.registry = Registry(settings.state_dir / "frames.json", self._saved_frames, self.spawn,
                                 allowed_hosts=settings.allowed_url_hosts)
        self.recordings = RecordingStore(settings.state_dir / "recordings", settings.secret,
                                         max_bytes=settings.record_max_bytes, max_age_s=settings.record_max_age_s)
        self.closing = False
        self.restarts = 0  # browsers relaunched after a crash or hang (for /metrics)

    # -- tasks -------------------------------------------------------------------------------------------

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any] | None:
        if self.closing:
            coro.close()
            return None
        task = asyncio.create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("task %s failed", task.get_name(), exc_info=task.exception())

    # -- what frames ask of the manager ------------------------------------------------------------------

    def new_runtime(self, frame_id: str, size: FrameSize, hooks: RuntimeHooks) -> Runtime:
        return self._new_runtime(frame_id, size, hooks)

    def _real_runtime(self, frame_id: str, size: FrameSize, hooks: RuntimeHooks) -> Runtime:
        return FrameRuntime(self.settings, size, self.profile_dir(frame_id), hooks, name=frame_id,
                            downloads_dir=self.files_dir(frame_id) / "downloads")

    def profile_dir(self, frame_id: str) -> Path:
        return self.settings.state_dir / "profiles" / frame_id

    def files_dir(self, frame_id: str) -> Path:
        """The frame's downloads and uploads (frames/files.py): in the state dir, never $HOME."""
        return self.settings.state_dir / "files" / frame_id

    def note_restart(self) -> None:
        self.restarts += 1

    def save_soon(self) -> None:
        if not self.closing:
            self.registry.save_soon()

    async def make_room_for(self, frame: BrowserSeeker) -> None:
        """Reserve a browser for `frame` (closing the least recently viewed unwatched one if at the cap).

        The reservation (state `launching`) is taken inside the same lock as the decision, so two frames
        reopening at once can never both pass the cap."""
        async with self._room:
            if frame.browser_running:
                return
            await self._close_for_room(starting=frame.id)
            frame.reserve_launch()

    def _victim(self, starting: str | None = None) -> Frame | None:
        """The frame whose browser closes to make room (core/lifecycle.py), those closing already not counted."""
        victim = choose_browser_to_close((f.view() for f in self.frames.values() if f.id not in self._closing),
                                         self.settings.max_browsers, starting=starting)
        return None if victim is None else self.frames[victim]

    async def _close_for_room(self, starting: str | None = None) -> None:
        """The victim closes beside the launch it makes room for, not before it: its page is stopped and its last
        storage writes get up to 1.5 s (ChromeBrowser.close), which a reopen waited for. Its run lock is taken
        here, so watching it again waits for the close; its browser is not counted from now on (the cap is
        exceeded by one for that while). One watched while its lock was awaited (a step held it) is passed over."""
        while (victim := self._victim(starting)) is not None:
            await victim.run_lock.acquire()
            if victim.viewers == 0 and victim.browser_running and victim.state is not FrameState.LAUNCHING:
                break
            victim.run_lock.release()
        else:
            return
        if victim.state is FrameState.LIVE:  # (no viewers) what it is while it closes: no pictures, page stopped
            victim.set_state(FrameState.PAUSED)
        task = asyncio.create_task(self._closed_for_room(victim), name=f"close-{victim.id}")
        self._closing[victim.id] = task
        task.add_done_callback(self._task_done)

    async def _closed_for_room(self, victim: Frame) -> None:
        try:
            await victim.teardown_locked()
        finally:
            if not victim.deleted:  # (its runtime is gone even if its close failed: never left `paused`)
                victim.set_state(FrameState.CLOSED)
            victim.run_lock.release()
            self._closing.pop(victim.id, None)

    # -- the registry ------------------------------------------------------------------------------------

    def load(self) -> None:
        """Frames from the last run come back `closed`; each reopens at its last URL when watched."""
        self.settings.state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        ended = end_leftover_browsers(self.settings.state_dir / "profiles")
        if ended:
            log.warning("ended %d browser processes left by a previous run: %s", len(ended), ended)
        for saved in self.registry.load():
            self.frames[saved.id] = Frame(self, saved.id, saved.url, saved.size, last_viewed=saved.last_viewed,
                                          created_url=saved.created_url, record=saved.record)

    def _saved_frames(self) -> list[SavedFrame]:
        return [SavedFrame(f.id, f.url, f.size, f.last_viewed, f.created_url, f.recorder.asked)
                for f in self.frames.values()]

    # -- frames ------------------------------------------------------------------------------------------

    def get(self, frame_id: str) -> Frame | None:
        return self.frames.get(frame_id)

    async def create(self, url: str, size: FrameSize, *, record: bool | None = None) -> Frame:
        """Make a new frame live; raises CapacityError when every running browser is watched. `record`: whether
        it is recorded (None: FRAMESTREAM_RECORD)."""
        check_url(url, self.settings.allowed_url_hosts, self.settings.port)
        # (counts against the cap once listed)
        frame = Frame(self, secrets.token_hex(4), url, size, launching=True, record=record)
        async with self._room:
            await self._close_for_room()  # (before it is listed: a CapacityError leaves nothing behind)
            self.frames[frame.id] = frame
        log.info("created at %dx%d dpr %d, page on %s", size.css_width, size.css_height, size.dpr,
                 urlsplit(url).hostname, extra={"frame": frame.id})
        self.save_soon()
        self.spawn(frame.start(), f"start-{frame.id}")
        return frame

    async def ensure(self, url: str, size: FrameSize) -> Frame:
        """The frame `--frame URL@WxH` names: the registered one created at (or now at) that URL with that size,
        made live, or a new one. Restarts with the same `--frame` keep one frame, its id and its profile."""
        for frame in self.frames.values():
            if frame.size == size and url in (frame.created_url, frame.url):
                log.info("kept from the last run for --frame", extra={"frame": frame.id})
                self.spawn(frame.ensure_running(), f"start-{frame.id}")
                return frame
        return await self.create(url, size)

    async def delete(self, frame_id: str, *, purge: bool = False) -> bool:
        frame = self.frames.pop(frame_id, None)
        if frame is None:
            return False
        await frame.delete(keep_storage=not purge)
        log.info("deleted%s", " with its profile and files" if purge else "", extra={"frame": frame_id})
        await self.registry.save_in_background()
        if purge:
            def remove() -> None:
                shutil.rmtree(self.profile_dir(frame_id), ignore_errors=True)
                frame.files.purge()

            await asyncio.get_running_loop().run_in_executor(None, remove)
        return True

    async def shutdown(self) -> None:
        """Close every browser gracefully (profiles flushed), end every task, save the registry."""
        self.closing = True
        self.registry.close()
        async with self.registry.lock:  # a save under way lands first, so the final one below is the last word
            await asyncio.gather(*self._closing.values(), return_exceptions=True)  # each within seconds
            tasks = list(self._tasks)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await asyncio.gather(*(f.close_browser() for f in self.frames.values()), return_exceptions=True)
            await asyncio.to_thread(self._join_recorders)
            self.registry.save()

    def _join_recorders(self) -> None:
        for frame in self.frames.values():
            frame.recorder.join(5.0)


__all__ = ["FrameManager"]
