"""The encoded picture as the fan-out sees it. Kept free of heavy imports: the idle service loads no codec."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Picture:
    data: bytes
    keyframe: bool
    refinement: bool
    capture_us: int  # wall clock, microseconds since the epoch, taken right after the grab
    encoded_us: int  # when the access unit was ready; capture-to-send is measured from capture_us
    codec: str | None
    changed: bool = True  # False for a keyframe or refinement of a picture that did not change
