"""Handing a frame over, the pure parts: an agent's open request for help, and where an agent's step acted.

The asyncio edge (framestream/frames/driving.py) keeps one `HelpRequest` per frame, arms its timeout and tells
viewers; `pointer_of` says what viewers draw for an agent's step (never drawn into the page itself).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from framestream.core.wire import InputEvent, MouseEvent, PointerAction, TouchEvent, WheelEvent


@dataclass(frozen=True, slots=True)
class HelpRequest:
    """An agent's request that a person take the frame: open until a person hands it back, or `until`."""

    id: str
    subject: str  # the agent's
    reason: str
    since: float  # wall seconds
    until: float  # wall seconds: the agent's timeout
    presenter: int | None  # the connection that asked (None over HTTP): it is told the outcome even unwatched


@dataclass(frozen=True, slots=True)
class Pointer:
    x: float
    y: float
    action: PointerAction


def pointer_of(events: Sequence[InputEvent]) -> Pointer | None:
    """Where a step's pointer last acted (CSS pixels) and what it did; None for a step without one (keys, text).
    A press and a release in one step read as a click."""
    pressed = released = False
    last: Pointer | None = None
    for event in events:
        if isinstance(event, MouseEvent):
            pressed = pressed or event.action == "down"
            released = released or event.action == "up"
            last = Pointer(event.x, event.y, event.action)
        elif isinstance(event, WheelEvent):
            last = Pointer(event.x, event.y, "wheel")
        elif isinstance(event, TouchEvent) and event.points:
            point = event.points[-1]
            last = Pointer(point.x, point.y, "touch")
    if last is not None and pressed and released and last.action in ("down", "up", "move"):
        return Pointer(last.x, last.y, "click")
    return last
