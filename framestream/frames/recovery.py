"""How a frame recovers when what runs it fails: relaunch after a fault, reload after the page's renderer crashed,
each within its budget of restarts a minute (past it the frame stays in `error` and says why).

The frame (frames/frame.py) owns one and hands it its runtime's fault and crash hooks; the recovery runs under
the frame's lock and asks the frame, through `Recoverable`, to tear down, launch and change state. The frame
imports this module, so this one names only that Protocol.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine
from typing import Any, Protocol

from framestream.core.control import FrameControl
from framestream.core.errors import CDPError
from framestream.core.lifecycle import FrameState
from framestream.frames.runtime import Runtime

log = logging.getLogger("framestream.frames")  # the frame's logger: one logger for a frame's whole story

RESTARTS_PER_MINUTE = 3


class RestartBudget:
    """At most `per_minute` relaunches after faults in any minute; past that the frame stays in `error`."""

    def __init__(self, per_minute: int = RESTARTS_PER_MINUTE) -> None:
        self.per_minute = per_minute
        self._times: list[float] = []

    def spend(self, now: float) -> bool:
        """Count a relaunch at `now` (monotonic seconds); False when it is one too many."""
        self._times = [t for t in self._times if now - t < 60] + [now]
        return len(self._times) <= self.per_minute


class Recoverable(Protocol):
    """What recovery asks of a frame; the `_locked` calls only while holding the frame's lock."""

    id: str
    url: str
    deleted: bool

    @property
    def control(self) -> FrameControl: ...

    @property
    def runtime(self) -> Runtime | None: ...

    @property
    def launches(self) -> int: ...

    def set_state(self, state: FrameState, message: str | None = None) -> None: ...

    def request_keyframe(self) -> None: ...

    async def teardown_locked(self) -> None: ...

    async def launch_locked(self) -> None: ...


class FrameRecovery:
    def __init__(self, frame: Recoverable, lock: asyncio.Lock, *,
                 spawn: Callable[[Coroutine[Any, Any, Any], str], object], note_restart: Callable[[], None]) -> None:
        """`lock` is the frame's (what runs); `spawn` starts a task; `note_restart` counts one for the metrics."""
        self._frame = frame
        self._lock = lock
        self._spawn = spawn
        self._note_restart = note_restart
        self._restarts = RestartBudget()
        self._reloads = RestartBudget()  # reloads after the page's renderer crashed: a page that crashes itself in
        # a loop (issue 32, suspected: reloaded without end) stays on Chrome's crash page past this

    def on_fault(self, reason: str, launch: int) -> None:
        """The runtime of `launch` cannot go on (its pipeline failed, or its browser or display died or hangs)."""
        self._spawn(self._recover(reason, launch), f"recover-{self._frame.id}")

    def on_crashed(self) -> None:
        self._note_restart()
        self._spawn(self._reload_after_crash(), f"reload-{self._frame.id}")

    async def _recover(self, reason: str, launch: int) -> None:
        frame = self._frame
        async with self._lock:
            # One death is often reported twice (a killed display: the watchdog sees it exit, the pipeline loses
            # its X connection). Once a recovery has launched a new runtime, the old one's later reports are
            # about what is already replaced: relaunching again would tear down a healthy frame and spend its
            # restart budget twice for one fault.
            if frame.deleted or frame.runtime is None or launch != frame.launches:
                return
            self._note_restart()
            log.warning("%s; relaunching", reason, extra={"frame": frame.id})
            frame.set_state(FrameState.LAUNCHING, reason)  # viewers hear it now, not after the teardown
            await frame.teardown_locked()
            if not self._restarts.spend(time.monotonic()):
                limit = self._restarts.per_minute
                frame.set_state(FrameState.ERROR, f"{reason}; gave up after {limit} restarts a minute")
                return
            await frame.launch_locked()

    async def _reload_after_crash(self) -> None:
        """The page's renderer died (the browser lives on, showing a crash page): load the last URL again."""
        frame = self._frame
        async with self._lock:
            runtime = frame.runtime
            if runtime is None or frame.deleted:
                return
            if not self._reloads.spend(time.monotonic()):
                limit = self._reloads.per_minute
                log.warning("the page crashed again; not reloaded (%d reloads a minute at most)", limit,
                            extra={"frame": frame.id})
                frame.set_state(FrameState.ERROR, f"the page crashed more than {limit} times a minute; "
                                                   "navigate or reload it to try again")
                return
            log.warning("the page crashed; reloading it", extra={"frame": frame.id})
            frame.set_state(FrameState.LAUNCHING, "the page crashed; reloading")
            try:
                error = await runtime.reload(frame.url)
            except CDPError as exc:
                frame.set_state(FrameState.ERROR, f"reload after a crash failed: {exc}")
                return
            frame.control.reset()
            frame.request_keyframe()
            if error:
                frame.set_state(FrameState.ERROR, f"could not load {frame.url}: {error}")
            else:
                frame.set_state(FrameState.LIVE)


__all__ = ["RESTARTS_PER_MINUTE", "FrameRecovery", "Recoverable", "RestartBudget"]
