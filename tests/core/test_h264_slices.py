"""core/h264_slices.py: P slices of copies (written in C, core/_slices.c) checked bit for bit against slices written
block by block in Python with the predictions H.264's 8.4.1.1 and 8.4.1.3 make, over random vector fields (a
decoder's copy of such slices: tests/media)."""

from __future__ import annotations

import numpy as np
import pytest

from framestream.core.h264_bits import SLICE_P, H264SyntaxError, Pps, Sps, escape
from framestream.core.h264_slices import PictureHeader, _header, p_slice

Vector = tuple[int, int]


def _median(a: Vector, b: Vector, c: Vector) -> Vector:
    return (sorted([a[0], b[0], c[0]])[1], sorted([a[1], b[1], c[1]])[1])


def _by_the_standard(mv: np.ndarray, first: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """mvpLX and P_Skip's vector of each 16x16 block of a slice that starts at block `first` of row 0, as 8.4.1
    says, one by one."""
    rows, columns, _ = mv.shape
    mvp, skip = np.zeros_like(mv), np.zeros_like(mv)

    def neighbour(r: int, c: int) -> tuple[int, Vector]:
        """(refIdx, mv) of block (r, c): -1 and 0 when not available (outside the picture or the slice)."""
        if 0 <= r < rows and 0 <= c < columns and r * columns + c >= first:
            return 0, (int(mv[r, c, 0]), int(mv[r, c, 1]))
        return -1, (0, 0)

    for r in range(rows):
        for c in range(columns):
            a, b, cc = neighbour(r, c - 1), neighbour(r - 1, c), neighbour(r - 1, c + 1)
            skip_is_still = a[0] < 0 or b[0] < 0 or a[1] == (0, 0) or b[1] == (0, 0)  # 8.4.1.1: A, B as they are
            if cc[0] < 0:
                cc = neighbour(r - 1, c - 1)  # D stands in for a missing C
            if b[0] < 0 and cc[0] < 0 and a[0] >= 0:
                b = cc = a
            matching = [n for n in (a, b, cc) if n[0] == 0]
            pred = matching[0][1] if len(matching) == 1 else _median(a[1], b[1], cc[1])
            mvp[r, c] = pred
            skip[r, c] = (0, 0) if skip_is_still else pred
    return mvp, skip


def _slice_by_the_standard(picture: PictureHeader, first_mb: int, mv: np.ndarray, count: int) -> bytes:
    """The slice p_slice must write, block by block: a P_Skip where the block's vector is P_Skip's, otherwise a skip
    run, mb_type P_L0_16x16 (ue 0), mvd x and y (se) and coded_block_pattern 0 (ue 0); then the last skip run."""
    columns = picture.sps.mb_width
    first = first_mb % columns
    mvp, skip = _by_the_standard(mv, first)
    w = _header(picture, first_mb, SLICE_P, picture.pps.pic_init_qp, (1, 0, 0))
    run = 0
    for address in range(first, first + count):
        r, c = divmod(address, columns)
        if tuple(mv[r, c]) == tuple(skip[r, c]):
            run += 1
            continue
        w.ue(run)
        w.ue(0)
        w.se(int(mv[r, c, 0] - mvp[r, c, 0]))
        w.se(int(mv[r, c, 1] - mvp[r, c, 1]))
        w.ue(0)
        run = 0
    if run:
        w.ue(run)
    return bytes([0x41]) + escape(w.rbsp())


@pytest.mark.parametrize("seed", range(60))
def test_slices_are_the_standards_on_random_vector_fields(seed: int) -> None:
    rng = np.random.default_rng(seed)
    rows, columns = int(rng.integers(1, 7)), int(rng.integers(2, 9))
    # Few distinct vectors and many zeros, as moved content has: runs, medians of equal values, skips; and the
    # largest vectors a level allows (long codes).
    choices = np.array([[0, 0], [0, 0], [8, 0], [-24, 4], [0, -16], [144, 0], [4, 4], [-1016, 1016]], np.int32)
    mv = choices[rng.integers(0, len(choices), (rows, columns))]
    first = int(rng.integers(0, columns)) if seed % 2 else 0  # a slice may start anywhere in its first row
    top = int(rng.integers(0, 3))  # and in any row of the picture
    count = rows * columns - first if seed % 3 else int(rng.integers(1, rows * columns - first + 1))
    picture = _picture(columns, top + rows)
    want = _slice_by_the_standard(picture, top * columns + first, mv, count)
    assert p_slice(picture, top * columns + first, mv, count) == want
    if seed % 3:  # all the blocks from `first` on, by default
        assert p_slice(picture, top * columns + first, mv) == want


def test_a_slice_reads_strided_vectors_and_only_its_own_rows() -> None:
    """A window of a larger field (the picture's vectors, every other column) and rows below the slice's, which
    its blocks do not predict from: the slice is the same as from its own rows, copied."""
    rng = np.random.default_rng(7)
    field = rng.integers(-8, 9, (4, 12, 2)).astype(np.int32) * 4
    window = field[:, ::2]
    picture = _picture(6, 4)
    want = _slice_by_the_standard(picture, 3, np.ascontiguousarray(window[:2]), 7)
    assert p_slice(picture, 3, window, 7) == want


def _picture(width_mbs: int = 4, height_mbs: int = 3, **pps: object) -> PictureHeader:
    fields = {"pps_id": 0, "sps_id": 0, "cabac": False, "pic_init_qp": 26, "chroma_qp_offset": 0,
              "deblocking_control": True, "bottom_field_poc": False, "redundant_pic_cnt": False,
              "weighted_pred": False} | pps
    return PictureHeader(Sps(0, 4, 2, 0, width_mbs, height_mbs), Pps(**fields), frame_num=1)  # type: ignore[arg-type]


def test_a_slice_must_fit_the_picture_and_the_stream_must_be_cavlc() -> None:
    picture = _picture()
    with pytest.raises(ValueError):
        p_slice(picture, 0, np.zeros((1, 3, 2), np.int32))  # the picture is 4 blocks wide
    with pytest.raises(ValueError):
        p_slice(picture, 8, np.zeros((2, 4, 2), np.int32))  # rows 2-3 of 3
    with pytest.raises(ValueError):
        p_slice(picture, 1, np.zeros((1, 4, 2), np.int32), 4)  # 4 blocks from the second of a row of 4
    with pytest.raises(H264SyntaxError):
        _picture(cabac=True)
    with pytest.raises(H264SyntaxError):
        _picture(deblocking_control=False)


def test_a_slice_of_unchanged_blocks_is_one_skip_run() -> None:
    nal = p_slice(_picture(), 0, np.zeros((3, 4, 2), np.int32))
    header = ["1", "1", "1",  # first_mb_in_slice 0, slice_type P, pic_parameter_set_id 0
              "0001",  # frame_num 1 (4 bits)
              "1", "1", "0",  # num_ref_idx_active_override, one reference, no list modification
              "0", "1", "010"]  # sliding window, slice_qp_delta 0, disable_deblocking_filter_idc 1
    bits = "".join(header) + "0001101" + "1"  # mb_skip_run 12, then the stop bit
    bits += "0" * (-len(bits) % 8)
    assert nal == bytes([0x41]) + int(bits, 2).to_bytes(len(bits) // 8, "big")
