"""A picture's changed boxes as lossless patches: PNG images (RGB, 8 bits) made with zlib, no codec library.

Why PNG through zlib here: every browser's `createImageBitmap` decodes it, off the main thread in Chromium, and
it is exact. Measured at 2560x1600 on two cores (docs/performance.md): a 64x64 box of UI content takes about
0.05-0.4 ms, a 256x256 one about 1 ms, against 10-18 ms of x264 for the whole picture. No row filters: on
antialiased UI content they made the images larger here. No colour chunks (gAMA, sRGB, iCCP): the viewer draws
the pixels as they are.
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
# Small regions (a caret, a letter, a spinner) are tried as palette images: UI content there rarely has more
# than 256 colours, and one index byte a pixel compresses to about 60 % of RGB (a 64 px spinner: 835 bytes
# instead of 1338), at about 0.4 ms. Counting colours costs a sort, so larger regions go straight to RGB.
_PALETTE_MAX_PIXELS = 32 * 1024
_SMALL_LEVEL = 6  # zlib level for small regions: a few hundred microseconds, 15-20 % fewer bytes than level 1
_LARGE_LEVEL = 1


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def _png(width: int, height: int, colour_type: int, rows: npt.NDArray[np.uint8], *, level: int,
         palette: bytes = b"") -> bytes:
    header = struct.pack(">IIBBBBB", width, height, 8, colour_type, 0, 0, 0)  # 8 bits, no interlace
    return (
        _PNG_SIGNATURE
        + _chunk(b"IHDR", header)
        + (_chunk(b"PLTE", palette) if palette else b"")
        + _chunk(b"IDAT", zlib.compress(rows.tobytes(), level))
        + _chunk(b"IEND", b"")
    )


def encode_png(bgrx: npt.NDArray[np.uint8]) -> bytes:
    """A (height, width, 4) BGRX region as a PNG: indexed when small with at most 256 colours, else RGB."""
    height, width = int(bgrx.shape[0]), int(bgrx.shape[1])
    small = height * width <= _PALETTE_MAX_PIXELS
    if small:
        words = np.ascontiguousarray(bgrx).view(np.uint32).reshape(-1) & np.uint32(0x00FFFFFF)
        colours, index = np.unique(words, return_inverse=True)
        if len(colours) <= 256:
            rows = np.empty((height, 1 + width), np.uint8)
            rows[:, 0] = 0  # filter type None on every row
            rows[:, 1:] = index.reshape(height, width)
            rgb = np.empty((len(colours), 3), np.uint8)
            rgb[:, 0], rgb[:, 1], rgb[:, 2] = colours >> 16, colours >> 8, colours
            return _png(width, height, 3, rows, level=_SMALL_LEVEL, palette=rgb.tobytes())
    rows = np.empty((height, 1 + 3 * width), np.uint8)
    rows[:, 0] = 0
    rows[:, 1:].reshape(height, width, 3)[...] = bgrx[:, :, 2::-1]
    return _png(width, height, 2, rows, level=_SMALL_LEVEL if small else _LARGE_LEVEL)


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
