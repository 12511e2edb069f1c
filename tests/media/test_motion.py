"""media/motion.py on synthetic pictures: what moved by an even shift is found and every block it names is an exact
copy; what is new, or moved by an odd shift (chroma would not copy exactly), is new; blocks a coarse changed map
names that did not change get no vector."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from framestream.media.encoder import _i420_planes
from framestream.media.motion import MB, Motion, carried, moved_macroblocks, spread

W, H = 480, 320


def planes(bgrx: np.ndarray) -> list[np.ndarray]:
    return _i420_planes(cv2.cvtColor(bgrx, cv2.COLOR_BGRA2YUV_I420), bgrx.shape[1], bgrx.shape[0])


def textured(seed: int, height: int = H) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return cv2.resize(rng.integers(0, 255, (height // 8, W // 8, 4), np.uint8), (W, height),
                      interpolation=cv2.INTER_NEAREST)


def changed_map(before: list[np.ndarray], after: list[np.ndarray]) -> np.ndarray:
    rows, columns = H // MB, W // MB
    differs = (before[0] != after[0]).reshape(rows, MB, columns, MB).any(axis=(1, 3))
    chroma = [(b != a).reshape(rows, MB // 2, columns, MB // 2).any(axis=(1, 3))
              for b, a in zip(before[1:], after[1:], strict=True)]
    return differs | chroma[0] | chroma[1]


def assert_exact(motion_vectors: np.ndarray, before: list[np.ndarray], after: list[np.ndarray],
                 blocks: np.ndarray) -> None:
    """Every block in `blocks` equals the one its vector moved there, in all three planes."""
    for r, c in np.argwhere(blocks):
        dx, dy = motion_vectors[r, c]
        for index, plane in enumerate(after):
            size, scale = (MB, 1) if index == 0 else (MB // 2, 2)
            y, x = r * size, c * size
            source = before[index][y - dy // scale : y - dy // scale + size, x - dx // scale : x - dx // scale + size]
            assert np.array_equal(plane[y : y + size, x : x + size], source), (r, c, dx, dy)


def box_on(background: np.ndarray, x: int, y: int) -> np.ndarray:
    page = background.copy()
    cv2.rectangle(page, (x, y), (x + 99, y + 79), (30, 160, 220, 255), -1)
    cv2.putText(page, "box", (x + 10, y + 50), cv2.FONT_HERSHEY_SIMPLEX, 1.0, (0, 0, 0, 255), 2)
    return page


@pytest.mark.parametrize("shift", [(36, 0), (-18, 0), (0, 22), (24, -10)])
def test_a_box_moved_over_white_is_found_and_every_named_block_copies(shift: tuple[int, int]) -> None:
    white = np.full((H, W, 4), 255, np.uint8)
    before, after = planes(box_on(white, 140, 100)), planes(box_on(white, 140 + shift[0], 100 + shift[1]))
    changed = changed_map(before, after)
    motion = moved_macroblocks(after, before, changed)
    assert not motion.new.any(), np.argwhere(motion.new)
    assert shift in motion.main_shifts()
    assert_exact(motion.vectors, before, after, changed)
    assert not motion.vectors[~changed].any()


def test_a_scroll_leaves_only_the_strip_that_came_into_view_new() -> None:
    tall = textured(1, 2 * H)
    before, after = planes(np.ascontiguousarray(tall[40 : 40 + H])), planes(np.ascontiguousarray(tall[52 : 52 + H]))
    changed = np.ones((H // MB, W // MB), bool)  # a scroll damages everything
    motion = moved_macroblocks(after, before, changed)
    assert motion.main_shifts()[0] == (0, -12)
    new_rows = np.flatnonzero(motion.new.any(axis=1))
    assert new_rows.tolist() == [H // MB - 1], new_rows  # 12 rows came in at the bottom: one block row
    assert_exact(motion.vectors, before, after, changed & ~motion.new)


def test_an_odd_shift_is_new_and_blocks_that_did_not_change_get_no_vector() -> None:
    base = textured(2)
    moved = base.copy()
    moved[64:192, 96:320] = base[64:192, 95:319]  # a region moved one pixel right
    before, after = planes(base), planes(moved)
    changed = np.zeros((H // MB, W // MB), bool)
    changed[2:14, 4:22] = True  # coarser than what changed
    motion = moved_macroblocks(after, before, changed)
    truly = changed_map(before, after)
    assert motion.new[truly].all(), "an odd shift does not copy chroma exactly: new"
    assert not motion.new[changed & ~truly].any() and not motion.vectors[changed & ~truly].any()


def test_a_box_leaving_the_left_edge_is_found_though_it_moved_in_from_outside_what_is_matched() -> None:
    """Guesses match profiles against the reference widened by the search; at an edge the widening is the edge
    repeated, as a decoder pads. A box at x 0 moving right was new whole (an intra box a picture) until then."""
    def solid_box(x: int) -> np.ndarray:  # one colour: its middle lines up with any shift, only its edges tell
        page = np.full((H, W, 4), 255, np.uint8)
        cv2.rectangle(page, (x, 96), (x + 239, 223), (220, 90, 30, 255), -1)
        return page

    before, after = planes(solid_box(0)), planes(solid_box(4))
    changed = changed_map(before, after)
    motion = moved_macroblocks(after, before, changed)
    assert motion.main_shifts()[0] == (4, 0)
    # Only the column at the edge is new: its source would lie outside the picture.
    assert set(np.argwhere(motion.new)[:, 1].tolist()) == {0}
    assert_exact(motion.vectors, before, after, changed & ~motion.new)


def lines_page(height: int) -> np.ndarray:
    """Short lines of text on white, with white between them and beside them."""
    page = np.full((height, W, 4), 255, np.uint8)
    for line in range(height // 40):
        cv2.putText(page, f"line {line} of text", (16 + 50 * (line % 3), 28 + 40 * line), cv2.FONT_HERSHEY_SIMPLEX,
                    0.6, (20, 20, 20, 255), 1, cv2.LINE_AA)
    return page


def test_still_white_amid_a_scroll_takes_the_scroll_s_vector_where_it_copies_exactly() -> None:
    tall = lines_page(2 * H)
    before, after = planes(np.ascontiguousarray(tall[40 : 40 + H])), planes(np.ascontiguousarray(tall[52 : 52 + H]))
    changed = changed_map(before, after)  # exact: white between the lines did not change
    motion = moved_macroblocks(after, before, changed)
    assert motion.main_shifts()[0] == (0, -12)
    still = changed_map(before, after) == 0
    assert (~motion.moved_blocks & still).sum() > 100, "white blocks in place, vector 0, between moved lines"
    wide = spread(motion, after, before)
    assert wide.taken == motion.taken and np.array_equal(wide.new, motion.new)
    given = wide.moved_blocks & ~motion.moved_blocks
    assert given.sum() > 100
    assert (wide.vectors[given] == (0, -12)).all()
    assert_exact(wide.vectors, before, after, wide.moved_blocks)  # every vector given copies exactly
    # Within the box of what the scroll moved, what was left at vector 0 does not copy under the shift.
    rows, columns = np.flatnonzero(motion.moved_blocks.any(axis=1)), np.flatnonzero(motion.moved_blocks.any(axis=0))
    for r, c in np.argwhere(still & ~wide.moved_blocks & ~motion.new):
        y = r * MB
        if rows[0] <= r <= rows[-1] and columns[0] <= c <= columns[-1] and y + 12 + MB <= H:
            assert not np.array_equal(after[0][y : y + MB, c * MB : c * MB + MB],
                                      before[0][y + 12 : y + 12 + MB, c * MB : c * MB + MB]) or \
                not all(np.array_equal(a[y // 2 : y // 2 + 8, c * 8 : c * 8 + 8],
                                       b[y // 2 + 6 : y // 2 + 14, c * 8 : c * 8 + 8])
                        for a, b in zip(after[1:], before[1:], strict=True)), (r, c)
    nothing = Motion(np.zeros_like(motion.vectors), motion.new, {})
    assert spread(nothing, after, before) is nothing


def test_previous_shifts_are_tried_first_and_nothing_changed_is_nothing() -> None:
    white = np.full((H, W, 4), 255, np.uint8)
    before, after = planes(box_on(white, 100, 100)), planes(box_on(white, 120, 100))
    changed = changed_map(before, after)
    motion = moved_macroblocks(after, before, changed, previous=[(20, 0)])
    assert motion.main_shifts()[0] == (20, 0) and not motion.new.any()
    nothing = moved_macroblocks(after, after, np.zeros_like(changed))
    assert not nothing.moved and not nothing.new.any()


def test_lossy_blocks_are_carried_with_what_moved_and_new_blocks_are_lossy() -> None:
    rows, columns = 4, 6
    vectors = np.zeros((rows, columns, 2), np.int32)
    vectors[1, 2] = (16, 0)  # from block (1, 1): lossy
    vectors[1, 3] = (8, 0)  # from blocks (1, 2) and (1, 3): neither lossy before
    vectors[2, 4] = (-8, -16)  # from blocks (3, 4) and (3, 5): (3, 5) lossy
    new = np.zeros((rows, columns), bool)
    new[0, 0] = True
    lossy = np.zeros((rows, columns), bool)
    lossy[1, 1] = lossy[3, 5] = lossy[0, 3] = True
    after = carried(lossy, Motion(vectors, new, {(16, 0): 1, (8, 0): 1, (-8, -16): 1}))
    want = lossy.copy()
    want[0, 0] = True  # new
    want[1, 2] = True  # copied from a lossy block
    want[1, 3] = False  # copied from sharp blocks: sharp
    want[2, 4] = True
    assert np.array_equal(after, want)
