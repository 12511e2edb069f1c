"""A picture's changed boxes as lossless patches: PNG images (RGB, 8 bits) made with zlib, no codec library.

Why PNG through zlib here: every browser's `createImageBitmap` decodes it, off the main thread in Chromium, and
it is exact. Measured at 2560x1600 on two cores (docs/performance.md): a 64x64 box of UI content takes about
0.05-0.4 ms, a 256x256 one about 1 ms, against 10-18 ms of x264 for the whole picture. Row filters mostly made
antialiased UI content larger here, so only a small RGB region also tries PNG's Sub filter and keeps the smaller
(the strips a scroll brings into view, coloured text: 6554 -> 3870 bytes on average, 0.4 ms more; a 106-row block
of text grew with it instead). No colour chunks (gAMA, sRGB, iCCP): the viewer draws the pixels as they are.
"""

from __future__ import annotations

import struct
import zlib
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from framestream.core.wire import FORMAT_PNG, PatchRect

__all__ = ["PngCache", "encode_png", "make_patches", "merge_boxes"]

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# Regions with at most 256 colours (UI content: a caret, a letter, a spinner, a moving box's edges) are palette
# images: one index byte a pixel compresses to about 60 % of RGB (a 64 px spinner: 1.8 KB instead of 2.0). The
# colours are counted over runs of equal pixels (one value a run, not a sort of every pixel), so trying costs
# about 0.05-0.1 ms for a spinner; regions with more runs than `_PALETTE_MAX_RUNS` go straight to RGB.
_PALETTE_MAX_RUNS = 32 * 1024
_SMALL_PIXELS = 32 * 1024  # up to this many pixels: zlib level 6
_SMALL_LEVEL = 6  # a few hundred microseconds, 10-20 % fewer bytes than level 1
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
    """A (height, width, 4) BGRX region as a PNG: indexed when it has at most 256 colours, else RGB."""
    height, width = int(bgrx.shape[0]), int(bgrx.shape[1])
    level = _SMALL_LEVEL if height * width <= _SMALL_PIXELS else _LARGE_LEVEL
    indexed = _palette(bgrx)
    if indexed is not None:
        colours, index = indexed
        rows = np.empty((height, 1 + width), np.uint8)
        rows[:, 0] = 0  # filter type None on every row
        rows[:, 1:] = index.reshape(height, width)
        rgb = np.empty((len(colours), 3), np.uint8)
        rgb[:, 0], rgb[:, 1], rgb[:, 2] = colours >> 16, colours >> 8, colours
        return _png(width, height, 3, rows, level=level, palette=rgb.tobytes())
    rows = np.empty((height, 1 + 3 * width), np.uint8)
    rows[:, 0] = 0
    rows[:, 1:].reshape(height, width, 3)[...] = bgrx[:, :, 2::-1]
    plain = _png(width, height, 2, rows, level=level)
    if level != _SMALL_LEVEL or width < 2:
        return plain
    # Sub: each byte minus the same channel's byte one pixel to the left (wrapping), per PNG.
    filtered = np.empty_like(rows)
    filtered[:, 0] = 1
    filtered[:, 1:4] = rows[:, 1:4]
    np.subtract(rows[:, 4:], rows[:, 1:-3], out=filtered[:, 4:])
    smaller = _png(width, height, 2, filtered, level=level)
    return smaller if len(smaller) < len(plain) else plain


def _palette(bgrx: npt.NDArray[np.uint8]) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint8]] | None:
    """The region's colours (0xRRGGBB, sorted) and each pixel's index into them; None above 256 colours."""
    words = np.bitwise_and(np.ascontiguousarray(bgrx).view(np.uint32).reshape(-1), np.uint32(0x00FFFFFF))
    starts = np.flatnonzero(words[1:] != words[:-1])
    if len(starts) >= _PALETTE_MAX_RUNS:
        return None
    starts = np.concatenate((np.zeros(1, np.intp), starts + 1))
    colours, run_index = np.unique(words[starts], return_inverse=True)
    if len(colours) > 256:
        return None
    lengths = np.diff(starts, append=len(words))
    return colours, np.repeat(run_index.astype(np.uint8), lengths)


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


class PngCache:
    """The PNGs of recently sent regions, by content: what moves keeps showing the same pixels (the leading and
    trailing edges of a moving box are the same strips each picture; measured on the small-animation page, 199 of
    264 regions had been sent before), and a hit costs a checksum and a compare instead of a palette and zlib.

    Exact: a hit needs equal pixels, not only an equal checksum. At most 2 MiB of pixels (about 40 strips of a
    moving box at dpr 2). Owned by one capture's worker, like its sender.
    """

    def __init__(self, max_entries: int = 64, max_bytes: int = 2 << 20) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._entries: OrderedDict[tuple[int, int, int], tuple[npt.NDArray[np.uint8], bytes]] = OrderedDict()
        self._bytes = 0
        self.hits = 0
        self.misses = 0

    def png(self, region: npt.NDArray[np.uint8]) -> bytes:
        """`encode_png(region)`, from the cache when the same pixels were encoded lately."""
        pixels = np.ascontiguousarray(region)
        key = (int(pixels.shape[0]), int(pixels.shape[1]), zlib.crc32(pixels))  # type: ignore[arg-type]
        found = self._entries.get(key)
        if found is not None and np.array_equal(found[0], pixels):
            self._entries.move_to_end(key)
            self.hits += 1
            return found[1]
        self.misses += 1
        data = encode_png(pixels)
        if found is not None:  # a checksum collision: the newer region takes the slot
            self._bytes -= found[0].nbytes
        # A copy only when `pixels` is still the caller's memory (ascontiguousarray copied a cut-out already).
        kept = pixels if pixels.flags.owndata and pixels is not region else pixels.copy()
        self._entries[key] = (kept, data)
        self._entries.move_to_end(key)
        self._bytes += kept.nbytes
        while self._entries and (len(self._entries) > self.max_entries or self._bytes > self.max_bytes):
            _, (old, _) = self._entries.popitem(last=False)
            self._bytes -= old.nbytes
        return data


def make_patches(
    picture: npt.NDArray[np.uint8], boxes: Sequence[Box], cache: PngCache | None = None
) -> list[PatchRect]:
    """One PNG patch per box of `picture` (BGRX), in the order given (the viewer draws them in order)."""
    encode = encode_png if cache is None else cache.png
    return [
        PatchRect(x0, y0, x1 - x0, y1 - y0, FORMAT_PNG, encode(picture[y0:y1, x0:x1]))
        for x0, y0, x1, y1 in boxes
    ]
