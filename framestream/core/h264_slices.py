"""Slices of a P picture written without an encoder: macroblocks that stay or move, and intra rows placed in.

A picture whose change is content moved by whole pixels (a scroll, a box carried across the page) plus a little
new content needs no encoder for most of it. Each macroblock that is as before, or is what the decoder makes of the
picture before moved by whole pixels (media/motion.py: under an odd shift its chroma is averaged across half a
sample), becomes a P macroblock with that motion vector and no residual: a P_Skip where its predicted vector is that
one, otherwise P_L0_16x16 with the difference (mvd) and coded_block_pattern 0. The decoder predicts from the pixels
it already shows, so the copy is exact and costs a few bits. Rows holding anything new come from another encoder
as slices of their own, moved to their place by rewriting their headers (`placed_slice`): an I slice predicts only
from itself, so it decodes the same anywhere; a P slice only where its reference holds what its encoder's did
(media/inter_band.py).

Deblocking: our P slices switch it off (disable_deblocking_filter_idc 1) since a copy must stay a copy, and a placed
slice filters only inside itself (2), as its encoder did at its own picture's edges.

CAVLC only (constrained baseline, which every decoder takes); a CABAC stream raises. Pure: arrays in, NAL units out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from framestream.core._slices import p_slice_rbsp
from framestream.core.h264 import NAL_SLICE
from framestream.core.h264_bits import (
    SLICE_P,
    BitWriter,
    ForeignSlice,
    H264SyntaxError,
    Pps,
    Sps,
    escape,
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


def p_slice(picture: PictureHeader, first_mb: int, mv: npt.NDArray[np.int32], count: int | None = None) -> bytes:
    """A P slice of `count` macroblocks from address `first_mb` (all of `mv`'s when None) that copy the
    reference moved by `mv`, in quarter pixels (x, y), with no residual: each a P_Skip where its vector is the one
    P_Skip predicts (8.4.1.1), else P_L0_16x16 with its difference from the median prediction (8.4.1.3). `mv`
    (rows, columns, 2) holds the whole rows the slice touches, from the row `first_mb` is in. Its blocks are
    written in C (`_slices.c`)."""
    columns = picture.sps.mb_width
    row, first = divmod(first_mb, columns)
    if mv.ndim != 3 or mv.shape[1] != columns or mv.shape[2] != 2:
        raise ValueError(f"vectors are {mv.shape}, want (rows, {columns}, 2)")
    total = mv.shape[0] * columns - first if count is None else count
    if first_mb < 0 or total <= 0 or first + total > mv.shape[0] * columns or \
            row + mv.shape[0] > picture.sps.mb_height:
        raise ValueError("the slice's macroblocks lie outside the picture or its vectors")
    rows = -(-(first + total) // columns)  # the rows the slice reaches: neighbours are never below it
    vectors = np.ascontiguousarray(mv[:rows], np.int32)
    header = _header(picture, first_mb, SLICE_P, picture.pps.pic_init_qp, (1, 0, 0))
    rbsp = p_slice_rbsp(header.value.to_bytes(-(-header.count // 8), "big"), header.count, vectors.data, columns,
                        first, total)
    return bytes([_REF_IDC << 5 | NAL_SLICE]) + escape(rbsp)


def placed_slice(picture: PictureHeader, first_mb: int, foreign: ForeignSlice) -> bytes:
    """`foreign`, a slice of another encoder's picture whose blocks lie in the same order here (one row of it, or
    whole rows of a picture as wide as this one), as this picture's slice from address `first_mb`."""
    idc = 2 if foreign.deblocking_idc == 0 else foreign.deblocking_idc  # its edges were picture edges: unfiltered
    w = _header(picture, first_mb, foreign.kind, foreign.qp, (idc, foreign.alpha_offset, foreign.beta_offset))
    w.u(foreign.data_bits, foreign.data)  # shifted in as one integer: no string of its bits (a band's is 10-40 KB)
    return bytes([_REF_IDC << 5 | NAL_SLICE]) + escape(w.rbsp())
