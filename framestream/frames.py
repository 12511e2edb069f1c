"""Frames: each shared page with the processes it owns, and the manager that keeps them within the cap.

A `Frame` owns, while its browser runs, one Xvfb display, one Chromium and one `FramePipeline` (capture and
encode thread), plus a `FrameFeed` that outlives them (so sequence numbers and watchers survive a reopen).
Every change of what runs goes through the frame's lock, so concurrent watches, input and deletes never
start two browsers for one frame. The `FrameManager` owns every frame and every background task it starts,
and ends them in order on shutdown.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import logging
import os
import secrets
import shutil
import signal
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from framestream.browser.chrome import ChromeBrowser
from framestream.browser.xvfb import XvfbDisplay
from framestream.config import FrameSize, Settings
from framestream.core.control import FrameControl
from framestream.core.keys import cdp_calls
from framestream.core.lifecycle import (
    RUNNING_STATES,
    CapacityError,
    FrameState,
    FrameView,
    choose_browser_to_close,
    pause_deadline,
)
from framestream.core.wire import InputEvent, control_message, frame_state
from framestream.errors import BrowserError, CaptureError, CDPError, FramestreamError
from framestream.media.picture import Picture
from framestream.server.feed import FrameFeed, Watch
from framestream.statefile import remove_leftover_temps, write_json_atomically

if TYPE_CHECKING:
    from framestream.media.pipeline import FramePipeline

log = logging.getLogger(__name__)
SAVE_RETRY_S = 2.0  # how often a failed registry write is tried again

ALLOWED_SCHEMES = ("http", "https")
MAX_URL_LENGTH = 8192
RESTARTS_PER_MINUTE = 3
HEARTBEAT_INTERVAL_S = 5.0
HEARTBEAT_TIMEOUT_S = 3.0


class FrameGone(FramestreamError):
    """The frame was deleted while the caller waited for it."""


def check_url(url: object, allowed_hosts: Sequence[str] = ()) -> str:
    """http(s) URLs only: no file:, chrome:, javascript:, data: or devtools: pages in a shared browser; and
    when `allowed_hosts` is set (FRAMESTREAM_URL_ALLOW_HOSTS), only those hosts."""
    if not isinstance(url, str) or not url or len(url) > MAX_URL_LENGTH:
        raise ValueError(f"url must be a string of 1..{MAX_URL_LENGTH} characters")
    parts = urlsplit(url)
    if parts.scheme.lower() not in ALLOWED_SCHEMES or not parts.netloc:
        raise ValueError(f"url must be an absolute http or https URL, got scheme {parts.scheme or 'none'!r}")
    if allowed_hosts and (parts.hostname or "").lower() not in allowed_hosts:
        raise ValueError(f"host {parts.hostname!r} is not in FRAMESTREAM_URL_ALLOW_HOSTS")
    return url


class Frame:
    def __init__(self, manager: FrameManager, frame_id: str, url: str, size: FrameSize, *,
                 last_viewed: float | None = None) -> None:
        self.manager = manager
        self.id = frame_id
        self.url = url
        self.size = size
        self.state = FrameState.CLOSED
        self.message: str | None = None
        self.control = FrameControl()
        self.feed = FrameFeed(request_keyframe=self.request_keyframe)
        self.last_viewed = time.monotonic() if last_viewed is None else last_viewed
        self.idle_since: float | None = None
        self.deleted = False
        self._lock = asyncio.Lock()
        self._display: XvfbDisplay | None = None
        self._browser: ChromeBrowser | None = None
        self._pipeline: FramePipeline | None = None
        self._monitor: asyncio.Task[None] | None = None
        self._pause_timer: asyncio.TimerHandle | None = None
        self._restarts: list[float] = []
        self._encode_seconds_before = 0.0  # by pipelines that have ended
        self._published = 0
        self._unsubscribe: list[Callable[[], None]] = []

    # -- what others read --------------------------------------------------------------------------------

    @property
    def viewers(self) -> int:
        return len(self.feed.watches)

    @property
    def browser_running(self) -> bool:
        return self._browser is not None or self.state is FrameState.LAUNCHING

    def view(self) -> FrameView:
        return FrameView(self.id, self.state, self.viewers, self.last_viewed, self.browser_running)

    def describe(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "url": self.url,
            "state": self.state.value,
            "width": self.size.css_width,
            "height": self.size.css_height,
            "dpr": self.size.dpr,
            "encoded_width": self.size.width,
            "encoded_height": self.size.height,
            "viewers": self.viewers,
            "driver": self.control.driver,
            "message": self.message,
        }

    def state_message(self) -> str:
        return frame_state(self.id, self.state.value, self.url, self.viewers, self.control.driver, self.message)

    # -- watchers ----------------------------------------------------------------------------------------

    def add_watch(self, watch: Watch) -> None:
        self.feed.add(watch)
        self.last_viewed = time.monotonic()
        self.idle_since = None
        self._cancel_pause_timer()
        self.broadcast_state()

    def remove_watch(self, watch: Watch) -> None:
        if watch not in self.feed.watches:
            return
        self.feed.remove(watch)
        self.last_viewed = time.monotonic()
        if self.viewers == 0:
            self.idle_since = time.monotonic()
            self._schedule_pause()
        self.broadcast_state()
        self.manager.save_soon()

    def broadcast_state(self) -> None:
        text = self.state_message()
        for watch in self.feed.watches:
            watch.outbox.push_text(text)

    def broadcast_control(self, driver: str | None, driver_outbox_ids: set[int]) -> None:
        for watch in self.feed.watches:
            watch.outbox.push_text(control_message(self.id, driver, id(watch.outbox) in driver_outbox_ids))

    def _set_state(self, state: FrameState, message: str | None = None) -> None:
        changed = state is not self.state or message != self.message
        self.state = state
        self.message = message
        if state is FrameState.LIVE and self.viewers == 0:
            self.idle_since = time.monotonic()
            self._schedule_pause()
        if changed:
            log.info("%s%s", state.value, f" ({message})" if message else "", extra={"frame": self.id})
            self.broadcast_state()
            self.manager.save_soon()

    # -- the pipeline ------------------------------------------------------------------------------------

    def request_keyframe(self) -> None:
        if self._pipeline is not None:
            self._pipeline.request_keyframe(self._published)

    def _on_picture(self, picture: Picture) -> None:
        if self._pipeline is None:
            return  # posted by a pipeline that has been stopped since: not the page as it is
        self._published += 1
        self.feed.publish(picture)

    @property
    def encode_seconds(self) -> float:
        return self._encode_seconds_before + (self._pipeline.stats.encode_seconds if self._pipeline else 0.0)

    def snapshot(self) -> tuple[Any, int, int] | None:
        return self._pipeline.snapshot() if self._pipeline is not None else None

    # -- running, pausing, closing (callers hold no lock; each takes the frame's) -------------------------

    async def ensure_running(self) -> None:
        """Make the frame live: resume it when paused, reopen it (within the cap) when closed or failed."""
        async with self._lock:
            if self.deleted or self.manager.closing:
                raise FrameGone(self.id)
            if self.state is FrameState.PAUSED:
                self._resume_locked()
                return
            if self._browser is not None:
                return
        await self.manager.make_room_for(self)
        async with self._lock:
            if self.deleted or self.manager.closing:
                raise FrameGone(self.id)
            if self._browser is None:
                await self._launch_locked()

    async def start(self) -> None:
        """Launch the browser of a frame whose place under the cap is already reserved (`launching`)."""
        async with self._lock:
            if not self.deleted and self._browser is None:
                await self._launch_locked()

    async def _launch_locked(self) -> None:
        # Keep the reason a recovery gave (watchers see why the frame is launching again).
        self._set_state(FrameState.LAUNCHING, self.message if self.state is FrameState.LAUNCHING else None)
        settings = self.manager.settings
        try:
            self._display = await XvfbDisplay.start(self.size.width, self.size.height,
                                                    xvfb_path=settings.xvfb_path, refresh_hz=settings.fps)
            self._browser = await ChromeBrowser.launch(
                chrome_path=settings.chrome_path,
                display=self._display.name,
                profile_dir=self.manager.profile_dir(self.id),
                width=self.size.width,
                height=self.size.height,
                dpr=self.size.dpr,
            )
            self._unsubscribe = [
                self._browser.cdp.on("Page.frameNavigated", self._on_navigated),
                self._browser.cdp.on("Page.navigatedWithinDocument", self._on_navigated),
                self._browser.cdp.on("Inspector.targetCrashed", self._on_renderer_crashed),
            ]
            # The media stack (numpy, PyAV, libx264) loads with the first frame, so an idle service stays small;
            # in a thread, since importing it takes ~0.3 s that the event loop owes to everyone else.
            await asyncio.to_thread(importlib.import_module, "framestream.media.pipeline")
            from framestream.media.encoder import EncoderSettings
            from framestream.media.pipeline import FramePipeline

            loop = asyncio.get_running_loop()
            self.feed.restarted()
            self._published = 0  # pictures of the new pipeline handed out on the loop
            self._pipeline = FramePipeline(
                self._display.name,
                self.size.width,
                self.size.height,
                on_picture=lambda p: _post(loop, self._on_picture, p),
                on_failure=lambda exc: _post(loop, self._on_failure, exc),
                settings=EncoderSettings(fps=settings.fps),
                name=self.id,
            )
            self._pipeline.start()
            error = await self._browser.navigate(self.url)
        except (BrowserError, CaptureError, OSError) as exc:
            await self._teardown_locked()
            self._set_state(FrameState.ERROR, str(exc))
            return
        except BaseException:
            # Cancelled mid-launch (shutdown): end whatever already started before passing it on.
            await asyncio.shield(self._teardown_locked())
            raise
        self._monitor = asyncio.create_task(self._watch_processes(), name=f"monitor-{self.id}")
        self.control.reset()
        if error:
            # The browser runs and shows Chrome's error page; the frame says why.
            self._set_state(FrameState.ERROR, f"could not load {self.url}: {error}")
        else:
            self._set_state(FrameState.LIVE)

    def _on_navigated(self, params: dict[str, Any]) -> None:
        if self._browser is None or params.get("sessionId") != self._browser.session_id:
            return
        frame = params.get("frame")
        if isinstance(frame, dict):
            if frame.get("parentId"):
                return
            url = frame.get("url")
        else:
            url = params.get("url")
        if isinstance(url, str) and url and url != self.url and not url.startswith("chrome-error:"):
            self.url = url
            if self.state is FrameState.ERROR and self._browser is not None:
                self._set_state(FrameState.LIVE)
            else:
                self.broadcast_state()
            self.manager.save_soon()

    def _resume_locked(self) -> None:
        if self._browser is not None:
            self._browser.thaw_page()
        if self._pipeline is not None:
            self._pipeline.set_paused(False)
        self._set_state(FrameState.LIVE)

    async def pause(self) -> None:
        async with self._lock:
            # Eligibility only, not the time: the timer may fire a hair before the deadline.
            if self._browser is None or self._pause_deadline() is None:
                return
            if self._pipeline is not None:
                self._pipeline.set_paused(True)
            # Give memory back before freezing: a critical pressure signal makes Chrome drop caches.
            with contextlib.suppress(CDPError):
                await self._browser.call("Memory.simulatePressureNotification", {"level": "critical"},
                                         timeout=2.0)
            self._browser.freeze_page()
            self._set_state(FrameState.PAUSED)

    async def close_browser(self, *, state: FrameState = FrameState.CLOSED) -> None:
        """Close the browser gracefully (its profile flushed and kept); the frame stays, `closed`."""
        async with self._lock:
            await self._teardown_locked()
            if not self.deleted:
                self._set_state(state)

    async def _teardown_locked(self) -> None:
        self._cancel_pause_timer()
        monitor, self._monitor = self._monitor, None
        if monitor is not None and monitor is not asyncio.current_task():
            monitor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await monitor
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self._unsubscribe = []
        pipeline, self._pipeline = self._pipeline, None
        self.feed.forget()
        if pipeline is not None:
            await asyncio.get_running_loop().run_in_executor(None, pipeline.stop)
            self._encode_seconds_before += pipeline.stats.encode_seconds
        browser, self._browser = self._browser, None
        if browser is not None:
            # self.url already follows every navigation (Page.frameNavigated), so no call into a renderer
            # that may be stopped (paused) or hung is needed here.
            await browser.close()
        display, self._display = self._display, None
        if display is not None:
            await display.stop()

    # -- faults ------------------------------------------------------------------------------------------

    async def _watch_processes(self) -> None:
        """Until the browser or its display dies or hangs: then hand over to `_recover`.

        The heartbeat asks the browser process (not the page, which may be paused on purpose) for its version;
        two missed answers in a row mean it hangs."""
        browser, display = self._browser, self._display
        assert browser is not None and display is not None
        waits = [asyncio.ensure_future(browser.proc.wait()), asyncio.ensure_future(display.proc.wait()),
                 asyncio.ensure_future(browser.cdp.wait_closed())]
        reason = "the browser or its display exited"
        misses = 0
        try:
            while True:
                done, _ = await asyncio.wait(waits, timeout=HEARTBEAT_INTERVAL_S, return_when=asyncio.FIRST_COMPLETED)
                if done:
                    break
                try:
                    await browser.cdp.call("Browser.getVersion", timeout=HEARTBEAT_TIMEOUT_S)
                    misses = 0
                except CDPError:
                    misses += 1
                    if misses >= 2:
                        reason = "the browser stopped answering"
                        break
        finally:
            for w in waits:
                w.cancel()
        self._monitor = None
        self.manager.restarts += 1
        self.manager.spawn(self._recover(reason), f"recover-{self.id}")

    def _on_renderer_crashed(self, params: dict[str, Any]) -> None:
        if self._browser is None or params.get("sessionId") != self._browser.session_id:
            return
        self.manager.restarts += 1
        self.manager.spawn(self._reload_after_crash(), f"reload-{self.id}")

    async def _reload_after_crash(self) -> None:
        """The page's renderer died (the browser lives on, showing a crash page): load the last URL again."""
        async with self._lock:
            browser = self._browser
            if browser is None or self.deleted:
                return
            log.warning("the page crashed; reloading it", extra={"frame": self.id})
            self._set_state(FrameState.LAUNCHING, "the page crashed; reloading")
            try:
                error = await browser.navigate(self.url)
            except CDPError as exc:
                self._set_state(FrameState.ERROR, f"reload after a crash failed: {exc}")
                return
            self.control.reset()
            self.request_keyframe()
            if error:
                self._set_state(FrameState.ERROR, f"could not load {self.url}: {error}")
            else:
                self._set_state(FrameState.LIVE)

    def _on_failure(self, exc: Exception) -> None:
        self.manager.restarts += 1
        self.manager.spawn(self._recover(f"capture failed: {exc}"), f"recover-{self.id}")

    async def _recover(self, reason: str) -> None:
        async with self._lock:
            if self.deleted or self._browser is None:
                return
            log.warning("%s; relaunching", reason, extra={"frame": self.id})
            self._set_state(FrameState.LAUNCHING, reason)  # watchers hear it now, not after the teardown
            await self._teardown_locked()
            now = time.monotonic()
            self._restarts = [t for t in self._restarts if now - t < 60] + [now]
            if len(self._restarts) > RESTARTS_PER_MINUTE:
                self._set_state(FrameState.ERROR, f"{reason}; gave up after {RESTARTS_PER_MINUTE} restarts a minute")
                return
            await self._launch_locked()

    # -- input -------------------------------------------------------------------------------------------

    async def apply_input(self, events: Sequence[InputEvent]) -> None:
        if self.state is not FrameState.LIVE or self._browser is None:
            await self.ensure_running()
        browser = self._browser
        if browser is None:
            raise BrowserError(f"frame {self.id} has no running browser ({self.state.value})")
        for event in events:
            for method, params in cdp_calls(event):
                await browser.call(method, params, timeout=5.0)
        self.control.record(events)

    async def evaluate(self, expression: str) -> Any:
        if self._browser is None:
            raise BrowserError(f"frame {self.id} has no running browser")
        return await self._browser.evaluate(expression)

    # -- timers ------------------------------------------------------------------------------------------

    def _pause_deadline(self) -> float | None:
        return pause_deadline(self.state, self.viewers, self.idle_since, self.manager.settings.idle_pause_s)

    def _schedule_pause(self) -> None:
        self._cancel_pause_timer()
        deadline = self._pause_deadline()
        if deadline is None:
            return
        delay = max(0.0, deadline - time.monotonic())
        self._pause_timer = asyncio.get_running_loop().call_later(
            delay, lambda: self.manager.spawn(self.pause(), f"pause-{self.id}")
        )

    def _cancel_pause_timer(self) -> None:
        if self._pause_timer is not None:
            self._pause_timer.cancel()
            self._pause_timer = None


def end_leftover_browsers(profiles_dir: Path) -> list[int]:
    """SIGKILL processes still using one of our profiles (a previous run killed with SIGKILL can leave
    Chromium helpers behind). Matched by our own profile path in their command line, ended by pid."""
    marker = f"--user-data-dir={profiles_dir}/".encode()
    ended = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                if marker not in fh.read():
                    continue
            os.kill(int(entry), signal.SIGKILL)
            ended.append(int(entry))
        except (OSError, ProcessLookupError):
            continue
    return ended


def _post(loop: asyncio.AbstractEventLoop, callback: Callable[[Any], None], arg: Any) -> None:
    """Hand a result from the worker thread to the loop; dropped once the loop is closed (shutdown)."""
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(callback, arg)


class FrameManager:
    """Owns every frame, the cap on running browsers, the registry on disk and every background task."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.frames: dict[str, Frame] = {}
        self._room = asyncio.Lock()  # one capacity decision (and the close it may need) at a time
        self._tasks: set[asyncio.Task[Any]] = set()
        self._save_handle: asyncio.TimerHandle | None = None
        self._saving = asyncio.Lock()
        self.closing = False
        self.restarts = 0  # browsers relaunched after a crash or hang (for /metrics)
        self.state_write_errors = 0  # failed registry writes (for /metrics)
        self.state_write_error: str | None = None  # the last one, until a write succeeds again

    # -- tasks -------------------------------------------------------------------------------------------

    def spawn(self, coro: Any, name: str) -> asyncio.Task[Any] | None:
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

    # -- registry ----------------------------------------------------------------------------------------

    @property
    def registry_path(self) -> Path:
        return self.settings.state_dir / "frames.json"

    def profile_dir(self, frame_id: str) -> Path:
        return self.settings.state_dir / "profiles" / frame_id

    def load(self) -> None:
        """Frames from the last run come back `closed`; each reopens at its last URL when watched."""
        self.settings.state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        remove_leftover_temps(self.registry_path)
        ended = end_leftover_browsers(self.settings.state_dir / "profiles")
        if ended:
            log.warning("ended %d browser processes left by a previous run: %s", len(ended), ended)
        try:
            data = json.loads(self.registry_path.read_text())
        except FileNotFoundError:
            return
        except (OSError, ValueError) as exc:
            log.error("frame registry %s is unreadable (%s); starting with no frames", self.registry_path, exc)
            return
        now_wall, now = time.time(), time.monotonic()
        for item in data.get("frames", []):
            try:
                size = FrameSize(int(item["width"]), int(item["height"]), int(item["dpr"]))
                frame = Frame(self, str(item["id"]), check_url(item["url"]), size,
                              last_viewed=now - max(0.0, now_wall - float(item.get("last_viewed", now_wall))))
            except (KeyError, TypeError, ValueError) as exc:
                log.warning("skipping a frame in the registry: %s", exc)
                continue
            self.frames[frame.id] = frame

    def save_soon(self, delay: float = 0.2) -> None:
        if self._save_handle is None and not self.closing:
            self._save_handle = asyncio.get_running_loop().call_later(delay, self._save_now)

    def _save_now(self) -> None:
        self._save_handle = None
        self.spawn(self.save_in_background(), "save-registry")

    def _registry(self) -> dict[str, Any]:
        now_wall, now = time.time(), time.monotonic()
        return {
            "version": 1,
            "frames": [
                {"id": f.id, "url": f.url, "width": f.size.css_width, "height": f.size.css_height,
                 "dpr": f.size.dpr, "last_viewed": now_wall - (now - f.last_viewed)}
                for f in self.frames.values()
            ],
        }

    async def save_in_background(self) -> None:
        """Save the registry with the disk work (write, fsync, rename) off the event loop."""
        async with self._saving:  # in order: an older snapshot never lands after a newer one
            data = self._registry()
            try:
                await asyncio.to_thread(write_json_atomically, self.registry_path, data)
            except OSError as exc:
                self._save_failed(exc)
            else:
                self._saved()

    def save(self) -> None:
        """Save the registry now, on this thread (at shutdown, when nothing else runs)."""
        try:
            write_json_atomically(self.registry_path, self._registry())
        except OSError as exc:
            self._save_failed(exc)
        else:
            self._saved()

    def _save_failed(self, exc: OSError) -> None:
        self.state_write_errors += 1
        if self.state_write_error is None:  # once per outage, not once per save
            log.error("cannot save the frame registry to %s: %s; the last saved copy is kept and frames keep "
                      "streaming", self.registry_path, exc.strerror or exc)
        self.state_write_error = f"{exc.strerror or exc}"
        with contextlib.suppress(RuntimeError):  # no loop: at shutdown there is no later
            self.save_soon(SAVE_RETRY_S)  # catch up by itself once space or write access is back

    def _saved(self) -> None:
        if self.state_write_error is not None:
            log.warning("the frame registry is saved again to %s", self.registry_path)
            self.state_write_error = None

    # -- frames ------------------------------------------------------------------------------------------

    def get(self, frame_id: str) -> Frame | None:
        return self.frames.get(frame_id)

    async def create(self, url: str, size: FrameSize) -> Frame:
        """Make a new frame live; raises CapacityError when every running browser is watched."""
        check_url(url, self.settings.allowed_url_hosts)
        frame = Frame(self, secrets.token_hex(4), url, size)
        async with self._room:
            victim = choose_browser_to_close((f.view() for f in self.frames.values()), self.settings.max_browsers)
            self.frames[frame.id] = frame
            frame.state = FrameState.LAUNCHING  # counts against the cap from now on
        log.info("created at %dx%d dpr %d, page on %s", size.css_width, size.css_height, size.dpr,
                 urlsplit(url).hostname, extra={"frame": frame.id})
        if victim is not None:
            await self.frames[victim].close_browser()
        self.save_soon()
        self.spawn(frame.start(), f"start-{frame.id}")
        return frame

    async def make_room_for(self, frame: Frame) -> None:
        """Reserve a browser for `frame` (closing the least recently viewed unwatched one if at the cap).

        The reservation (state `launching`) is taken inside the same lock as the decision, so two frames
        reopening at once can never both pass the cap."""
        async with self._room:
            if frame.browser_running:
                return
            victim = choose_browser_to_close((f.view() for f in self.frames.values()),
                                             self.settings.max_browsers, starting=frame.id)
            if victim is not None:
                await self.frames[victim].close_browser()
            frame._set_state(FrameState.LAUNCHING)

    async def delete(self, frame_id: str, *, purge: bool = False) -> bool:
        frame = self.frames.pop(frame_id, None)
        if frame is None:
            return False
        frame.deleted = True
        await frame.close_browser()
        frame.state = FrameState.CLOSED
        frame.message = "deleted"  # unlike an idle close, watching again will not reopen it
        frame.broadcast_state()
        frame.feed.watches.clear()
        log.info("deleted%s", " with its profile" if purge else "", extra={"frame": frame_id})
        await self.save_in_background()
        if purge:
            await asyncio.get_running_loop().run_in_executor(
                None, lambda: shutil.rmtree(self.profile_dir(frame_id), ignore_errors=True))
        return True

    def running_count(self) -> int:
        return sum(1 for f in self.frames.values() if f.state in RUNNING_STATES)

    async def shutdown(self) -> None:
        """Close every browser gracefully (profiles flushed), end every task, save the registry."""
        self.closing = True
        if self._save_handle is not None:
            self._save_handle.cancel()
            self._save_handle = None
        async with self._saving:  # a save under way lands first, so the final one below is the last word
            tasks = list(self._tasks)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await asyncio.gather(*(f.close_browser() for f in self.frames.values()), return_exceptions=True)
            self.save()


__all__ = ["CapacityError", "Frame", "FrameGone", "FrameManager", "check_url"]
