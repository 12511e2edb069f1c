"""One launch of a frame's processes: Xvfb, Chromium and the capture/encode pipeline, and their watchdog.

A `FrameRuntime` lives from one launch to its teardown; a relaunch makes a new one. `start()` brings the parts up
in order (display, browser, pipeline) and loads the page; `stop()` ends whatever of them started. What happens to
them reaches the frame on the event loop through `RuntimeHooks`: each picture tagged with the pipeline that made
it (so one posted by a pipeline stopped since is known and dropped), a failed pipeline, a navigation, a crashed
renderer, and a fault: the pipeline failed, or its watchdog found the browser or the display dead or hung. The
frame decides whether to relaunch (frames/recovery.py `RestartBudget`).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from framestream.browser.chrome import ChromeBrowser
from framestream.browser.proctable import ProcessInfo
from framestream.browser.tab_events import PageCrashed, PageNavigated, TabEvent, TabSettings
from framestream.browser.tabs import Tabs
from framestream.browser.xinput import DisplayInput
from framestream.browser.xvfb import XvfbDisplay
from framestream.core.errors import BrowserError, CDPError
from framestream.core.keys import cdp_calls
from framestream.core.refresh import RefreshPolicy
from framestream.core.wire import InputEvent, MouseEvent, PasteEvent, WheelEvent
from framestream.frames.refresh import DisplayRefresh
from framestream.media.picture import PatchGate, Picture
from framestream.service.config import MAX_ENCODED_HEIGHT, MAX_ENCODED_WIDTH, FrameSize, Settings
from framestream.tasks import stop_task

if TYPE_CHECKING:
    from framestream.media.pipeline import FramePipeline, PipelineStats

log = logging.getLogger("framestream.frames")  # one logger for a frame's whole story

HEARTBEAT_INTERVAL_S = 5.0
HEARTBEAT_TIMEOUT_S = 3.0


@dataclass(frozen=True, slots=True)
class RuntimeHooks:
    """What a runtime reports to its frame, always on the event loop."""

    on_picture: Callable[[object, Picture], None]  # (the pipeline that made it, the picture)
    on_fault: Callable[[str], None]  # why this runtime cannot go on: the frame relaunches or gives up
    on_navigated: Callable[[str], None]  # the active page is at this URL now
    on_crashed: Callable[[], None]  # the active page's renderer died (the browser lives on)
    on_tab_event: Callable[[TabEvent], None] = lambda event: None  # pages, dialogs, files, clipboard
    patch_gate: PatchGate | None = None  # the feed's: whether the worker may send patches
    record_gate: PatchGate | None = None  # the recorder's: whether the worker covers patches with H.264 (recording/)


class Runtime(Protocol):
    """What a frame uses of its running processes: a `FrameRuntime`, or a fake in tests."""

    @property
    def pipeline(self) -> object | None: ...

    @property
    def encode_seconds(self) -> float: ...

    async def start(self, url: str) -> str | None: ...

    async def stop(self, *, keep_storage: bool = True) -> None: ...

    async def resize(self, size: FrameSize) -> bool: ...

    async def reload(self, url: str) -> str | None: ...

    async def freeze(self) -> None: ...

    def thaw(self) -> None: ...

    async def dispatch(self, events: Sequence[InputEvent]) -> None: ...

    def request_keyframe(self, published: int) -> None: ...

    def request_fresh_keyframe(self) -> None: ...

    async def painted(self, *, relaid: bool = False) -> None: ...

    def set_light(self, kbps: int | None) -> None: ...

    def request_light_keyframe(self) -> None: ...

    def snapshot(self) -> tuple[Any, int, int] | None: ...

    @property
    def released(self) -> bool: ...

    @property
    def tabs(self) -> Tabs | None: ...

    def process_ids(self, processes: Sequence[ProcessInfo]) -> list[int]: ...


RuntimeFactory = Callable[[str, FrameSize, RuntimeHooks], Runtime]  # (frame id, size, hooks)


class FrameRuntime:
    def __init__(self, settings: Settings, size: FrameSize, profile_dir: Path, hooks: RuntimeHooks, *,
                 name: str, downloads_dir: Path | None = None) -> None:
        self._settings = settings
        self._size = size
        self._launched_dpr = size.dpr  # the browser's scale factor, which a resize in place keeps
        self._profile_dir = profile_dir
        self._downloads_dir = downloads_dir or profile_dir.parent / f"{profile_dir.name}.downloads"
        self._x_input: DisplayInput | None = None
        self._hooks = hooks
        self._name = name  # the frame id, for the pipeline's thread and logs
        self._display: XvfbDisplay | None = None
        self._browser: ChromeBrowser | None = None
        self.pipeline: FramePipeline | None = None
        self._stats: PipelineStats | None = None
        self._unsubscribe: list[Callable[[], None]] = []
        self._watchdog: asyncio.Task[None] | None = None
        self._light_kbps: int | None = None  # the light stream's cap the feed last asked for
        self._refresh: DisplayRefresh | None = None  # the display's faster rate while input comes
        self._encode_seconds_before = 0.0  # by pipelines of this runtime that a resize ended

    async def start(self, url: str) -> str | None:
        """Start the display, the browser and the pipeline, then load `url`. Returns None, or why the page did
        not load (the browser then shows Chrome's error page). Raises BrowserError, CaptureError or OSError;
        `stop()` ends whatever had started. Once it returns, the watchdog runs until `stop()`."""
        settings, size = self._settings, self._size
        # The display is the largest picture a frame may have, whatever its size: Xvfb cannot grow its screen, and
        # a frame resized within it keeps its page. It costs a small frame the framebuffer (640x400 at dpr 1: 12-15
        # MB more USS, Xvfb and Chromium; CPU the same, docs/performance.md), a frame of the default 2560x1600 nothing.
        self._display = await XvfbDisplay.start(MAX_ENCODED_WIDTH, MAX_ENCODED_HEIGHT,
                                                xvfb_path=settings.xvfb_path, refresh_hz=settings.fps)
        tab_settings = TabSettings(size.width, size.height, size.dpr, self._downloads_dir,
                                   grant_permissions=settings.permissions,
                                   dialog_timeout_s=settings.dialog_timeout_s,
                                   allowed_hosts=settings.allowed_url_hosts, own_port=settings.port)
        self._browser = await ChromeBrowser.launch(chrome_path=settings.chrome_path, display=self._display.name,
                                                   xauthority=self._display.xauthority,
                                                   profile_dir=self._profile_dir, width=size.width,
                                                   height=size.height, dpr=size.dpr, tab_settings=tab_settings,
                                                   on_event=self._on_tab_event, webgl=settings.webgl)
        self._x_input = DisplayInput(self._display.name, size.width, size.height)
        self._refresh = DisplayRefresh(self._display.set_refresh,
                                       RefreshPolicy(settings.fps, settings.input_refresh_hz), name=self._name)
        # The media stack (numpy, PyAV, libx264) loads with the first frame, so an idle service stays small;
        # in a thread, since importing it takes ~0.3 s that the event loop owes to everyone else.
        await asyncio.to_thread(importlib.import_module, "framestream.media.pipeline")
        self._start_pipeline(self._display.name, size)
        error = await self._browser.navigate(url)
        if error is None:
            await self._browser.tabs.forget_history()  # Back from the first page stays on it
        self._watchdog = asyncio.create_task(self._watch(), name=f"monitor-{self._name}")
        return error

    def _start_pipeline(self, display: str, size: FrameSize) -> None:
        from framestream.media.encoder import EncoderSettings
        from framestream.media.pipeline import FramePipeline

        loop, hooks, settings = asyncio.get_running_loop(), self._hooks, self._settings
        # Every picture names its pipeline: after a stop whose join timed out, the old worker may still post one.
        pipeline = FramePipeline(
            display, size.width, size.height,
            on_picture=lambda picture: _post(loop, hooks.on_picture, pipeline, picture),
            on_failure=lambda exc: _post(loop, hooks.on_fault, f"capture failed: {exc}"),
            settings=EncoderSettings(fps=settings.fps), name=self._name, patch_gate=hooks.patch_gate,
            light_size=size.light, release_after_s=settings.paused_release_s, record_gate=hooks.record_gate,
        )
        pipeline.set_light(self._light_kbps)
        self.pipeline, self._stats = pipeline, pipeline.stats
        pipeline.start()

    async def resize(self, size: FrameSize) -> bool:
        """Give the frame a new size in place when its dpr stays: the pipeline stops, every page is laid out at
        the new size (its document, scripts and scroll kept) and a pipeline of the new size starts. False, changing
        nothing, for another dpr: the browser cannot change its scale factor (the frame relaunches at the new size
        instead). The display holds any frame's picture (`start`). Raises BrowserError (CDPError) when the active
        page did not take the size; the new pipeline runs anyway."""
        display, browser = self._display, self._browser
        if display is None or browser is None or size.width > display.width or size.height > display.height:
            return False
        if size.dpr != self._launched_dpr:
            # The window's scale factor is the browser's own (--force-device-scale-factor): a page emulated at
            # another one is drawn scaled by it (at dpr 1 in a dpr 2 window, its top-left quarter filled the picture).
            return False
        if self._refresh is not None:
            self._refresh.note_input()  # at the faster rate, as input: its layout is shown four frames later
        pipeline, self.pipeline = self.pipeline, None  # from here on the old pipeline's pictures are dropped
        if pipeline is not None:
            await asyncio.get_running_loop().run_in_executor(None, pipeline.stop)
            self._encode_seconds_before += pipeline.stats.encode_seconds
        self._size = size
        if self._x_input is not None:
            self._x_input.width, self._x_input.height = size.width, size.height
        try:
            await browser.tabs.resize(size.width, size.height, size.dpr)
        finally:
            self._start_pipeline(display.name, size)
        return True

    async def stop(self, *, keep_storage: bool = True) -> None:
        """End every process and task of the frame. `keep_storage` (not for a profile about to be deleted): the
        browser waits for the page's last localStorage writes (ChromeBrowser.close)."""
        watchdog, self._watchdog = self._watchdog, None
        if watchdog is not None and watchdog is not asyncio.current_task():
            await stop_task(watchdog)
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self._unsubscribe = []
        pipeline, self.pipeline = self.pipeline, None
        if pipeline is not None:
            await asyncio.get_running_loop().run_in_executor(None, pipeline.stop)
        x_input, self._x_input = self._x_input, None
        if x_input is not None:
            await x_input.aclose()
        refresh, self._refresh = self._refresh, None
        if refresh is not None:
            await refresh.aclose()
        browser, self._browser = self._browser, None
        if browser is not None:
            # The frame's URL already follows every navigation, so no call into a renderer that may be stopped
            # (paused) or hung is needed here.
            await browser.close(keep_storage=keep_storage)
        display, self._display = self._display, None
        if display is not None:
            await display.stop()

    @property
    def encode_seconds(self) -> float:
        """Converting and encoding time of this runtime's pipeline (kept after it stopped)."""
        return self._encode_seconds_before + (self._stats.encode_seconds if self._stats is not None else 0.0)

    async def _watch(self) -> None:
        """Until the browser or its display exits, or the browser stops answering: then report the fault.

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
        self._watchdog = None
        self._hooks.on_fault(reason)

    async def reload(self, url: str) -> str | None:
        """Load `url` again (after a renderer crash): None, or Chrome's error text. Raises CDPError."""
        return await self._running_browser().navigate(url)

    async def freeze(self) -> None:
        """Stop capturing (the pipeline gives back its encoder and buffers), ask Chrome to give memory back, then
        stop the page's processes.

        A full garbage collection of each page's JavaScript heap first (5-9 MB on an app page), then a critical
        pressure signal makes Chrome drop caches. Not `Memory.forciblyPurgeJavaScriptMemory` (it destroys the
        page's JS context) nor a frozen web lifecycle state (the picture after resume is wrong)."""
        browser = self._running_browser()
        if self.pipeline is not None:
            self.pipeline.set_paused(True)
        browser.tabs.paused = True  # a stopped page is not a hung one
        for page in list(browser.tabs.pages):
            if page.responsive and browser.tabs.open_dialog(page) is None:  # a busy page would only time out
                with contextlib.suppress(CDPError):
                    await browser.tabs.call("HeapProfiler.collectGarbage", page=page, timeout=1.0)
        with contextlib.suppress(CDPError):
            await browser.call("Memory.simulatePressureNotification", {"level": "critical"}, timeout=2.0)
        browser.freeze_page()

    def thaw(self) -> None:
        if self.pipeline is not None:
            self.pipeline.set_paused(False)  # before the page wakes (media/parked.py)
        if self._browser is not None:
            self._browser.thaw_page()
            self._browser.tabs.paused = False

    async def dispatch(self, events: Sequence[InputEvent]) -> None:
        """Apply input events in order to what is on top of the frame's screen: the browser's own popups (select
        lists, pickers) through X input, everything else to the active page over CDP. Raises BrowserError
        (CDPError), or ProtocolError `dialog-open` / `unresponsive` at once when the page cannot take input."""
        browser = self._running_browser()
        tabs = browser.tabs
        if self._refresh is not None and events:
            self._refresh.note_input()  # beside the input, not before it: see frames/refresh.py
        for event in events:
            tabs.refuse_under_dialog()
            if isinstance(event, PasteEvent):
                await tabs.paste(event.text)
                continue
            if isinstance(event, MouseEvent | WheelEvent) and await self._to_popup(event):
                continue
            for method, params in cdp_calls(event):
                await tabs.dispatch(method, params, timeout=5.0)

    async def _to_popup(self, event: MouseEvent | WheelEvent) -> bool:
        """Send a pointer event as X input when a browser popup is on screen; False when there is none."""
        x_input = self._x_input
        if x_input is None or not await x_input.popups():
            return False
        dpr = self._size.dpr
        x, y = round(event.x * dpr), round(event.y * dpr)
        if isinstance(event, WheelEvent):
            await x_input.send_wheel(x, y, event.dx, event.dy)
        else:
            await x_input.send_pointer(event.action, x, y, event.button)
        return True

    @property
    def tabs(self) -> Tabs | None:
        return self._browser.tabs if self._browser is not None else None

    def request_keyframe(self, published: int) -> None:
        if self.pipeline is not None:
            self.pipeline.request_keyframe(published)

    def request_fresh_keyframe(self) -> None:
        if self.pipeline is not None:
            self.pipeline.request_fresh_keyframe()

    async def painted(self, *, relaid: bool = False) -> None:
        """Until the active page has drawn a frame since now (two animation frames), or 2 s: what a keyframe
        grabbed after it shows is the loaded page, not the blank window before its first paint. `relaid` (a resize):
        four, as the new layout reaches the screen two frames behind its own (under load two left 7 of 400 first
        pictures of a new size without their bottom or right part; four none of 800)."""
        if self._browser is not None:
            await self._browser.painted(timeout=2.0, frames=4 if relaid else 2)

    def set_light(self, kbps: int | None) -> None:
        self._light_kbps = kbps  # a pipeline made later (a relaunch) starts with it
        if self.pipeline is not None:
            self.pipeline.set_light(kbps)

    def request_light_keyframe(self) -> None:
        if self.pipeline is not None:
            self.pipeline.request_light_keyframe()

    def snapshot(self) -> tuple[Any, int, int] | None:
        return self.pipeline.snapshot() if self.pipeline is not None else None

    @property
    def released(self) -> bool:
        """The paused pipeline gave back its capture, encoder and kept picture (a resume makes them again)."""
        return self.pipeline is not None and self.pipeline.released

    def process_ids(self, processes: Sequence[ProcessInfo]) -> list[int]:
        """Every process of this launch among `processes` (one read of the process table): Xvfb and the browser
        with all they forked (their process groups), and crashpad's handlers, which leave the browser's group
        (they name the profile in their command line)."""
        groups = {part.proc.pid for part in (self._display, self._browser) if part is not None}
        if not groups:
            return []
        profile = f"{self._profile_dir}/".encode()
        return [info.pid for info in processes
                if not info.zombie and (info.pgrp in groups or profile in info.cmdline)]

    def _running_browser(self) -> ChromeBrowser:
        if self._browser is None:
            raise BrowserError(f"frame {self._name} has no running browser")
        return self._browser

    def _on_tab_event(self, event: TabEvent) -> None:
        browser = self._browser
        if isinstance(event, PageNavigated):
            if event.active and not event.url.startswith("chrome-error:"):
                self._hooks.on_navigated(event.url)
        elif isinstance(event, PageCrashed):
            if browser is not None and browser.tabs.pages.active is not None \
                    and browser.tabs.pages.active.id == event.page_id:
                self._hooks.on_crashed()
            elif browser is not None:  # a page below the active one: reload it where it is
                browser.tabs.spawn(browser.tabs.reload(event.page_id), "reload-crashed-page")
        self._hooks.on_tab_event(event)


def _post(loop: asyncio.AbstractEventLoop, callback: Callable[..., None], *args: Any) -> None:
    """Hand a result from the worker thread to the loop; dropped once the loop is closed (shutdown)."""
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(callback, *args)


__all__ = ["FrameRuntime", "Runtime", "RuntimeFactory", "RuntimeHooks"]
