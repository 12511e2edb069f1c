"""One H.264 encoder per frame: BGRX pictures in, Annex B access units out (PyAV, libx264).

Synchronous on purpose: it runs in the frame's worker thread, never on the event loop. libx264 is opened
with zerolatency (no lookahead, no B-frames, one picture in, one access unit out), an unbounded GOP (IDRs only
on demand) and SPS/PPS repeated in front of every IDR, so any keyframe starts a decoder.

Refinement (sharpening a still picture) lowers the CRF for a picture or two. PyAV applies codec options only
when the encoder opens, but libx264 re-reads its `crf` option before every picture and reconfigures itself when
it changed; `_CrfSwitch` sets that option through libavutil's `av_opt_set` on the live context. It checks
itself once at open (reading the option back) and, if anything does not line up, refinement degrades to
re-encoding at the normal CRF and says so in the log, rather than guessing at memory.
"""

from __future__ import annotations

import ctypes
import glob
import logging
import os
from dataclasses import dataclass
from fractions import Fraction

import av
import numpy as np
from av.video.reformatter import ColorRange, Colorspace, Interpolation, VideoReformatter

from framestream.core.h264 import choose_level, codec_string_from_access_unit

log = logging.getLogger(__name__)

_AV_OPT_SEARCH_CHILDREN = 1


@dataclass(frozen=True, slots=True)
class EncoderSettings:
    fps: int = 30
    crf: int = 27  # motion: small pictures, sharp enough while things move
    refine_crf: int = 14  # still: close to transparent for text
    preset: str = "ultrafast"
    threads: int = 1


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
            libs = os.path.join(os.path.dirname(av.__file__), os.pardir, "av.libs")
            found = glob.glob(os.path.join(libs, "libavutil-*.so*"))
            avutil = ctypes.CDLL(found[0]) if found else ctypes.CDLL("libavutil.so")
            avutil.av_opt_set.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int]
            avutil.av_opt_get.argtypes = [
                ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)
            ]
            avutil.av_free.argtypes = [ctypes.c_void_p]
            # CodecContext's first C field (after the object header and Cython's vtable) is AVCodecContext*.
            ptr = ctypes.c_void_p.from_address(id(context) + 2 * ctypes.sizeof(ctypes.c_void_p) + 8).value
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


class H264Encoder:
    """Encodes pictures of one fixed size. Rebuild it when the size changes.

    The encoder keeps the current picture in YUV 4:2:0: `update(bgrx, rows)` converts only the rows that
    changed (in 32-row bands, one cached swscale context per band height), and `encode()` compresses the
    whole current picture. A small animation so costs a small conversion instead of a full-screen one.
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
        ctx.thread_count = s.threads
        # Signal BT.709 limited range in the VUI so every decoder converts back with the matrix we used.
        ctx.colorspace = 1
        ctx.color_range = 1
        ctx.color_primaries = 1
        ctx.color_trc = 1
        ctx.options = {
            "preset": s.preset,
            "tune": "zerolatency",
            "profile": "baseline",  # constrained baseline: every WebCodecs and hardware decoder takes it
            "level": self.level,
            "crf": str(s.crf),
            "x264-params": "keyint=infinite:min-keyint=1:scenecut=0:repeat-headers=1:bframes=0:sliced-threads=0",
        }
        ctx.open()
        self._ctx = ctx
        self._crf = _CrfSwitch(ctx, s.crf)
        self._yuv = av.VideoFrame(width, height, "yuv420p")
        self._planes = [
            np.frombuffer(memoryview(plane), np.uint8).reshape(plane.height, plane.line_size)[:, : plane.width]
            for plane in self._yuv.planes
        ]
        self._reformatters: dict[int, VideoReformatter] = {}
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
        band_height = bottom - top
        reformatter = self._reformatters.get(band_height)
        if reformatter is None:
            reformatter = self._reformatters[band_height] = VideoReformatter()
        src = av.VideoFrame.from_numpy_buffer(bgrx[top:bottom], format="bgra")
        band = reformatter.reformat(
            src,
            format="yuv420p",
            src_colorspace=Colorspace.ITU709,
            dst_colorspace=Colorspace.ITU709,
            interpolation=Interpolation.FAST_BILINEAR,
            dst_color_range=ColorRange.MPEG,
        )
        for index, plane in enumerate(band.planes):
            shift = 0 if index == 0 else 1  # chroma planes have half the rows
            view = np.frombuffer(memoryview(plane), np.uint8).reshape(plane.height, plane.line_size)[:, : plane.width]
            self._planes[index][top >> shift : bottom >> shift] = view

    def encode(self, *, keyframe: bool = False, refinement: bool = False) -> EncodedPicture:
        """Compress the current picture; `refinement` encodes it at the higher still-picture quality."""
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
