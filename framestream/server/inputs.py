"""Applying a step of input to a frame: grant checks, arbitration, release of held input, CDP dispatch.

Shared by the WebSocket (`input` messages) and HTTP (`POST /frames/{id}/input`), so both paths refuse the
same things with the same codes.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass

from framestream.core.lifecycle import CapacityError
from framestream.core.tokens import Claims
from framestream.core.wire import InputEvent, check_bounds
from framestream.errors import BrowserError, CDPError, ProtocolError, TokenError
from framestream.frames import Frame, FrameGone
from framestream.server.context import ServiceContext

log = logging.getLogger(__name__)

# One step at a time per frame, from admission until its last event is applied: a newer grant presented while
# another step is still being applied is admitted after it, so the held input it releases includes that step's.
_STEP_LOCKS: weakref.WeakKeyDictionary[Frame, asyncio.Lock] = weakref.WeakKeyDictionary()


def _step_lock(frame: Frame) -> asyncio.Lock:
    lock = _STEP_LOCKS.get(frame)
    if lock is None:
        lock = _STEP_LOCKS[frame] = asyncio.Lock()
    return lock


@dataclass(frozen=True, slots=True)
class Applied:
    started_us: int  # wall clock when the first event went to the browser


async def apply_step(
    ctx: ServiceContext,
    frame: Frame,
    grant: str,
    seq: int,
    events: Sequence[InputEvent],
    *,
    presenter: int | None = None,
) -> Applied:
    """Apply one step under `grant`, or raise ProtocolError with the contract's code (and `seq`).

    `presenter` identifies the connection that sent it (for `control` messages' `you`), None over HTTP.
    """
    try:
        applied = await _apply_step(ctx, frame, grant, seq, events, presenter=presenter)
    except ProtocolError as exc:
        ctx.inputs_refused[exc.code] = ctx.inputs_refused.get(exc.code, 0) + 1
        log.debug("input refused: %s", exc.message, extra={"frame": frame.id, "code": exc.code, "seq": seq})
        raise
    ctx.inputs_applied += 1
    return applied


async def _apply_step(
    ctx: ServiceContext, frame: Frame, grant: str, seq: int, events: Sequence[InputEvent], *, presenter: int | None
) -> Applied:
    try:
        claims: Claims = ctx.verify(grant)
    except TokenError as exc:
        raise ProtocolError(exc.code, exc.message, seq=seq, frame=frame.id) from exc
    if not claims.allows("drive", frame.id):
        raise ProtocolError("forbidden", "this grant may not drive this frame", seq=seq, frame=frame.id)
    check_bounds(events, frame.size.css_width, frame.size.css_height, seq)
    now = time.time()
    # A step grant is spent by presenting it, whatever happens next: a replay never reaches arbitration.
    if claims.step and not ctx.replay.check_and_mark(claims, now):
        raise ProtocolError("replayed", "this step grant was already used", seq=seq, frame=frame.id)
    async with _step_lock(frame):
        admission = frame.control.admit(claims, time.time())
        if not admission.accepted:
            raise ProtocolError(admission.code or "superseded",
                                f"a newer drive grant holds this frame (driver: {admission.driver})",
                                seq=seq, frame=frame.id)
        try:
            if admission.release:
                await frame.apply_input(admission.release)
            if admission.driver_changed:
                log.info("driven by %s", admission.driver, extra={"frame": frame.id})
            if admission.driver_changed or admission.grant_changed:
                frame.broadcast_control(admission.driver, {presenter} if presenter is not None else set())
                frame.broadcast_state()
            started_us = time.time_ns() // 1000
            await frame.apply_input(events)
        except CapacityError as exc:
            raise ProtocolError("capacity", str(exc), seq=seq, frame=frame.id) from exc
        except FrameGone as exc:
            raise ProtocolError("unknown-frame", f"frame {frame.id} was deleted", seq=seq, frame=frame.id) from exc
        except (BrowserError, CDPError) as exc:
            raise ProtocolError("internal", f"input could not be applied: {exc}", seq=seq, frame=frame.id) from exc
    return Applied(started_us)
