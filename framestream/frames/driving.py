"""Who drives one frame, at the asyncio edge: steps admitted one at a time, drivers announced to every viewer,
a person's hold timed, an agent's request for help and its timeout, and the agent's pointer.

The decisions are pure (core/control.py: arbitration and holds; core/handoff.py: help requests, pointers); this
module owns the frame's step lock and the timers, applies the input a previous driver held, and emits events
(frames/events.py). The frame hands it what it cannot do itself: dispatching input to the page.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence

from framestream.core.control import Admission, FrameControl
from framestream.core.errors import ProtocolError
from framestream.core.handoff import HelpRequest, pointer_of
from framestream.core.tokens import Claims
from framestream.core.wire import HelpOutcome, InputEvent
from framestream.frames.events import AgentPointer, ControlChanged, FrameEvent, HelpEnded, HelpRequested

log = logging.getLogger("framestream.frames")

_help_numbers = itertools.count(1)


def _us(seconds: float) -> int:
    return int(seconds * 1_000_000)


class Driving:
    """The driver of one frame. `dispatch` applies input to the page (bringing the frame up first); `release`
    applies the input a previous driver held, only if the browser still runs; `emit` tells every viewer."""

    def __init__(self, frame_id: str, hold_s: float, *, dispatch: Callable[[Sequence[InputEvent]], Awaitable[None]],
                 release: Callable[[Sequence[InputEvent]], Awaitable[None]],
                 emit: Callable[[FrameEvent], None], on_change: Callable[[], None]) -> None:
        self.frame_id = frame_id
        self.control = FrameControl(hold_s)
        self._dispatch = dispatch
        self._release = release
        self._emit = emit
        self._on_change = on_change  # the driver changed: the frame's frame-state says so
        # One step at a time, from admission until its last event is applied: a newer grant presented while
        # another step is still being applied is admitted after it, so the held input it releases includes it.
        self.lock = asyncio.Lock()
        self.presenter: int | None = None  # the connection whose grant drives (None over HTTP or nobody)
        self.help: HelpRequest | None = None
        self._notify: Callable[[FrameEvent], None] | None = None  # the requester's own connection
        self._help_timer: asyncio.TimerHandle | None = None
        self._hold_timer: asyncio.TimerHandle | None = None
        self.changes: Counter[str] = Counter()  # driver changes by the new driver's kind ("none": handed back)
        self.help_outcomes: Counter[str] = Counter()  # help requests by how they ended ("open" while open)

    # -- what viewers are told ---------------------------------------------------------------------------

    def control_event(self, presenter: int | None = None, note: str | None = None) -> ControlChanged:
        control, now = self.control, time.time()
        grant = control.grant if control.driver is not None else None
        return ControlChanged(self.frame_id, control.driver, presenter, grant.kind if grant else None,
                              _us(control.since) if control.since else None, control.held(now), note)

    def joined(self) -> list[FrameEvent]:
        """What a new viewer is told of who drives: `control`, and the open request for help."""
        events: list[FrameEvent] = [self.control_event(self.presenter)]
        if self.help is not None:
            events.append(self._help_event(self.help))
        return events

    def _help_event(self, request: HelpRequest) -> HelpRequested:
        return HelpRequested(self.frame_id, request.id, request.reason, request.subject, _us(request.until))

    # -- steps ---------------------------------------------------------------------------------------------

    async def step(self, claims: Claims, seq: int, presenter: int | None,
                   apply: Callable[[], Awaitable[None]], events: Sequence[InputEvent] = ()) -> int:
        """Admit one step under `claims` and apply it; returns the wall clock (µs) when it began. Raises
        ProtocolError `superseded` or `taken-over` when refused."""
        async with self.lock:
            now = time.time()
            admission = self.control.admit(claims, now)
            if not admission.accepted:
                raise self._refusal(admission, seq)
            if admission.release:
                await self._dispatch(admission.release)
            if admission.driver_changed or admission.grant_changed:
                self.presenter = presenter
            if admission.driver_changed:
                grant = self.control.grant
                kind = grant.kind if grant else "none"
                self.changes[kind] += 1
                log.info("driven by %s (%s, before: %s)", admission.driver, kind, admission.previous_driver,
                         extra={"frame": self.frame_id})
            if admission.driver_changed or admission.grant_changed:
                self._announce(presenter)
            self._arm_hold()
            started_us = time.time_ns() // 1000
            await apply()
            if claims.step and (pointer := pointer_of(events)) is not None:
                self._emit(AgentPointer(self.frame_id, pointer.x, pointer.y, pointer.action, claims.sub))
            return started_us

    def _refusal(self, admission: Admission, seq: int) -> ProtocolError:
        if admission.code == "taken-over":
            return ProtocolError("taken-over", f"{admission.driver} has taken over this frame: wait for `help-ended` "
                                 "or a `control` with held false or driver null (request-help asks them)",
                                 seq=seq, frame=self.frame_id)
        if admission.driver is None:
            return ProtocolError("superseded", "this frame was handed back: a grant newer than the one handed back "
                                 "is needed to drive it", seq=seq, frame=self.frame_id)
        return ProtocolError(admission.code or "superseded",
                             f"a newer drive grant holds this frame (driver: {admission.driver})",
                             seq=seq, frame=self.frame_id)

    def _announce(self, presenter: int | None, note: str | None = None) -> None:
        self._emit(self.control_event(presenter, note))
        self._on_change()

    # -- handing back ----------------------------------------------------------------------------------------

    async def hand_back(self, claims: Claims, seq: int, note: str) -> None:
        """`release` from the driver: nobody drives, every viewer hears the note, an open request is answered."""
        async with self.lock:
            admission = self.control.release(claims, time.time())
            if not admission.accepted:
                raise ProtocolError("superseded", f"only the driver ({admission.driver}) can hand this frame back",
                                    seq=seq, frame=self.frame_id)
            await self._handed_back(admission, note, "released")

    async def connection_gone(self, number: int) -> None:
        """The connection `number` closed: its open request is cancelled and a person's hold through it ends
        (nobody drives then)."""
        if self.help is not None and self.help.presenter == number:
            self._end_help("cancelled")
        grant = self.control.grant
        if self.presenter != number or grant is None or grant.step:
            return
        async with self.lock:
            if self.presenter == number:
                await self._handed_back(self.control.hand_back(time.time()), None, "disconnected")

    async def _handed_back(self, admission: Admission, note: str | None, why: str) -> None:
        if not admission.driver_changed:
            return
        if admission.release:
            await self._release(admission.release)
        self.presenter = None
        self.changes["none"] += 1
        log.info("handed back by %s (%s)", admission.previous_driver, why, extra={"frame": self.frame_id})
        self._cancel_hold_timer()
        self._announce(None, note if note is not None else None)
        if self.help is not None and why == "released":
            self._end_help("answered", note=note or "", by=admission.previous_driver)

    # -- the hold ------------------------------------------------------------------------------------------

    def _arm_hold(self) -> None:
        deadline = self.control.hold_deadline()
        if deadline is None or self._hold_timer is not None:
            return
        delay = max(0.0, deadline - time.time())
        self._hold_timer = asyncio.get_running_loop().call_later(delay, self._hold_due)

    def _hold_due(self) -> None:
        self._hold_timer = None
        deadline = self.control.hold_deadline()
        if deadline is None:
            return
        if time.time() < deadline:  # input came meanwhile: the hold goes on
            self._arm_hold()
            return
        log.info("%s's hold lapsed after no input", self.control.driver, extra={"frame": self.frame_id})
        self._announce(self.presenter)

    def _cancel_hold_timer(self) -> None:
        if self._hold_timer is not None:
            self._hold_timer.cancel()
            self._hold_timer = None

    # -- help ----------------------------------------------------------------------------------------------

    def request_help(self, claims: Claims, seq: int, reason: str, timeout_s: float, *, presenter: int | None,
                     notify: Callable[[FrameEvent], None] | None = None) -> HelpRequest:
        """An agent's request that a person take over, under its (verified, step) grant; it replaces an open one.
        `notify` gets the `HelpEnded` too (the requester's connection, which may not watch the frame)."""
        if not claims.step:
            raise ProtocolError("forbidden", "request-help is an agent's: it takes a one-step grant",
                                seq=seq, frame=self.frame_id)
        if self.help is not None:
            self._end_help("cancelled")
        now = time.time()
        request = HelpRequest(f"h{next(_help_numbers)}", claims.sub, reason, now, now + timeout_s, presenter)
        self.help, self._notify = request, notify
        self.help_outcomes["open"] += 1
        self._help_timer = asyncio.get_running_loop().call_later(timeout_s, self._end_help, "timeout")
        log.info("%s asks for help: %s", claims.sub, reason, extra={"frame": self.frame_id, "help": request.id})
        self._emit(self._help_event(request))
        return request

    def _end_help(self, outcome: HelpOutcome, *, note: str | None = None, by: str | None = None) -> None:
        request, notify = self.help, self._notify
        if request is None:
            return
        self.help, self._notify = None, None
        if self._help_timer is not None:
            self._help_timer.cancel()
            self._help_timer = None
        self.help_outcomes["open"] -= 1
        self.help_outcomes[outcome] += 1
        log.info("help request %s: %s%s", outcome, request.subject, f" (answered by {by})" if by else "",
                 extra={"frame": self.frame_id, "help": request.id})
        event = HelpEnded(self.frame_id, request.id, outcome, note, by)
        self._emit(event)
        if notify is not None:
            notify(event)

    def close(self) -> None:
        """The frame is gone: an open request is cancelled, no timer is left."""
        self._end_help("cancelled")
        self._cancel_hold_timer()
