"""The encoded picture as the fan-out sees it. Kept free of heavy imports: the idle service loads no codec."""

from __future__ import annotations

from dataclasses import dataclass

KIND_VIDEO = 1  # `data` is one H.264 access unit
KIND_PATCH = 2  # `data` is a patch payload (core/wire: a rectangle table and lossless images)


@dataclass(frozen=True, slots=True)
class Picture:
    data: bytes
    keyframe: bool
    refinement: bool
    capture_us: int  # wall clock, microseconds since the epoch, taken right after the grab
    encoded_us: int  # when the access unit was ready; capture-to-send is measured from capture_us
    codec: str | None
    changed: bool = True  # False for a keyframe or refinement of a picture that did not change
    kind: int = KIND_VIDEO
    light: bool = False  # of the frame's light stream (media/light.py), for its slow viewers only

    @property
    def patch(self) -> bool:
        return self.kind == KIND_PATCH


class PatchGate:
    """Whether the frame's worker may send small changes as patches: the feed opens it while every viewer of
    the frame asked for them, and the worker reads it before each picture (plain bools: atomic to read).
    `copies`: every one of them also takes copy rectangles (a scroll moves what the viewer shows)."""

    def __init__(self) -> None:
        self.open = False
        self.copies = False
