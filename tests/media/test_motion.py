"""media/motion.py on synthetic pictures: what moved is found and every block it names is what a decoder's copy
shows, exactly (tests/media/decoded_copy.py: under an odd shift, chroma averaged across half a sample); what is new,
or moved by an odd shift where that average is not the picture's chroma, is new; blocks a coarse changed map names
that did not change get no vector."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from framestream.media.encoder import _i420_planes
from framestream.media.motion import MB, Motion, carried, moved_macroblocks, spread
from tests.media.decoded_copy import copies_exactly

W, H = 480, 320


def planes(bgrx: np.ndarray) -> list[np.ndarray]:
    return _i420_planes(cv2.cvtColor(bgrx, cv2.COLOR_BGRA2YUV_I420), bgrx.shape[1], bgrx.shape[0])


def textured(seed: int, height: int = H, cell: int = 8) -> np.ndarray:
    """Random colours in squares of `cell` pixels."""
    rng = np.random.default_rng(seed)
    return cv2.resize(rng.integers(0, 255, (height // cell, W // cell, 4), np.uint8), (W, height),
                      interpolation=cv2.INTER_NEAREST)


def changed_map(before: list[np.ndarray], after: list[np.ndarray]) -> np.ndarray:
    rows, columns = H // MB, W // MB
    differs = (before[0] != after[0]).reshape(rows, MB, columns, MB).any(axis=(1, 3))
    chroma = [(b != a).reshape(rows, MB // 2, columns, MB // 2).any(axis=(1, 3))
              for b, a in zip(before[1:], after[1:], strict=True)]
    return differs | chroma[0] | chroma[1]


def assert_exact(motion_vectors: np.ndarray, before: list[np.ndarray], after: list[np.ndarray],
                 blocks: np.ndarray) -> None:
    """Every block in `blocks` is, in all three planes, what a decoder shows when it copies it by its vector."""
    for r, c in np.argwhere(blocks):
        dx, dy = motion_vectors[r, c]
        assert copies_exactly(after, before, int(r), int(c), (int(dx), int(dy))), (r, c, dx, dy)


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
    assert shift in motion.main_shifts() and motion.blurred == 0
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


def test_fine_colour_moved_by_an_odd_shift_is_new_and_blocks_that_did_not_change_get_no_vector() -> None:
    base = textured(2)
    moved = base.copy()
    moved[64:192, 96:320] = base[64:192, 95:319]  # a region moved one pixel right
    before, after = planes(base), planes(moved)
    changed = np.zeros((H // MB, W // MB), bool)
    changed[2:14, 4:22] = True  # coarser than what changed
    motion = moved_macroblocks(after, before, changed)
    truly = changed_map(before, after)
    assert motion.new[truly].all(), "chroma averaged across half a sample is not fine detail's: new"
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


@pytest.mark.parametrize("shift", [(0, -13), (0, 7), (-5, 0), (3, -9)])
def test_grey_text_and_flat_colour_moved_by_an_odd_shift_copy_but_for_the_colour_s_edges(
        shift: tuple[int, int]) -> None:
    """At dpr 1 a page rounds CSS pixels, so a scroll's shifts are odd as often as not. Chroma then moves by half a
    sample, which a decoder averages: exact on grey text and inside a flat colour, not where the colour changes."""
    dx, dy = shift
    tall = lines_page(2 * H)
    cv2.rectangle(tall, (200, 230), (360, 300), (220, 90, 30, 255), -1)
    before = planes(np.ascontiguousarray(tall[80 : 80 + H, 40 : 40 + W - 64]))
    after = planes(np.ascontiguousarray(tall[80 - dy : 80 - dy + H, 40 - dx : 40 - dx + W - 64]))
    changed = np.ones(before[0].shape, bool).reshape(H // MB, MB, (W - 64) // MB, MB).any(axis=(1, 3))
    motion = moved_macroblocks(after, before, changed)
    assert motion.main_shifts()[0] == shift
    assert_exact(motion.vectors, before, after, changed & ~motion.new)
    # New: what came into view, and blocks holding the colour's edges (in the picture before or now).
    edges = np.zeros((2 * H, W), bool)
    edges[228:303, 198:363] = True
    edges[232:299, 202:359] = False
    near = [np.ascontiguousarray(edges[80 - y : 80 - y + H, 40 - x : 40 - x + W - 64]) for x, y in ((0, 0), shift)]
    near_edges = (near[0] | near[1]).reshape(H // MB, MB, (W - 64) // MB, MB).any(axis=(1, 3))
    columns = changed.shape[1]
    came_in = np.zeros_like(changed)  # blocks whose source lies outside the picture before
    came_in[: -(-dy // MB)] |= dy > 0
    came_in[(H + dy) // MB :] |= dy < 0
    came_in[:, : -(-dx // MB)] |= dx > 0
    came_in[:, (columns * MB + dx) // MB :] |= dx < 0
    assert not (motion.new & ~near_edges & ~came_in).any(), np.argwhere(motion.new & ~near_edges & ~came_in)
    assert motion.new[near_edges & ~came_in].any(), "the colour's edges do not copy under half a sample"
    # Those the shift copies in luma are counted as blurred (x264's residual does them cheaper than our intra).
    luma = np.array([[np.array_equal(after[0][r * MB : r * MB + MB, c * MB : c * MB + MB],
                                     before[0][r * MB - dy : r * MB - dy + MB, c * MB - dx : c * MB - dx + MB])
                      for c in range(columns)] for r in range(changed.shape[0])]) & ~came_in
    assert motion.blurred == int((luma & motion.new).sum()) > 0


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


@pytest.mark.parametrize("seed", range(20))
def test_lossy_blocks_are_carried_as_defined_on_random_motion(seed: int) -> None:
    """The C loop (media/_blocks.c) against the definition, block by block: a moved block is lossy when any block
    its source overlaps was (one, two or four of them, by whether the shift is on the grid), another when it was
    or is new; shifts of every alignment, sources up to the picture's edges."""
    rng = np.random.default_rng(seed)
    rows, columns = int(rng.integers(1, 9)), int(rng.integers(1, 11))
    lossy, new = rng.random((rows, columns)) < 0.3, rng.random((rows, columns)) < 0.2
    vectors = np.zeros((rows, columns, 2), np.int32)
    for r, c in np.argwhere(rng.random((rows, columns)) < 0.5):
        # A source anywhere inside the picture, on or off the grid, odd or even.
        y, x = int(rng.integers(0, rows * MB - MB + 1)), int(rng.integers(0, columns * MB - MB + 1))
        vectors[r, c] = (c * MB - x, r * MB - y)
    moved = (vectors != 0).any(axis=2)
    new &= ~moved  # a block is moved or new, never both
    want = lossy | new
    for r, c in np.argwhere(moved):
        dx, dy = vectors[r, c]
        y, x = r * MB - dy, c * MB - dx
        want[r, c] = lossy[y // MB : -(-(y + MB) // MB), x // MB : -(-(x + MB) // MB)].any()
    got = carried(lossy, Motion(vectors, new, {(1, 1): 1}))
    assert np.array_equal(got, want)
    with pytest.raises(ValueError):  # maps of another shape than the vectors'
        carried(lossy[:, :-1], Motion(vectors, new, {(1, 1): 1}))


def averaged(chroma: np.ndarray, shift: tuple[int, int]) -> np.ndarray:
    """A chroma plane as a decoder predicts it under the luma shift `shift` (8.4.2.2.2), wrapping at the edges."""
    vx, vy = -4 * shift[0], -4 * shift[1]
    fx, fy = vx & 7, vy & 7
    a = np.roll(chroma, (-(vy >> 3), -(vx >> 3)), axis=(0, 1)).astype(np.int32)
    b, c = np.roll(a, -1, axis=1), np.roll(a, -1, axis=0)
    d = np.roll(b, -1, axis=0)
    return np.asarray(((8 - fx) * (8 - fy) * a + fx * (8 - fy) * b + (8 - fx) * fy * c + fx * fy * d + 32) >> 6,
                      np.uint8)


def _equal_by_definition(now: list[np.ndarray], before: list[np.ndarray], rows: tuple[int, int],
                         columns: tuple[int, int], shift: tuple[int, int]) -> np.ndarray:
    """Block by block, all three planes: True where the block is what a decoder copies from the reference."""
    out = np.zeros((rows[1] - rows[0], columns[1] - columns[0]), bool)
    for r in range(*rows):
        for c in range(*columns):
            out[r - rows[0], c - columns[0]] = copies_exactly(now, before, r, c, shift)
    return out


@pytest.mark.parametrize("seed", range(12))
def test_the_block_check_is_the_definitions(seed: int) -> None:
    """The C check (media/_blocks.c) against the definition, on pictures where many blocks match under the shift
    (a moved copy with a few samples of one plane or another changed), for shifts inside and reaching past the
    picture's edges, on planes whose rows are wider than the picture (a view) as well as packed ones. Every third
    seed moves by an even shift; the others by odd ones (one direction or both), with the current chroma made as
    the decoder averages the reference's across half a sample, so detail matches only by the exact average."""
    from framestream.media.motion import _equal_blocks
    rng = np.random.default_rng(seed)
    before = planes(textured(seed))
    dx, dy = (int(v) * 2 for v in rng.integers(-120, 120, 2))
    now = planes(np.roll(textured(seed), (dy, dx), axis=(0, 1)))
    if seed % 3:
        dx, dy = dx + 1, dy + (seed % 3 - 1)
        now = [np.roll(before[0], (dy, dx), axis=(0, 1)), *(averaged(p, (dx, dy)) for p in before[1:])]
    for plane in now:  # single samples changed: blocks that differ in one plane alone
        for _ in range(8):
            plane[int(rng.integers(0, plane.shape[0])), int(rng.integers(0, plane.shape[1]))] ^= 0x40
    if seed % 2:  # views of wider rows
        now = [np.pad(p, ((0, 0), (0, 32)))[:, : p.shape[1]] for p in now]
    rows = (int(rng.integers(0, H // MB // 2)), int(rng.integers(H // MB // 2, H // MB + 1)))
    columns = (int(rng.integers(0, W // MB // 2)), int(rng.integers(W // MB // 2, W // MB + 1)))
    for shift in [(dx, dy), (0, 0), (dx, 0), (0, dy), (-W, 0), (0, H + 2), (W - MB + 1, 0), (0, -H + MB + 1)]:
        got = _equal_blocks(now, before, rows, columns, shift)
        assert np.array_equal(got, _equal_by_definition(now, before, rows, columns, shift)), shift
    found = _equal_blocks(now, before, (0, H // MB), (0, W // MB), (dx, dy))
    assert found.any()  # the moved copy is found
    if seed % 3:  # the chroma of the even shift either side is not the average
        for wrong in [(dx - 1, dy), (dx + 1, dy)] if dy % 2 == 0 else [(dx, dy - 1), (dx, dy + 1)]:
            assert not _equal_blocks(now, before, (0, H // MB), (0, W // MB), wrong).any()


def test_the_block_check_refuses_what_it_cannot_read() -> None:
    from framestream.media.motion import _equal_blocks
    now = planes(textured(1))
    with pytest.raises(ValueError):
        _equal_blocks(now, now, (0, H // MB + 1), (0, 2), (0, 0))  # rows past the picture
    with pytest.raises(ValueError):
        _equal_blocks([p[:, ::2] for p in now], now, (0, 2), (0, 2), (0, 0))  # samples not adjacent
