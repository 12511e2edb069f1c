"""A picture's changed boxes as lossless patches: PNG images (RGB, 8 bits) made with zlib, no codec library.

Why PNG through zlib here: every browser's `createImageBitmap` decodes it, off the main thread in Chromium, and
it is exact. Measured at 2560x1600 on two cores (docs/performance.md): a 64x64 box of UI content takes about
0.05 ms and 270 bytes, a 256x256 one about 1 ms, against 10-18 ms of x264 for the whole picture. zlib level 1
with no row filter: higher levels and filters halve the bytes of text but double the time, and the bytes of a
small box are few anyway. No colour chunks (gAMA, sRGB, iCCP): the viewer draws the pixels as they are.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from framestream.core.wire import FORMAT_PNG, PatchRect

__all__ = ["encode_png", "make_patches", "merge_boxes"]

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_ZLIB_LEVEL = 1


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def encode_png(bgrx: npt.NDArray[np.uint8]) -> bytes:
    """A (height, width, 4) BGRX region as an RGB PNG."""
    height, width = int(bgrx.shape[0]), int(bgrx.shape[1])
    rows = np.empty((height, 1 + 3 * width), np.uint8)
    rows[:, 0] = 0  # filter type None on every row
    rows[:, 1:].reshape(height, width, 3)[...] = bgrx[:, :, 2::-1]
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8 bits, truecolour, no interlace
    return (
        _PNG_SIGNATURE
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(rows.tobytes(), _ZLIB_LEVEL))
        + _chunk(b"IEND", b"")
    )


Box = tuple[int, int, int, int]  # x0, y0, x1, y1


def merge_boxes(boxes: Sequence[Box], gap: int = 16) -> list[Box]:
    """Boxes that overlap or lie within `gap` pixels of each other become their bounding box (one image and
    one entry instead of several); the result has no two such boxes."""
    merged: list[Box] = []
    for box in sorted(boxes):
        x0, y0, x1, y1 = box
        i = 0
        while i < len(merged):
            a0, b0, a1, b1 = merged[i]
            if x0 <= a1 + gap and a0 <= x1 + gap and y0 <= b1 + gap and b0 <= y1 + gap:
                x0, y0, x1, y1 = min(x0, a0), min(y0, b0), max(x1, a1), max(y1, b1)
                merged.pop(i)
                i = 0  # the grown box may now reach one already passed
            else:
                i += 1
        merged.append((x0, y0, x1, y1))
    return merged


def make_patches(picture: npt.NDArray[np.uint8], boxes: Sequence[Box]) -> list[PatchRect]:
    """One PNG patch per box of `picture` (BGRX), in the order given (the viewer draws them in order)."""
    return [
        PatchRect(x0, y0, x1 - x0, y1 - y0, FORMAT_PNG, encode_png(picture[y0:y1, x0:x1]))
        for x0, y0, x1, y1 in boxes
    ]
