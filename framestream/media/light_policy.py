"""When the light stream sends and at what cap (framestream/media/light.py has the why): pure functions of time
and of the viewers' links, free of any codec, so the fan-out can use them and tests need no encoder."""

from __future__ import annotations

from dataclasses import dataclass

LIGHT_FPS = 20
LIGHT_BUFFER_S = 0.25  # the most one picture may take of the link, at the cap
LINK_SHARE = 0.6  # of the slowest light viewer's measured link (room for text, acks and the link's jitter)
REPORTED_SHARE = 0.9  # of a receiver's own estimate (REMB), which already leaves room
MIN_KBPS, MAX_KBPS = 150, 8000
RECAP_RATIO = 1.15  # re-cap only on a change of more than this, not at every measure
REFINE_AFTER_S = 0.3
REFINEMENTS = 2
LIGHT_CRF, LIGHT_REFINE_CRF = 27, 18


def light_kbps(rates: list[tuple[float, bool]]) -> int | None:
    """The cap for a frame's light stream from its light viewers' links, (bytes/s, reported by the receiver)
    each; None when none watches (no light stream is made)."""
    if not rates:
        return None
    shares = [rate * (REPORTED_SHARE if reported else LINK_SHARE) * 8 / 1000 for rate, reported in rates]
    return int(min(MAX_KBPS, max(MIN_KBPS, min(shares))))


def needs_recap(current: int, wanted: int) -> bool:
    return wanted > current * RECAP_RATIO or wanted * RECAP_RATIO < current


@dataclass(frozen=True, slots=True)
class LightDue:
    """What the light stream sends now: nothing, a picture (keyframe or not), or a refinement."""

    send: bool
    keyframe: bool = False
    refinement: bool = False


class LightPlan:
    """When the light stream sends, as a function of time: changes at most `fps` a second (the last one always
    goes out), keyframes when asked, then `REFINEMENTS` sharpening pictures once still."""

    def __init__(self, fps: int = LIGHT_FPS) -> None:
        self.period = 1.0 / fps
        self._next_at = 0.0
        self._dirty = False
        self._keyframe = True  # a new light stream starts with one
        self._changed_at = 0.0
        self._refinements_left = 0

    def changed(self, now: float) -> None:
        self._dirty = True
        self._changed_at = now
        self._refinements_left = REFINEMENTS

    def request_keyframe(self) -> None:
        self._keyframe = True

    def due(self, now: float) -> LightDue:
        if now < self._next_at:
            return LightDue(False)
        if self._keyframe or self._dirty:
            keyframe, self._keyframe, self._dirty = self._keyframe, False, False
            self._next_at = self._slot_after(now)
            return LightDue(True, keyframe=keyframe)
        if self._refinements_left and now - self._changed_at >= REFINE_AFTER_S:
            self._refinements_left -= 1
            self._next_at = self._slot_after(now)
            return LightDue(True, refinement=True)
        return LightDue(False)

    def _slot_after(self, now: float) -> float:
        # On a grid of periods, not `now + period`: changes arrive with the main stream's 33 ms cadence, and
        # 50 ms after each would give a picture every 66 ms (15 a second instead of 20).
        return max(self._next_at + self.period, now - self.period / 2)

    def next_deadline(self, now: float) -> float | None:
        """Seconds until something may be due, or None when nothing is pending."""
        if self._keyframe or self._dirty:
            return max(0.0, self._next_at - now)
        if self._refinements_left:
            return max(0.0, self._next_at - now, self._changed_at + REFINE_AFTER_S - now)
        return None
