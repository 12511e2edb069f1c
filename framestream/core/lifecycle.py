"""Frame lifecycle rules: states, when an unwatched frame pauses, which browser closes at the cap.

Pure: callers pass `now` (monotonic seconds) and a view of the frames; the functions return decisions.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from framestream.core.errors import CapacityError


class FrameState(StrEnum):
    LAUNCHING = "launching"
    LIVE = "live"
    PAUSED = "paused"
    CLOSED = "closed"
    ERROR = "error"


# States in which the frame's browser process exists and counts against the cap.
RUNNING_STATES = frozenset({FrameState.LAUNCHING, FrameState.LIVE, FrameState.PAUSED})


@dataclass(frozen=True, slots=True)
class FrameView:
    """What the rules need to know about one frame."""

    id: str
    state: FrameState
    viewers: int
    last_viewed: float  # when its last viewer left; while never viewed, when it went live
    browser_running: bool


def pause_deadline(state: FrameState, viewers: int, idle_since: float | None, idle_pause_s: float) -> float | None:
    """When a frame should pause: `idle_pause_s` after its last viewer left (or after it went live unwatched);
    None when it must not pause at all (not live, or watched)."""
    if state is not FrameState.LIVE or viewers > 0 or idle_since is None:
        return None
    return idle_since + idle_pause_s


def choose_browser_to_close(frames: Iterable[FrameView], cap: int, *, starting: str | None = None) -> str | None:
    """Room for one more browser (for frame `starting`): None when under the cap, else the id of the frame
    whose browser should close: no viewers, not starting, viewed least recently. Raises CapacityError
    when there is none."""
    running = [f for f in frames if f.browser_running and f.id != starting]
    if len(running) < cap:
        return None
    candidates = [f for f in running if f.viewers == 0 and f.state is not FrameState.LAUNCHING]
    if not candidates:
        raise CapacityError(cap)
    # Paused frames first among equals: they are the ones nobody has looked at for a while.
    victim = min(candidates, key=lambda f: (f.last_viewed, f.state is not FrameState.PAUSED, f.id))
    return victim.id


__all__ = ["RUNNING_STATES", "CapacityError", "FrameState", "FrameView", "choose_browser_to_close",
           "pause_deadline"]
