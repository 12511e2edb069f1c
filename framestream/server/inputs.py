"""Applying a step of input to a frame: the grant checks at the edge, then `Frame.apply_step`.

Shared by the WebSocket (`input` messages) and HTTP (`POST /frames/{id}/input`), so both paths refuse the
same things with the same codes. Arbitration, release of held input and dispatch are the frame's own
(`Frame.apply_step`); what it may raise becomes the contract's code through `errors.protocol_error`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from framestream.core.errors import FRAME_ERRORS, ProtocolError, TokenError, protocol_error
from framestream.core.tokens import Claims
from framestream.core.wire import InputEvent, Release, RequestHelp, TakeOver, check_bounds
from framestream.frames.browsing import FrameAction
from framestream.frames.events import FrameEvent
from framestream.frames.frame import Frame
from framestream.server.context import ServiceContext

log = logging.getLogger(__name__)


Handoff = TakeOver | Release | RequestHelp  # steps that hand the frame over rather than act on its page
Notify = Callable[[FrameEvent], None]


@dataclass(frozen=True, slots=True)
class Applied:
    started_us: int  # wall clock when the first event went to the browser
    request: str | None = None  # the request for help a `request-help` opened


async def apply_step(
    ctx: ServiceContext,
    frame: Frame,
    grant: str,
    seq: int,
    events: Sequence[InputEvent] | FrameAction | Handoff,
    *,
    presenter: int | None = None,
    notify: Notify | None = None,
) -> Applied:
    """Apply one step under `grant`, or raise ProtocolError with the contract's code (and `seq`). A step is input
    events, one driver action (navigate, page, dialog-answer, a file chooser's answer), or a handoff (take-over,
    release, request-help) under the same rules.

    `presenter` identifies the connection that sent it (for `control` messages' `you`), None over HTTP; `notify`
    gets how a request for help ended, for a requester that does not watch the frame.
    """
    try:
        applied = await _apply_step(ctx, frame, grant, seq, events, presenter=presenter, notify=notify)
    except ProtocolError as exc:
        frame.recorder.refused(_claims_or_none(ctx, grant), seq, events, exc)  # (framestream/recording)
        ctx.inputs_refused[exc.code] = ctx.inputs_refused.get(exc.code, 0) + 1
        log.debug("input refused: %s", exc.message, extra={"frame": frame.id, "code": exc.code, "seq": seq})
        raise
    ctx.inputs_applied += 1
    return applied


def _claims_or_none(ctx: ServiceContext, grant: str) -> Claims | None:
    try:
        return ctx.verify(grant)
    except TokenError:
        return None


async def _apply_step(
    ctx: ServiceContext, frame: Frame, grant: str, seq: int, events: Sequence[InputEvent] | FrameAction | Handoff, *,
    presenter: int | None, notify: Notify | None
) -> Applied:
    try:
        claims: Claims = ctx.verify(grant)
    except TokenError as exc:
        raise ProtocolError(exc.code, exc.message, seq=seq, frame=frame.id) from exc
    if not claims.allows("drive", frame.id):
        raise ProtocolError("forbidden", "this grant may not drive this frame", seq=seq, frame=frame.id)
    if isinstance(events, Sequence):
        check_bounds(events, frame.size.css_width, frame.size.css_height, seq)
    # A step grant is spent by presenting it, whatever happens next: a replay never reaches arbitration.
    if claims.step and not ctx.replay.check_and_mark(claims, time.time()):
        raise ProtocolError("replayed", "this step grant was already used", seq=seq, frame=frame.id)
    try:
        if isinstance(events, Sequence):
            started_us = await frame.apply_step(claims, seq, events, presenter=presenter)
        elif isinstance(events, TakeOver):
            started_us = await frame.take_over(claims, seq, presenter=presenter)
        elif isinstance(events, Release):
            started_us = time.time_ns() // 1000
            await frame.hand_back(claims, seq, events.note)
        elif isinstance(events, RequestHelp):
            request = frame.request_help(claims, seq, events.reason, events.timeout_s, presenter=presenter,
                                         notify=notify)
            return Applied(int(request.since * 1_000_000), request.id)
        else:
            started_us = await frame.apply_action(claims, seq, events, presenter=presenter)
    except ProtocolError as exc:
        if exc.seq is None:  # raised by the page layer, which knows no step
            raise ProtocolError(exc.code, exc.message, seq=seq, frame=frame.id) from exc
        raise
    except FRAME_ERRORS as exc:
        raise protocol_error(exc, frame=frame.id, seq=seq) from exc
    return Applied(started_us)
