"""changed_rows and changed_boxes as pure functions, against brute force (with real damage: test_capture)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from framestream.media.diff import _changed_squares, changed_boxes, changed_rows
from framestream.media.rects import DamageRect


def _pic(h: int = 64, w: int = 48, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (h, w, 4), dtype=np.uint8)


def test_changed_rows_identical_is_none() -> None:
    a = _pic()
    assert changed_rows(a, a.copy(), None) is None
    assert changed_rows(a, a.copy(), [DamageRect(0, 0, 48, 64)]) is None


def test_changed_rows_finds_rows() -> None:
    a = _pic()
    b = a.copy()
    b[10, 7, 2] ^= 1
    b[40, 30, 0] ^= 0x80
    assert changed_rows(a, b, None) == (10, 41)
    assert changed_rows(a, b, [DamageRect(0, 0, 48, 20)]) == (10, 11)
    assert changed_rows(a, b, [DamageRect(29, 35, 5, 10)]) == (40, 41)


def test_changed_rows_ignores_changes_outside_hint() -> None:
    a = _pic()
    b = a.copy()
    b[10, 7] = 0
    assert changed_rows(a, b, [DamageRect(8, 0, 40, 64)]) is None
    assert changed_rows(a, b, []) is None
    assert changed_rows(a, b, [DamageRect(-5, -5, 13, 16)]) == (10, 11)  # clipped, still covers (7, 10)
    assert changed_rows(a, b, [DamageRect(100, 100, 5, 5)]) is None  # off screen


def test_changed_rows_odd_offsets_and_many_rects() -> None:
    a = _pic(33, 31)
    b = a.copy()
    b[32, 30, 3] ^= 1  # the X byte counts too: callers compare what they would encode
    assert changed_rows(a, b, [DamageRect(29, 31, 2, 2)]) == (32, 33)  # odd x: uint32 path
    many = [DamageRect(x, y, 1, 1) for x in range(0, 31, 2) for y in range(0, 33, 4)]
    assert changed_rows(a, b, many) == (32, 33)  # bounding box of > 16 rects includes (30, 32)


def test_changed_rows_shape_change_is_all_rows() -> None:
    assert changed_rows(_pic(64, 48), _pic(32, 48), None) == (0, 32)


def test_changed_rows_on_views_of_bigger_buffers() -> None:
    big = _pic(80, 70)
    a = big[5:69, 3:51]  # unaligned, strided views like a shared-memory sub-picture
    b = a.copy()
    b[63, 47] += 1
    assert changed_rows(a, b, None) == (63, 64)


@settings(max_examples=200, deadline=None)
@given(
    h=st.integers(1, 70),
    w=st.integers(1, 40),
    changes=st.lists(st.tuples(st.integers(0, 69), st.integers(0, 39), st.integers(0, 3)), max_size=6),
    hint=st.one_of(
        st.none(),
        st.lists(
            st.builds(
                DamageRect, st.integers(-5, 45), st.integers(-5, 75), st.integers(0, 50), st.integers(0, 80)
            ),
            max_size=20,
        ),
    ),
)
def test_changed_rows_matches_brute_force(
    h: int, w: int, changes: list[tuple[int, int, int]], hint: list[DamageRect] | None
) -> None:
    a = _pic(h, w, seed=h * 100 + w)
    b = a.copy()
    for y, x, c in changes:
        if y < h and x < w:
            b[y, x, c] ^= 0x5A
    mask = np.zeros((h, w), bool)
    if hint is None:
        mask[:] = True
    else:
        clipped = [(max(0, r.x), max(0, r.y), min(w, r.x + r.width), min(h, r.y + r.height)) for r in hint]
        boxes = [(x0, y0, x1, y1) for x0, y0, x1, y1 in clipped if x1 > x0 and y1 > y0]
        if len(boxes) > 16:  # documented: many rectangles are compared as their bounding box
            boxes = [
                (
                    min(b[0] for b in boxes),
                    min(b[1] for b in boxes),
                    max(b[2] for b in boxes),
                    max(b[3] for b in boxes),
                )
            ]
        for x0, y0, x1, y1 in boxes:
            mask[y0:y1, x0:x1] = True
    rows = np.flatnonzero(((a != b).any(axis=2) & mask).any(axis=1))
    expected = None if rows.size == 0 else (int(rows[0]), int(rows[-1]) + 1)
    assert changed_rows(a, b, hint) == expected


@settings(max_examples=200, deadline=None)
def picture_pair(h: int, w: int, changes: list[tuple[int, int, int]], *, offset: bool) -> tuple[np.ndarray, np.ndarray]:
    """Two (h, w, 4) pictures that differ in `changes` (row, column, channel): views of bigger buffers (the
    shared-memory picture is one), at an odd column when `offset`."""
    base = np.random.default_rng(h * 1000 + w).integers(0, 256, (h + 2, w + 3, 4), dtype=np.uint8)
    a = base[1 : h + 1, (1 if offset else 0) : w + (1 if offset else 0)]
    b_base = base.copy()
    b = b_base[1 : h + 1, (1 if offset else 0) : w + (1 if offset else 0)]
    for y, x, c in changes:
        if y < h and x < w:
            b[y, x, c] ^= 0x5A
    return a, b


@given(
    h=st.integers(1, 150),
    w=st.integers(1, 120),
    changes=st.lists(st.tuples(st.integers(0, 149), st.integers(0, 119), st.integers(0, 3)), max_size=12),
    tight_area=st.sampled_from([0, 64, 1 << 19]),
    offset=st.booleans(),
)
def test_changed_boxes_hold_every_change_and_are_tight(
    h: int, w: int, changes: list[tuple[int, int, int]], tight_area: int, offset: bool
) -> None:
    a, b = picture_pair(h, w, changes, offset=offset)
    diff = (a != b).any(axis=2)
    boxes = changed_boxes(a, b, [DamageRect(0, 0, w, h)], tight_area=tight_area)
    covered = np.zeros((h, w), bool)
    for x0, y0, x1, y1 in boxes:
        assert 0 <= x0 < x1 <= w and 0 <= y0 < y1 <= h
        covered[y0:y1, x0:x1] = True
        # Rows are always tight: the box's first and last rows hold a change.
        assert diff[y0, x0:x1].any() and diff[y1 - 1, x0:x1].any()
        if h * w <= tight_area:  # columns too
            assert diff[y0:y1, x0].any() and diff[y0:y1, x1 - 1].any()
    assert not (diff & ~covered).any(), "a changed pixel outside every box"
    assert (boxes == []) == (not diff.any())


@given(
    h=st.integers(1, 120),
    w=st.integers(1, 140),
    changes=st.lists(st.tuples(st.integers(0, 119), st.integers(0, 139), st.integers(0, 3)), max_size=12),
    rect=st.tuples(st.integers(0, 139), st.integers(0, 119), st.integers(1, 140), st.integers(1, 120)),
    block=st.sampled_from([16, 8, 6]),
    offset=st.booleans(),
)
def test_grid_boxes_hold_every_change_on_the_grid_and_are_tight_to_it(
    h: int, w: int, changes: list[tuple[int, int, int]], rect: tuple[int, int, int, int], *, block: int,
    offset: bool,
) -> None:
    """Large damage compared by blocks (issue 29): every changed pixel of the damage lies in a box, each box lies on
    the `block` grid of the picture (cut at its right and bottom edges), and each box's outer rows and columns of
    squares hold a change, so no block that did not change is sent as changed at a box's edge."""
    a, b = picture_pair(h, w, changes, offset=offset)
    x, y = min(rect[0], w - 1), min(rect[1], h - 1)
    damage = DamageRect(x, y, min(rect[2], w - x), min(rect[3], h - y))
    inside = np.zeros((h, w), bool)
    inside[damage.y : damage.y + damage.height, damage.x : damage.x + damage.width] = True
    changed = (a != b).any(axis=2)  # a square across the damage's edge may hold changes outside it too
    diff = changed & inside
    boxes = changed_boxes(a, b, [damage], tight_area=0, block=block)
    covered = np.zeros((h, w), bool)
    for x0, y0, x1, y1 in boxes:
        assert 0 <= x0 < x1 <= w and 0 <= y0 < y1 <= h
        assert x0 % block == 0 and y0 % block == 0 and (x1 % block == 0 or x1 == w) and (y1 % block == 0 or y1 == h)
        covered[y0:y1, x0:x1] = True
        # The box's first and last squares across and down (its squares start at x0 and y0, on the grid).
        last_y, last_x = y0 + (y1 - 1 - y0) // block * block, x0 + (x1 - 1 - x0) // block * block
        for edge in (changed[y0 : y0 + block, x0:x1], changed[last_y:y1, x0:x1], changed[y0:y1, x0 : x0 + block],
                     changed[y0:y1, last_x:x1]):
            assert edge.any(), ((x0, y0, x1, y1), block)
    assert not (diff & ~covered).any(), "a changed pixel of the damage outside every box"
    assert (boxes == []) == (not diff.any())


@given(h=st.integers(1, 70), w=st.integers(1, 90), block=st.sampled_from([16, 8, 6, 1]), seed=st.integers(0, 2**16),
       padded=st.booleans())
def test_changed_squares_are_the_definitions(h: int, w: int, block: int, seed: int, padded: bool) -> None:
    """The C comparison by squares (media/_blocks.c) against its definition: a square changed when any of its pixels
    did, partial squares at the right and bottom too, on regions cut from wider pictures (rows farther apart)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 256, (h, w + 7 * padded, 4), np.uint8)
    b = a.copy()
    for _ in range(int(rng.integers(0, 6))):  # single bytes changed: any one of a pixel's four counts
        b[int(rng.integers(0, h)), int(rng.integers(0, w)), int(rng.integers(0, 4))] ^= 0x10
    a, b = a[:, :w], b[:, :w]
    got = _changed_squares(a, b, block)
    want = np.zeros_like(got)
    for r in range(got.shape[0]):
        for c in range(got.shape[1]):
            want[r, c] = (a[r * block : (r + 1) * block, c * block : (c + 1) * block]
                          != b[r * block : (r + 1) * block, c * block : (c + 1) * block]).any()
    assert got.shape == (-(-h // block), -(-w // block)) and np.array_equal(got, want)


def test_changed_squares_refuse_regions_they_cannot_read() -> None:
    a = np.zeros((32, 32, 4), np.uint8)
    with pytest.raises(ValueError):
        _changed_squares(a, a[:16], 16)  # of another shape
    with pytest.raises(ValueError):
        _changed_squares(a[:, ::2], a[:, ::2], 16)  # pixels not adjacent
