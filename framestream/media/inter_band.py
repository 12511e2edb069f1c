"""P pictures of a band of whole rows, from what the decoder shows there: a scroll's new rows without intra.

Pictures of copies (media/moved_pictures.py) send the rows with new content as x264 pictures of those rows alone.
As IDRs they predict only from themselves: a scroll's strip of six new rows made its 16-row block row intra every
picture, most of the stream's bytes. When the same full-width rows are new picture after picture and their encoder
wrote all of them in the picture before, what that encoder reconstructed is what the decoder shows there, so its
next picture can be a P picture predicting from it, as x264 alone would: the old rows moved, only the new coded.

That holds only while every vector reads inside the band: beyond its edges the encoder reads its own padding and
the decoder the picture's other rows, except at the picture's top and bottom, which both pad alike (and its left
and right: a band is as wide as the picture). x264 cannot be told so. libavcodec decodes each of the band's
pictures with its vectors exported (`flags2 +export_mvs`: 0.3 ms of a 2560x32 scroll band's 0.8 ms), and a P
picture whose vectors read outside is encoded again as an IDR. The band's encoder splits inter blocks down to 8x8,
not below: libavcodec exports one vector an 8x8 block.
"""

from __future__ import annotations

import av
import numpy as np
import numpy.typing as npt

from framestream.media.x264 import X264Encoder

# x264 options of a band's encoder, beside the stream's.
INTER_BAND_OPTIONS = {
    # Whole-sample vectors: a fraction's filter reads 2-3 rows past a block, and such vectors sent 12-58 of 130
    # pictures of the scroll page (dpr 2) back to an IDR; a scroll moves content by whole pixels, and with
    # whole-sample vectors 0-6 went back.
    "subme": "0",
    # As sharp as the intra bands they replace (x264's intra deadzone): inter's wider one (21) cost a scroll
    # 0.5-0.8 dB in the rows that came into view, for the same bytes (tests/media/test_inter_band.py).
    "deadzone-inter": "11",
}

# Rows a luma block reads beyond itself at a fractional vertical position: the 6-tap filter's, 2 above, 3 below.
_TAPS_ABOVE, _TAPS_BELOW = 2, 3


def reads_outside(vectors: npt.NDArray[np.void], height: int, *, above: bool, below: bool) -> bool:
    """Whether a picture `height` rows tall whose blocks have these `vectors` (libavcodec's AVMotionVector
    records) reads a reference row above row 0 (when there is content `above` it) or below its last row (when
    content is `below`), in luma or chroma. libavcodec exports an 8x8 block's first vector only: its encoder must
    not split them (x264's `partitions` without p4x4)."""
    if vectors.size == 0:
        return False
    tall = vectors["h"].astype(np.int64)
    block_top = vectors["dst_y"].astype(np.int64) - tall // 2
    # In quarter luma samples, which are also eighths of a chroma sample (4:2:0 chroma moves by the same vector).
    read_at = block_top * 4 + vectors["motion_y"].astype(np.int64) * 4 // vectors["motion_scale"].astype(np.int64)
    whole, fraction = np.divmod(read_at, 4)
    first = whole - np.where(fraction != 0, _TAPS_ABOVE, 0)
    last = whole + tall - 1 + np.where(fraction != 0, _TAPS_BELOW, 0)
    chroma, chroma_fraction = np.divmod(read_at, 8)  # bilinear: one row more at a fraction
    chroma_last = chroma + tall // 2 - 1 + (chroma_fraction != 0)
    return bool((above and ((first < 0).any() or (chroma < 0).any())) or
                (below and ((last >= height).any() or (chroma_last >= height // 2).any())))


class InterBand:
    """An x264 for whole-width bands of one height, and a decoder that reads the vectors of what it writes."""

    def __init__(self, encoder: X264Encoder) -> None:
        self.encoder = encoder
        self._decoder = av.CodecContext.create("h264", "r")
        self._decoder.thread_count = 1  # frame threads would hold pictures back
        self._decoder.options = {"flags2": "+export_mvs", "flags": "+low_delay"}
        self._pts = 0

    def encode(self, i420: npt.NDArray[np.uint8], qp: int, *, rows: tuple[int, int], picture_rows: int,
               inter: bool, idr_qp: int | None = None) -> tuple[bytes, bool]:
        """(access unit, keyframe) of the band at block rows `rows` of a picture of `picture_rows`: a P picture
        when `inter` (this encoder wrote these rows last picture) and its vectors read only inside, else an IDR (at
        `idr_qp` when given)."""
        if inter:
            data = self._encode(i420, qp, keyframe=False)
            vectors = self._decoded_vectors(data)
            if vectors is not None and not reads_outside(vectors, self.encoder.height, above=rows[0] > 0,
                                                         below=rows[1] < picture_rows):
                return data, False
        data = self._encode(i420, qp if idr_qp is None else idr_qp, keyframe=True)
        self._decoded_vectors(data)  # the decoder follows every picture: the next P predicts from this one
        return data, True

    def _encode(self, i420: npt.NDArray[np.uint8], qp: int, *, keyframe: bool) -> bytes:
        data, _ = self.encoder.encode(i420, self._pts, keyframe=keyframe, qp=qp)
        self._pts += 1
        return data

    def _decoded_vectors(self, data: bytes) -> npt.NDArray[np.void] | None:
        """The vectors of the one picture `data` holds; None when it did not decode or came without them (an IDR,
        or a P picture of intra blocks only, which is no worse as an IDR: never taken unchecked)."""
        try:
            frames = self._decoder.decode(av.Packet(data))
        except av.FFmpegError:
            return None
        exported = frames[0].side_data.get("MOTION_VECTORS") if len(frames) == 1 else None
        return None if exported is None else np.asarray(exported.to_ndarray())

    def close(self) -> None:
        self.encoder.close()  # the decoder holds no thread (thread_count 1) and goes with this object

