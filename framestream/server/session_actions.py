"""What a viewer session asks its glue to do (`Action`s), and what it reads of a frame: values only."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from framestream.core.wire import (
    DialogAnswer,
    IceCandidate,
    Input,
    Navigate,
    PageRequest,
    Release,
    RequestHelp,
    TakeOver,
)
from framestream.frames.events import ControlChanged, StateChanged
from framestream.service.config import FrameSize


class _Codec(Protocol):
    @property
    def codec(self) -> str | None: ...

    @property
    def light_codec(self) -> str | None: ...


class SessionFrame(Protocol):
    """What the session reads of a frame (framestream.frames' Frame, or a fake in tests)."""

    @property
    def id(self) -> str: ...

    @property
    def size(self) -> FrameSize: ...

    @property
    def feed(self) -> _Codec: ...

    def state_event(self) -> StateChanged: ...

    def control_event(self) -> ControlChanged: ...


F = TypeVar("F", bound=SessionFrame)


# -- actions for the glue ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Send:
    """Queue this text on the connection's outbox (one with a `key` takes the place of the text with the same
    key still queued: a frame's `frame-state`)."""

    text: str
    key: str | None = None


@dataclass(frozen=True, slots=True)
class Close:
    """Close the connection with this code and reason (nothing after it is sent)."""

    code: int
    reason: str


@dataclass(frozen=True, slots=True)
class StartWatching(Generic[F]):
    """Add a viewer of `frame` under `slot`; `configured`: its video-config was sent already. With `offer`, its
    pictures go over a new WebRTC peer connection answering that SDP offer (refused: `peer_ended`). Without
    `video` it takes no pictures: it only hears the frame's events."""

    frame: F
    slot: int
    configured: bool
    offer: str | None = None
    video: bool = True


@dataclass(frozen=True, slots=True)
class AddIceCandidate(Generic[F]):
    frame: F
    candidate: IceCandidate


@dataclass(frozen=True, slots=True)
class StopWatching(Generic[F]):
    frame: F


@dataclass(frozen=True, slots=True)
class RequestKeyframe(Generic[F]):
    frame: F


@dataclass(frozen=True, slots=True)
class BringUp(Generic[F]):
    """Make the frame live (resume or reopen it); report a failure through `bring_up_failed`."""

    frame: F


@dataclass(frozen=True, slots=True)
class ApplyStep(Generic[F]):
    """Apply this input step; report how it ended through `step_done` before the next one is given out."""

    frame: F
    message: Step


Action = (Send | Close | StartWatching[F] | StopWatching[F] | RequestKeyframe[F] | BringUp[F] | ApplyStep[F]
          | AddIceCandidate[F])


# What a driver sends under a grant, in order (the handoff messages too: they go through the same checks).
Step = Input | PageRequest | Navigate | DialogAnswer | TakeOver | Release | RequestHelp


__all__ = ["Action", "AddIceCandidate", "ApplyStep", "BringUp", "Close", "F", "RequestKeyframe", "Send",
           "SessionFrame", "StartWatching", "Step", "StopWatching"]
