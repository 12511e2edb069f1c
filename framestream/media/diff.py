"""Which rows (and boxes) of a picture really changed: Chromium often repaints identical pixels. numpy, memcmp, and
a comparison by squares in C (`_blocks.c`)."""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable, Sequence
from typing import Any, cast

import cv2
import numpy as np
import numpy.typing as npt

from framestream.media._blocks import changed_squares
from framestream.media.rects import DamageRect, clip

__all__ = ["MACROBLOCK", "TIGHT_AREA", "changed_boxes", "changed_rows", "rows_equal"]

Picture = npt.NDArray[np.uint8]

# Rectangles of at most this many pixels are compared pixel by pixel, for boxes tight in columns too.
TIGHT_AREA = 1 << 19
# The encoder's block: `changed_boxes(..., block=MACROBLOCK)` gives boxes on its grid.
MACROBLOCK = 16
# Above this many damaged rectangles, compare their bounding box in one pass: numpy's per-call overhead
# (~5 us) would otherwise dominate the memory-bound comparison.
_MAX_RECTS = 16


def changed_rows(
    prev: Picture, cur: Picture, rect_hint: Sequence[DamageRect] | None = None
) -> tuple[int, int] | None:
    """The rows [top, bottom) where `cur` differs from `prev` inside `rect_hint`, or None if it does not.

    Chromium often repaints identical pixels; None lets the caller skip the encoder. Pictures are
    (height, width, 4) uint8; only the hinted rectangles are compared (the whole picture when the hint is
    None; nothing when it is empty). A shape change counts as all rows changed. Each rectangle is scanned
    from the top to its first changed row and from the bottom to its last one, in growing blocks, so a
    changed picture costs little more than its unchanged margins; an unchanged one costs one read of both
    (memory bound).
    """
    if prev.shape != cur.shape:
        return (0, int(cur.shape[0]))
    boxes = changed_boxes(prev, cur, rect_hint, tight_area=0)
    if not boxes:
        return None
    return min(b[1] for b in boxes), max(b[3] for b in boxes)


def changed_boxes(
    prev: Picture, cur: Picture, rect_hint: Sequence[DamageRect] | None = None, *, tight_area: int = TIGHT_AREA,
    block: int = 0,
) -> list[tuple[int, int, int, int]]:
    """Per hinted rectangle, the box (x0, y0, x1, y1) that holds all its changed pixels; [] when none changed.

    Rows are always tight. Columns are tightened too when the changed rows of a rectangle cover at most
    `tight_area` pixels (a column scan reads every pixel of them, so large changes keep the rectangle's
    width: they go to the video encoder anyway); such a rectangle gives one box per run of changed columns and,
    within it, of changed rows (gaps of more than 32 unchanged ones cut; media/patches.merge_boxes joins boxes
    of different rectangles that touch). With `block`, larger rectangles are compared by `block`-pixel squares
    instead, whole (one memcmp first: it stops at the first difference; scanning for the changed rows first cost more
    calls than it saved): one box per run of changed squares' columns within each run of their rows, on the grid
    (clipped to the picture). Pictures must have the same shape.
    """
    height, width = int(cur.shape[0]), int(cur.shape[1])
    boxes: list[tuple[int, int, int, int]] = []
    if rect_hint is None:
        boxes.append((0, 0, width, height))
    else:
        for r in rect_hint:
            box = clip((r.x, r.y, r.width, r.height), width, height)
            if box is not None:
                x, y, w, h = box
                boxes.append((x, y, x + w, y + h))
        if len(boxes) > _MAX_RECTS:
            boxes = [
                (
                    min(b[0] for b in boxes),
                    min(b[1] for b in boxes),
                    max(b[2] for b in boxes),
                    max(b[3] for b in boxes),
                )
            ]
    found: list[tuple[int, int, int, int]] = []
    for x0, y0, x1, y1 in boxes:
        if (y1 - y0) * (x1 - x0) <= min(tight_area, TIGHT_AREA):
            # A small rectangle (a spinner, a letter, a moving box): one comparison of all its pixels gives the
            # changed map at once, cheaper than scanning rows first (measured: 0.81 -> 0.1 ms a spinner picture).
            found.extend(_tight_boxes(_unequal(prev[y0:y1, x0:x1], cur[y0:y1, x0:x1]), x0, y0))
            continue
        pa, pb = prev[y0:y1, x0:x1], cur[y0:y1, x0:x1]
        if block:
            if not _same(pa, pb):
                found.extend(_grid_boxes(prev, cur, (x0, y0, x1, y1), block))
            continue
        wide = _wide_ok(pa) and _wide_ok(pb)  # both sides must use the same word size
        a, b = _words(pa, wide), _words(pb, wide)
        first = _first_changed(a, b)
        if first is None:
            continue
        last = _last_changed(a, b, first)
        top, bottom = y0 + first, y0 + last + 1
        if (bottom - top) * (x1 - x0) <= tight_area:
            found.extend(_tight_boxes(_unequal(pa[first : last + 1], pb[first : last + 1]), x0, top))
        else:
            found.append((x0, top, x1, bottom))
    return found


def rows_equal(pa: Picture, pb: Picture) -> npt.NDArray[np.bool_]:
    """Per row, whether two (rows, cols, 4) regions of one shape hold the same pixels: blocks of rows compared at
    once (memcmp for whole rows), row by row only within blocks that differ."""
    rows = int(pa.shape[0])
    same = np.ones(rows, np.bool_)
    wide = _wide_ok(pa) and _wide_ok(pb)
    a, b = _words(pa, wide), _words(pb, wide)
    step = _block_cap(a)
    for y in range(0, rows, step):
        end = min(rows, y + step)
        if not _same(a[y:end], b[y:end]):
            same[y:end] = np.asarray(a[y:end] == b[y:end]).all(axis=1)
    return same


# Tight boxes are cut at runs of unchanged columns, then of unchanged rows, wider than a gap, so that two things
# moving apart inside one damaged rectangle (a box and a counter, a letter and a caret) stay two small boxes.
_GAP = 32


def _unequal(pa: Picture, pb: Picture) -> npt.NDArray[np.bool_] | npt.NDArray[np.uint8]:
    """The (rows, cols) map of the pixels that differ between two (rows, cols, 4) regions: nonzero where they do."""
    if pa.strides[1:] == (4, 1) and pb.strides[1:] == (4, 1) and pa.size:
        # One 32-bit comparison a pixel by OpenCV (SIMD, one byte written a pixel), not numpy's `!=` of uint32 views:
        # issue 29's moving box with patches, `benchmarks.stages`: compare 0.88 -> 0.69 ms a picture at 1280x800
        # dpr 1, 2.57 -> 2.28 at dpr 2. Signed words are equal exactly when their bits are.
        return cast("npt.NDArray[np.uint8]", cv2.compare(pa.view(np.int32)[:, :, 0], pb.view(np.int32)[:, :, 0],
                                                       cv2.CMP_NE))
    return cast("npt.NDArray[np.bool_]", (pa != pb).any(axis=2))


def _tight_boxes(changed: npt.NDArray[np.bool_] | npt.NDArray[np.uint8], x0: int, y0: int, *,
                 gap: int = _GAP) -> list[tuple[int, int, int, int]]:
    """The boxes (x0, y0, x1, y1) around the nonzero cells of a (rows, cols) map placed at (x0, y0): one per run
    of changed columns, cut again at runs of unchanged rows (then tight in both). A handful of reductions."""
    boxes: list[tuple[int, int, int, int]] = []
    for left, right in _runs(np.asarray(changed.any(axis=0)), gap):
        part = changed[:, left:right]
        rows = _runs(np.asarray(part.any(axis=1)), gap)
        for top, bottom in rows:
            if len(rows) > 1:  # this run of rows may use fewer columns than the whole run of columns
                cols = np.flatnonzero(part[top:bottom].any(axis=0))
                a, b = left + int(cols[0]), left + int(cols[-1]) + 1
            else:
                a, b = left, right
            boxes.append((x0 + a, y0 + top, x0 + b, y0 + bottom))
    return boxes


def _grid_boxes(prev: Picture, cur: Picture, box: tuple[int, int, int, int],
                block: int) -> list[tuple[int, int, int, int]]:
    """The boxes on the `block` grid around the changed pixels of `box` (x0, y0, x1, y1): one per run of changed
    squares' columns within each run of their rows, clipped to the picture."""
    height, width = int(cur.shape[0]), int(cur.shape[1])
    x0, y0 = box[0] // block * block, box[1] // block * block
    x1, y1 = min(width, -(-box[2] // block) * block), min(height, -(-box[3] // block) * block)
    squares = _changed_squares(prev[y0:y1, x0:x1], cur[y0:y1, x0:x1], block)
    gap = max(1, _GAP // block)
    return [(x0 + a * block, y0 + b * block, min(x1, x0 + c * block), min(y1, y0 + d * block))
            for a, b, c, d in _tight_boxes(squares, 0, 0, gap=gap)]


def _changed_squares(pa: Picture, pb: Picture, block: int) -> npt.NDArray[np.bool_]:
    """The (rows, cols) map of `block`-pixel squares of two (h, w, 4) regions in which any pixel differs (squares at
    the right and bottom edges may be partial). In C (`_blocks.c`), memory bound: row by row, a square's part of a
    row compared until the square is known changed, and no map of pixels written (numpy's took 0.6 ms for issue 29's
    moving box's 2560x848 changed rows at dpr 2, 1.2 ms in the worker, whose two pictures are not in cache)."""
    out = np.empty((-(-int(pa.shape[0]) // block), -(-int(pa.shape[1]) // block)), bool)
    changed_squares(pa, pb, block, out)
    return out


def _runs(mask: npt.NDArray[np.bool_], gap: int = _GAP) -> list[tuple[int, int]]:
    """The [start, end) runs of True in a 1-d mask, joined across gaps of at most `gap` False cells."""
    cells = np.flatnonzero(mask)
    if not cells.size:
        return []
    cuts = np.flatnonzero(np.diff(cells) > gap).tolist()
    starts = [int(cells[0])] + [int(cells[c + 1]) for c in cuts]
    ends = [int(cells[c]) + 1 for c in cuts] + [int(cells[-1]) + 1]
    return list(zip(starts, ends, strict=True))


def _wide_ok(region: Picture) -> bool:
    """Whether (h, w, 4) bytes can be read as aligned uint64 pairs of pixels without a copy."""
    s0, s1, s2 = region.strides
    return s1 == 4 and s2 == 1 and region.shape[1] % 2 == 0 and s0 % 8 == 0 and region.ctypes.data % 8 == 0


def _words(region: Picture, wide: bool) -> npt.NDArray[np.uint32] | npt.NDArray[np.uint64]:
    """View (h, w, 4) bytes as (h, w/2) uint64 (half the elements to compare) or (h, w) uint32."""
    rows, cols = region.shape[0], region.shape[1]
    if wide:
        flat = np.lib.stride_tricks.as_strided(region, (rows, cols * 4), (region.strides[0], 1))
        return flat.view(np.uint64)
    if region.strides[1:] != (4, 1):
        region = np.ascontiguousarray(region)
    return region.view(np.uint32)[:, :, 0]


# Rows are compared in blocks that start small (a change near an edge is found after reading little) and
# double up to about 512 KiB per side (the comparison's temporaries stay in cache and out of mmap).
_FIRST_BLOCK = 16
_MAX_BLOCK_BYTES = 1 << 19


@functools.cache
def _memcmp() -> Callable[[int, int, int], int]:
    memcmp = ctypes.CDLL("libc.so.6").memcmp
    memcmp.restype = ctypes.c_int
    memcmp.argtypes = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)
    return memcmp


def _same(a: npt.NDArray[Any], b: npt.NDArray[Any]) -> bool:
    # memcmp when both blocks are one run of memory (full-width rows): ~25% faster than numpy, no temporaries.
    if a.flags.c_contiguous and b.flags.c_contiguous:
        return bool(_memcmp()(a.ctypes.data, b.ctypes.data, a.nbytes) == 0)
    # Part of each row (a box beside X's damage): OpenCV's largest difference, SIMD and without numpy's temporary
    # array (an 840x2000 region of a 2560x1600 picture: 1.1 against 1.5 ms); 0 exactly when equal.
    if a.ndim == 2 and a.dtype == b.dtype and a.dtype in (np.uint32, np.uint64) and a.strides[1] == a.itemsize \
            and b.strides[1] == b.itemsize:
        return bool(cv2.norm(_pixels(a), _pixels(b), cv2.NORM_INF) == 0)
    return bool(np.array_equal(a, b))


def _pixels(words: npt.NDArray[Any]) -> npt.NDArray[np.uint8]:
    """A (rows, n) array of 4- or 8-byte words, row stride kept, as (rows, pixels, 4) bytes (no copy): OpenCV's
    four-channel image, its fastest path."""
    rows, cols = words.shape
    pixels = cols * words.itemsize // 4
    return np.lib.stride_tricks.as_strided(words.view(np.uint8), (rows, pixels, 4), (words.strides[0], 4, 1))


def _block_cap(a: npt.NDArray[Any]) -> int:
    return max(_FIRST_BLOCK, _MAX_BLOCK_BYTES // max(1, int(a.shape[1]) * a.itemsize))


def _first_changed(a: npt.NDArray[Any], b: npt.NDArray[Any]) -> int | None:
    rows, y, step, cap = int(a.shape[0]), 0, _FIRST_BLOCK, _block_cap(a)
    while y < rows:
        end = min(rows, y + step)
        if not _same(a[y:end], b[y:end]):
            return y + int(np.flatnonzero((a[y:end] != b[y:end]).any(axis=1))[0])
        y, step = end, min(cap, step * 2)
    return None


def _last_changed(a: npt.NDArray[Any], b: npt.NDArray[Any], floor: int) -> int:
    y, step, cap = int(a.shape[0]), _FIRST_BLOCK, _block_cap(a)
    while y > floor:
        start = max(floor, y - step)
        if not _same(a[start:y], b[start:y]):
            return start + int(np.flatnonzero((a[start:y] != b[start:y]).any(axis=1))[-1])
        y, step = start, min(cap, step * 2)
    return floor  # the floor row is known to differ
