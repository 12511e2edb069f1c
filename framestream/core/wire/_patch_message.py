"""The body of a binary patch message (kind 2): a picture's changed rectangles as lossless images.

After the common 16-byte header (`_video_header`): a u16 count, then per rectangle a 14-byte entry
(x, y, width, height as u16 in encoded pixels, format u8, reserved u8, length u32; docs/protocol.md) and its
`length` bytes of image. Big-endian like the header. A copy (format 2, the `copies` feature) carries no image: its
4 bytes are the source's x and y, and it moves a rectangle of the picture as it stood before the message (a
scroll: the viewer moves what it shows, only the strip that came into view is an image).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Final, NamedTuple

PATCH_COUNT: Final = struct.Struct(">H")
PATCH_ENTRY: Final = struct.Struct(">HHHHBBI")
COPY_SOURCE: Final = struct.Struct(">HH")
FORMAT_PNG: Final = 1
FORMAT_COPY: Final = 2
PATCH_FORMATS: Final = (FORMAT_PNG, FORMAT_COPY)


class PatchRect(NamedTuple):
    x: int
    y: int
    width: int
    height: int
    format: int
    data: bytes

    @classmethod
    def copy(cls, rect: tuple[int, int, int, int], source: tuple[int, int]) -> PatchRect:
        """The rectangle (x, y, width, height) taken from `source` (x, y) of the picture before the message."""
        return cls(*rect, FORMAT_COPY, COPY_SOURCE.pack(*source))

    @property
    def source(self) -> tuple[int, int]:
        """A copy's source (x, y); ValueError for an image, or a copy whose data is not 4 bytes."""
        if self.format != FORMAT_COPY or len(self.data) != COPY_SOURCE.size:
            raise ValueError(f"not a copy: format {self.format}, {len(self.data)} bytes")
        x, y = COPY_SOURCE.unpack(self.data)
        return int(x), int(y)


def pack_patch_payload(rects: Sequence[PatchRect]) -> bytes:
    """The payload after the header: the count, then each rectangle's entry and image, drawn in this order."""
    if not 0 < len(rects) <= 0xFFFF:
        raise ValueError(f"a patch message holds 1..65535 rectangles, got {len(rects)}")
    parts = [PATCH_COUNT.pack(len(rects))]
    for n, r in enumerate(rects):
        if r.format not in PATCH_FORMATS:
            raise ValueError(f"unknown patch format {r.format}")
        if not (0 <= r.x <= 0xFFFF and 0 <= r.y <= 0xFFFF and 0 < r.width <= 0xFFFF and 0 < r.height <= 0xFFFF):
            raise ValueError(f"patch rectangle {r.x},{r.y} {r.width}x{r.height} out of range")
        if r.format == FORMAT_COPY and (len(r.data) != COPY_SOURCE.size or n):
            raise ValueError("a copy is the message's first rectangle, its source 4 bytes")
        parts.append(PATCH_ENTRY.pack(r.x, r.y, r.width, r.height, r.format, 0, len(r.data)))
        parts.append(r.data)
    return b"".join(parts)


def unpack_patch_payload(payload: bytes | memoryview) -> list[PatchRect]:
    """The rectangles of a patch message's payload; ValueError when it is cut short or has bytes left over."""
    view = memoryview(payload)
    if len(view) < PATCH_COUNT.size:
        raise ValueError("patch payload shorter than its count")
    (count,) = PATCH_COUNT.unpack_from(view)
    offset = PATCH_COUNT.size
    rects: list[PatchRect] = []
    for _ in range(count):
        if len(view) < offset + PATCH_ENTRY.size:
            raise ValueError("patch payload cut inside an entry")
        x, y, width, height, fmt, _reserved, length = PATCH_ENTRY.unpack_from(view, offset)
        offset += PATCH_ENTRY.size
        if len(view) < offset + length:
            raise ValueError("patch payload cut inside an image")
        if fmt == FORMAT_COPY and length != COPY_SOURCE.size:
            raise ValueError(f"a copy's source is {COPY_SOURCE.size} bytes, got {length}")
        rects.append(PatchRect(x, y, width, height, fmt, bytes(view[offset : offset + length])))
        offset += length
    if offset != len(view):
        raise ValueError(f"{len(view) - offset} bytes after the last patch rectangle")
    return rects
