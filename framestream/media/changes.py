"""One grab of a frame's display and what changed in it since the grab before: the boxes a viewer must be sent.

The comparison covers every row the grab read, not only X's damage. The damage is taken from the server before
the grab, so a paint that lands in between is read (its row band is read in full, and the catch-up bands of the
other segment too) although its own damage is only reported next time. Compared within the damage alone, that
paint was in the kept picture (and in screenshots) but in no box; when its damage came, the picture before already
held it, so it compared equal and never reached the encoder: the viewer kept an older picture than the page
(issue 26's invariant; tests/media/test_changes.py paints in that gap).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from framestream.media.capture import DisplayCapture
from framestream.media.diff import MACROBLOCK, TIGHT_AREA, changed_boxes
from framestream.media.rects import DamageRect, uncovered

Box = tuple[int, int, int, int]  # x0, y0, x1, y1


@dataclass(frozen=True, slots=True)
class Grab:
    picture: npt.NDArray[np.uint8]  # the capture's view (BGRX): intact until the grab after next
    boxes: list[Box]  # every pixel that differs from the previous grab lies in one
    # What x264 may restrict its analysis to, as (x, y, width, height); None: anything may have changed.
    hint: list[tuple[int, int, int, int]] | None
    tight: bool = False  # the boxes are tight in columns too (damage compared pixel by pixel)
    # Large damage compared by macroblocks: how much of its area the boxes cover (core/pacing.py BlockRule).
    block_share: float | None = None


def grab_changes(capture: DisplayCapture, previous: npt.NDArray[np.uint8], damage: Sequence[DamageRect] | None,
                 *, fresh: bool = False, tight: bool = False, blocks: bool = False) -> Grab:
    """Grab `damage` (None: the whole screen) and compare it with `previous`, the grab before. `fresh`: the
    encoder has no picture yet, so every row is new to it. `tight`: large damage is compared pixel by pixel too
    (the changes may go out as patches, media/sender.py). `blocks`, when not `tight`: damage is compared by the
    encoder's macroblocks (the changes go out as H.264 only)."""
    picture = capture.grab(None if damage is None else list(damage))
    height, width = int(picture.shape[0]), int(picture.shape[1])
    if fresh:
        return Grab(picture, [(0, 0, width, height)], None)
    if damage is None:
        return Grab(picture, changed_boxes(previous, picture, None), None)
    bands = [(0, height)] if capture.read_bands is None else capture.read_bands
    small = all(r.width * r.height <= TIGHT_AREA for r in damage)
    if tight or (small and not blocks):
        # Small damage: boxes tight in rows and columns within it (patches, the conversion and x264's map take
        # only them), and the rest of every band the grab read compared too, for a paint that raced the grab
        # (issue 26). Compared as whole bands instead, a change taller than about 200 rows of a 2560-pixel screen
        # kept the band's width, too large for patches (a small animation: 0.30 -> 0.07 vCPU, docs/performance.md).
        # Large damage read whole costs 1-3 ms more, worth it only when tight boxes may go out as patches: a box
        # moving under a counter is damaged as their 2388x840 bounding box, but changes in its two edges and the
        # counter's digits (issue 29's moving box with patches: 0.34 -> 0.17 vCPU, docs/performance.md).
        area = TIGHT_AREA if small else width * height
        boxes = changed_boxes(previous, picture, damage, tight_area=area) + changed_boxes(
            previous, picture, uncovered(bands, damage, width), tight_area=area)
    elif blocks:
        # Boxes of the macroblocks that changed, for H.264 alone: the conversion, the search for moved content and
        # x264 then take only them. Chromium damages a box crossing the page and its counter as one rectangle up
        # to 2406x840, whose rows cost 1.1 ms to convert and 0.5 to compare after conversion, block by block.
        # Each band is checked by one memcmp and, if it differs, compared by blocks in its full width (a paint that
        # raced the grab is in it): 0.6 ms for 2560x848 (docs/performance.md). Small damage too: pixel by pixel,
        # the box's 1200x420 at dpr 1 cost 0.8 ms, and H.264 codes whole blocks anyway.
        boxes = changed_boxes(previous, picture, [DamageRect(0, y0, width, y1 - y0) for y0, y1 in bands],
                              tight_area=0, block=MACROBLOCK)
        share = None if small else \
            _area(boxes) / max(1, _area([(r.x, r.y, r.x + r.width, r.y + r.height) for r in damage]))
        return Grab(picture, boxes, [(x0, y0, x1 - x0, y1 - y0) for x0, y0, x1, y1 in boxes], block_share=share)
    else:
        # Large damage is not compared pixel by pixel anyway: whole bands, scanned from their ends, cost least.
        boxes = changed_boxes(previous, picture, [DamageRect(0, y0, width, y1 - y0) for y0, y1 in bands])
    # X's damage, and whatever changed outside it (a paint that raced the grab) so x264 does not skip that.
    hint = [(r.x, r.y, r.width, r.height) for r in damage]
    hint += [(x0, y0, x1 - x0, y1 - y0) for x0, y0, x1, y1 in boxes if not _inside_any((x0, y0, x1, y1), damage)]
    return Grab(picture, boxes, hint, tight or small)


def _inside_any(box: Box, damage: Sequence[DamageRect]) -> bool:
    x0, y0, x1, y1 = box
    return any(r.x <= x0 and r.y <= y0 and x1 <= r.x + r.width and y1 <= r.y + r.height for r in damage)


def _area(boxes: Sequence[Box]) -> int:
    return sum((x1 - x0) * (y1 - y0) for x0, y0, x1, y1 in boxes)
