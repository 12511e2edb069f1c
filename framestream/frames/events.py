"""What a frame tells its viewers, as values: each connection turns them into its own wire messages.

A frame never formats protocol messages; it hands these to every `Viewer.on_event` (framestream.feed), and the
connection that made the viewer decides what to send (for `ControlChanged`, whether the new driver is itself).
"""

from __future__ import annotations

from dataclasses import dataclass

from framestream.core.lifecycle import FrameState


@dataclass(frozen=True, slots=True)
class StateChanged:
    """The frame's state, page, viewer count, driver or message changed (or a new viewer needs them)."""

    frame_id: str
    state: FrameState
    url: str
    viewers: int
    driver: str | None
    message: str | None


@dataclass(frozen=True, slots=True)
class ControlChanged:
    """The driving grant changed; `presenter` is the connection that presented it (None over HTTP)."""

    frame_id: str
    driver: str | None
    presenter: int | None


FrameEvent = StateChanged | ControlChanged

__all__ = ["ControlChanged", "FrameEvent", "StateChanged"]
