"""Make what is negotiated match what is sent: the H.264 profile and level of the frame's own stream.

aiortc answers with its own fmtp (`profile-level-id=42e01f` or `42001f`: level 3.1) whatever is sent, while
2560x1600 at 30 fps needs level 5.0. The stream is constrained baseline, as the offer's 42e01f and 42001f are,
so only the level differs; the answer is rewritten to announce the stream's own profile-level-id (from its
SPS, or computed from the frame's size as the encoder does), so the receiver sizes its decoder for it.
"""

from __future__ import annotations

import re

from framestream.core.h264 import choose_level

_RTPMAP = re.compile(r"^a=rtpmap:(\d+) H264/90000\s*$", re.IGNORECASE | re.MULTILINE)
_FMTP = re.compile(r"^(a=fmtp:(\d+) .*?profile-level-id=)([0-9a-fA-F]{6})", re.MULTILINE)


def profile_level_id(codec: str | None, width: int, height: int, fps: float) -> str:
    """`42c0LL`-style profile-level-id of the stream: from its codec string (`avc1.42C032`) when the encoder has
    said it, else constrained baseline at the level the encoder will choose for this size and rate."""
    if codec is not None and codec.startswith("avc1.") and len(codec) == 11:
        return codec[5:].lower()
    major, minor = choose_level(width, height, fps).split(".")
    return f"42c0{int(major) * 10 + int(minor):02x}"


def with_profile_level_id(sdp: str, value: str) -> str:
    """`sdp` with the profile-level-id of every H.264 payload type set to `value`."""
    if not re.fullmatch(r"[0-9a-f]{6}", value):
        raise ValueError(f"not a profile-level-id: {value!r}")
    h264 = set(_RTPMAP.findall(sdp))
    return _FMTP.sub(lambda m: m.group(1) + value if m.group(2) in h264 else m.group(0), sdp)


def h264_profile_level_ids(sdp: str) -> list[str]:
    """The profile-level-id of every H.264 payload type in `sdp`, in order (for tests and checks)."""
    h264 = set(_RTPMAP.findall(sdp))
    return [m.group(3).lower() for m in _FMTP.finditer(sdp) if m.group(2) in h264]
