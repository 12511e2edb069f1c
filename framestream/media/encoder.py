"""One H.264 encoder per frame: BGRX pictures in, Annex B access units out (PyAV, libx264).

Synchronous on purpose: it runs in the frame's worker thread, never on the event loop. libx264 is opened
with zerolatency (no lookahead, no B-frames, one picture in, one access unit out), an unbounded GOP (IDRs only
on demand) and SPS/PPS repeated in front of every IDR, so any keyframe starts a decoder.

Rate control is CRF. Constant QP would save x264 8-18% (no low-resolution complexity estimate), but x264
cannot change a constant QP while it runs (`x264_encoder_reconfig` copies `f_rf_constant`, not
`i_qp_constant`), and refinement needs exactly that.

Refinement (sharpening a still picture) lowers the CRF for a picture or two. PyAV applies codec options only
when the encoder opens, but libx264 re-reads its `crf` option before every picture and reconfigures itself when
it changed; `_CrfSwitch` sets that option through libavutil's `av_opt_set` on the live context. It checks
itself once at open (reading the option back) and, if anything does not line up, refinement degrades to
re-encoding at the normal CRF and says so in the log, rather than guessing at memory.

Colour: BT.601 limited range (matrix SMPTE 170M, signalled in the SPS), converted by OpenCV. Its BGRA -> I420
kernel is SIMD and takes 2.6 ms a 2560x1600 picture where swscale's fastest BT.709 path (POINT) takes 7-8 ms, and
a scroll changes every row of every picture: the conversion was a third of a full-picture change. Its chroma is
the top-left pixel of each 2x2 block, like POINT: 48.8 dB on the text page (docs/performance.md).

Changed regions: x264 otherwise analyses every macroblock of every picture (4-5 ms at 1280x800, 18 ms at
2560x1600, even when a small box moved). FFmpeg's libx264 wrapper takes `mb_info` plus a per-picture
AV_FRAME_DATA_VIDEO_HINT listing the changed rectangles, and x264 skips the rest. PyAV cannot attach side data,
so `_ChangedRegions` does it through libavutil on the frame we own, after checking the AVFrame pointer by
reading its width and height back. Without it, encoding stays correct, only slower.
"""

from __future__ import annotations

import ctypes
import glob
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import av
import av.sidedata.sidedata
import cv2
import numpy as np

from framestream.core.h264 import choose_level, codec_string_from_access_unit
from framestream.media.rects import clip

log = logging.getLogger(__name__)

_AV_OPT_SEARCH_CHILDREN = 1
# Each frame's worker thread converts its own pictures; OpenCV's pool beside it would only add threads that spin.
cv2.setNumThreads(1)


@dataclass(frozen=True, slots=True)
class EncoderSettings:
    fps: int = 30
    crf: int = 27  # motion: small pictures, sharp enough while things move
    refine_crf: int = 14  # still: close to transparent for text
    preset: str = "ultrafast"
    threads: int = 0  # 0: one for small pictures, two slices for large ones (see H264Encoder)
    max_kbps: int | None = None  # a rate cap (x264's VBV, a buffer of `buffer_s`); changeable while it runs
    buffer_s: float = 0.25


@dataclass(frozen=True, slots=True)
class EncodedPicture:
    data: bytes
    keyframe: bool
    refinement: bool


class _CrfSwitch:
    """Sets libx264's `crf` on an open PyAV codec context (see the module docstring)."""

    def __init__(self, context: av.video.codeccontext.VideoCodecContext, initial: int) -> None:
        self._ptr: int | None = None
        self._current = initial
        try:
            avutil = _avutil()
            avutil.av_opt_set.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int]
            avutil.av_opt_get.argtypes = [
                ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)
            ]
            avutil.av_free.argtypes = [ctypes.c_void_p]
            ptr = _c_pointer(context)  # AVCodecContext*
            out = ctypes.c_char_p()
            if ptr and avutil.av_opt_get(ptr, b"crf", _AV_OPT_SEARCH_CHILDREN, ctypes.byref(out)) == 0:
                value = out.value
                if value is not None and float(value) == float(initial):
                    self._ptr = ptr
                    self._avutil = avutil
        except (OSError, IndexError, ValueError, AttributeError) as exc:
            log.warning("refinement unavailable: %s", exc)
        if self._ptr is None:
            log.warning("refinement unavailable: libx264's crf could not be reached; still pictures stay at crf %d",
                        initial)

    @property
    def available(self) -> bool:
        return self._ptr is not None

    def set(self, crf: int) -> None:
        if self._ptr is None or crf == self._current:
            return
        if self._avutil.av_opt_set(self._ptr, b"crf", str(crf).encode(), _AV_OPT_SEARCH_CHILDREN) == 0:
            self._current = crf


def _buffer_kbit(kbps: int, seconds: float) -> int:
    return max(16, round(kbps * seconds))


def _set_option(context: av.video.codeccontext.VideoCodecContext, name: bytes, value: str) -> bool:
    """Set an AVOption of an open codec context (libx264 re-reads its rate options before every picture)."""
    try:
        avutil = _avutil()
        avutil.av_opt_set.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int]
        ptr = _c_pointer(context)
        return bool(ptr) and avutil.av_opt_set(ptr, name, value.encode(), _AV_OPT_SEARCH_CHILDREN) == 0
    except (OSError, AttributeError) as exc:
        log.warning("cannot set %s: %s", name.decode(), exc)
        return False


def _avutil() -> ctypes.CDLL:
    libs = os.path.join(os.path.dirname(av.__file__), os.pardir, "av.libs")
    found = glob.glob(os.path.join(libs, "libavutil-*.so*"))
    return ctypes.CDLL(found[0]) if found else ctypes.CDLL("libavutil.so")


def _c_pointer(obj: object) -> int | None:
    """The first C field of a PyAV (Cython) object: its FFmpeg struct pointer, after the header and vtable."""
    return ctypes.c_void_p.from_address(id(obj) + 2 * ctypes.sizeof(ctypes.c_void_p) + 8).value


class _VideoHint(ctypes.Structure):
    _fields_ = (("nb_rects", ctypes.c_size_t), ("rect_offset", ctypes.c_size_t), ("rect_size", ctypes.c_size_t),
                ("type", ctypes.c_int))


_AV_VIDEO_HINT_TYPE_CHANGED = 1
_AVFRAME_WIDTH_OFFSET = 8 * 8 + 8 * 4 + 8  # after data[8], linesize[8] and extended_data


class _ChangedRegions:
    """Attaches "only these rectangles changed" to the encoder's persistent AVFrame (see the module doc)."""

    def __init__(self, frame: av.VideoFrame) -> None:
        self._ptr: int | None = None
        self._width, self._height = frame.width, frame.height
        try:
            hint_type: Any = av.sidedata.sidedata.Type.VIDEO_HINT.value  # AV_FRAME_DATA_VIDEO_HINT
            self._side_type = int(hint_type)
            avutil = _avutil()
            avutil.av_video_hint_create_side_data.restype = ctypes.c_void_p
            avutil.av_video_hint_create_side_data.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
            avutil.av_frame_remove_side_data.argtypes = [ctypes.c_void_p, ctypes.c_int]
            ptr = _c_pointer(frame)
            if ptr:
                size = (ctypes.c_int * 2).from_address(ptr + _AVFRAME_WIDTH_OFFSET)
                if (size[0], size[1]) == (frame.width, frame.height):
                    self._ptr = ptr
                    self._avutil = avutil
        except (OSError, AttributeError, ValueError) as exc:
            log.warning("changed-region hints unavailable: %s", exc)
        if self._ptr is None:
            log.warning("changed-region hints unavailable: x264 will analyse whole pictures")

    @property
    def available(self) -> bool:
        return self._ptr is not None

    def set(self, rects: Sequence[tuple[int, int, int, int]] | None) -> None:
        """Hint the next picture: only `rects` (x, y, width, height) changed; None: no hint (analyse all)."""
        if self._ptr is None:
            return
        self._avutil.av_frame_remove_side_data(self._ptr, self._side_type)
        if rects is None:
            return
        # FFmpeg's wrapper marks macroblocks without clipping: a rectangle off the picture would write outside
        # its map. Clip every rectangle to the picture here, and drop the empty ones.
        clipped = [box for rect in rects if (box := clip(rect, self._width, self._height)) is not None]
        if not clipped:
            clipped = [(0, 0, 1, 1)]  # nothing changed: one macroblock, rather than no hint (= all changed)
        rects = clipped
        hint_ptr = self._avutil.av_video_hint_create_side_data(self._ptr, len(rects))
        if not hint_ptr:
            return  # out of memory: x264 simply analyses everything
        hint = _VideoHint.from_address(hint_ptr)
        hint.type = _AV_VIDEO_HINT_TYPE_CHANGED
        array = (ctypes.c_uint32 * (4 * len(rects))).from_address(hint_ptr + hint.rect_offset)
        for i, (x, y, w, h) in enumerate(rects):
            array[4 * i: 4 * i + 4] = [x, y, w, h]


def _i420_planes(i420: np.ndarray, width: int, height: int) -> list[np.ndarray]:
    """Views of the Y, U and V planes of an I420 buffer in OpenCV's layout (height * 3 / 2, width)."""
    flat, luma = i420.reshape(-1), width * height
    chroma = luma // 4
    return [flat[:luma].reshape(height, width),
            flat[luma : luma + chroma].reshape(height // 2, width // 2),
            flat[luma + chroma : luma + 2 * chroma].reshape(height // 2, width // 2)]


class H264Encoder:
    """Encodes pictures of one fixed size. Rebuild it when the size changes.

    The encoder keeps the current picture in YUV 4:2:0: `update(bgrx, rows)` converts only the rows that
    changed (in 32-row bands), and `encode()` compresses the whole current picture. A small animation so costs
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
        ctx = av.CodecContext.create("libx264", "w")
        ctx.width = width
        ctx.height = height
        ctx.pix_fmt = "yuv420p"
        ctx.time_base = Fraction(1, s.fps)
        ctx.framerate = Fraction(s.fps, 1)
        ctx.gop_size = 1 << 30
        ctx.max_b_frames = 0
        # Large pictures take x264 ~15-20 ms on one core; two slice threads halve the latency for the same CPU.
        # Sliced threads add no delay (frame threads would hold a picture back).
        threads = s.threads or (2 if width * height > 1_500_000 else 1)
        ctx.thread_count = threads
        # Signal the matrix we convert with (BT.601, SMPTE 170M) and limited range in the VUI, so every decoder
        # converts back with it; the pixels themselves are sRGB (BT.709 primaries and transfer).
        ctx.colorspace = 6
        ctx.color_range = 1
        ctx.color_primaries = 1
        ctx.color_trc = 1
        ctx.options = {
            "preset": s.preset,
            "tune": "zerolatency",
            "profile": "baseline",  # constrained baseline: every WebCodecs and hardware decoder takes it
            "level": self.level,
            "crf": str(s.crf),
            "x264-params": "keyint=infinite:min-keyint=1:scenecut=0:repeat-headers=1:bframes=0:"
            f"sliced-threads={1 if threads > 1 else 0}:threads={threads}",
            "mb_info": "1",
        }
        if s.max_kbps is not None:  # x264 can change the cap while it runs, but only turn it on when it opens
            ctx.options |= {"maxrate": f"{s.max_kbps}k", "bufsize": f"{_buffer_kbit(s.max_kbps, s.buffer_s)}k"}
        ctx.open()
        self._ctx = ctx
        self._crf = _CrfSwitch(ctx, s.crf)
        self.max_kbps = s.max_kbps
        # The current picture, I420 in one buffer (OpenCV's layout: Y, then U, then V), which the AVFrame x264
        # reads shares: a whole-picture conversion writes straight into it.
        self._i420 = np.zeros((height * 3 // 2, width), np.uint8)
        self._yuv = av.VideoFrame.from_numpy_buffer(self._i420, format="yuv420p")
        self._hints = _ChangedRegions(self._yuv)
        self._planes = _i420_planes(self._i420, width, height)
        self._pts = 0
        self.codec_string: str | None = None

    @property
    def refinement_available(self) -> bool:
        return self._crf.available

    def update(self, bgrx: np.ndarray, rows: tuple[int, int] | None = None) -> None:
        """Bring the current picture up to date with rows [top, bottom) of a (height, width, 4) BGRX picture
        (all rows when `rows` is None). The array is only read during this call."""
        if bgrx.shape != (self.height, self.width, 4):
            raise ValueError(f"picture is {bgrx.shape}, encoder is {self.height}x{self.width}x4")
        top, bottom = rows if rows is not None else (0, self.height)
        top = max(0, top // self.BAND * self.BAND)
        bottom = min(self.height, -(-bottom // self.BAND) * self.BAND)
        if bottom <= top:
            return
        if top == 0 and bottom == self.height:
            self._convert_whole(bgrx)
            return
        band = _i420_planes(cv2.cvtColor(bgrx[top:bottom], cv2.COLOR_BGRA2YUV_I420), self.width, bottom - top)
        for index, (plane, shift) in enumerate(zip(band, (0, 1, 1), strict=True)):
            self._planes[index][top >> shift : bottom >> shift] = plane

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
        # Only through a context pointer `_CrfSwitch` checked by reading an option back: never write blind.
        if self._crf.available and _set_option(self._ctx, b"maxrate", f"{kbps}k") and \
                _set_option(self._ctx, b"bufsize", f"{_buffer_kbit(kbps, self.settings.buffer_s)}k"):
            self.max_kbps = kbps
            return True
        return False

    def encode(
        self,
        *,
        keyframe: bool = False,
        refinement: bool = False,
        changed: Sequence[tuple[int, int, int, int]] | None = None,
    ) -> EncodedPicture:
        """Compress the current picture; `refinement` encodes it at the higher still-picture quality.

        `changed` lists every rectangle (x, y, width, height) that differs from the previous picture, so x264
        skips the rest; None means "anything may have changed". It must not miss a change: a macroblock
        outside it is sent as unchanged. Keyframes and refinements always analyse the whole picture.
        """
        self._hints.set(None if keyframe or refinement else changed)
        yuv = self._yuv
        yuv.pts = self._pts
        self._pts += 1
        yuv.pict_type = av.video.frame.PictureType.I if keyframe else av.video.frame.PictureType.NONE
        self._crf.set(self.settings.refine_crf if refinement else self.settings.crf)
        packets = self._ctx.encode(yuv)
        data = b"".join(bytes(p) for p in packets)
        is_key = any(p.is_keyframe for p in packets)
        if is_key and self.codec_string is None:
            self.codec_string = codec_string_from_access_unit(data)
        return EncodedPicture(data=data, keyframe=is_key, refinement=refinement)

    def close(self) -> None:
        # zerolatency holds no pictures back, so there is nothing to flush; dropping the context frees x264.
        self._ctx = None  # type: ignore[assignment]
