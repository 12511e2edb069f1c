"""What a decoder shows for a macroblock copied from its reference, written from H.264's inter prediction
(8.4.2.2) rather than from our code: the definition tests of copies compare against, and which a real decoder
confirms (test_moved_pictures.py's random vectors)."""

from __future__ import annotations

import numpy as np

MB = 16


def decoded_copy(reference: np.ndarray, chroma: bool, row: int, column: int, shift: tuple[int, int],
                 ) -> np.ndarray | None:
    """Block (row, column) of a plane (luma, or a 4:2:0 chroma plane) copied from `reference` under the luma
    shift `shift` (current[x] is reference[x - shift]), a vector of minus the shift; None when its luma source
    leaves the picture (we write no such copy). Luma vectors are whole samples. A chroma vector is in eighths of a
    sample (8.4.1.4: the luma vector's quarters, as numbers), and its sample the weighted average of the four
    around it (8.4.2.2.2), read from the reference with its edges repeated (8.4.2.2)."""
    dx, dy = shift
    luma_rows, luma_columns = reference.shape[0] * (2 if chroma else 1), reference.shape[1] * (2 if chroma else 1)
    if not (0 <= row * MB - dy <= luma_rows - MB and 0 <= column * MB - dx <= luma_columns - MB):
        return None
    if not chroma:
        return reference[row * MB - dy : row * MB - dy + MB, column * MB - dx : column * MB - dx + MB]
    size = MB // 2
    vx, vy = -4 * dx, -4 * dy  # eighths of a chroma sample
    fx, fy = vx & 7, vy & 7
    ys = np.clip(row * size + (vy >> 3) + np.arange(size + 1), 0, reference.shape[0] - 1)
    xs = np.clip(column * size + (vx >> 3) + np.arange(size + 1), 0, reference.shape[1] - 1)
    around = reference[np.ix_(ys, xs)].astype(np.int32)
    a, b, c, d = around[:-1, :-1], around[:-1, 1:], around[1:, :-1], around[1:, 1:]
    return np.asarray(((8 - fx) * (8 - fy) * a + fx * (8 - fy) * b + (8 - fx) * fy * c + fx * fy * d + 32) >> 6,
                      np.uint8)


def copies_exactly(current: list[np.ndarray], reference: list[np.ndarray], row: int, column: int,
                   shift: tuple[int, int]) -> bool:
    """Whether block (row, column) of the I420 planes `current` is, in all three planes, what a decoder shows
    when it copies it from `reference` under `shift`."""
    for index, plane in enumerate(current):
        size = MB if index == 0 else MB // 2
        copy = decoded_copy(reference[index], index > 0, row, column, shift)
        block = plane[row * size : (row + 1) * size, column * size : (column + 1) * size]
        if copy is None or not np.array_equal(block, copy):
            return False
    return True
