"""A frame: one shared page, its state, its viewers, who drives it, and the runtime it has while it runs.

While its browser runs a frame owns one `Runtime` (Xvfb, Chromium, pipeline: frames/runtime.py); its `FrameFeed`
outlives them, so sequence numbers and viewers survive a reopen. Every change of what runs goes through the frame's
`run_lock` (an input holds it while it goes in; no pause starts while a step is applied): concurrent watches, input
and deletes never start two browsers for one frame. What viewers must hear leaves as events (frames/events.py).
Helpers it owns: which pictures viewers get (frames/pictures.py), what a step does (frames/steps.py), relaunch and
reload after a failure (frames/recovery.py), a new size (frames/resizing.py)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from framestream.browser.proctable import ProcessInfo
from framestream.browser.tab_events import ServerAnswered, TabEvent
from framestream.core.control import FrameControl
from framestream.core.errors import BrowserError, CaptureError, FrameGone
from framestream.core.handoff import HelpRequest
from framestream.core.lifecycle import FrameState, FrameView, pause_deadline
from framestream.core.tokens import Claims
from framestream.core.wire import InputEvent
from framestream.fanout.feed import FrameFeed, Viewer
from framestream.frames.browsing import Browsing, FrameAction
from framestream.frames.driving import Driving
from framestream.frames.events import ControlChanged, FrameEvent, StateChanged
from framestream.frames.files import FileLimits, FrameFiles
from framestream.frames.owner import FrameOwner
from framestream.frames.pictures import FramePictures
from framestream.frames.recovery import FrameRecovery
from framestream.frames.resizing import FrameResizing
from framestream.frames.runtime import Runtime, RuntimeHooks
from framestream.frames.steps import FrameSteps
from framestream.recording import recorder as recording  # (a module: recording/ imports frames.events)
from framestream.service.config import FrameSize

log = logging.getLogger("framestream.frames")  # one logger for a frame's whole story


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
        self.steps = FrameSteps(self)  # (it only keeps the frame: nothing of it is read before it is built)
        self.driving = Driving(frame_id, manager.settings.person_hold_s, dispatch=self.steps.apply_input,
                               release=self.steps.release_held, emit=self._emit,
                               on_change=lambda: self._emit(self.state_event()))
        self.feed = FrameFeed(request_keyframe=self.request_keyframe,
                              request_light_keyframe=self.request_light_keyframe, set_light=self.set_light)
        self.last_viewed = time.monotonic() if last_viewed is None else last_viewed
        self.idle_since: float | None = None
        self.deleted = False
        self.run_lock = asyncio.Lock()  # launch, pause, resume, close, recovery; an input going in
        self._runtime: Runtime | None = None
        self._pause_timer: asyncio.TimerHandle | None = None
        self.recovery = FrameRecovery(self, self.run_lock, spawn=manager.spawn, note_restart=manager.note_restart)
        self.resizing = FrameResizing(self, self.run_lock)  # `resize` (frames/resizing.py)
        self._encode_seconds_before = 0.0  # by runtimes that have ended
        self._launches = 0  # runtimes launched so far: a fault names the launch whose runtime failed
        settings = manager.settings
        self.files = FrameFiles(manager.files_dir(frame_id), max_download_bytes=settings.download_max_bytes,
                                max_downloads=settings.download_max_count, limits=FileLimits.of(settings))
        self.files.load()
        self.browsing = Browsing(frame_id, self.files, self._emit, manager.spawn, settings.allowed_url_hosts,
                                 own_port=settings.port)
        self.recorder = recording.FrameRecorder(
            manager.recordings, frame_id, size, enabled=settings.record if record is None else record, asked=record,
            request_keyframe=self.request_keyframe, tabs=lambda: self.browsing.tabs)
        self.pictures = FramePictures(self.feed, lambda: self._runtime, self.recorder.on_picture)

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
    def gone(self) -> bool:  # deleted, or the service is shutting down: nothing may launch its browser again
        return self.deleted or self.manager.closing

    @property
    def browser_running(self) -> bool:
        return self._runtime is not None or self.state is FrameState.LAUNCHING

    def view(self) -> FrameView:
        return FrameView(self.id, self.state, self.viewers, self.last_viewed, self.browser_running)

    def describe(self) -> dict[str, Any]:
        size = self.size
        return {"id": self.id, "url": self.url, "state": self.state.value, "width": size.css_width,
                "height": size.css_height, "dpr": size.dpr, "encoded_width": size.width, "encoded_height": size.height,
                "viewers": self.viewers, "driver": self.control.driver, "message": self.message}

    def state_event(self) -> StateChanged:
        return StateChanged(self.id, self.state, self.url, self.viewers, self.control.driver, self.message,
                            self.browsing.pages, (self.size.css_width, self.size.css_height))

    @property
    def runtime(self) -> Runtime | None:
        """What runs the frame (None while its browser is closed or still starting)."""
        return self._runtime

    @property
    def launches(self) -> int:
        """Runtimes launched so far: a fault names the launch whose runtime failed."""
        return self._launches

    @property
    def encode_seconds(self) -> float:
        return self._encode_seconds_before + (self._runtime.encode_seconds if self._runtime else 0.0)

    @property
    def released(self) -> bool:
        """Paused long enough that its pipeline gave back its buffers (`FRAMESTREAM_PAUSED_RELEASE_S`)."""
        return self._runtime is not None and self._runtime.released

    def snapshot(self) -> tuple[Any, int, int] | None:
        """The last captured picture while it shows the page (None while launching or just resumed)."""
        return self.pictures.snapshot()

    async def fresh_snapshot(self, timeout: float) -> tuple[Any, int, int] | None:
        """`snapshot()`, waiting up to `timeout` for a picture that shows the page (after a launch or resume)."""
        return await self.pictures.fresh_snapshot(timeout)

    def process_ids(self, processes: Sequence[ProcessInfo]) -> list[int]:
        """The processes of the frame's display and browser among `processes` (none while it is closed)."""
        return self._runtime.process_ids(processes) if self._runtime is not None else []

    # -- viewers and what they hear ----------------------------------------------------------------------

    def add_viewer(self, viewer: Viewer, *, video: bool = True) -> None:
        """`video` false: `viewer` hears what happens to the frame but takes no pictures (its page is hidden), is
        not counted, and keeps the frame neither from pausing nor from closing (docs/protocol.md, `watch`)."""
        if not video:
            self.feed.listen(viewer)
            viewer.on_event(self.state_event())  # what the frame is now: the others were told as it changed
        else:
            # Only a live frame's kept keyframe can still show its page: a paused, closed or launching one makes a
            # fresh keyframe when it is running again (docs/architecture.md, "Fresh pictures").
            self.feed.add(viewer, replay=self.state is FrameState.LIVE and self.pictures.showing)
            self.last_viewed = time.monotonic()
            self.idle_since = None
            self._cancel_pause_timer()
            self._emit(self.state_event())
        for question in [*self.driving.joined(), *self.browsing.open_questions()]:  # what the others were told
            viewer.on_event(question)

    def remove_viewer(self, viewer: Viewer) -> None:
        if viewer not in self.feed.viewers:
            self.feed.remove(viewer)  # (one that watched without pictures, or none)
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
        for viewer in self.feed.audience():
            viewer.on_event(event)

    def set_state(self, state: FrameState, message: str | None = None) -> None:
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
        self.set_state(FrameState.LAUNCHING)

    async def delete(self, *, keep_storage: bool = True) -> None:
        """Close for good: viewers hear `closed` ("deleted") and are let go; watching it again will not reopen it."""
        self.deleted = True
        self.driving.close()
        await self.close_browser(keep_storage=keep_storage)
        self.state, self.message = FrameState.CLOSED, "deleted"
        self._emit(self.state_event())
        self.feed.remove_all()

    # -- pictures (frames/pictures.py; the feed and the recorder ask for keyframes here) ---------------------

    def request_keyframe(self) -> None:
        self.pictures.request_keyframe()

    def request_light_keyframe(self) -> None:
        self.pictures.request_light_keyframe()

    def set_light(self, kbps: int | None) -> None:
        """The light stream's cap (media/light.py), as the feed wants it for its slow viewers."""
        self.pictures.set_light(kbps)

    # -- running, pausing, closing (callers hold no lock; each takes the frame's) -------------------------

    async def ensure_running(self) -> None:
        """Make the frame live: resume it when paused, reopen it (within the cap) when closed or failed."""
        async with self.run_lock:
            if self.gone:
                raise FrameGone(self.id)
            if self.state is FrameState.PAUSED:
                self.resume_locked()
                return
            if self._runtime is not None:
                return
        await self.manager.make_room_for(self)
        async with self.run_lock:
            if self.gone:
                raise FrameGone(self.id)
            if self._runtime is None:
                await self.launch_locked()

    async def start(self) -> None:
        """Launch the browser of a frame whose place under the cap is already reserved (`launching`)."""
        async with self.run_lock:
            if not self.deleted and self._runtime is None and self.state is FrameState.LAUNCHING:
                await self.launch_locked()

    async def launch_locked(self) -> None:
        # Keep the reason a recovery gave (viewers see why the frame is launching again).
        self.set_state(FrameState.LAUNCHING, self.message if self.state is FrameState.LAUNCHING else None)
        self._launches += 1
        launch = self._launches
        hooks = RuntimeHooks(on_picture=self.pictures.on_picture,
                             on_fault=lambda reason: self.recovery.on_fault(reason, launch),
                             on_navigated=self._on_navigated, on_crashed=self.recovery.on_crashed,
                             on_tab_event=self._on_tab_event, patch_gate=self.feed.patch_gate,
                             record_gate=self.recorder.gate)
        runtime = self._runtime = self.manager.new_runtime(self.id, self.size, hooks)
        self.pictures.launched(runtime)
        try:
            error = await runtime.start(self.url)
        except (BrowserError, CaptureError, OSError) as exc:
            await self.teardown_locked()
            self.set_state(FrameState.ERROR, str(exc))
            return
        except BaseException:
            # Cancelled mid-launch (shutdown): end whatever already started before passing it on.
            await asyncio.shield(self.teardown_locked())
            raise
        self.browsing.tabs = runtime.tabs
        self.control.reset()
        await runtime.painted()
        self.pictures.show_fresh()
        if error:
            # The browser runs and shows Chrome's error page; the frame says why.
            self.set_state(FrameState.ERROR, f"could not load {self.url}: {error}")
        else:
            self.set_state(FrameState.LIVE)

    def _on_tab_event(self, event: TabEvent) -> None:
        if isinstance(event, ServerAnswered) and event.active and self.state is FrameState.ERROR \
                and self._runtime is not None:
            self.set_state(FrameState.LIVE)  # its page could not load at launch; its server answers now
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
            self.set_state(FrameState.LIVE)
        else:
            self._emit(self.state_event())
        self.manager.save_soon()

    def resume_locked(self) -> None:
        self.pictures.resumed()  # joiners wait for a keyframe of the screen as it is now
        if self._runtime is not None:
            self._runtime.thaw()
        self.set_state(FrameState.LIVE)

    def sized(self) -> None:
        """The frame has a new size (frames/resizing.py): a recording is of one size, and the registry keeps it."""
        self.recorder.resized(self.size)
        self.manager.save_soon()

    async def pause(self) -> None:
        async with self.run_lock:
            # Eligibility only, not the time: the timer may fire a hair before the deadline. Never under a step
            # (a navigation waits for its page: frozen, it never loads); the last one to end sets the timer again.
            if self._runtime is None or self.steps.busy or self._pause_deadline() is None:
                return
            await self._runtime.freeze()
            self.feed.forget()
            self.set_state(FrameState.PAUSED)

    async def close_browser(self, *, state: FrameState = FrameState.CLOSED, keep_storage: bool = True) -> None:
        """Close the browser gracefully (its profile flushed and kept); the frame stays, `closed`."""
        async with self.run_lock:
            await self.teardown_locked(keep_storage=keep_storage)
            if not self.deleted:
                self.set_state(state)

    async def teardown_locked(self, *, keep_storage: bool = True) -> None:
        self._cancel_pause_timer()
        runtime, self._runtime = self._runtime, None  # from here on its late pictures are dropped
        self.pictures.stopped()
        self.browsing.browser_gone()
        if runtime is not None:
            await runtime.stop(keep_storage=keep_storage)
            self._encode_seconds_before += runtime.encode_seconds

    # -- input -------------------------------------------------------------------------------------------

    async def apply_step(self, claims: Claims, seq: int, events: Sequence[InputEvent], *,
                         presenter: int | None = None) -> int:
        """One step of input under verified `claims` (FrameSteps.apply_step): the µs its first event went in."""
        return await self.steps.apply_step(claims, seq, events, presenter)

    async def apply_action(self, claims: Claims, seq: int, action: FrameAction, *,
                           presenter: int | None = None) -> int:
        """One driver action (navigate, page, dialog-answer, a file chooser's answer), arbitrated as input."""
        return await self.steps.apply_action(claims, seq, action, presenter)

    async def take_over(self, claims: Claims, seq: int, *, presenter: int | None = None) -> int:
        """A person's grant takes the frame without input (`take-over`): admitted as a step with no events."""
        return await self.steps.take_over(claims, seq, presenter)

    async def hand_back(self, claims: Claims, seq: int, note: str) -> None:
        """`release` from the driver (Driving.hand_back)."""
        await self.driving.hand_back(claims, seq, note)

    def request_help(self, claims: Claims, seq: int, reason: str, timeout_s: float, *, presenter: int | None = None,
                     notify: Callable[[FrameEvent], None] | None = None) -> HelpRequest:
        return self.driving.request_help(claims, seq, reason, timeout_s, presenter=presenter, notify=notify)

    # -- the pause timer ---------------------------------------------------------------------------------

    def steps_ended(self) -> None:
        """No step is being applied any more: unwatched, the frame pauses `idle_pause_s` from now."""
        self.set_state(self.state, self.message)  # (a live frame without viewers restarts its idle clock there)

    def _pause_deadline(self) -> float | None:
        return pause_deadline(self.state, self.viewers, self.idle_since, self.manager.settings.idle_pause_s)

    def _schedule_pause(self) -> None:
        self._cancel_pause_timer()
        if (deadline := self._pause_deadline()) is not None:
            self._pause_timer = asyncio.get_running_loop().call_later(
                max(0.0, deadline - time.monotonic()), lambda: self.manager.spawn(self.pause(), f"pause-{self.id}"))

    def _cancel_pause_timer(self) -> None:
        if self._pause_timer is not None:
            self._pause_timer.cancel()  # (idempotent: a handle already fired or cancelled may stay)


__all__ = ["Frame"]
