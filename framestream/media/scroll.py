"""A change that is the picture before moved up or down (a scroll): found, so it goes as one copy of what the
viewer already shows and an image of the strip that came into view, instead of a whole H.264 picture.

Chromium scrolls by whole device pixels, so scrolled content is exactly the picture before, shifted (measured on
benchmarks/pages/scroll_fast.html at dpr 2: every row of the moved text equal). A 2560x1600 scroll costs x264
7-8 ms of CPU a picture whatever moved; finding the shift costs a signature of three narrow column strips per row
(about 1 MB read) and one exact comparison of the moved rows (memory bound, memcmp where rows are whole).

Pure numpy and memcmp on two pictures; no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from framestream.media.diff import rows_equal

Box = tuple[int, int, int, int]  # x0, y0, x1, y1
Picture = npt.NDArray[np.uint8]

_STRIPS = 3  # column strips sampled for each row's signature (at 1/4, 1/2 and 3/4 of the box's width)
_STRIP_PX = 32
_MIN_ROWS = 32  # a box shorter than this is no scroll worth a copy
_MIN_VOTES = 4  # distinctive rows that must agree on the shift
_MIN_RUN = 16  # rows the copy must cover
_EDGE_PX = 48  # a scrollbar at the box's right edge: 15 CSS pixels up to dpr 3
# Random odd 64-bit weights: a row's signature is its sampled words' weighted sum (wrapping), so two rows with
# the same signature almost surely hold the same samples; every candidate is compared exactly anyway.
_WEIGHTS = np.random.default_rng(29).integers(1, 1 << 62, _STRIPS * _STRIP_PX // 2, dtype=np.uint64) * 2 + 1


@dataclass(frozen=True, slots=True)
class Scroll:
    """Rows `box` of the new picture are rows `box` moved by `-dy` of the picture before: the content moved `dy`
    rows down (negative: up). Every pixel of `box` was compared."""

    dy: int
    box: Box

    @property
    def source(self) -> tuple[int, int]:
        """The (x, y) in the picture before of the box's top-left pixel."""
        return self.box[0], self.box[1] - self.dy


def find_scroll(previous: Picture, picture: Picture, box: Box) -> Scroll | None:
    """The scroll inside `box` (x0, y0, x1, y1) of two (height, width, 4) pictures of one size: the shift most
    distinctive rows agree on, then the longest run of rows of `box` that equal the picture before shifted by it,
    within the box's columns, or without its right edge when that is longer (a scrollbar's thumb moves otherwise
    than the content and cuts every row it shares with it: the copy leaves its columns to images). None when the
    box is small, nothing agrees, or the run is short."""
    x0, y0, x1, y1 = box
    height = int(picture.shape[0])
    if y1 - y0 < _MIN_ROWS or x1 - x0 < _STRIPS * _STRIP_PX:
        return None
    dy = _likely_shift(_signatures(previous, x0, x1), _signatures(picture[y0:y1], x0, x1), y0)
    if dy is None:
        return None
    # Rows y of the box whose source y - dy lies on the picture.
    top, bottom = max(y0, dy), min(y1, height + dy)
    if bottom - top < _MIN_RUN:
        return None
    run = _longest_run(rows_equal(picture[top:bottom, x0:x1], previous[top - dy : bottom - dy, x0:x1]))
    if run is not None and run[1] - run[0] < bottom - top and x1 - x0 >= 8 * _EDGE_PX:
        inner = x1 - _EDGE_PX
        narrow = _longest_run(rows_equal(picture[top:bottom, x0:inner], previous[top - dy : bottom - dy, x0:inner]))
        if narrow is not None and narrow[1] - narrow[0] > run[1] - run[0]:
            run, x1 = narrow, inner
    if run is None or run[1] - run[0] < _MIN_RUN:
        return None
    return Scroll(dy, (x0, top + run[0], x1, top + run[1]))


def _signatures(picture: Picture, x0: int, x1: int) -> npt.NDArray[np.uint64]:
    """One 64-bit signature per row of `picture` (rows of a picture), from three strips of `_STRIP_PX` pixels within
    [x0, x1)."""
    step = (x1 - x0) // (_STRIPS + 1)
    starts = [min(x1 - _STRIP_PX, x0 + step * (k + 1) - _STRIP_PX // 2) for k in range(_STRIPS)]
    strips = np.concatenate([picture[:, s : s + _STRIP_PX] for s in starts], axis=1)  # (rows, 96, 4), a copy
    words = strips.reshape(strips.shape[0], -1).view(np.uint64)  # two pixels a word
    signatures: npt.NDArray[np.uint64] = words @ _WEIGHTS  # wraps modulo 2^64
    return signatures


def _likely_shift(before: npt.NDArray[np.uint64], after: npt.NDArray[np.uint64], y0: int) -> int | None:
    """The shift dy most rows of the box vote for: `after` holds the signatures of the new picture's rows from `y0`
    on, `before` those of every row of the picture before (after[y - y0] == before[y - dy]). Each row whose
    signature appears once in `after` and once in `before` votes for the distance to that row; blank and repeated
    rows (the same in many places) do not. None for no shift, or too few votes."""
    values, index, counts = np.unique(after, return_index=True, return_counts=True)
    values, index = values[counts == 1], index[counts == 1]
    old_values, old_index, old_counts = np.unique(before, return_index=True, return_counts=True)
    found = np.searchsorted(old_values, values)
    found = np.minimum(found, len(old_values) - 1)
    match = (old_values[found] == values) & (old_counts[found] == 1)
    if not match.any():
        return None
    shifts = (y0 + index[match]) - old_index[found[match]]
    offset = len(before)
    votes = np.bincount(shifts + offset)
    best = int(np.argmax(votes))
    if votes[best] < _MIN_VOTES or best == offset:
        return None
    return best - offset


def _longest_run(mask: npt.NDArray[np.bool_]) -> tuple[int, int] | None:
    """The longest [start, end) run of True in a 1-d mask (the first of equal ones), None when none is True."""
    padded = np.concatenate(([False], mask, [False]))
    edges = np.flatnonzero(padded[1:] != padded[:-1])
    if not edges.size:
        return None
    starts, ends = edges[0::2], edges[1::2]
    longest = int(np.argmax(ends - starts))
    return int(starts[longest]), int(ends[longest])
