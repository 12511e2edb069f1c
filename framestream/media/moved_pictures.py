"""P pictures made of copies: moved and unchanged macroblocks written by us, new rows encoded apart by libx264.

x264 pays a fixed cost for every macroblock of a picture, about 4.7 ms of CPU at 2560x1600 even when all are
unchanged (docs/performance.md, "Where the time goes"). When content moved, `MovedPictures.write` makes the picture
instead: the rows without new content are P slices of copies (core/h264_slices.py), and each run of rows with new
content is encoded by an x264 of that size, whose slices are placed at its rows. A box narrower than the picture is
an IDR of one slice a row, which predicts only from itself. Rows at the picture's top or bottom (a scroll's new
strip) are a band as wide as the picture, and while the same rows are new picture after picture the band goes on
as P pictures from what the decoder shows there (media/inter_band.py). x264's main encoder, which did not see these
pictures, needs an IDR before its next picture (H264Encoder keeps track and calls `forget`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from framestream.core.h264 import NAL_IDR, NAL_PPS, NAL_SLICE, NAL_SPS, nal_type, split_annexb
from framestream.core.h264_bits import H264SyntaxError, Pps, Sps, parse_foreign_slice, parse_pps, parse_sps
from framestream.core.h264_slices import PictureHeader, p_slice, placed_slice
from framestream.media.inter_band import InterBand
from framestream.media.motion import MB, Motion, runs
from framestream.media.x264 import X264Encoder

_START = b"\x00\x00\x00\x01"
_BOX_ENCODERS = 8  # box sizes kept open (a counter's, a scroll's strip), and as many bands' rows
_ALIGN = 4  # box widths in blocks are multiples of this, so a growing counter reuses its encoder

# (width, height, blocks a slice, whole_pel) -> an x264 encoder of that size at a constant QP given per picture,
# which ends a slice after that many blocks; with whole_pel, its vectors are of whole samples (media/inter_band.py).
BandEncoderFactory = Callable[[int, int, int, bool], X264Encoder]


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


def _band_rows(motion: Motion, new: tuple[int, int], free: int, limit: int) -> tuple[int, int]:
    """The rows of the band for the run of new rows `new`, with the row beside it on either side within rows
    [free, limit) whose content came from within the band: x264's vectors for the new rows read past them, and
    must read inside the band (without such a row 58 of 130 pictures of the scroll page went back to an IDR).
    Content that came from beyond (a scroll under a sticky header) would make the row's own vectors read outside."""
    top, bottom = new
    shifts = motion.vectors[..., 1]  # how far each block moved down, in pixels
    if top > free and bool((shifts[top - 1] <= 0).all()):
        top -= 1
    if bottom < limit and bool((shifts[bottom] >= 0).all()):
        bottom += 1
    return top, bottom


@dataclass(frozen=True, slots=True)
class Segment:
    """Rows of blocks [top, bottom) that x264 encodes in a picture of copies."""

    rows: tuple[int, int]
    columns: tuple[int, int] | None = None  # a box's [left, right); None: a band of whole rows
    inter: bool = False  # a band that goes on as a P picture of its encoder (which wrote these rows before)


def plan(motion: Motion, carried: set[tuple[int, int]], *, bands: bool = False, still: bool = False,
         ) -> tuple[list[Segment], set[tuple[int, int]]]:
    """Where x264 encodes this picture's new blocks, in row order, and which of the `carried` bands (those whose
    rows the decoder shows as their encoders reconstructed them) rest: nothing changed in their rows, so they
    still do. A carried band with new blocks in its rows goes on as a P picture (x264 encodes its moved blocks
    too) while the new rows it meets lie within it, not in its first or last row where the picture goes on
    beyond (their vectors would read past it); one whose rows only moved is copied over. Other runs of new
    rows are bands at the picture's top or bottom, as wide as it, or everywhere with `bands`; boxes elsewhere.
    `still`: nothing moved (a refinement), so a carried band goes on with new blocks in any of its rows: x264's
    vectors for content that stayed put stay put (and `InterBand` checks them). Pure."""
    rows, columns = motion.new.shape
    new_rows = np.asarray(motion.new.any(axis=1), bool)
    changed_rows = np.asarray(new_rows | motion.moved_blocks.any(axis=1), bool)
    new_runs = runs(new_rows)
    going: list[tuple[int, int]] = []
    resting: set[tuple[int, int]] = set()
    for band in sorted(carried):
        if not changed_rows[band[0] : band[1]].any():
            resting.add(band)
        elif new_rows[band[0] : band[1]].any() and all(
                (band[0] < top or (band[0] == top and (still or top == 0)))
                and (bottom < band[1] or (bottom == band[1] and (still or bottom == rows)))
                for top, bottom in new_runs if top < band[1] and bottom > band[0]):
            going.append(band)
    segments = [Segment(band, inter=True) for band in going]
    free = 0
    for top, bottom in new_runs:
        if any(band[0] <= top and bottom <= band[1] for band in going):
            continue
        free = max([free, *(band[1] for band in going if band[1] <= top)])
        limit = min([rows, *(band[0] for band in going if band[0] >= bottom)])
        new_columns = np.flatnonzero(motion.new[top:bottom].any(axis=0))
        left = int(new_columns[0]) // _ALIGN * _ALIGN
        right = min(columns, -(-(int(new_columns[-1]) + 1) // _ALIGN) * _ALIGN)
        if bands or top == 0 or bottom == rows or (left, right) == (0, columns):
            band = _band_rows(motion, (top, bottom), free, limit)
            segments.append(Segment(band, inter=band in carried))  # the same rows as before: no better ones
        else:
            segments.append(Segment((top, bottom), (left, right)))
        free = segments[-1].rows[1]
    segments.sort(key=lambda segment: segment.rows)
    resting = {band for band in resting if all(s.rows[1] <= band[0] or s.rows[0] >= band[1] for s in segments)}
    return segments, resting


def _same_decoding(pps: Pps, stream: Pps) -> None:
    """A band encoder's slices decode in the stream as in their own only under a PPS that reads them alike."""
    if (pps.chroma_qp_offset, pps.cabac, pps.constrained_intra_pred, pps.weighted_pred) != \
            (stream.chroma_qp_offset, stream.cabac, stream.constrained_intra_pred, stream.weighted_pred):
        raise H264SyntaxError("the band encoder's PPS does not decode like the stream's")


class MovedPictures:
    """Writes P pictures from a `Motion` for one stream, whose SPS and PPS `use_headers` gives."""

    def __init__(self, width: int, height: int, band_encoder: BandEncoderFactory) -> None:
        if width % MB or height % MB:
            raise ValueError(f"pictures of whole macroblocks only, got {width}x{height}")
        self.width, self.height = width, height
        self._band_encoder = band_encoder
        self._boxes: OrderedDict[tuple[int, int], tuple[X264Encoder, Sps, Pps]] = OrderedDict()
        self._bands: OrderedDict[tuple[int, int], tuple[InterBand, Sps, Pps]] = OrderedDict()  # by their rows
        # The bands written in the last picture: what the decoder shows there is their encoders' reconstruction.
        self._carried: set[tuple[int, int]] = set()
        self._headers: tuple[Sps, Pps] | None = None
        self._pts = 0

    def use_headers(self, sps: Sps, pps: Pps) -> None:
        if (sps.mb_width * MB, sps.mb_height * MB) != (self.width, self.height):
            raise H264SyntaxError("the stream's SPS is of another size")
        self._headers = (sps, pps)

    def forget(self) -> None:
        """Another encoder wrote the last picture: no band's reconstruction is what the decoder shows."""
        self._carried = set()

    @property
    def ready(self) -> bool:
        return self._headers is not None

    def write(self, planes: list[npt.NDArray[np.uint8]], motion: Motion, *, qp: int, frame_num: int,
              poc_lsb: int, bands: int | None = None, still: bool = False) -> tuple[bytes, npt.NDArray[np.bool_]]:
        """The access unit of the current picture `planes` (Y, U, V), whose changed macroblocks `motion` says
        how to make: copied from the reference by its vectors, or new (encoded by x264); and the blocks shown at
        this picture's quality: the new ones, and those beside them in their box or in a band sent as an IDR (a P
        band's other blocks are as they were: counted lossy, a typed letter's band made every refinement re-encode
        whole rows). `bands`: every run of rows with new blocks is a band, wherever it lies (a spinner's rows, P
        picture after P picture), and bands sent as IDRs are at this QP (so not shown lossy); `still`: nothing
        moved (`plan`)."""
        if self._headers is None:
            raise H264SyntaxError("no SPS and PPS yet: the stream starts with an IDR from x264")
        sps, pps = self._headers
        picture = PictureHeader(sps, pps, frame_num=frame_num, poc_lsb=poc_lsb)
        columns, total = sps.mb_width, sps.mb_width * sps.mb_height
        segments, resting = plan(motion, self._carried, bands=bands is not None, still=still)
        self._carried = set()
        # Each segment's blocks encoded by x264: a band's whole rows as its slices are (raster order), a box a
        # whole number of _ALIGN blocks wide as one intra slice a row. P slices hold everything else.
        placed: list[tuple[int, int, bytes]] = []  # (first block, blocks, slice)
        coded = motion.new.copy()
        for segment in segments:
            top, bottom = segment.rows
            if segment.columns is None:
                band_slices, keyframe = self._band(picture, planes, segment.rows, qp, inter=segment.inter,
                                                   idr_qp=bands)
                placed += band_slices
                if keyframe and bands is None:
                    coded[top:bottom] = True
                continue
            left, right = segment.columns
            coded[top:bottom, left:right] = True
            for row, unit in enumerate(self._intra(picture, planes, segment.rows, segment.columns, qp)):
                placed.append(((top + row) * columns + left, right - left, unit))
        self._carried |= {band for band in resting if band in self._bands}  # not closed to make room meanwhile
        # A vector is where the reference is read: minus the shift, in quarter pixels.
        vectors = -4 * motion.vectors
        units: list[bytes] = []
        address = 0
        for first, count, unit in [*placed, (total, 0, b"")]:
            if first > address:
                rows = slice(address // columns, (first - 1) // columns + 1)
                units.append(p_slice(picture, address, vectors[rows], first - address))
            if count:
                units.append(unit)
            address = first + count
        return b"".join(_START + unit for unit in units), coded

    def _intra(self, picture: PictureHeader, planes: list[npt.NDArray[np.uint8]], rows: tuple[int, int],
               columns: tuple[int, int], qp: int) -> list[bytes]:
        """The box of blocks `rows` x `columns` encoded by x264 as an IDR of one slice a row, each slice made
        this picture's own."""
        height, width = rows[1] - rows[0], columns[1] - columns[0]
        encoder, sps, pps = self._box_encoder(width, height)
        _same_decoding(pps, picture.pps)
        box = _i420_box(planes, rows[0] * MB, rows[1] * MB, columns[0] * MB, columns[1] * MB)
        data, _ = encoder.encode(box, self._pts, keyframe=True, qp=qp)
        self._pts += 1
        slices = [parse_foreign_slice(unit, sps, pps) for unit in split_annexb(data) if nal_type(unit) == NAL_IDR]
        if [s.first_mb for s in slices] != list(range(0, width * height, width)):
            raise H264SyntaxError("x264 did not write one slice a row")
        columns_in_picture = picture.sps.mb_width
        return [placed_slice(picture, (rows[0] + row) * columns_in_picture + columns[0], s)
                for row, s in enumerate(slices)]

    def _band(self, picture: PictureHeader, planes: list[npt.NDArray[np.uint8]], rows: tuple[int, int], qp: int,
              *, inter: bool, idr_qp: int | None) -> tuple[list[tuple[int, int, bytes]], bool]:
        """Whole rows `rows` encoded by their band's x264, a P picture when `inter` allows and the vectors stay
        inside: (first block, blocks, slice) of each of its slices, placed at these rows; and whether it was an
        IDR (at `idr_qp` when given)."""
        height, columns = rows[1] - rows[0], picture.sps.mb_width
        band, sps, pps = self._band_encoder_of(rows)
        _same_decoding(pps, picture.pps)
        box = _i420_box(planes, rows[0] * MB, rows[1] * MB, 0, self.width)
        data, keyframe = band.encode(box, qp, rows=rows, picture_rows=picture.sps.mb_height, inter=inter,
                                     idr_qp=idr_qp)
        slices = [parse_foreign_slice(unit, sps, pps) for unit in split_annexb(data)
                  if nal_type(unit) in (NAL_IDR, NAL_SLICE)]
        firsts = [s.first_mb for s in slices]
        if not firsts or firsts[0] != 0 or firsts != sorted(set(firsts)):
            raise H264SyntaxError("x264 wrote a band's slices out of order")
        self._carried.add(rows)
        offset = rows[0] * columns
        return [(offset + s.first_mb, end - s.first_mb, placed_slice(picture, offset + s.first_mb, s))
                for s, end in zip(slices, [*firsts[1:], height * columns], strict=True)], keyframe

    def _box_encoder(self, width: int, height: int) -> tuple[X264Encoder, Sps, Pps]:
        """An x264 for boxes of `width` x `height` blocks, one slice a row (kept for the next such box)."""
        key = (width, height)
        if key in self._boxes:
            self._boxes.move_to_end(key)
            return self._boxes[key]
        encoder = self._band_encoder(width * MB, height * MB, width, False)
        self._boxes[key] = entry = (encoder, *self._headers_of(encoder))
        while len(self._boxes) > _BOX_ENCODERS:
            self._boxes.popitem(last=False)[1][0].close()
        return entry

    def _band_encoder_of(self, rows: tuple[int, int]) -> tuple[InterBand, Sps, Pps]:
        """An x264 for the whole rows `rows` of blocks, in one slice (kept for the next band at these rows)."""
        if rows in self._bands:
            self._bands.move_to_end(rows)
            return self._bands[rows]
        columns, height = self.width // MB, rows[1] - rows[0]
        band = InterBand(self._band_encoder(self.width, height * MB, columns * height, True))
        # One slice: x264 filters the edges between its slices, which a placed slice would not (it filters only
        # inside itself), and a P picture must decode here as it did in its encoder.
        self._bands[rows] = entry = (band, *self._headers_of(band.encoder))
        while len(self._bands) > _BOX_ENCODERS:
            evicted, (old, _, _) = self._bands.popitem(last=False)
            self._carried.discard(evicted)
            old.close()
        return entry

    def _headers_of(self, encoder: X264Encoder) -> tuple[Sps, Pps]:
        """A new encoder's SPS and PPS, which come with its first IDR: a blank box brings them out (a band's
        first picture is an IDR anyway, so its decoder needs not see this one)."""
        data, _ = encoder.encode(np.zeros(encoder.width * encoder.height * 3 // 2, np.uint8), self._pts,
                                 keyframe=True, qp=30)
        self._pts += 1
        headers = stream_headers(data)
        if headers is None:
            encoder.close()
            raise H264SyntaxError("x264 wrote an IDR without SPS and PPS")
        return headers

    def close(self) -> None:
        for encoder, _, _ in self._boxes.values():
            encoder.close()
        for band, _, _ in self._bands.values():
            band.close()
        self._boxes.clear()
        self._bands.clear()
        self._carried = set()
