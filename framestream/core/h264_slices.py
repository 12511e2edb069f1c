"""Slices of a P picture written without an encoder: macroblocks that stay or move, and intra rows placed in.

A picture whose change is content moved by whole pixels (a scroll, a box carried across the page) plus a little
new content needs no encoder for most of it. Each macroblock that is as before, or is the picture before moved by
an even number of pixels (so its chroma moves by whole samples too), becomes a P macroblock with that motion vector
and no residual: a P_Skip where its predicted vector is that one, otherwise P_L0_16x16 with the difference (mvd)
and coded_block_pattern 0. The decoder copies the pixels it already shows, so the copy is exact and costs a few
bits. Rows holding anything new come from another encoder as slices of their own, moved to their place by
rewriting their headers (`placed_slice`): an I slice predicts only from itself, so it decodes the same anywhere;
a P slice only where its reference holds what its encoder's did (media/inter_band.py).

Deblocking: our P slices switch it off (disable_deblocking_filter_idc 1) since a copy must stay a copy, and a placed
slice filters only inside itself (2), as its encoder did at its own picture's edges.

CAVLC only (constrained baseline, which every decoder takes); a CABAC stream raises. Pure: arrays in, NAL units out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from framestream.core.h264 import NAL_SLICE
from framestream.core.h264_bits import (
    SLICE_P,
    BitWriter,
    ForeignSlice,
    H264SyntaxError,
    Pps,
    Sps,
    escape,
    se_bits,
    ue_bits,
)

_REF_IDC = 2  # a reference picture (x264 marks its P pictures so too)


@dataclass(frozen=True, slots=True)
class PictureHeader:
    """What every slice of one picture repeats."""

    sps: Sps
    pps: Pps
    frame_num: int
    poc_lsb: int = 0  # only written when the SPS's picture order count type is 0

    def __post_init__(self) -> None:
        if self.pps.cabac or self.pps.weighted_pred or not self.pps.deblocking_control:
            raise H264SyntaxError("slices are written for CAVLC streams without weighted prediction, whose PPS "
                                  "lets a slice switch deblocking")


def _header(picture: PictureHeader, first_mb: int, slice_type: int, qp: int, deblocking: tuple[int, int, int],
            ) -> BitWriter:
    sps, pps = picture.sps, picture.pps
    w = BitWriter()
    w.ue(first_mb)
    w.ue(slice_type)
    w.ue(pps.pps_id)
    w.u(sps.log2_max_frame_num, picture.frame_num % (1 << sps.log2_max_frame_num))
    if sps.poc_type == 0:
        w.u(sps.log2_max_poc_lsb, picture.poc_lsb % (1 << sps.log2_max_poc_lsb))
        if pps.bottom_field_poc:
            w.se(0)
    if pps.redundant_pic_cnt:
        w.ue(0)
    if slice_type == SLICE_P:
        w.u(1, 1)  # num_ref_idx_active_override_flag: one reference, so no ref_idx is coded
        w.ue(0)
        w.u(1, 0)  # ref_pic_list_modification_flag_l0
    w.u(1, 0)  # adaptive_ref_pic_marking_mode_flag: the sliding window, as x264's own pictures
    w.se(qp - pps.pic_init_qp)
    idc, alpha, beta = deblocking
    w.ue(idc)
    if idc != 1:
        w.se(alpha)
        w.se(beta)
    return w


def _nal(bits: str) -> bytes:
    """A slice NAL unit from its RBSP's bits before the stop bit."""
    bits += "1" + "0" * (-(len(bits) + 1) % 8)
    rbsp = int(bits, 2).to_bytes(len(bits) // 8, "big")
    return bytes([_REF_IDC << 5 | NAL_SLICE]) + escape(rbsp)


def _bits(value: int, count: int) -> str:
    return format(value, f"0{count}b") if count else ""


def _median(a: npt.NDArray[np.int32], b: npt.NDArray[np.int32], c: npt.NDArray[np.int32]) -> npt.NDArray[np.int32]:
    return np.asarray(a + b + c - np.minimum(np.minimum(a, b), c) - np.maximum(np.maximum(a, b), c), np.int32)


def _shifted(values: npt.NDArray[Any], dr: int, dc: int) -> npt.NDArray[Any]:
    """values[row + dr, column + dc] at each (row, column) (dr <= 0), zero (False) where that lies outside."""
    rows, columns = values.shape
    out = np.zeros_like(values)
    r0, c0, c1 = -dr, max(0, -dc), columns - max(0, dc)
    out[r0:, c0:c1] = values[: rows - r0, c0 + dc : c1 + dc]
    return out


def predictions(mv: npt.NDArray[np.int32], first: int = 0, there: npt.NDArray[np.bool_] | None = None,
                ) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int32]]:
    """(predicted vector, P_Skip's vector) of each macroblock of whole rows `mv` (rows, columns, 2) of 16x16
    inter macroblocks of reference 0, in a P slice that starts at column `first` of the first row (8.4.1.1,
    8.4.1.3). A neighbour is there when it is inside the picture and the slice: at or after its start (or where
    `there` says, for a window of the rows)."""
    rows, columns, _ = mv.shape
    if columns < 2:
        raise ValueError("a picture at least two macroblocks wide")
    if there is None:
        there = np.arange(rows * columns).reshape(rows, columns) >= first
    x, y = np.ascontiguousarray(mv[..., 0]), np.ascontiguousarray(mv[..., 1])
    # Each neighbour: there or not, and its vector (0 where not there). A left, B above, C above-right, D above-left.
    a_in, b_in, c_in, d_in = (_shifted(there, dr, dc) for dr, dc in ((0, -1), (-1, 0), (-1, 1), (-1, -1)))
    ax, bx, cx, dx = (_shifted(x, dr, dc) for dr, dc in ((0, -1), (-1, 0), (-1, 1), (-1, -1)))
    ay, by, cy, dy = (_shifted(y, dr, dc) for dr, dc in ((0, -1), (-1, 0), (-1, 1), (-1, -1)))
    # Before the slice a neighbour is not there: its vector counts as 0.
    for values, present in ((ax, a_in), (ay, a_in), (bx, b_in), (by, b_in), (cx, c_in), (cy, c_in), (dx, d_in),
                            (dy, d_in)):
        values[~present] = 0
    # P_Skip stays put when A or B is missing or still.
    still = ~a_in | ~b_in | ((ax == 0) & (ay == 0)) | ((bx == 0) & (by == 0))
    # C missing (the last column, or before the slice): D stands in.
    cx, cy, c_in = np.where(c_in, cx, dx), np.where(c_in, cy, dy), c_in | d_in
    # Only A there (the slice's first row): B and C take A's place.
    only_a = a_in & ~b_in & ~c_in
    bx, cx = np.where(only_a, ax, bx), np.where(only_a, ax, cx)
    by, cy = np.where(only_a, ay, by), np.where(only_a, ay, cy)
    b_in, c_in = b_in | only_a, c_in | only_a
    # Exactly one neighbour of reference 0 gives its vector; otherwise the median (a missing one counts as 0).
    one = (a_in.astype(np.int8) + b_in + c_in) == 1
    px = np.where(one, np.where(a_in, ax, np.where(b_in, bx, cx)), _median(ax, bx, cx))
    py = np.where(one, np.where(a_in, ay, np.where(b_in, by, cy)), _median(ay, by, cy))
    mvp = np.stack([px, py], axis=-1).astype(np.int32)
    skip = np.where(still[..., None], 0, mvp).astype(np.int32)
    return mvp, skip


def p_slice(picture: PictureHeader, first_mb: int, mv: npt.NDArray[np.int32], count: int | None = None) -> bytes:
    """A P slice of `count` macroblocks from address `first_mb` (all of `mv`'s when None) that copy the
    reference moved by `mv`, in quarter pixels (x, y), with no residual. `mv` (rows, columns, 2) holds the whole
    rows the slice touches, from the row `first_mb` is in."""
    columns = picture.sps.mb_width
    row, first = divmod(first_mb, columns)
    if mv.ndim != 3 or mv.shape[1] != columns or mv.shape[2] != 2:
        raise ValueError(f"vectors are {mv.shape}, want (rows, {columns}, 2)")
    total = mv.shape[0] * columns - first if count is None else count
    if first_mb < 0 or total <= 0 or first + total > mv.shape[0] * columns or \
            row + mv.shape[0] > picture.sps.mb_height:
        raise ValueError("the slice's macroblocks lie outside the picture or its vectors")
    mv = mv.astype(np.int32, copy=False)
    flat = mv.reshape(-1, 2)[first : first + total]
    coded, mvd = np.zeros(0, np.int64), np.zeros((0, 2), np.int32)
    moving = np.flatnonzero(flat.view(np.int64)) if flat.flags.c_contiguous else \
        np.flatnonzero((flat[:, 0] != 0) | (flat[:, 1] != 0))  # a vector (x, y) is 0 when its 8 bytes are
    if moving.size:
        # Blocks of vector 0 whose left or upper neighbour is still (or missing) are P_Skip: predict only over the
        # window from the row above the first that moves to the row after the last, and from the column left of
        # the leftmost that moves to the one after the column right of the rightmost (which C reads).
        lo = max(0, (first + int(moving[0])) // columns - 1)
        hi = min(mv.shape[0], (first + int(moving[-1])) // columns + 2)
        index = np.arange(lo * columns, hi * columns).reshape(hi - lo, columns)
        in_slice = (index >= first) & (index < first + total)
        window_mv = mv[lo:hi]
        moved_columns = np.flatnonzero(((window_mv[..., 0] != 0) | (window_mv[..., 1] != 0)) & in_slice)
        columns_moved = moved_columns % columns
        left, right = max(0, int(columns_moved.min()) - 1), min(columns, int(columns_moved.max()) + 2)
        if right - left < 2:  # predictions need two columns; the picture has them
            left, right = (left, left + 2) if left + 2 <= columns else (right - 2, right)
        part = np.ascontiguousarray(window_mv[:, left:right])
        mvp, skip_mv = predictions(part, there=index[:, left:right] >= first)
        skipped = (part[..., 0] == skip_mv[..., 0]) & (part[..., 1] == skip_mv[..., 1])
        coded_at = np.flatnonzero(~skipped & in_slice[:, left:right])
        mvd = part.reshape(-1, 2)[coded_at] - mvp.reshape(-1, 2)[coded_at]
        width = right - left
        coded = (lo + coded_at // width) * columns + left + coded_at % width - first  # positions in the slice
    header = _header(picture, first_mb, SLICE_P, picture.pps.pic_init_qp, (1, 0, 0))
    pieces = [_bits(header.value, header.count)]
    if coded.size:
        runs = np.diff(coded, prepend=-1) - 1
        keys = np.column_stack([runs, mvd])
        # Neighbours with the same run and difference write the same bits: one string repeated per group.
        starts = np.flatnonzero(np.concatenate([[True], (keys[1:] != keys[:-1]).any(axis=1)]))
        ends = np.append(starts[1:], len(keys))
        for group, stop in zip(starts.tolist(), ends.tolist(), strict=True):
            run, dx, dy = keys[group].tolist()
            # mb_skip_run, mb_type P_L0_16x16 (ue 0), mvd x and y, coded_block_pattern 0 (me: codeNum 0).
            token = _bits(*ue_bits(run)) + "1" + _bits(*se_bits(dx)) + _bits(*se_bits(dy)) + "1"
            pieces.append(token * (stop - group))
    trailing = total - 1 - int(coded[-1]) if coded.size else total
    if trailing:
        pieces.append(_bits(*ue_bits(trailing)))
    return _nal("".join(pieces))


def placed_slice(picture: PictureHeader, first_mb: int, foreign: ForeignSlice) -> bytes:
    """`foreign`, a slice of another encoder's picture whose blocks lie in the same order here (one row of it, or
    whole rows of a picture as wide as this one), as this picture's slice from address `first_mb`."""
    idc = 2 if foreign.deblocking_idc == 0 else foreign.deblocking_idc  # its edges were picture edges: unfiltered
    header = _header(picture, first_mb, foreign.kind, foreign.qp, (idc, foreign.alpha_offset, foreign.beta_offset))
    return _nal(_bits(header.value, header.count) + _bits(foreign.data, foreign.data_bits))
