"""When a frame's worker grabs and encodes: the pure policy, with time passed in.

The worker wakes on X damage, keyframe requests and deadlines; it asks `decide(now)` what to do and reports
back what happened. The rules:
- at most `fps` encodes a second; damage inside the interval waits for the next slot (it accumulates);
- an IDR only on demand, and beyond the first at most one per `keyframe_interval` (requests are coalesced);
- when the picture has been still for `refine_after`, `refine_frames` higher-quality pictures make it sharp;
  an IDR of a still picture is encoded at that higher quality at once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Encode:
    """Grab (when `grab`) and encode one picture."""

    keyframe: bool
    refinement: bool
    grab: bool


@dataclass(frozen=True, slots=True)
class Wait:
    """Nothing to do until `seconds` from now (math.inf: until an event)."""

    seconds: float


Decision = Encode | Wait


class EncodePolicy:
    def __init__(
        self,
        *,
        fps: float = 30.0,
        keyframe_interval: float = 1.0,
        refine_after: float = 0.12,
        refine_frames: int = 2,
    ) -> None:
        self.frame_interval = 1.0 / fps
        self.keyframe_interval = keyframe_interval
        self.refine_after = refine_after
        self.refine_frames = refine_frames
        self._dirty = True  # the first picture is always encoded
        self._keyframe_wanted = True
        self._last_encode_at = -math.inf
        self._last_keyframe_at = -math.inf
        self._last_change_at = -math.inf
        self._refine_left = 0

    def note_damage(self) -> None:
        self._dirty = True

    def request_keyframe(self) -> None:
        self._keyframe_wanted = True

    @property
    def keyframe_pending(self) -> bool:
        return self._keyframe_wanted

    def decide(self, now: float) -> Decision:
        waits: list[float] = []
        slot_at = self._last_encode_at + self.frame_interval
        if self._keyframe_wanted:
            due = max(slot_at, self._last_keyframe_at + self.keyframe_interval)
            if now >= due:
                still = not self._dirty and now - self._last_change_at >= self.refine_after
                return Encode(keyframe=True, refinement=still, grab=True)
            waits.append(due - now)
        if self._dirty:
            if now >= slot_at:
                return Encode(keyframe=False, refinement=False, grab=True)
            waits.append(slot_at - now)
        elif self._refine_left > 0:
            due = max(slot_at, self._last_change_at + self.refine_after)
            if now >= due:
                return Encode(keyframe=False, refinement=True, grab=False)
            waits.append(due - now)
        return Wait(min(waits) if waits else math.inf)

    def note_encoded(self, now: float, decision: Encode, *, changed: bool) -> None:
        """Report what the worker did with `decision`; `changed` is False when the grab equalled the last picture
        (then nothing was encoded unless a keyframe was asked for)."""
        if decision.grab:
            self._dirty = False
        if changed:
            self._last_change_at = now
            self._refine_left = self.refine_frames
        produced = changed or decision.keyframe or decision.refinement
        if not produced:
            return
        self._last_encode_at = now
        if decision.keyframe:
            self._keyframe_wanted = False
            self._last_keyframe_at = now
            if decision.refinement:
                self._refine_left = 0
        elif decision.refinement:
            self._refine_left -= 1
