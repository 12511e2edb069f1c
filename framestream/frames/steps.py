"""What a driver's step does to a frame: input, an action or a take-over, admitted by who drives (frames/driving.py),
recorded (recording/recorder.py), and applied to the page, bringing the frame up first when it is not live.

The frame (frames/frame.py) owns one and keeps its public `apply_step`, `apply_action` and `take_over`; it
imports this module, so this one names the frame only through `Steppable`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Protocol

from framestream.core.control import FrameControl
from framestream.core.errors import BrowserError, ProtocolError
from framestream.core.lifecycle import FrameState
from framestream.core.tokens import Claims
from framestream.core.wire import InputEvent
from framestream.frames.browsing import Browsing, FrameAction
from framestream.frames.driving import Driving
from framestream.frames.runtime import Runtime
from framestream.recording.recorder import FrameRecorder


class Steppable(Protocol):
    """What a step asks of its frame."""

    id: str
    state: FrameState
    run_lock: asyncio.Lock  # held while the frame launches, pauses, resumes, closes or recovers
    driving: Driving
    browsing: Browsing
    recorder: FrameRecorder

    @property
    def control(self) -> FrameControl: ...

    @property
    def runtime(self) -> Runtime | None: ...

    async def ensure_running(self) -> None: ...

    def steps_ended(self) -> None: ...


class FrameSteps:
    def __init__(self, frame: Steppable) -> None:
        self._frame = frame
        self._applying = 0  # inputs and actions going in now: the frame does not pause under them

    @property
    def busy(self) -> bool:
        """Whether an input or an action is being applied to the page (a pause waits for them to end)."""
        return self._applying > 0

    @contextlib.asynccontextmanager
    async def _applied(self) -> AsyncIterator[None]:
        self._applying += 1
        try:
            yield
        finally:
            self._applying -= 1
            if not self._applying:
                self._frame.steps_ended()

    async def apply_step(self, claims: Claims, seq: int, events: Sequence[InputEvent], presenter: int | None) -> int:
        """Apply one step of input under verified `claims`: admission (newest grant drives), release of what the
        previous driver held, `ControlChanged` to every viewer when the grant changed, then the events in
        order. Returns the wall clock (µs) when its first event went to the browser.

        Raises ProtocolError when the grant is refused (`superseded`), and CapacityError, FrameGone or
        BrowserError when the frame cannot be brought up or the browser fails (errors.protocol_error)."""
        frame = self._frame
        return await frame.recorder.step(claims, seq, events, None, self._admitted(
            claims, seq, presenter, lambda: self.apply_input(events), events))

    async def apply_action(self, claims: Claims, seq: int, action: FrameAction, presenter: int | None) -> int:
        return await self._frame.recorder.step(
            claims, seq, None, action, self._admitted(claims, seq, presenter, lambda: self._apply_action(action)))

    async def take_over(self, claims: Claims, seq: int, presenter: int | None) -> int:
        frame = self._frame
        if claims.step:
            raise ProtocolError("forbidden", "take-over is a person's: a one-step grant cannot hold a frame",
                                seq=seq, frame=frame.id)
        return await frame.recorder.step(claims, seq, None, "take-over",
                                         frame.driving.step(claims, seq, presenter, self._running))

    async def _admitted(self, claims: Claims, seq: int, presenter: int | None,
                        apply: Callable[[], Awaitable[None]], events: Sequence[InputEvent] = ()) -> int:
        if events:
            await self._printed()
        return await self._frame.driving.step(claims, seq, presenter, apply, events)

    async def _printed(self) -> None:
        """Input waits for the page's print to end (browser/print_hook.py) before the step lock, not under it: a
        person's take-over meanwhile is admitted at once, and the agent's waiting step then refused."""
        runtime = self._frame.runtime
        tabs = runtime.tabs if runtime is not None else None
        if tabs is not None and tabs.pages.active is not None:
            await tabs.printing.ended(tabs.pages.active)

    async def _running(self) -> None:
        """Bring the frame up first when it is not live (all a take-over does to the page)."""
        if self._frame.state is not FrameState.LIVE or self._frame.runtime is None:
            await self._frame.ensure_running()

    async def release_held(self, events: Sequence[InputEvent]) -> None:
        """What a previous driver held, released only while the browser still runs (a new one holds nothing)."""
        if self._frame.runtime is not None and self._frame.state is FrameState.LIVE:
            await self.apply_input(events)

    async def _apply_action(self, action: FrameAction) -> None:
        async with self._applied():
            await self._running()
            await self._frame.browsing.apply(action)

    async def apply_input(self, events: Sequence[InputEvent]) -> None:
        """Bring the frame up, then apply `events` holding its run lock: a pause that started first ends before
        them and is undone; none starts while they go in (its freeze would stop the page under them: Chromium's
        stopped renderer never answers, and the step failed after 5 s)."""
        frame = self._frame
        async with self._applied():
            for _ in range(3):
                await self._running()
                async with frame.run_lock:
                    if frame.state is FrameState.PAUSED:
                        continue  # paused between the two: resume it again
                    runtime = frame.runtime
                    if runtime is None:
                        raise BrowserError(f"frame {frame.id} has no running browser ({frame.state.value})")
                    await runtime.dispatch(events)
                    frame.control.record(events)
                    return
        raise BrowserError(f"frame {frame.id} paused again each time it was resumed for input")


__all__ = ["FrameSteps", "Steppable"]
