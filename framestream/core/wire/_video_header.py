"""The 16-byte header in front of every binary message: kind (1 video, 2 patch, 3 padding), flags, slot, sequence,
capture."""

from __future__ import annotations

import struct
from typing import Final, NamedTuple

VIDEO_HEADER: Final = struct.Struct(">BBHIQ")
KIND_VIDEO: Final = 1
KIND_PATCH: Final = 2  # opt-in (hello `features`): a picture's changed rectangles, see _patch_message
KIND_PADDING: Final = 3  # bytes that test whether a slow link carries more (framestream/fanout/link.py); ignored
KINDS: Final = (KIND_VIDEO, KIND_PATCH, KIND_PADDING)
FLAG_KEYFRAME: Final = 1
FLAG_REFINEMENT: Final = 2


class VideoFlags:
    """A binary message's flag bits by name, for anything that keeps the header's `flags` (mixin)."""

    __slots__ = ()
    flags: int

    @property
    def keyframe(self) -> bool:
        return bool(self.flags & FLAG_KEYFRAME)

    @property
    def refinement(self) -> bool:
        """A sharpening re-encode of an unchanged picture (the page did not change)."""
        return bool(self.flags & FLAG_REFINEMENT)


class VideoHeader(NamedTuple):
    kind: int
    flags: int
    slot: int
    sequence: int
    capture_us: int

    @property
    def keyframe(self) -> bool:
        return bool(self.flags & FLAG_KEYFRAME)

    @property
    def refinement(self) -> bool:
        return bool(self.flags & FLAG_REFINEMENT)


def pack_video_header(flags: int, slot: int, sequence: int, capture_us: int, kind: int = KIND_VIDEO) -> bytes:
    """The 16-byte header in front of one access unit (or a patch payload, `kind` 2). `sequence` wraps modulo
    2**32."""
    if kind not in KINDS:
        raise ValueError(f"unknown message kind {kind}")
    if not 0 <= flags <= 0xFF:
        raise ValueError(f"flags {flags} out of range 0..255")
    if not 0 <= slot <= 0xFFFF:
        raise ValueError(f"slot {slot} out of range 0..65535")
    if not 0 <= capture_us < 2**64:
        raise ValueError(f"capture time {capture_us} out of range")
    return VIDEO_HEADER.pack(kind, flags, slot, sequence & 0xFFFFFFFF, capture_us)


def pack_padding(slot: int, size: int) -> bytes:
    """A padding message of `size` bytes in all (at least the header): kind 3, zeros after the header."""
    return pack_video_header(0, slot, 0, 0, KIND_PADDING) + bytes(max(0, size - VIDEO_HEADER.size))


def unpack_video_header(data: bytes) -> VideoHeader:
    """Read the header from the start of a binary message (the payload follows at VIDEO_HEADER.size)."""
    if len(data) < VIDEO_HEADER.size:
        raise ValueError(f"video message shorter than its {VIDEO_HEADER.size}-byte header")
    return VideoHeader(*VIDEO_HEADER.unpack_from(data))
