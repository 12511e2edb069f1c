"""Pictures: the stream's H.264 decoded with PyAV into numpy arrays, patches drawn on them, and PNG read, scaled
and written.

A `Picture` keeps the decoded frame and converts it to RGB only when asked (`rgb`), so a client that decodes
every picture to keep its decoder in step pays the colour conversion only for the pictures it looks at.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import av
import cv2
import numpy as np
from av.video.reformatter import ColorRange, Colorspace

from framestream.core.wire import FLAG_KEYFRAME, FORMAT_COPY, FORMAT_PNG, VideoFlags, unpack_patch_payload

__all__ = ["Picture", "StreamDecoder", "png_size", "png_to_rgb", "rgb_to_png", "scale_png", "signalled_matrix"]

Rgb = np.ndarray  # (height, width, 3) uint8


@dataclass(eq=False)
class Picture(VideoFlags):
    """One decoded picture of a frame's stream, at the encoded size (CSS size times dpr)."""

    frame: av.VideoFrame = field(repr=False)
    sequence: int
    capture_us: int  # the service's capture time, microseconds since the Unix epoch
    flags: int
    received_us: int  # when this client received it (its wall clock, microseconds)
    decoded_at: float  # time.monotonic() once decoded
    received_at: float = 0.0  # time.monotonic() when its message was received
    _rgb: Rgb | None = field(default=None, repr=False)
    patched: bool = False  # the picture before with a patch message drawn on it (`frame` is that picture's)

    @property
    def width(self) -> int:
        return int(self.frame.width)

    @property
    def height(self) -> int:
        return int(self.frame.height)

    @property
    def rgb(self) -> Rgb:
        """(height, width, 3) uint8, converted with the limited-range matrix the stream signals in its SPS."""
        if self._rgb is None:
            self._rgb = self._converted()
        return self._rgb

    def _converted(self) -> Rgb:
        return self.frame.to_ndarray(format="rgb24", src_colorspace=signalled_matrix(self.frame),
                                     src_color_range=ColorRange.MPEG, dst_color_range=ColorRange.JPEG)

    def pixel(self, x: float, y: float, dpr: float = 1.0) -> tuple[int, int, int]:
        """The colour at CSS point (x, y) of a frame at `dpr`.

        Read from the YUV planes with the same matrix when the picture was not converted
        yet: checking one place of every picture must not cost a whole-picture conversion each."""
        row, col = min(self.height - 1, int(y * dpr)), min(self.width - 1, int(x * dpr))
        if self._rgb is None and self.frame.format.name == "yuv420p":
            return _yuv420_pixel(self.frame, row, col)
        rgb = self.rgb[row, col]
        return int(rgb[0]), int(rgb[1]), int(rgb[2])

    def png(self, width: int | None = None, height: int | None = None) -> bytes:
        """The picture as PNG, scaled (area average) to `width` x `height` if given (a CSS-size picture)."""
        width, height = width or self.width, height or self.height
        if (width, height) == (self.width, self.height):
            return rgb_to_png(self.rgb)
        if self.patched:  # the patches are in the RGB picture only
            rgb = av.VideoFrame.from_ndarray(np.ascontiguousarray(self.rgb), format="rgb24")
            return _encode_png(rgb.reformat(width, height, format="rgb24", interpolation="AREA"))
        scaled = self.frame.reformat(width, height, format="rgb24", interpolation="AREA",
                                     src_colorspace=signalled_matrix(self.frame), src_color_range=ColorRange.MPEG,
                                     dst_color_range=ColorRange.JPEG)
        return _encode_png(scaled)

    def _fits(self, x: int, y: int, width: int, height: int) -> bool:
        return x + width <= self.width and y + height <= self.height

    def with_patch(self, payload: bytes, *, sequence: int, capture_us: int, received_us: int,
                   received_at: float) -> Picture:
        """This picture with a patch message's rectangles drawn on it, in order (docs/protocol.md, "Binary patch
        messages"): the next picture of the stream. ValueError when the payload or an image is broken, a rectangle
        does not fit or is not the size its image is, or a copy is not the message's first rectangle."""
        # A fresh conversion is already a copy of its own; only a picture converted before must be copied.
        rgb = self._converted() if self._rgb is None else self._rgb.copy()
        for n, rect in enumerate(unpack_patch_payload(payload)):
            if not self._fits(rect.x, rect.y, rect.width, rect.height):
                raise ValueError(f"patch {rect.width}x{rect.height} at ({rect.x}, {rect.y}) does not fit a "
                                 f"{self.width}x{self.height} picture")
            if rect.format == FORMAT_COPY:
                # The picture before the message: only a first rectangle reads it unchanged.
                (sx, sy), w, h = rect.source, rect.width, rect.height
                if n or not self._fits(sx, sy, w, h):
                    raise ValueError(f"a copy from ({sx}, {sy}) that is not first or does not fit")
                rgb[rect.y:rect.y + h, rect.x:rect.x + w] = rgb[sy:sy + h, sx:sx + w]  # numpy copies overlaps
                continue
            if rect.format != FORMAT_PNG:
                raise ValueError(f"patch format {rect.format} is neither PNG nor a copy")
            image = cv2.imdecode(np.frombuffer(rect.data, np.uint8), cv2.IMREAD_COLOR)
            if image is None:
                raise ValueError("a patch image is not a PNG")
            if image.shape[:2] != (rect.height, rect.width):
                raise ValueError(f"a patch image is {image.shape[1]}x{image.shape[0]}, its rectangle "
                                 f"{rect.width}x{rect.height}")
            rgb[rect.y:rect.y + rect.height, rect.x:rect.x + rect.width] = image[:, :, ::-1]
        return Picture(self.frame, sequence, capture_us, 0, received_us, time.monotonic(), received_at, rgb,
                       patched=True)


def signalled_matrix(frame: av.VideoFrame) -> Colorspace:
    """The YUV -> RGB matrix a decoded picture's SPS signals: BT.709 when it says so, else BT.601 (framestream
    signals BT.601 since it converts with OpenCV; BT.709 before; unsignalled streams are taken as BT.601)."""
    return Colorspace.ITU709 if int(frame.colorspace) == _AVCOL_SPC_BT709 else Colorspace.ITU601


_AVCOL_SPC_BT709 = 1
# (R from V, G from U, G from V, B from U) for limited range, after scaling Y by 255/219.
_YUV_TO_RGB = {Colorspace.ITU709: (1.79274, 0.21325, 0.53291, 2.11240),
               Colorspace.ITU601: (1.59603, 0.39176, 0.81297, 2.01723)}


def _yuv420_pixel(frame: av.VideoFrame, row: int, col: int) -> tuple[int, int, int]:
    planes = frame.planes
    rv, gu, gv, bu = _YUV_TO_RGB[signalled_matrix(frame)]
    y = 1.16438 * (_plane_at(planes[0], row, col) - 16.0)
    u = _plane_at(planes[1], row // 2, col // 2) - 128.0
    v = _plane_at(planes[2], row // 2, col // 2) - 128.0
    return _clip(y + rv * v), _clip(y - gu * u - gv * v), _clip(y + bu * u)


def _plane_at(plane: av.video.plane.VideoPlane, row: int, col: int) -> float:
    return float(memoryview(plane)[row * plane.line_size + col])


def _clip(value: float) -> int:
    return max(0, min(255, round(value)))


class StreamDecoder:
    """One frame's decoder: fed every access unit in order, from a keyframe on."""

    def __init__(self) -> None:
        self._ctx: av.VideoCodecContext = av.CodecContext.create("h264", "r")
        self._synced = False

    def reset(self) -> None:
        """A new `video-config` (a restarted frame): a fresh decoder that waits for a keyframe."""
        self._ctx = av.CodecContext.create("h264", "r")
        self._synced = False

    @property
    def synced(self) -> bool:
        return self._synced

    def lose_sync(self) -> None:
        """Pictures were skipped: decode nothing until the next keyframe."""
        self._synced = False

    def decode(self, payload: bytes, *, sequence: int, capture_us: int, flags: int, received_us: int,
               received_at: float = 0.0) -> Picture | None:
        """The picture this access unit completes, or None (not synced yet, or the decoder gave none).

        Raises `av.FFmpegError` on a broken unit; the caller then waits for a keyframe."""
        if flags & FLAG_KEYFRAME:
            self._synced = True
        if not self._synced:
            return None
        try:
            frames = self._ctx.decode(av.Packet(payload))
        except av.FFmpegError:
            self._synced = False
            raise
        if not frames:
            return None
        return Picture(frames[-1], sequence, capture_us, flags, received_us, time.monotonic(), received_at)


def _decode_png(data: bytes) -> av.VideoFrame:
    ctx = av.CodecContext.create("png", "r")
    frames = ctx.decode(av.Packet(data))
    if not frames:
        raise ValueError("not a PNG picture")
    return frames[0]


def png_to_rgb(data: bytes) -> Rgb:
    """A PNG as (height, width, 3) uint8 RGB."""
    return _decode_png(data).to_ndarray(format="rgb24")


def png_size(data: bytes) -> tuple[int, int]:
    """(width, height) from the PNG's header."""
    if data[:8] != b"\x89PNG\r\n\x1a\n" or len(data) < 24:
        raise ValueError("not a PNG")
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def rgb_to_png(rgb: Rgb) -> bytes:
    """(height, width, 3) uint8 RGB as PNG."""
    frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(rgb, dtype=np.uint8), format="rgb24")
    return _encode_png(frame)


def _encode_png(frame: av.VideoFrame) -> bytes:
    ctx = av.CodecContext.create("png", "w")
    ctx.width, ctx.height, ctx.pix_fmt = frame.width, frame.height, "rgb24"
    packets = [*ctx.encode(frame), *ctx.encode(None)]
    return b"".join(bytes(p) for p in packets)


def scale_png(data: bytes, width: int, height: int) -> bytes:
    """The PNG at (width, height), averaging areas (a dpr 2 screenshot at CSS size keeps its colours)."""
    frame = _decode_png(data)
    if (frame.width, frame.height) == (width, height):
        return data
    return _encode_png(frame.reformat(width, height, format="rgb24", interpolation="AREA"))
