"""Which changed macroblocks are the picture before, moved: the motion an encoder of our own can copy exactly.

Content on a page moves by whole device pixels (a scroll, a box carried by a transform), so a moved macroblock is
often bit for bit its old pixels somewhere else. `moved_macroblocks` takes the encoder's reference and current
pictures (I420 planes) and the macroblocks that changed, and keeps, for each, the first shift under which its luma
and chroma equal the reference's exactly: none (a changed rectangle is coarser than its pixels), then the shifts
the picture before took, then guesses per band of rows from 1-D profiles (row sums for vertical motion, column sums
for horizontal). "Equal" is what a decoder makes of the copy: under an even shift 4:2:0 chroma moves by whole
samples, under an odd one by half a sample, which the decoder averages from the samples either side; such a block
is taken only where that average is the picture's chroma exactly (white, grey text, inside a flat colour; at dpr 1
a page's rounding makes shifts odd as often as not). What no shift explains is new content.

Cost is bounded by the changed area: profiles are sums over it, and each guess is checked on the band's middle row
of macroblocks before the whole band.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import cv2
import numpy as np
import numpy.typing as npt

from framestream.media._blocks import carried_lossy, equal_blocks

Planes = Sequence[npt.NDArray[np.uint8]]  # Y, U, V of 4:2:0

MB = 16
# Furthest a shift may go, in pixels: vertical vectors are limited to [-256, 255.75] up to level 3 (table A-1).
SEARCH = 254
# Bands of more blocks than this are tried on their middle row before the whole band.
_LARGE_BAND = 256


@dataclass(frozen=True, slots=True)
class Motion:
    vectors: npt.NDArray[np.int32]  # (rows, columns, 2): x, y in pixels; where the reference is copied from is minus
    new: npt.NDArray[np.bool_]  # (rows, columns): changed and explained by no shift
    taken: dict[tuple[int, int], int] = field(default_factory=dict)  # blocks each shift other than none explained
    # New blocks whose luma the main shift, odd, copies but whose chroma a decoder's copy would blur (coloured text's
    # edges): x264 codes each in a few bytes of residual, where we would send it intra (core/copies.py).
    blurred: int = 0

    @classmethod
    def none(cls, new: npt.NDArray[np.bool_]) -> Motion:
        """Nothing moved: the blocks `new` are to be encoded, the rest are as they were."""
        return cls(np.zeros((*new.shape, 2), np.int32), new)

    @property
    def moved(self) -> bool:
        return bool(self.taken)

    @property
    def moved_blocks(self) -> npt.NDArray[np.bool_]:
        """(rows, columns): True where a shift other than none was taken."""
        return np.asarray(self.vectors.view(np.int64)[..., 0] != 0, bool)  # (x, y) is 0 when its 8 bytes are

    def main_shifts(self, most: int = 3) -> list[tuple[int, int]]:
        """The shifts other than none that the most macroblocks took, most first."""
        return sorted(self.taken, key=lambda shift: -self.taken[shift])[:most]


def runs(flags: npt.ArrayLike) -> list[tuple[int, int]]:
    """[start, end) of each run of True."""
    edges = np.flatnonzero(np.diff(np.concatenate([[0], np.asarray(flags, np.int8), [0]])))
    return list(zip(edges[::2].tolist(), edges[1::2].tolist(), strict=True))


def _profile(plane: npt.NDArray[np.uint8], axis: int) -> npt.NDArray[np.float32]:
    """Sums along `axis` (0: one per column, 1: one per row)."""
    summed = cv2.reduce(plane, axis, cv2.REDUCE_SUM, dtype=cv2.CV_32S)
    return np.asarray(summed.reshape(-1), np.float32)


def _best_shift(current: npt.NDArray[np.float32], reference: npt.NDArray[np.float32], start: int, end: int,
                margin: int) -> int | None:
    """The shift d (current[x] == reference[x - d]) that best lines up current[start + margin : end - margin]
    with the reference, or None when no such part is left."""
    a, b = start + margin, end - margin
    if b - a < 8:
        return None
    template = current[a:b]
    lo, hi = a - SEARCH, b + SEARCH
    if lo >= 0 and hi <= len(reference):
        scores = cv2.matchTemplate(reference[lo:hi].reshape(1, -1), template.reshape(1, -1), cv2.TM_SQDIFF)
        return a - (lo + int(np.argmin(scores)))
    # Near an edge, shifts that carry part of the template outside the picture are scored on what overlaps, per
    # sample, with at least half of it overlapping: a box at the left edge moving right starts outside what it
    # is matched in. (Repeating the edge instead made a one-colour box match everywhere.) Only the cross term needs
    # a correlation (OpenCV's, in float32: the profiles are scaled to hold it); the squares are prefix sums.
    m, scale = b - a, 1.0 / max(1.0, float(np.abs(template).max()) / 256)
    first, last = max(0, lo) - lo, min(len(reference), hi) - lo  # the window's samples inside the picture
    window = np.zeros(hi - lo, np.float32)
    window[first:last] = reference[lo + first : lo + last] * scale
    t = template * np.float32(scale)
    cross = cv2.matchTemplate(window.reshape(1, -1), t.reshape(1, -1), cv2.TM_CCORR).reshape(-1).astype(np.float64)
    offsets = np.arange(cross.size)
    begin, stop = np.clip(first - offsets, 0, m), np.clip(last - offsets, 0, m)  # the template's overlapping part
    overlap = np.maximum(stop - begin, 0)
    template_squares = np.concatenate([[0.0], np.cumsum(t.astype(np.float64) ** 2)])
    window_squares = np.concatenate([[0.0], np.cumsum(window.astype(np.float64) ** 2)])
    squares = template_squares[stop] - template_squares[np.minimum(begin, stop)] + \
        window_squares[offsets + m] - window_squares[offsets] - 2 * cross
    scores = np.where(overlap * 2 >= m, np.maximum(squares, 0) / np.maximum(overlap, 1), np.inf)
    # Of the shifts that line up as well (to float32's rounding), the one that overlaps most: a one-colour box's
    # middle lines up under any shift that leaves its edge outside.
    near = np.flatnonzero(scores <= scores.min() + 0.5)
    return a - (lo + int(near[np.argmax(overlap[near])]))


def _equal_blocks(current: Planes, reference: Planes, rows: tuple[int, int], columns: tuple[int, int],
                  shift: tuple[int, int], *, chroma: bool = True) -> npt.NDArray[np.bool_]:
    """(rows, columns) map of macroblocks a decoder copies exactly from the reference moved by `shift` (chroma
    averaged by its half-sample vector when odd; the luma alone without `chroma`); False where the moved-from block
    would leave the picture. Compared in C (`_blocks.c`): each block up to its first difference."""
    (y, u, v), (ref_y, ref_u, ref_v) = current, reference
    out = np.empty((rows[1] - rows[0], columns[1] - columns[0]), bool)
    equal_blocks(y, u, v, ref_y, ref_u, ref_v, rows[0], rows[1], columns[0], columns[1], shift[0], shift[1], out,
                 chroma)
    return out


def _guesses(current: Planes, reference: Planes, rows: tuple[int, int], columns: tuple[int, int],
             ) -> list[tuple[int, int]]:
    """Shifts that line up the band's row sums (vertical motion) or column sums (horizontal)."""
    y0, y1, x0, x1 = rows[0] * MB, rows[1] * MB, columns[0] * MB, columns[1] * MB
    luma_now, luma_before = current[0], reference[0]
    found: list[tuple[int, int]] = []
    # Vertical: row sums over the band's columns, a band widened by the search so content moved in is seen.
    top, bottom = max(0, y0 - SEARCH), min(luma_now.shape[0], y1 + SEARCH)
    now_rows = _profile(luma_now[top:bottom, x0:x1], 1)
    before_rows = _profile(luma_before[top:bottom, x0:x1], 1)
    for margin in (0, (y1 - y0) // 4):  # whole band (an object moved inside it), its middle (a scroll)
        if dy := _best_shift(now_rows, before_rows, y0 - top, y1 - top, margin):
            found.append((0, dy))
    left, right = max(0, x0 - SEARCH), min(luma_now.shape[1], x1 + SEARCH)
    now_columns = _profile(luma_now[y0:y1, left:right], 0)
    before_columns = _profile(luma_before[y0:y1, left:right], 0)
    vertical = [dy for _, dy in found]
    for margin in (0, (x1 - x0) // 4):
        if dx := _best_shift(now_columns, before_columns, x0 - left, x1 - left, margin):
            found.append((dx, 0))
            found.extend((dx, dy) for dy in vertical)
    return found


def moved_macroblocks(current: Planes, reference: Planes, changed: npt.NDArray[np.bool_],
                      previous: Sequence[tuple[int, int]] = (),
                      unexplained: npt.NDArray[np.bool_] | None = None) -> Motion:
    """For each macroblock that `changed` marks, the shift under which it equals `reference`, or new.

    `previous` are shifts worth trying first (those of the picture before: motion goes on). A band whose rows
    `unexplained` all marks (new in the picture before: a counter) is not searched: its changed blocks are new."""
    vectors = np.zeros((*changed.shape, 2), np.int32)
    open_ = changed.copy()
    taken: dict[tuple[int, int], int] = {}

    def attempt(shift: tuple[int, int], r0: int, r1: int) -> bool:
        """Give the shift to the band's open blocks it explains; True once none is left open."""
        cols = np.flatnonzero(open_[r0:r1].any(axis=0))
        if not cols.size:
            return True
        c0, c1 = int(cols[0]), int(cols[-1]) + 1
        # A guess must explain some of the band's middle row (at its edges, moved-from blocks may leave it): on a
        # large band a cheap test first (on a small one, such as a box's edges, the whole band costs as little).
        middle = (r0 + r1) // 2
        if shift != (0, 0) and (r1 - r0) * (c1 - c0) > _LARGE_BAND and not _equal_blocks(
                current, reference, (middle, middle + 1), (c0, c1), shift).any():
            return False
        hits = _equal_blocks(current, reference, (r0, r1), (c0, c1), shift) & open_[r0:r1, c0:c1]
        if shift != (0, 0) and (count := int(np.count_nonzero(hits))):
            vectors[r0:r1, c0:c1][hits] = shift
            taken[shift] = taken.get(shift, 0) + count
        open_[r0:r1, c0:c1] &= ~hits
        return not open_[r0:r1].any()

    # First what did not change at all: a changed rectangle is coarser than its pixels, and such blocks are skipped.
    for r0, r1 in runs(changed.any(axis=1)):
        attempt((0, 0), r0, r1)
    for r0, r1 in runs(open_.any(axis=1)):
        if unexplained is not None and unexplained[r0:r1].all():
            continue  # new last time too (a counter): not searched again this time
        tried: set[tuple[int, int]] = {(0, 0)}
        for shift in previous:
            if shift not in tried and max(abs(shift[0]), abs(shift[1])) <= SEARCH:
                tried.add(shift)
                if attempt(shift, r0, r1):
                    break
        if not open_[r0:r1].any():
            continue
        cols = np.flatnonzero(open_[r0:r1].any(axis=0))
        for shift in _guesses(current, reference, (r0, r1), (int(cols[0]), int(cols[-1]) + 1)):
            if shift not in tried and max(abs(shift[0]), abs(shift[1])) <= SEARCH:
                tried.add(shift)
                if attempt(shift, r0, r1):
                    break
    return Motion(vectors, open_, taken, _blurred(current, reference, open_, taken))


def _blurred(current: Planes, reference: Planes, new: npt.NDArray[np.bool_], taken: dict[tuple[int, int], int],
             ) -> int:
    """How many `new` blocks the main shift copies in luma but not in chroma, when that shift is odd."""
    if not taken or not new.any():
        return 0
    shift = max(taken, key=taken.__getitem__)
    if not (shift[0] % 2 or shift[1] % 2):
        return 0
    rows, columns = np.flatnonzero(new.any(axis=1)), np.flatnonzero(new.any(axis=0))
    box = (int(rows[0]), int(rows[-1]) + 1), (int(columns[0]), int(columns[-1]) + 1)
    luma = _equal_blocks(current, reference, *box, shift, chroma=False)
    return int(np.count_nonzero(luma & new[box[0][0] : box[0][1], box[1][0] : box[1][1]]))


def spread(motion: Motion, current: Planes, reference: Planes) -> Motion:
    """`motion` with its main shift given to the blocks found in place within the box of the blocks it moved,
    where the reference moved by it is equal too (a page's white between lines of text that scrolled).

    A copy whose vector is its neighbours' is a P_Skip, nearly free; one beside a block of vector 0 codes its
    vector. On a scrolling text page the still blocks between moved ones made the picture of copies cost more than
    x264's whole picture. `taken` is unchanged: it counts what changed."""
    if not motion.taken:
        return motion
    shift = motion.main_shifts(1)[0]
    by_shift = (motion.vectors[..., 0] == shift[0]) & (motion.vectors[..., 1] == shift[1])
    rows, columns = np.flatnonzero(by_shift.any(axis=1)), np.flatnonzero(by_shift.any(axis=0))
    r0, r1, c0, c1 = int(rows[0]), int(rows[-1]) + 1, int(columns[0]), int(columns[-1]) + 1
    still = ~(motion.new[r0:r1, c0:c1] | motion.moved_blocks[r0:r1, c0:c1])
    if not still.any():
        return motion
    hits = _equal_blocks(current, reference, (r0, r1), (c0, c1), shift) & still
    if not hits.any():
        return motion
    vectors = motion.vectors.copy()
    vectors[r0:r1, c0:c1][hits] = shift
    return Motion(vectors, motion.new, motion.taken, motion.blurred)


def carried(lossy: npt.NDArray[np.bool_], motion: Motion) -> npt.NDArray[np.bool_]:
    """Which blocks show lossy pixels after `motion`'s picture, when `lossy` did before: a moved block if any block
    it was copied from did, a new block always (it was encoded at the moving picture's quality). In C
    (`_blocks.c`): a scroll moves every block, thousands at dpr 2."""
    after = np.empty_like(lossy)
    carried_lossy(np.ascontiguousarray(lossy), np.ascontiguousarray(motion.new),
                  np.ascontiguousarray(motion.vectors, np.int32), after)
    return after
