"""P pictures made of copies: moved and unchanged macroblocks written by us, new rows encoded apart by libx264.

x264 pays a fixed cost for every macroblock of a picture, about 4.7 ms of CPU at 2560x1600 even when all are
unchanged (docs/performance.md, "Where the time goes"). When content moved, `MovedPictures.write` makes the picture
instead: the rows without new content are P slices of copies (core/h264_slices.py), and each run of rows with new
content is encoded by an x264 of that band's size as an intra picture whose slice is placed at its rows. Such a
band predicts only from itself, so x264's own reference never matters; x264's main encoder, which did not see
these pictures, needs an IDR before its next picture (H264Encoder keeps track).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from framestream.core.h264 import NAL_IDR, NAL_PPS, NAL_SPS, nal_type, split_annexb
from framestream.core.h264_bits import H264SyntaxError, Pps, Sps, parse_intra_slice, parse_pps, parse_sps
from framestream.core.h264_slices import PictureHeader, p_slice, placed_intra_slice
from framestream.media.motion import MB, Motion, runs
from framestream.media.x264 import X264Encoder

_START = b"\x00\x00\x00\x01"
_BOX_ENCODERS = 8  # box sizes kept open (a counter's, a scroll's strip)
_ALIGN = 4  # box widths in blocks are multiples of this, so a growing counter reuses its encoder

# (width, height, blocks a slice) -> an x264 encoder of that size at a constant QP given per picture, which
# ends a slice after that many blocks.
BandEncoderFactory = Callable[[int, int, int], X264Encoder]


def stream_headers(access_unit: bytes) -> tuple[Sps, Pps] | None:
    """The SPS and PPS an access unit carries (x264 repeats them before every IDR), or None."""
    units = split_annexb(access_unit)
    sps = [parse_sps(u) for u in units if nal_type(u) == NAL_SPS]
    pps = [parse_pps(u) for u in units if nal_type(u) == NAL_PPS]
    return (sps[0], pps[0]) if sps and pps else None


def _i420_box(planes: list[npt.NDArray[np.uint8]], top: int, bottom: int, left: int, right: int,
              ) -> npt.NDArray[np.uint8]:
    """A box of an I420 picture (even edges) as one contiguous I420 buffer (Y, U, V)."""
    luma, u, v = planes
    return np.concatenate([luma[top:bottom, left:right].reshape(-1),
                           u[top // 2 : bottom // 2, left // 2 : right // 2].reshape(-1),
                           v[top // 2 : bottom // 2, left // 2 : right // 2].reshape(-1)])


class MovedPictures:
    """Writes P pictures from a `Motion` for one stream, whose SPS and PPS `use_headers` gives."""

    def __init__(self, width: int, height: int, band_encoder: BandEncoderFactory) -> None:
        if width % MB or height % MB:
            raise ValueError(f"pictures of whole macroblocks only, got {width}x{height}")
        self.width, self.height = width, height
        self._band_encoder = band_encoder
        self._boxes: OrderedDict[tuple[int, int], tuple[X264Encoder, Sps, Pps]] = OrderedDict()
        self._headers: tuple[Sps, Pps] | None = None
        self._pts = 0

    def use_headers(self, sps: Sps, pps: Pps) -> None:
        if (sps.mb_width * MB, sps.mb_height * MB) != (self.width, self.height):
            raise H264SyntaxError("the stream's SPS is of another size")
        self._headers = (sps, pps)

    @property
    def ready(self) -> bool:
        return self._headers is not None

    def write(self, planes: list[npt.NDArray[np.uint8]], motion: Motion, *, qp: int, frame_num: int,
              poc_lsb: int) -> bytes:
        """The access unit of the current picture `planes` (Y, U, V), whose changed macroblocks `motion` says
        how to make: copied from the reference by its vectors, or new (encoded by x264)."""
        if self._headers is None:
            raise H264SyntaxError("no SPS and PPS yet: the stream starts with an IDR from x264")
        sps, pps = self._headers
        picture = PictureHeader(sps, pps, frame_num=frame_num, poc_lsb=poc_lsb)
        columns, total = sps.mb_width, sps.mb_width * sps.mb_height
        # The new blocks of each run of rows, as one box a whole number of _ALIGN blocks wide: one intra slice
        # a row, in raster order among P slices that hold everything else.
        intra: list[tuple[int, int, bytes]] = []  # (first block, blocks, slice)
        for top, bottom in runs(motion.new.any(axis=1)):
            new_columns = np.flatnonzero(motion.new[top:bottom].any(axis=0))
            left = int(new_columns[0]) // _ALIGN * _ALIGN
            right = min(columns, -(-(int(new_columns[-1]) + 1) // _ALIGN) * _ALIGN)
            for row, unit in enumerate(self._intra(picture, planes, (top, bottom), (left, right), qp)):
                intra.append(((top + row) * columns + left, right - left, unit))
        # A vector is where the reference is read: minus the shift, in quarter pixels.
        vectors = -4 * motion.vectors
        units: list[bytes] = []
        address = 0
        for first, count, unit in [*intra, (total, 0, b"")]:
            if first > address:
                rows = slice(address // columns, (first - 1) // columns + 1)
                units.append(p_slice(picture, address, vectors[rows], first - address))
            if count:
                units.append(unit)
            address = first + count
        return b"".join(_START + unit for unit in units)

    def _intra(self, picture: PictureHeader, planes: list[npt.NDArray[np.uint8]], rows: tuple[int, int],
               columns: tuple[int, int], qp: int) -> list[bytes]:
        """The box of blocks `rows` x `columns` encoded by x264 as an IDR of one slice a row, each slice made
        this picture's own."""
        height, width = rows[1] - rows[0], columns[1] - columns[0]
        encoder, sps, pps = self._box_encoder(width, height)
        if pps.chroma_qp_offset != picture.pps.chroma_qp_offset or pps.cabac != picture.pps.cabac:
            raise H264SyntaxError("the band encoder's PPS does not decode like the stream's")
        box = _i420_box(planes, rows[0] * MB, rows[1] * MB, columns[0] * MB, columns[1] * MB)
        data, _ = encoder.encode(box, self._pts, keyframe=True, qp=qp)
        self._pts += 1
        slices = [parse_intra_slice(unit, sps, pps) for unit in split_annexb(data) if nal_type(unit) == NAL_IDR]
        if [s.first_mb for s in slices] != list(range(0, width * height, width)):
            raise H264SyntaxError("x264 did not write one slice a row")
        columns_in_picture = picture.sps.mb_width
        return [placed_intra_slice(picture, (rows[0] + row) * columns_in_picture + columns[0], s)
                for row, s in enumerate(slices)]

    def _box_encoder(self, width: int, height: int) -> tuple[X264Encoder, Sps, Pps]:
        """An x264 for boxes of `width` x `height` blocks (kept for the next such box)."""
        key = (width, height)
        if key in self._boxes:
            self._boxes.move_to_end(key)
            return self._boxes[key]
        encoder = self._band_encoder(width * MB, height * MB, width)
        # Its SPS and PPS come with its first IDR; a blank box brings them out.
        data, _ = encoder.encode(np.zeros(width * height * MB * MB * 3 // 2, np.uint8), self._pts, keyframe=True,
                                 qp=30)
        self._pts += 1
        headers = stream_headers(data)
        if headers is None:
            encoder.close()
            raise H264SyntaxError("x264 wrote an IDR without SPS and PPS")
        self._boxes[key] = entry = (encoder, *headers)
        while len(self._boxes) > _BOX_ENCODERS:
            self._boxes.popitem(last=False)[1][0].close()
        return entry

    def close(self) -> None:
        for encoder, _, _ in self._boxes.values():
            encoder.close()
        self._boxes.clear()
