"""Rectangle clipping and row bands (pure), checked against brute-force pixel masks."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from framestream.media.rects import BAND_GAP, MAX_BANDS, Box, DamageRect, clip, row_bands, uncovered

W, H = 40, 30


def mask_of(box: Box | None, width: int = W, height: int = H) -> np.ndarray:
    """The pixels of [0, width) x [0, height) that `box` covers (outside parts simply fall off)."""
    mask = np.zeros((height, width), bool)
    if box is not None:
        x, y, w, h = box
        if w > 0 and h > 0:
            mask[max(0, y) : max(0, y + h), max(0, x) : max(0, x + w)] = True
    return mask


@pytest.mark.parametrize(
    ("box", "expected"),
    [
        ((5, 6, 7, 8), (5, 6, 7, 8)),  # inside: unchanged
        ((-3, -4, 10, 10), (0, 0, 7, 6)),  # over the top-left corner
        ((35, 25, 10, 10), (35, 25, 5, 5)),  # over the bottom-right corner
        ((-10, -10, 100, 100), (0, 0, W, H)),  # larger than the bounds
        ((0, 0, W, H), (0, 0, W, H)),  # exactly the bounds
        ((W - 1, H - 1, 1, 1), (W - 1, H - 1, 1, 1)),  # the last pixel
        ((W, 0, 5, 5), None),  # touching the right edge from outside
        ((0, H, 5, 5), None),  # touching the bottom edge from outside
        ((-5, 0, 5, 5), None),  # touching the left edge from outside
        ((3, 3, 0, 5), None),  # empty
        ((3, 3, 5, -1), None),  # negative
        ((100, 100, 5, 5), None),  # far off
    ],
)
def test_clip(box: Box, expected: Box | None) -> None:
    assert clip(box, W, H) == expected


coord = st.integers(-60, 60)


@given(st.tuples(coord, coord, coord, coord))
def test_clip_covers_exactly_the_visible_pixels(box: Box) -> None:
    clipped = clip(box, W, H)
    assert np.array_equal(mask_of(clipped), mask_of(box))
    if clipped is not None:  # and is a real, in-bounds rectangle
        x, y, w, h = clipped
        assert 0 <= x < x + w <= W and 0 <= y < y + h <= H


def test_row_bands_merge_near_rows_and_keep_far_ones_apart() -> None:
    near = [DamageRect(0, 10, 5, 5), DamageRect(9, 15 + BAND_GAP, 5, 5)]
    assert row_bands(near, 1000) == [(10, 20 + BAND_GAP)]
    far = [DamageRect(0, 10, 5, 5), DamageRect(9, 16 + BAND_GAP, 5, 5)]
    assert row_bands(far, 1000) == [(10, 15), (16 + BAND_GAP, 21 + BAND_GAP)]
    assert row_bands(list(reversed(far)), 1000) == row_bands(far, 1000)  # sorted whatever the order


def test_row_bands_clip_skip_empty_and_cap_their_number() -> None:
    assert row_bands([DamageRect(0, -5, 10, 10), DamageRect(0, 95, 10, 10)], 100) == [(0, 5), (95, 100)]
    assert row_bands([DamageRect(0, 5, 0, 10), DamageRect(0, 5, 10, 0), DamageRect(0, 200, 9, 9)], 100) == []
    many = [DamageRect(0, y, 1, 1) for y in range(0, 100 * (MAX_BANDS + 1), 100)]
    assert row_bands(many, 1000) == [(0, 100 * MAX_BANDS + 1)]


@given(
    st.lists(st.builds(DamageRect, coord, st.integers(-20, 220), st.integers(0, 30), st.integers(-5, 40))),
    st.integers(1, 200),
)
def test_row_bands_cover_every_damaged_row(damage: list[DamageRect], height: int) -> None:
    bands = row_bands(damage, height)
    covered = np.zeros(height, bool)
    for y0, y1 in bands:
        assert 0 <= y0 < y1 <= height
        covered[y0:y1] = True
    assert len(bands) <= MAX_BANDS
    assert all(a[1] < b[0] for a, b in itertools.pairwise(bands))  # sorted and disjoint
    for r in damage:
        if r.width > 0 and r.height > 0:
            assert covered[max(0, r.y) : max(0, min(height, r.y + r.height))].all()


def _mask(rects: list[DamageRect], width: int, height: int) -> np.ndarray:
    mask = np.zeros((height, width), np.int32)
    for r in rects:
        mask[max(0, r.y) : max(0, r.y + r.height), max(0, r.x) : max(0, r.x + r.width)] += 1
    return mask


def test_uncovered_is_exactly_the_bands_minus_the_rects() -> None:
    rng = random.Random(29)
    width, height = 200, 120
    for _ in range(300):
        rects = [DamageRect(rng.randrange(-20, width), rng.randrange(-20, height), rng.randrange(0, 90),
                            rng.randrange(0, 70)) for _ in range(rng.randrange(0, 5))]
        bands = sorted({(a, min(height, a + rng.randrange(1, 60))) for a in rng.sample(range(height), 2)})
        bands = [b for i, b in enumerate(bands) if i == 0 or b[0] >= bands[i - 1][1]]
        rest = uncovered(bands, rects, width)
        in_bands = np.zeros((height, width), bool)
        for y0, y1 in bands:
            in_bands[y0:y1] = True
        want = in_bands & (_mask(rects, width, height) == 0)
        got = _mask(rest, width, height)
        assert (got <= 1).all(), "rectangles overlap"
        assert np.array_equal(got == 1, want), (bands, rects, rest)
        assert all(r.width > 0 and r.height > 0 for r in rest)


def test_uncovered_cuts_a_band_around_a_box() -> None:
    assert uncovered([(0, 100)], [DamageRect(10, 20, 30, 40)], 100) == [
        DamageRect(0, 0, 100, 20), DamageRect(0, 20, 10, 40), DamageRect(40, 20, 60, 40), DamageRect(0, 60, 100, 40)]
    assert uncovered([(0, 10)], [], 50) == [DamageRect(0, 0, 50, 10)]
    assert uncovered([(0, 10)], [DamageRect(0, 0, 50, 10)], 50) == []
