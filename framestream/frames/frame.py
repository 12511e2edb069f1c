"""A frame: one shared page, its state, its viewers, who drives it, and the runtime it has while it runs.

While its browser runs a frame owns one `Runtime` (Xvfb, Chromium, pipeline: frames/runtime.py); its `FrameFeed`
outlives them, so sequence numbers and viewers survive a reopen. Every change of what runs goes through the
frame's lock, so concurrent watches, input and deletes never start two browsers for one frame; every input step
goes through its step lock (`apply_step`). What viewers must hear leaves as events (frames/events.py), never as
wire messages.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any, Protocol

from framestream.browser.proctable import ProcessInfo
from framestream.browser.tab_events import TabEvent
from framestream.core.control import FrameControl
from framestream.core.errors import BrowserError, CaptureError, CDPError, FrameGone, ProtocolError
from framestream.core.handoff import HelpRequest
from framestream.core.lifecycle import FrameState, FrameView, pause_deadline
from framestream.core.tokens import Claims
from framestream.core.wire import InputEvent
from framestream.fanout.feed import FrameFeed, Viewer
from framestream.frames.browsing import Browsing, FrameAction
from framestream.frames.driving import Driving
from framestream.frames.events import ControlChanged, FrameEvent, StateChanged
from framestream.frames.files import FileLimits, FrameFiles
from framestream.frames.runtime import RestartBudget, Runtime, RuntimeHooks
from framestream.media.picture import Picture
from framestream.recording import recorder as recording  # (a module: recording/ imports frames.events)
from framestream.recording.store import RecordingStore
from framestream.service.config import FrameSize, Settings

log = logging.getLogger("framestream.frames")  # one logger for a frame's whole story


class FrameOwner(Protocol):
    """What a frame asks of whoever owns it (frames/manager.py `FrameManager` implements it): a launch slot under
    the cap, a runtime, a save, task spawning, a restart count. The manager imports frames, so a frame names only
    this and never imports the manager."""

    settings: Settings
    recordings: RecordingStore
    closing: bool

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any] | None: ...

    def files_dir(self, frame_id: str) -> Path: ...

    def new_runtime(self, frame_id: str, size: FrameSize, hooks: RuntimeHooks) -> Runtime: ...

    def note_restart(self) -> None: ...

    def save_soon(self) -> None: ...

    async def make_room_for(self, frame: Frame) -> None: ...


class Frame:
    def __init__(self, manager: FrameOwner, frame_id: str, url: str, size: FrameSize, *,
                 last_viewed: float | None = None, launching: bool = False, created_url: str | None = None,
                 record: bool | None = None) -> None:
        self.manager = manager
        self.id = frame_id
        self.url = url
        self.created_url = created_url or url
        self.size = size
        # A new frame is `launching` from the start (its browser starts at once); one from the registry, `closed`.
        self.state = FrameState.LAUNCHING if launching else FrameState.CLOSED
        self.message: str | None = None
        self.driving = Driving(frame_id, manager.settings.person_hold_s, dispatch=self._apply_input,
                               release=self._release_held, emit=self._emit,
                               on_change=lambda: self._emit(self.state_event()))
        self.feed = FrameFeed(request_keyframe=self.request_keyframe,
                              request_light_keyframe=self.request_light_keyframe, set_light=self.set_light)
        self.last_viewed = time.monotonic() if last_viewed is None else last_viewed
        self.idle_since: float | None = None
        self.deleted = False
        self._lock = asyncio.Lock()  # what runs: launch, pause, resume, close, recovery
        self._runtime: Runtime | None = None
        self._pause_timer: asyncio.TimerHandle | None = None
        self._restarts = RestartBudget()
        self._reloads = RestartBudget()  # reloads after the page's renderer crashed: a page that crashes itself in
        # a loop (issue 32, suspected: reloaded without end) stays on Chrome's crash page past this
        self._encode_seconds_before = 0.0  # by runtimes that have ended
        self._published = 0  # pictures of the current pipeline handed out on the loop
        # Whether the current pipeline's pictures show the page: not while the browser starts and loads it
        # (a blank window), from the fresh keyframe asked for once it is loaded.
        self._showing = False
        self._fresh_after_us = 0  # pictures captured before this (wall µs) are older than a fresh request
        self._launches = 0  # runtimes launched so far: a fault names the launch whose runtime failed
        self._light_kbps: int | None = None  # the light stream's cap while slow viewers watch
        settings = manager.settings
        self.files = FrameFiles(manager.files_dir(frame_id), max_download_bytes=settings.download_max_bytes,
                                max_downloads=settings.download_max_count, limits=FileLimits.of(settings))
        self.files.load()
        self.browsing = Browsing(frame_id, self.files, self._emit, manager.spawn, settings.allowed_url_hosts,
                                 own_port=settings.port)
        self.recorder = recording.FrameRecorder(
            manager.recordings, frame_id, size, enabled=settings.record if record is None else record, asked=record,
            request_keyframe=self.request_keyframe, tabs=lambda: self.browsing.tabs)

    # -- what others read --------------------------------------------------------------------------------

    @property
    def control(self) -> FrameControl:
        return self.driving.control

    def control_event(self) -> ControlChanged:
        """Who drives, as a connection that does not watch the frame is told it (`you` false)."""
        return self.driving.control_event()

    @property
    def viewers(self) -> int:
        return len(self.feed.viewers)

    @property
    def browser_running(self) -> bool:
        return self._runtime is not None or self.state is FrameState.LAUNCHING

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

    def state_event(self) -> StateChanged:
        return StateChanged(self.id, self.state, self.url, self.viewers, self.control.driver, self.message,
                            self.browsing.pages)

    @property
    def encode_seconds(self) -> float:
        return self._encode_seconds_before + (self._runtime.encode_seconds if self._runtime else 0.0)

    @property
    def released(self) -> bool:
        """Paused long enough that its pipeline gave back its buffers (`FRAMESTREAM_PAUSED_RELEASE_S`)."""
        return self._runtime is not None and self._runtime.released

    def snapshot(self) -> tuple[Any, int, int] | None:
        """The last captured picture while it shows the page (None while launching or just resumed)."""
        if self._runtime is None or not self._showing:
            return None
        return self._runtime.snapshot()

    async def fresh_snapshot(self, timeout: float) -> tuple[Any, int, int] | None:
        """`snapshot()`, waiting up to `timeout` for a picture that shows the page (after a launch or resume)."""
        deadline = time.monotonic() + timeout
        while (snap := self.snapshot()) is None and (left := deadline - time.monotonic()) > 0:
            await self.feed.wait_picture(0, left)
        return snap

    def process_ids(self, processes: Sequence[ProcessInfo]) -> list[int]:
        """The processes of the frame's display and browser among `processes` (none while it is closed)."""
        runtime = self._runtime
        return runtime.process_ids(processes) if runtime is not None else []

    # -- viewers and what they hear ----------------------------------------------------------------------

    def add_viewer(self, viewer: Viewer) -> None:
        # Only a live frame's kept keyframe can still show its page: a paused, closed or launching one makes a
        # fresh keyframe when it is running again (docs/architecture.md, "Fresh pictures").
        self.feed.add(viewer, replay=self.state is FrameState.LIVE and self._showing)
        self.last_viewed = time.monotonic()
        self.idle_since = None
        self._cancel_pause_timer()
        self._emit(self.state_event())
        for question in [*self.driving.joined(), *self.browsing.open_questions()]:  # what the others were told
            viewer.on_event(question)

    def remove_viewer(self, viewer: Viewer) -> None:
        if viewer not in self.feed.viewers:
            return
        self.feed.remove(viewer)
        self.last_viewed = time.monotonic()
        if self.viewers == 0:
            self.idle_since = time.monotonic()
            self._schedule_pause()
        self._emit(self.state_event())
        self.manager.save_soon()

    def _emit(self, event: FrameEvent) -> None:
        self.recorder.on_event(event)
        for viewer in list(self.feed.viewers):
            viewer.on_event(event)

    def _set_state(self, state: FrameState, message: str | None = None) -> None:
        changed = state is not self.state or message != self.message
        self.state = state
        self.message = message
        if state is FrameState.LIVE and self.viewers == 0:
            self.idle_since = time.monotonic()
            self._schedule_pause()
        if changed:
            log.info("%s%s", state.value, f" ({message})" if message else "", extra={"frame": self.id})
            self._emit(self.state_event())
            self.manager.save_soon()

    # -- transitions the manager asks for ----------------------------------------------------------------

    def reserve_launch(self) -> None:
        """Count against the cap from now on (`launching`); the manager decides this under its room lock."""
        self._set_state(FrameState.LAUNCHING)

    async def delete(self) -> None:
        """Close for good: viewers hear `closed` ("deleted") and are let go; watching it again will not reopen it."""
        self.deleted = True
        self.driving.close()
        await self.close_browser()
        self.state, self.message = FrameState.CLOSED, "deleted"
        self._emit(self.state_event())
        self.feed.remove_all()

    # -- pictures ----------------------------------------------------------------------------------------

    def request_keyframe(self) -> None:
        if self._runtime is not None:
            self._runtime.request_keyframe(self._published)

    def request_light_keyframe(self) -> None:
        if self._runtime is not None:
            self._runtime.request_light_keyframe()

    def set_light(self, kbps: int | None) -> None:
        """The light stream's cap (media/light.py), as the feed wants it for its slow viewers."""
        self._light_kbps = kbps
        if self._runtime is not None:
            self._runtime.set_light(kbps)

    def _on_picture(self, pipeline: object, picture: Picture) -> None:
        runtime = self._runtime
        if runtime is None or pipeline is not runtime.pipeline:
            return  # posted by a pipeline stopped since (perhaps still stopping): not the page as it is
        showing = self._showing and picture.capture_us >= self._fresh_after_us
        if picture.light:
            if showing:
                self.feed.publish_light(picture)
            return
        self._published += 1  # (dropped ones too: the pipeline counts what it handed over)
        if showing:
            self.feed.publish(picture)
            self.recorder.on_picture(picture)

    def _show_fresh(self) -> None:
        """From now on the pipeline's pictures show the page; the first a viewer gets is a keyframe made now."""
        self.feed.restarted()
        self._showing = True
        self._fresh_after_us = time.time_ns() // 1000
        if self._runtime is not None:
            self._runtime.request_fresh_keyframe()

    # -- running, pausing, closing (callers hold no lock; each takes the frame's) -------------------------

    async def ensure_running(self) -> None:
        """Make the frame live: resume it when paused, reopen it (within the cap) when closed or failed."""
        async with self._lock:
            if self.deleted or self.manager.closing:
                raise FrameGone(self.id)
            if self.state is FrameState.PAUSED:
                self._resume_locked()
                return
            if self._runtime is not None:
                return
        await self.manager.make_room_for(self)
        async with self._lock:
            if self.deleted or self.manager.closing:
                raise FrameGone(self.id)
            if self._runtime is None:
                await self._launch_locked()

    async def start(self) -> None:
        """Launch the browser of a frame whose place under the cap is already reserved (`launching`)."""
        async with self._lock:
            if not self.deleted and self._runtime is None:
                await self._launch_locked()

    async def _launch_locked(self) -> None:
        # Keep the reason a recovery gave (viewers see why the frame is launching again).
        self._set_state(FrameState.LAUNCHING, self.message if self.state is FrameState.LAUNCHING else None)
        self._launches += 1
        launch = self._launches
        hooks = RuntimeHooks(on_picture=self._on_picture, on_fault=lambda reason: self._on_fault(reason, launch),
                             on_navigated=self._on_navigated, on_crashed=self._on_crashed,
                             on_tab_event=self._on_tab_event, patch_gate=self.feed.patch_gate,
                             record_gate=self.recorder.gate)
        runtime = self._runtime = self.manager.new_runtime(self.id, self.size, hooks)
        runtime.set_light(self._light_kbps)
        self.feed.restarted()
        self._published = 0
        self._showing = False
        try:
            error = await runtime.start(self.url)
        except (BrowserError, CaptureError, OSError) as exc:
            await self._teardown_locked()
            self._set_state(FrameState.ERROR, str(exc))
            return
        except BaseException:
            # Cancelled mid-launch (shutdown): end whatever already started before passing it on.
            await asyncio.shield(self._teardown_locked())
            raise
        self.browsing.tabs = runtime.tabs
        self.control.reset()
        await runtime.painted()
        self._show_fresh()
        if error:
            # The browser runs and shows Chrome's error page; the frame says why.
            self._set_state(FrameState.ERROR, f"could not load {self.url}: {error}")
        else:
            self._set_state(FrameState.LIVE)

    def _on_tab_event(self, event: TabEvent) -> None:
        if self.browsing.on_tab_event(event):
            url = self.browsing.active_url()
            if url and url != self.url and self.browsing.recordable(url):
                self.url = url
                self.manager.save_soon()
            self._emit(self.state_event())

    def _on_navigated(self, url: str) -> None:
        # Only a page the frame may be created at becomes its URL: about:, data:, chrome: pages or a host not
        # allowed show, but never replace the last good one (a frame always reopens somewhere it may load).
        if url == self.url or not self.browsing.recordable(url):
            return
        self.url = url
        if self.state is FrameState.ERROR and self._runtime is not None:
            self._set_state(FrameState.LIVE)
        else:
            self._emit(self.state_event())
        self.manager.save_soon()

    def _resume_locked(self) -> None:
        # The kept keyframe may be older than the screen (the page can paint between the pipeline's pause and
        # its processes' stop): joiners wait for the keyframe of a full grab the resume makes.
        self.feed.forget()
        self._fresh_after_us = time.time_ns() // 1000  # (one still on its way from before the pause: dropped)
        if self._runtime is not None:
            self._runtime.thaw()
        self._set_state(FrameState.LIVE)

    async def pause(self) -> None:
        async with self._lock:
            # Eligibility only, not the time: the timer may fire a hair before the deadline.
            if self._runtime is None or self._pause_deadline() is None:
                return
            await self._runtime.freeze()
            self.feed.forget()
            self._set_state(FrameState.PAUSED)

    async def close_browser(self, *, state: FrameState = FrameState.CLOSED) -> None:
        """Close the browser gracefully (its profile flushed and kept); the frame stays, `closed`."""
        async with self._lock:
            await self._teardown_locked()
            if not self.deleted:
                self._set_state(state)

    async def _teardown_locked(self) -> None:
        self._cancel_pause_timer()
        runtime, self._runtime = self._runtime, None  # from here on its late pictures are dropped
        self._showing = False
        self.feed.forget()
        self.browsing.browser_gone()
        if runtime is not None:
            await runtime.stop()
            self._encode_seconds_before += runtime.encode_seconds

    # -- faults ------------------------------------------------------------------------------------------

    def _on_fault(self, reason: str, launch: int) -> None:
        """The runtime of `launch` cannot go on (its pipeline failed, or its browser or display died or hangs)."""
        self.manager.spawn(self._recover(reason, launch), f"recover-{self.id}")

    async def _recover(self, reason: str, launch: int) -> None:
        async with self._lock:
            # One death is often reported twice (a killed display: the watchdog sees it exit, the pipeline loses
            # its X connection). Once a recovery has launched a new runtime, the old one's later reports are
            # about what is already replaced: relaunching again would tear down a healthy frame and spend its
            # restart budget twice for one fault.
            if self.deleted or self._runtime is None or launch != self._launches:
                return
            self.manager.note_restart()
            log.warning("%s; relaunching", reason, extra={"frame": self.id})
            self._set_state(FrameState.LAUNCHING, reason)  # viewers hear it now, not after the teardown
            await self._teardown_locked()
            if not self._restarts.spend(time.monotonic()):
                limit = self._restarts.per_minute
                self._set_state(FrameState.ERROR, f"{reason}; gave up after {limit} restarts a minute")
                return
            await self._launch_locked()

    def _on_crashed(self) -> None:
        self.manager.note_restart()
        self.manager.spawn(self._reload_after_crash(), f"reload-{self.id}")

    async def _reload_after_crash(self) -> None:
        """The page's renderer died (the browser lives on, showing a crash page): load the last URL again."""
        async with self._lock:
            runtime = self._runtime
            if runtime is None or self.deleted:
                return
            if not self._reloads.spend(time.monotonic()):
                limit = self._reloads.per_minute
                log.warning("the page crashed again; not reloaded (%d reloads a minute at most)", limit,
                            extra={"frame": self.id})
                self._set_state(FrameState.ERROR, f"the page crashed more than {limit} times a minute; "
                                                  "navigate or reload it to try again")
                return
            log.warning("the page crashed; reloading it", extra={"frame": self.id})
            self._set_state(FrameState.LAUNCHING, "the page crashed; reloading")
            try:
                error = await runtime.reload(self.url)
            except CDPError as exc:
                self._set_state(FrameState.ERROR, f"reload after a crash failed: {exc}")
                return
            self.control.reset()
            self.request_keyframe()
            if error:
                self._set_state(FrameState.ERROR, f"could not load {self.url}: {error}")
            else:
                self._set_state(FrameState.LIVE)

    # -- input -------------------------------------------------------------------------------------------

    async def apply_step(self, claims: Claims, seq: int, events: Sequence[InputEvent], *,
                         presenter: int | None = None) -> int:
        """Apply one step of input under verified `claims`: admission (newest grant drives), release of what the
        previous driver held, `ControlChanged` to every viewer when the grant changed, then the events in
        order. Returns the wall clock (µs) when its first event went to the browser.

        Raises ProtocolError when the grant is refused (`superseded`), and CapacityError, FrameGone or
        BrowserError when the frame cannot be brought up or the browser fails (errors.protocol_error)."""
        return await self.recorder.step(claims, seq, events, None, self._admitted(
            claims, seq, presenter, lambda: self._apply_input(events), events))

    async def apply_action(self, claims: Claims, seq: int, action: FrameAction, *,
                           presenter: int | None = None) -> int:
        """Apply one driver action (navigate, page, dialog-answer, a file chooser's answer) under the same
        arbitration as input."""
        return await self.recorder.step(claims, seq, None, action,
                                        self._admitted(claims, seq, presenter, lambda: self._apply_action(action)))

    async def take_over(self, claims: Claims, seq: int, *, presenter: int | None = None) -> int:
        """A person's grant takes the frame without input (`take-over`): admitted as a step with no events."""
        if claims.step:
            raise ProtocolError("forbidden", "take-over is a person's: a one-step grant cannot hold a frame",
                                seq=seq, frame=self.id)
        return await self.recorder.step(claims, seq, None, "take-over",
                                        self.driving.step(claims, seq, presenter, self._nothing))

    async def hand_back(self, claims: Claims, seq: int, note: str) -> None:
        """`release` from the driver (Driving.hand_back)."""
        await self.driving.hand_back(claims, seq, note)

    def request_help(self, claims: Claims, seq: int, reason: str, timeout_s: float, *, presenter: int | None = None,
                     notify: Callable[[FrameEvent], None] | None = None) -> HelpRequest:
        return self.driving.request_help(claims, seq, reason, timeout_s, presenter=presenter, notify=notify)

    async def _admitted(self, claims: Claims, seq: int, presenter: int | None,
                        apply: Callable[[], Awaitable[None]], events: Sequence[InputEvent] = ()) -> int:
        return await self.driving.step(claims, seq, presenter, apply, events)

    async def _nothing(self) -> None:
        if self.state is not FrameState.LIVE or self._runtime is None:
            await self.ensure_running()

    async def _release_held(self, events: Sequence[InputEvent]) -> None:
        """What a previous driver held, released only while the browser still runs (a new one holds nothing)."""
        if self._runtime is not None and self.state is FrameState.LIVE:
            await self._apply_input(events)

    async def _apply_action(self, action: FrameAction) -> None:
        if self.state is not FrameState.LIVE or self._runtime is None:
            await self.ensure_running()
        await self.browsing.apply(action)

    async def _apply_input(self, events: Sequence[InputEvent]) -> None:
        if self.state is not FrameState.LIVE or self._runtime is None:
            await self.ensure_running()
        runtime = self._runtime
        if runtime is None:
            raise BrowserError(f"frame {self.id} has no running browser ({self.state.value})")
        await runtime.dispatch(events)
        self.control.record(events)

    # -- the pause timer ---------------------------------------------------------------------------------

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


__all__ = ["Frame"]
