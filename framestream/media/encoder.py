"""One H.264 encoder per frame: BGRX pictures in, Annex B access units out (libx264, framestream/media/x264.py).

Synchronous on purpose: it runs in the frame's worker thread, never on the event loop. libx264 is opened
with zerolatency (no lookahead, no B-frames, one picture in, one access unit out), an unbounded GOP (IDRs only
on demand) and SPS/PPS repeated in front of every IDR, so any keyframe starts a decoder.

Rate control: a frame's encoder runs at a constant QP that changes from picture to picture, chosen by
`QuantizerPolicy` (framestream/core/quantizer.py) the way x264's CRF would choose it but from the pictures already
sent, which spares x264 the complexity estimate CRF runs on every picture (a fifth of a 2560x1600 scroll
picture's encode). Refinement (sharpening a still picture) is a picture at a lower QP. The light stream for slow
links needs x264's rate cap (VBV), which only works with CRF: its encoder runs CRF, and refinement lowers the CRF
for a picture or two through `x264_encoder_reconfig`, as does a new cap.

Colour: BT.601 limited range (matrix SMPTE 170M, signalled in the SPS), converted by OpenCV. Its BGRA -> I420
kernel is SIMD and takes 2.6 ms a 2560x1600 picture where swscale's fastest BT.709 path (POINT) takes 7-8 ms, and
a scroll changes every row of every picture: the conversion was a third of a full-picture change. Its chroma is
the top-left pixel of each 2x2 block, like POINT: 48.8 dB on the text page (docs/performance.md).

Changed regions: x264 otherwise analyses every macroblock of every picture (4-5 ms at 1280x800, 18 ms at
2560x1600, even when a small box moved). Each picture can come with the rectangles that changed; the macroblocks
outside them are marked unchanged (x264's `mb_info`) and x264 skips them.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

import cv2
import numpy as np

from framestream.core.copies import CopiesRule
from framestream.core.h264 import choose_level, codec_string_from_access_unit
from framestream.core.h264_bits import H264SyntaxError
from framestream.core.quantizer import QuantizerPolicy, QuantizerRange
from framestream.media.inter_band import INTER_BAND_OPTIONS
from framestream.media.motion import Motion, carried, moved_macroblocks, runs, spread
from framestream.media.moved_pictures import MovedPictures, stream_headers
from framestream.media.rects import clip
from framestream.media.x264 import ConstantQuantizer, ConstantRateFactor, X264Encoder, unchanged_map

# Each frame's worker thread converts its own pictures; OpenCV's pool beside it would only add threads that spin.
cv2.setNumThreads(1)
_QP_RANGE = ConstantQuantizer(lowest=8, highest=46)
# A refinement after copies sharpens their lossy blocks as one of them while they are at most this share of the
# picture, else x264 sends an IDR. The band encoders' intra analysis costs about 10 µs a block of dense text,
# x264's whole IDR at the refinement's quality 11 ms at 2560x1600 (1.2 MB): after a long scroll (every block
# lossy) sharpening took 161 ms for 0.72x the bytes; a quarter would take about 40 ms, once, as the page rests.
_SHARPEN_AT_MOST = 1 / 4
_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class EncoderSettings:
    fps: int = 30
    crf: int = 27  # motion: small pictures, sharp enough while things move (CRF's scale, in both modes)
    refine_crf: int = 12  # still: close to transparent for text (the refinement QP; with a rate cap, its CRF)
    preset: str = "ultrafast"
    threads: int = 0  # 0: one for small pictures, two slices for large ones (see H264Encoder)
    max_kbps: int | None = None  # a rate cap (x264's VBV, a buffer of `buffer_s`); changeable while it runs
    buffer_s: float = 0.25
    moved_pictures: bool = True  # moved content as copies of what the decoder shows (media/moved_pictures.py)
    # Only on pictures of at least this many macroblocks: x264's fixed work is about 0.3 µs a block (4.7 ms at
    # 2560x1600, 1.0 at 1280x800), copies' own about 2 ms a picture. At 1280x800 x264 alone took less CPU and
    # fewer bytes (a moving box 0.079 vCPU and 98 kbit/s against 0.093 and 128; the animated page 25 against 34).
    moved_pictures_from: int = 6000


@dataclass(frozen=True, slots=True)
class EncodedPicture:
    data: bytes
    keyframe: bool
    refinement: bool


def _buffer_kbit(kbps: int, seconds: float) -> int:
    return max(16, round(kbps * seconds))


def _i420_planes(i420: np.ndarray, width: int, height: int) -> list[np.ndarray]:
    """Views of the Y, U and V planes of an I420 buffer in OpenCV's layout (height * 3 / 2, width)."""
    flat, luma = i420.reshape(-1), width * height
    chroma = luma // 4
    return [flat[:luma].reshape(height, width),
            flat[luma : luma + chroma].reshape(height // 2, width // 2),
            flat[luma + chroma : luma + 2 * chroma].reshape(height // 2, width // 2)]


def _x264_options(fps: int, level: str, threads: int) -> dict[str, str]:
    return {
        "fps": str(fps), "level": level, "keyint": "infinite", "min-keyint": "1", "scenecut": "0",
        "repeat-headers": "1", "bframes": "0", "sliced-threads": "1" if threads > 1 else "0",
        "threads": str(threads), "log": "1",  # warnings and errors, on stderr
        # Signal the matrix we convert with (BT.601, SMPTE 170M) and limited range in the VUI, so every decoder
        # converts back with it; the pixels themselves are sRGB (BT.709 primaries and transfer).
        "colormatrix": "smpte170m", "colorprim": "bt709", "transfer": "bt709", "fullrange": "off",
    }


def _band(span: tuple[int, int], band: int, limit: int) -> tuple[int, int]:
    """[start, end) widened to multiples of `band` and clipped to [0, limit)."""
    return max(0, span[0] // band * band), min(limit, -(-span[1] // band) * band)


class H264Encoder:
    """Encodes pictures of one fixed size. Rebuild it when the size changes.

    The encoder keeps the current picture in YUV 4:2:0: `update(bgrx, rows, columns)` converts only the box that
    changed (in 32-pixel bands), and `encode()` compresses the whole current picture. A small animation so costs
    a small conversion instead of a full-screen one.
    """

    BAND = 32

    def __init__(self, width: int, height: int, settings: EncoderSettings | None = None) -> None:
        if width <= 0 or height <= 0 or width % 2 or height % 2:
            raise ValueError(f"encoder size must be positive and even, got {width}x{height}")
        self.width = width
        self.height = height
        self.settings = s = settings or EncoderSettings()
        self.level = choose_level(width, height, s.fps)
        # Large pictures take x264 ~15-20 ms on one core; two slice threads halve the latency for the same CPU.
        # Sliced threads add no delay (frame threads would hold a picture back).
        threads = s.threads or (2 if width * height > 1_500_000 else 1)
        options = _x264_options(s.fps, self.level, threads)
        rate: ConstantQuantizer | ConstantRateFactor
        if s.max_kbps is None:
            rate = _QP_RANGE
            self._policy: QuantizerPolicy | None = QuantizerPolicy(
                QuantizerRange(crf=s.crf, refine_qp=s.refine_crf, lowest=rate.lowest, highest=rate.highest),
                macroblocks=((width + 15) // 16) * ((height + 15) // 16))
        else:  # x264 can change the cap while it runs, but only turn it on when it opens
            rate = ConstantRateFactor(s.crf, s.max_kbps, _buffer_kbit(s.max_kbps, s.buffer_s))
            self._policy = None
        # Constrained baseline: every WebCodecs and hardware decoder takes it.
        self._x264 = X264Encoder(width, height, rate=rate, options=options, preset=s.preset, profile="baseline",
                                 unchanged_maps=True)
        self._crf = float(s.crf)
        self.max_kbps = s.max_kbps
        # The current picture, I420 in one buffer (OpenCV's layout: Y, then U, then V), which x264 reads: a
        # whole-picture conversion writes straight into it.
        self._i420 = np.zeros((height * 3 // 2, width), np.uint8)
        self._planes = _i420_planes(self._i420, width, height)
        self._pts = 0
        self.codec_string: str | None = None
        # Pictures of copies (media/moved_pictures.py), for a constant-QP stream of whole macroblocks: what the
        # decoder shows (the source of what it shows: `_reference`), and where the stream stands.
        self._moved: MovedPictures | None = None
        if self._policy is not None and width % 16 == 0 and height % 16 == 0 and s.moved_pictures and \
                width * height >= s.moved_pictures_from * 256:
            self._moved = MovedPictures(width, height, partial(_band_encoder, s))
        self._reference: np.ndarray | None = None  # made after the first large change went out
        self._reference_wanted = False
        # Blocks shown at a moving picture's quality, not sharpened since (all, before the first picture).
        self._lossy = np.ones(self._x264.macroblocks(), bool) if self._moved is not None else None
        self._reference_planes: list[np.ndarray] = []
        self._x264_behind = False  # a picture of ours went out: x264's reference is not the decoder's
        self._frame_num = 0  # of the last picture, counted from its IDR (every picture is a reference)
        self._shifts: list[tuple[int, int]] = []  # the last picture of copies' motion: tried first on the next
        self._unexplained: np.ndarray | None = None  # rows with new blocks and none moved in the last picture
        self._copies = CopiesRule(s.fps)  # when pictures go as copies, and when x264 takes over

    def update(self, bgrx: np.ndarray, rows: tuple[int, int] | None = None,
               columns: tuple[int, int] | None = None) -> None:
        """Bring the current picture up to date with rows [top, bottom) of a (height, width, 4) BGRX picture
        (all rows when `rows` is None), within columns [left, right) (all when None). Both are widened to
        32-pixel bands, so chroma is made from whole 2x2 blocks as a whole conversion makes it. The array is only
        read during this call."""
        if bgrx.shape != (self.height, self.width, 4):
            raise ValueError(f"picture is {bgrx.shape}, encoder is {self.height}x{self.width}x4")
        top, bottom = _band(rows or (0, self.height), self.BAND, self.height)
        left, right = _band(columns or (0, self.width), self.BAND, self.width)
        if bottom <= top or right <= left:
            return
        if top == 0 and bottom == self.height and left == 0 and right == self.width:
            self._convert_whole(bgrx)
            return
        # A small change converts its own columns, not whole 2560-pixel rows (docs/performance.md, "Where the time
        # goes": a spinner's picture 0.20 -> 0.08 ms).
        converted = cv2.cvtColor(bgrx[top:bottom, left:right], cv2.COLOR_BGRA2YUV_I420)
        band = _i420_planes(converted, right - left, bottom - top)
        for index, (plane, shift) in enumerate(zip(band, (0, 1, 1), strict=True)):
            self._planes[index][top >> shift : bottom >> shift, left >> shift : right >> shift] = plane

    def update_scaled(self, bgrx: np.ndarray) -> None:
        """Make the current picture a scaled copy of a whole BGRX picture of any size (the light stream)."""
        # OpenCV's AREA is an exact 2x2 average when halving (33.0 dB on a synthetic text page, where swscale's
        # FAST_BILINEAR reached 28.4), and with the conversion takes 2.0 ms a 2560x1600 picture (swscale: 6.8).
        scaled = bgrx if bgrx.shape[:2] == (self.height, self.width) else \
            cv2.resize(bgrx, (self.width, self.height), interpolation=cv2.INTER_AREA)
        self._convert_whole(scaled)

    def _convert_whole(self, bgrx: np.ndarray) -> None:
        converted = cv2.cvtColor(bgrx, cv2.COLOR_BGRA2YUV_I420, dst=self._i420)
        if converted is not self._i420:  # OpenCV makes a new array when `dst` does not fit: never silently
            raise RuntimeError(f"conversion of a {bgrx.shape} picture did not fit the {self._i420.shape} buffer")

    def set_max_kbps(self, kbps: int) -> bool:
        """Change the rate cap of an encoder opened with one; libx264 takes it before its next picture."""
        if self.max_kbps is None or kbps == self.max_kbps:
            return self.max_kbps is not None
        if self._x264.reconfigure(max_kbps=kbps, buffer_kbit=_buffer_kbit(kbps, self.settings.buffer_s)):
            self.max_kbps = kbps
            return True
        return False

    def encode(
        self,
        *,
        keyframe: bool = False,
        refinement: bool = False,
        changed: Sequence[tuple[int, int, int, int]] | None = None,
        partial: bool = False,
    ) -> EncodedPicture:
        """Compress the current picture; `refinement` encodes it at the higher still-picture quality.

        `changed` lists every rectangle (x, y, width, height) that differs from the previous picture, so x264
        skips the rest; None means "anything may have changed". It must not miss a change: a macroblock
        outside it is sent as unchanged. Keyframes and refinements analyse the whole picture, except a `partial`
        refinement: only `changed` at the still-picture quality (what went out as patches, for a recording).
        """
        still = None  # macroblocks outside `changed` (for a refinement only when it may be one of ours)
        if changed is not None and not keyframe and (partial or not refinement or self._x264_behind):
            rows, columns = self._x264.macroblocks()
            boxes = [box for rect in changed if (box := clip(rect, self.width, self.height)) is not None]
            still = unchanged_map(rows, columns, boxes)
        unchanged = still if partial or not refinement else None
        qp = None
        if self._policy is not None:
            qp = self._policy.next(keyframe=keyframe, refinement=refinement)
        else:
            crf = float(self.settings.refine_crf if refinement else self.settings.crf)
            if crf != self._crf and self._x264.reconfigure(crf=crf):
                self._crf = crf
        if unchanged is not None and qp is not None and not refinement and not keyframe:
            moved = self._moved_picture(unchanged, qp)
            if moved is not None:
                return moved
        if refinement and still is not None and qp is not None and self._x264_behind:
            sharpened = self._sharpened(still, qp)  # what copies showed lossy, sharpened without x264
            if sharpened is not None:
                return sharpened
        if self._x264_behind:  # x264 has not seen what the decoder shows: start it afresh
            if not (keyframe or refinement):  # copies could not carry on (an odd shift, much new): a pause
                self._copies.stopped(self._pts)
            keyframe, unchanged = True, None
        data, is_key = self._x264.encode(self._i420, self._pts, keyframe=keyframe, qp=qp, unchanged=unchanged)
        self._pts += 1
        if self._policy is not None and qp is not None:
            self._policy.encoded(qp=qp, size_bytes=len(data), keyframe=is_key, refinement=refinement)
        if is_key and self.codec_string is None:
            self.codec_string = codec_string_from_access_unit(data)
        if is_key:
            self._x264_behind, self._frame_num = False, 0
            self._copies.keyframe(len(data))
        else:
            self._frame_num += 1
        if self._lossy is not None:  # what shows at the moving pictures' quality, for a later refinement
            if refinement and not partial:
                self._lossy[:] = False
            elif unchanged is None:
                self._lossy[:] = not refinement
            else:
                self._lossy |= ~unchanged
        if self._moved is not None:
            self._moved.forget()
            if is_key and not self._moved.ready:
                try:
                    if (headers := stream_headers(data)) is not None:
                        self._moved.use_headers(*headers)
                except H264SyntaxError as error:
                    self._stop_copies(error)
            self._keep_reference(None if is_key else unchanged)
        return EncodedPicture(data=data, keyframe=is_key, refinement=refinement)

    def _stop_copies(self, error: H264SyntaxError) -> None:
        """A stream we cannot write into: x264 alone from here on (it starts with an IDR if copies went out)."""
        _log.warning("pictures of copies off for this stream: %s", error)
        if self._moved is not None:
            self._moved.close()
        self._moved, self._reference, self._reference_planes, self._lossy = None, None, [], None

    def _moved_picture(self, unchanged: np.ndarray, qp: int) -> EncodedPicture | None:
        """This P picture made of copies and x264 intra rows (media/moved_pictures.py), when content moved and
        little is new; None leaves it to x264."""
        moved = self._moved
        if moved is None or not moved.ready:
            return None
        changed = ~unchanged
        count = int(np.count_nonzero(changed))
        if self._copies.in_bands(changed=count, blocks=changed.size, changed_rows=int(changed.any(axis=1).sum()),
                                 rows=changed.shape[0], behind=self._x264_behind):
            # The source of what the decoder shows is the current picture until then (x264 sent all of it). Band
            # IDRs at the still quality: at the moving one the text beside a typed letter blurred until refined.
            self._reference_wanted = True
            sharp = qp if self._policy is None else self._policy.next(keyframe=False, refinement=True)
            written = self._write_ours(moved, Motion.none(changed), qp, refinement=False, bands=sharp)
            if written is not None and self._lossy is not None:
                self._lossy |= written[1]
            return None if written is None else written[0]
        if not self._copies.worth_a_search(self._pts, changed=count, blocks=changed.size, behind=self._x264_behind):
            return None
        if self._reference is None:  # kept from this picture on (a still page never pays for it)
            self._reference_wanted = True
            return None
        # Rows where what changed was new last time, nothing moved (a counter), are searched only now and then.
        motion = moved_macroblocks(self._planes, self._reference_planes, changed, self._shifts,
                                   self._unexplained if self._pts % 8 else None)
        if not self._copies.take(behind=self._x264_behind, moved=sum(motion.taken.values()),
                                 new=int(np.count_nonzero(motion.new)), blocks=motion.new.size,
                                 new_rows=int(motion.new.any(axis=1).sum()), rows=changed.shape[0],
                                 blurred=motion.blurred):
            return None
        self._shifts = motion.main_shifts()
        self._unexplained = np.asarray(motion.new.any(axis=1) & ~motion.moved_blocks.any(axis=1), bool)
        motion = spread(motion, self._planes, self._reference_planes)
        behind, number = self._x264_behind, self._pts  # as they were before this picture
        written = self._write_ours(moved, motion, qp, refinement=False)
        if written is None:
            return None
        picture, coded = written
        self._copies.wrote(number, len(picture.data), behind=behind)
        if self._lossy is not None:
            self._lossy = carried(self._lossy, motion) | coded
        return picture

    def _sharpened(self, still: np.ndarray, qp: int) -> EncodedPicture | None:
        """A refinement after pictures of copies, as one of them: the blocks shown lossy (and any that changed)
        encoded anew at the refinement's quality, the rest kept. An IDR of the whole picture would cost far more
        after a few typed letters. None: an IDR it is."""
        if self._moved is None or self._lossy is None:
            return None
        new = self._lossy | ~still
        if new.mean() > _SHARPEN_AT_MOST:
            return None
        written = self._write_ours(self._moved, Motion.none(new), qp, refinement=True)
        if written is None:
            return None
        self._lossy[:] = False
        return written[0]

    def _write_ours(self, moved: MovedPictures, motion: Motion, qp: int, *, refinement: bool,
                    bands: int | None = None) -> tuple[EncodedPicture, np.ndarray] | None:
        """One picture of copies written and accounted for, and its blocks shown at its quality (None: the stream
        cannot take them, x264 goes on). `bands`: new rows as bands wherever they are, their IDRs at this QP."""
        try:
            data, coded = moved.write(self._planes, motion, qp=qp, frame_num=self._frame_num + 1,
                                      poc_lsb=2 * (self._frame_num + 1), bands=bands, still=refinement)
        except H264SyntaxError as error:
            self._stop_copies(error)
            return None
        self._pts, self._frame_num, self._x264_behind = self._pts + 1, self._frame_num + 1, True
        assert self._policy is not None
        self._policy.encoded(qp=qp, size_bytes=len(data), keyframe=False, refinement=refinement)
        # Blocks found in place and not new are as they were (`coded` holds every new one): only the rest differ.
        self._keep_reference(~(coded | motion.moved_blocks))
        return EncodedPicture(data=data, keyframe=False, refinement=refinement), coded

    def _keep_reference(self, unchanged: np.ndarray | None) -> None:
        """Bring `_reference` up to the picture just sent: the blocks not `unchanged` (all: None), as the box of
        each run of rows. The first copy is whole: x264 sent the whole picture (what it skipped had not changed)."""
        if self._reference is None:
            if not self._reference_wanted:
                return
            self._reference = np.empty_like(self._i420)
            self._reference_planes = _i420_planes(self._reference, self.width, self.height)
            unchanged = None
        if unchanged is None:
            np.copyto(self._reference, self._i420)
            return
        changed = ~unchanged
        for top, bottom in runs(changed.any(axis=1)):
            columns = np.flatnonzero(changed[top:bottom].any(axis=0))
            left, right = int(columns[0]), int(columns[-1]) + 1
            for index, shift in enumerate((0, 1, 1)):
                box = (slice(top * 16 >> shift, bottom * 16 >> shift), slice(left * 16 >> shift, right * 16 >> shift))
                self._reference_planes[index][box] = self._planes[index][box]

    def close(self) -> None:
        # zerolatency holds no pictures back, so there is nothing to flush; closing stops x264's threads now.
        self._x264.close()
        if self._moved is not None:
            self._moved.close()


def _band_encoder(settings: EncoderSettings, width: int, height: int, slice_blocks: int, whole_pel: bool,
                  ) -> X264Encoder:
    """An x264 for the new blocks of a picture of copies: the stream's options, a slice every `slice_blocks`;
    `whole_pel`: vectors of whole samples only."""
    options = _x264_options(settings.fps, choose_level(width, height, settings.fps), 1)
    options["slice-max-mbs"] = str(slice_blocks)
    options["partitions"] = "i4x4,p8x8"  # veryfast's, said again: no p4x4 (media/inter_band.py reads 8x8 vectors)
    if whole_pel:
        options |= INTER_BAND_OPTIONS
    # veryfast, not ultrafast: ultrafast turns off intra 4x4 prediction (`analyse.intra`, which no option sets
    # back), and text coded as 16x16 intra cost a scrolling page's new rows a fifth more bytes. These encoders take
    # a strip or a box's edges, where the slower analysis costs about 0.1 ms a picture.
    return X264Encoder(width, height, rate=_QP_RANGE, options=options, preset="veryfast", profile="baseline")
