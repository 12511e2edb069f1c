"""One viewer connection's protocol, without I/O: messages and the time in, what to send and do out.

As in python-websockets' sans-I/O layer, the session never reads a socket, awaits, starts a task or reads a
clock. The glue (server/ws.py) feeds it each received message with `now` (monotonic seconds) and performs the
actions it returns, in order: texts go to the connection's outbox, a close ends the connection, the frame
actions (watch, unwatch, keyframe, bring-up, input step) are carried out on the real frame. What a frame emits
to its viewers comes back through `event_text`; what a step or a bring-up ended with, through `step_done` and
`bring_up_failed`. The texts are server/viewer_texts.py's, the token rules server/session_tokens.py's. So hello,
slots, the watch and input limits, step order and every error text are tested in-process with fake frames
(tests/server/test_session.py).
"""

from __future__ import annotations

import collections
import enum
import logging
from collections.abc import Callable
from typing import Generic

from framestream.core.errors import ProtocolError
from framestream.core.ratelimit import MessageLimits, TokenBucket, limited_kind
from framestream.core.tokens import Claims
from framestream.core.wire import (
    CLOSE_HELLO_TIMEOUT,
    CLOSE_PROTOCOL,
    CLOSE_TOO_MANY,
    CLOSE_UNAUTHORIZED,
    ClientMessage,
    DialogAnswer,
    Input,
    KeyframeRequest,
    Navigate,
    PageRequest,
    Ping,
    Refresh,
    Release,
    RequestHelp,
    TakeOver,
    Unwatch,
    Watch,
    WebrtcIce,
    WebrtcOffer,
    error_message,
    input_ack,
    parse_client_message,
    pong,
    webrtc_closed,
    welcome,
)
from framestream.frames.events import FrameEvent, HelpEnded, StateChanged
from framestream.server.handoff_messages import control_text
from framestream.server.session_actions import (
    Action,
    AddIceCandidate,
    ApplyStep,
    BringUp,
    Close,
    F,
    RequestKeyframe,
    Send,
    SessionFrame,
    StartWatching,
    Step,
    StopWatching,
)
from framestream.server.session_tokens import HelloRefused, hello_claims, refreshed_claims, token_deadline
from framestream.server.viewer_texts import config_text, event_text, frame_state_text, state_key
from framestream.service.config import Settings

log = logging.getLogger(__name__)

MAX_SLOT = 0xFFFF  # slots are 16 bits in the video header; 0 is never handed out


class Phase(enum.Enum):
    HELLO = "hello"  # waiting for `hello`
    OPEN = "open"  # welcomed
    CLOSED = "closed"  # closed by the session or gone: nothing more comes out


class ViewerSession(Generic[F]):
    """The protocol state of one viewer connection."""

    def __init__(
        self,
        settings: Settings,
        *,
        verify: Callable[[str], Claims],
        lookup: Callable[[str], F | None],
        now: float,
        number: int = 0,
        peer: str | None = None,
        admit: Callable[[], bool] = lambda: True,
        wall_offset: float = 0.0,
    ) -> None:
        """`verify` raises TokenError for a refused token; `lookup` finds a frame by id; `now` is when the
        connection opened (the hello deadline counts from it); `number` names the connection in logs and in
        `control` messages' `you`; `admit` is asked once a hello is accepted, before `welcome`: False (the
        welcomed connections are full) closes with 4429; `wall_offset` is the wall clock minus `now`'s clock
        (tokens' `exp` is wall time)."""
        self._settings = settings
        self._verify = verify
        self._lookup = lookup
        self._admit = admit
        self._wall_offset = wall_offset
        self.token_deadline = float("inf")  # when the connection's token stops counting (`now`'s clock)
        self.number = number
        self.peer = peer
        self.phase = Phase.HELLO
        self.hello_deadline = now + settings.hello_timeout_s
        self.claims: Claims | None = None
        self.features: frozenset[str] = frozenset()  # granted in welcome (hello `features`)
        self.watching: dict[str, int] = {}  # frame id -> slot
        self.webrtc: set[str] = set()  # frames watched over a WebRTC peer connection
        self.without_video: set[str] = set()  # frames watched for their events only (the client's page is hidden)
        self._next_slot = 1
        self._input_bucket = TokenBucket(settings.input_rate_per_s, settings.input_rate_per_s)
        self._limits = MessageLimits(settings.message_rate_per_s)
        self._steps: collections.deque[ApplyStep[F]] = collections.deque()  # the first one is being applied

    @property
    def presenter(self) -> int:
        """Who this connection is to `apply_step` (its `presenter`), and so in the frame's ControlChanged."""
        return self.number

    @property
    def closed(self) -> bool:
        return self.phase is Phase.CLOSED

    @property
    def deadline(self) -> float | None:
        """When `check_time` must be called if nothing arrives before; None: no timer runs."""
        if self.phase is Phase.HELLO:
            return self.hello_deadline
        return self.token_deadline if self.phase is Phase.OPEN else None

    def _log(self, level: int, message: str, *args: object, **fields: object) -> None:
        log.log(level, message, *args, extra={"conn": self.number, **fields})

    # -- input from the glue --------------------------------------------------------------------------------

    def check_time(self, now: float) -> list[Action[F]]:
        """Time passed without a message: silence past the hello deadline closes with 4408, and a connection
        whose token expired (`exp` plus the clock skew) without a `refresh` closes with 4401."""
        if self._too_late(now):
            return self._refuse(CLOSE_HELLO_TIMEOUT, "no hello in time")
        return self._expire() if self._expired(now) else []

    def _too_late(self, now: float) -> bool:
        return self.phase is Phase.HELLO and now >= self.hello_deadline

    def _expired(self, now: float) -> bool:
        return self.phase is Phase.OPEN and now >= self.token_deadline

    def _expire(self) -> list[Action[F]]:
        self._log(logging.INFO, "token expired: connection closed", code=CLOSE_UNAUTHORIZED)
        self.phase = Phase.CLOSED
        return [Close(CLOSE_UNAUTHORIZED, "token expired: send refresh with a newer token before exp")]

    def receive(self, data: str | bytes, now: float) -> list[Action[F]]:
        """One message from the client as received, text (str) or binary (bytes), at `now`."""
        if self.phase is Phase.CLOSED:
            return []
        if self._too_late(now):
            return self._refuse(CLOSE_HELLO_TIMEOUT, "no hello in time")
        if self._expired(now):
            return self._expire()
        if self.phase is Phase.OPEN and isinstance(data, bytes):
            self.phase = Phase.CLOSED
            return [Close(CLOSE_PROTOCOL, "binary messages are not part of the protocol")]
        if self.phase is Phase.OPEN and not self._limits.take(now):
            rate = self._settings.message_rate_per_s
            return self._rate_refused(now, ProtocolError("rate-limited", f"at most {rate:g} messages a second "
                                                         "per connection"))
        try:
            message = parse_client_message(data, max_bytes=self._settings.max_message_bytes)
        except ProtocolError as exc:
            if self.phase is Phase.HELLO:
                return self._refuse(CLOSE_UNAUTHORIZED, f"hello expected: {exc.message}")
            return [Send(error_message(exc.code, exc.message, exc.frame, exc.seq))]
        return self.receive_message(message, now)

    def receive_message(self, message: ClientMessage, now: float) -> list[Action[F]]:
        """One message from the client, parsed already, at `now`."""
        if self.phase is Phase.CLOSED:
            return []
        if self._too_late(now):
            return self._refuse(CLOSE_HELLO_TIMEOUT, "no hello in time")
        if self._expired(now):
            return self._expire()
        if self.phase is Phase.HELLO:
            return self._hello(message)
        kind = limited_kind(message)
        if kind is not None and not self._limits.take(now, kind):
            rate, _ = MessageLimits.KINDS[kind]
            frame = getattr(message, "frame", None)
            return self._rate_refused(now, ProtocolError(
                "rate-limited", f"at most {rate:g} {kind} messages a second per connection",
                frame=frame if isinstance(frame, str) else None))
        try:
            return self._handle(message, now)
        except ProtocolError as exc:
            return [Send(error_message(exc.code, exc.message, exc.frame, exc.seq))]

    def _frame_state(self, state: StateChanged) -> str:
        return frame_state_text(state, self._may_drive(state.frame_id))

    def event_text(self, event: FrameEvent) -> str | None:
        """The message that tells this connection what a frame it watches emitted (None: not for it)."""
        return event_text(event, self.presenter, self._may_drive(event.frame_id),
                          self._settings.clipboard_to_viewers)

    def _rate_refused(self, now: float, error: ProtocolError) -> list[Action[F]]:
        """A message past a rate limit: answered `rate-limited`, or, when refusals too come faster than they
        may, the connection is closed with 4429 (a flood is not answered message by message)."""
        if self._limits.refused(now):
            return [Send(error_message(error.code, error.message, error.frame, error.seq))]
        self._log(logging.INFO, "closed: messages too fast", code=CLOSE_TOO_MANY)
        self.phase = Phase.CLOSED
        return [Close(CLOSE_TOO_MANY, "messages too fast")]

    def _may_drive(self, frame_id: str) -> bool:
        return self.claims is not None and self.claims.allows("drive", frame_id)

    def step_done(self, error: ProtocolError | None, *, request: str | None = None) -> list[Action[F]]:
        """The step given out last ended (None: applied; `request`: the request for help it opened); answer it
        and give out the next one."""
        if self.phase is Phase.CLOSED or not self._steps:
            return []
        step = self._steps.popleft()
        frame_id, seq = step.frame.id, step.message.seq
        actions: list[Action[F]] = []
        if error is None:
            actions.append(Send(input_ack(frame_id, seq, request)))
        else:
            actions.append(Send(error_message(error.code, error.message, frame_id, seq)))
            if error.code in ("superseded", "taken-over") and frame_id not in self.watching:
                # Watchers heard of the change already; a holder that does not watch hears it here.
                actions.append(Send(control_text(step.frame.control_event(), None)))
        if self._steps:
            actions.append(self._steps[0])
        return actions

    def requester_event(self, event: FrameEvent) -> list[Action[F]]:
        """How this connection's request for help ended: told here when it does not watch the frame (watchers
        hear it with everyone)."""
        if self.phase is Phase.CLOSED or not isinstance(event, HelpEnded) or event.frame_id in self.watching:
            return []
        text = self.event_text(event)
        return [Send(text)] if text is not None else []

    def peer_ended(self, frame: F, why: ProtocolError | str) -> list[Action[F]]:
        """The frame's peer connection was refused (`why`: the error) or closed by the service (`why`: the
        `webrtc-closed` reason): the frame is no longer watched, and the client is told."""
        if self.phase is Phase.CLOSED or frame.id not in self.webrtc:
            return []
        text = webrtc_closed(frame.id, why) if isinstance(why, str) else error_message(why.code, why.message, frame.id)
        return [*self._unwatch(frame.id), Send(text)]

    def bring_up_failed(self, frame: F, error: ProtocolError) -> list[Action[F]]:
        """The frame could not be made live for this watch: `capacity` (not a viewer of a frame it cannot see)
        or `unknown-frame` (deleted meanwhile)."""
        if self.phase is Phase.CLOSED:
            return []
        actions = self._unwatch(frame.id) if error.code == "capacity" else []
        return [*actions, Send(error_message(error.code, error.message, frame.id))]

    def connection_lost(self) -> list[Action[F]]:
        """The socket is gone (or closed by us): stop watching everything; steps not yet applied are dropped."""
        actions = [action for frame_id in list(self.watching) for action in self._unwatch(frame_id)]
        self.phase = Phase.CLOSED
        self._steps.clear()
        return actions

    # -- hello --------------------------------------------------------------------------------------------

    def _refuse(self, code: int, reason: str) -> list[Action[F]]:
        """Close before `welcome`; the reason is ours (never the token's text)."""
        self._log(logging.INFO, "hello refused: %s", reason, code=code, peer=self.peer)
        self.phase = Phase.CLOSED
        return [Close(code, reason)]

    def _hello(self, parsed: ClientMessage) -> list[Action[F]]:
        accepted = hello_claims(parsed, self._verify)
        if isinstance(accepted, HelloRefused):
            return self._refuse(accepted.code, accepted.reason)
        if not self._admit():
            return self._refuse(CLOSE_TOO_MANY, "too many connections")
        hello, claims = accepted
        self.claims = claims
        self.token_deadline = token_deadline(claims, self._wall_offset)
        self.phase = Phase.OPEN
        self.features = frozenset(hello.features or ())  # every feature the wire knows is granted
        self._log(logging.INFO, "viewer joined as %s (%s)", claims.sub, claims.role, peer=self.peer)
        return [Send(welcome(self._settings.sandbox_id, self._settings.shared_frames, hello.features))]

    # -- after welcome --------------------------------------------------------------------------------------

    def _refresh(self, message: Refresh) -> list[Action[F]]:
        """A newer token for this connection (session_tokens.refreshed_claims). Answered only when refused (an
        `error`; the connection keeps its token and its deadline)."""
        assert self.claims is not None
        self.claims = refreshed_claims(self.claims, message.token, self._verify)
        self.token_deadline = token_deadline(self.claims, self._wall_offset)
        self._log(logging.DEBUG, "token refreshed")
        return []

    def _handle(self, message: ClientMessage, now: float) -> list[Action[F]]:
        if isinstance(message, Refresh):
            return self._refresh(message)
        if isinstance(message, Ping):
            return [Send(pong(message.seq))]
        if isinstance(message, Watch):
            return self._watch(message.frame, video=message.video)
        if isinstance(message, Unwatch):
            return self._unwatch(message.frame)
        if isinstance(message, KeyframeRequest):  # (none for a frame watched without pictures)
            frame = self._viewable(message.frame)
            return [] if message.frame in self.without_video else [RequestKeyframe(frame)]
        if isinstance(message, Input | PageRequest | Navigate | DialogAnswer | TakeOver | Release | RequestHelp):
            return self._input(message, now)
        if isinstance(message, WebrtcOffer | WebrtcIce):
            return self._webrtc(message)
        raise ProtocolError("bad-message", "hello was already accepted")

    def _viewable(self, frame_id: str) -> F:
        frame = self._lookup(frame_id)
        if frame is None:
            raise ProtocolError("unknown-frame", f"no frame {frame_id!r}", frame=frame_id)
        assert self.claims is not None
        if not self.claims.allows("view", frame_id):
            raise ProtocolError("forbidden", "this token may not view this frame", frame=frame_id)
        return frame

    def _watch(self, frame_id: str, offer: str | None = None, *, video: bool = True) -> list[Action[F]]:
        frame = self._viewable(frame_id)
        before: list[Action[F]] = []
        if frame_id in self.watching:
            if (frame_id in self.without_video) != video:  # watched so already
                return [RequestKeyframe(frame)] if video else []
            before = self._unwatch(frame_id)  # its pictures on or off: watched anew, under a new slot
        limit = self._settings.max_watch_per_connection
        if len(self.watching) >= limit:
            raise ProtocolError("capacity", f"a connection may watch at most {limit} frames", frame=frame_id)
        slot = self._next_slot
        self._next_slot = self._next_slot % MAX_SLOT + 1
        self.watching[frame_id] = slot
        if not video:
            self.without_video.add(frame_id)
        state = frame.state_event()
        # A live frame whose codec is known is configured now; otherwise with its first keyframe.
        configured = video and frame.feed.codec is not None and state.state == "live"
        actions: list[Action[F]] = [*before, *([Send(config_text(frame, slot))] if configured else [])]
        actions += [Send(self._frame_state(state), key=state_key(frame_id)),
                    StartWatching(frame, slot, configured, offer, video)]
        if video:  # (watched without pictures, a frame is neither resumed nor reopened)
            actions.append(BringUp(frame))
        self._log(logging.DEBUG, "watching", frame=frame_id)  # not INFO: a watch flood must not flood the log
        return actions

    def _unwatch(self, frame_id: str) -> list[Action[F]]:
        slot = self.watching.pop(frame_id, None)
        self.webrtc.discard(frame_id)
        self.without_video.discard(frame_id)
        frame = self._lookup(frame_id)
        if slot is None or frame is None:
            return []
        self._log(logging.DEBUG, "stopped watching", frame=frame_id)
        return [StopWatching(frame)]

    def _webrtc(self, message: WebrtcOffer | WebrtcIce) -> list[Action[F]]:
        frame = self._viewable(message.frame)
        if isinstance(message, WebrtcIce):
            if frame.id not in self.webrtc:
                raise ProtocolError("bad-message", "webrtc-ice before a webrtc-offer for this frame", frame=frame.id)
            return [AddIceCandidate(frame, message.candidate)]
        # An offer watches the frame over its own peer connection, replacing how it was watched before.
        actions = [*self._unwatch(frame.id), *self._watch(frame.id, offer=message.sdp)]
        self.webrtc.add(frame.id)
        return actions

    def _input(self, message: Step, now: float) -> list[Action[F]]:
        frame = self._viewable(message.frame)
        cost = len(message.events) if isinstance(message, Input) else 1
        if not self._input_bucket.take(now, cost):
            return self._rate_refused(now, ProtocolError(
                "rate-limited", f"at most {self._settings.input_rate_per_s:g} input events a second per "
                "connection", seq=message.seq, frame=frame.id))
        # Steps apply in order: one at a time, the next given out when the previous is done.
        step = ApplyStep(frame, message)
        self._steps.append(step)
        return [step] if len(self._steps) == 1 else []


__all__ = ["Action", "AddIceCandidate", "ApplyStep", "BringUp", "Close", "Phase", "RequestKeyframe", "Send",
           "SessionFrame", "StartWatching", "Step", "StopWatching", "ViewerSession", "config_text", "state_key"]
