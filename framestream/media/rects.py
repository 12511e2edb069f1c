"""Rectangle geometry shared by the capture, the change check and the encoder's hints: pure functions."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

Box = tuple[int, int, int, int]  # x, y, width, height


@dataclass(frozen=True, slots=True)
class DamageRect:
    """A damaged rectangle in root-window pixels, clipped to the screen."""

    x: int
    y: int
    width: int
    height: int


def clip(box: Box, bound_width: int, bound_height: int) -> Box | None:
    """The part of an (x, y, width, height) box inside [0, bound_width) x [0, bound_height), or None when
    nothing is left (an empty, negative or wholly outside box)."""
    x, y, width, height = box
    x0, y0 = max(0, x), max(0, y)
    x1, y1 = min(bound_width, x + width), min(bound_height, y + height)
    if x1 > x0 and y1 > y0:
        return (x0, y0, x1 - x0, y1 - y0)
    return None


# Bands closer than this many rows are read as one (a round trip costs more than copying a few rows), and
# more than this many bands are read as their bounding band.
BAND_GAP = 32
MAX_BANDS = 4


def row_bands(damage: Sequence[DamageRect], height: int) -> list[tuple[int, int]]:
    """The full-width row bands [y0, y1) that cover `damage` within `height` rows, sorted, for band grabs."""
    spans = sorted((max(0, r.y), min(height, r.y + r.height)) for r in damage if r.width > 0 and r.height > 0)
    bands: list[tuple[int, int]] = []
    for y0, y1 in spans:
        if y1 <= y0:
            continue
        if bands and y0 <= bands[-1][1] + BAND_GAP:
            bands[-1] = (bands[-1][0], max(bands[-1][1], y1))
        else:
            bands.append((y0, y1))
    if len(bands) > MAX_BANDS:
        bands = [(bands[0][0], max(b[1] for b in bands))]
    return bands


def uncovered(bands: Sequence[tuple[int, int]], rects: Sequence[DamageRect], width: int) -> list[DamageRect]:
    """Rectangles that cover exactly the parts of the full-width row bands [y0, y1) that no rect covers: the rows
    are cut where a rect starts or ends, and each slab keeps the columns outside the rects that span it."""
    out: list[DamageRect] = []
    for y0, y1 in bands:
        inside = [r for r in rects if r.width > 0 and r.height > 0 and r.y < y1 and r.y + r.height > y0]
        cuts = sorted({y0, y1, *(min(y1, max(y0, v)) for r in inside for v in (r.y, r.y + r.height))})
        for top, bottom in itertools.pairwise(cuts):
            spans = sorted((max(0, r.x), min(width, r.x + r.width)) for r in inside
                           if r.y <= top and bottom <= r.y + r.height)
            x = 0
            for left, right in spans:
                if left > x:
                    out.append(DamageRect(x, top, left - x, bottom - top))
                x = max(x, right)
            if x < width:
                out.append(DamageRect(x, top, width - x, bottom - top))
    return out
