"""WebRTC signalling over the viewer WebSocket: `webrtc-offer` and `webrtc-ice` in, `webrtc-answer`,
`webrtc-ice` and `webrtc-closed` out (docs/protocol.md, "WebRTC").

An SDP is only bounded here (it must fit in a client message anyway); whether it is a usable offer is the peer
connection's to say, answered `bad-message` with the frame.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from framestream.core.wire._fields import FieldError, integer, refused_as, string
from framestream.core.wire._limits import MAX_ID_CHARS, MAX_MESSAGE_BYTES
from framestream.core.wire._server_messages import _dumps

MAX_CANDIDATE_CHARS: Final = 1024
WEBRTC_CLOSE_REASONS: Final = ("failed", "stalled", "closed")


@dataclass(frozen=True, slots=True)
class WebrtcOffer:
    """Watch `frame` over a new peer connection described by this SDP offer."""

    frame: str
    sdp: str


@dataclass(frozen=True, slots=True)
class IceCandidate:
    """One trickled candidate (`candidate` empty: the end of candidates), as RTCIceCandidate.toJSON() gives it."""

    candidate: str
    sdp_mid: str | None
    sdp_mline_index: int | None


@dataclass(frozen=True, slots=True)
class WebrtcIce:
    frame: str
    candidate: IceCandidate


def parse_webrtc_offer(obj: Mapping[str, Any]) -> WebrtcOffer:
    with refused_as("bad-message", frame=obj.get("frame") if isinstance(obj.get("frame"), str) else None):
        return WebrtcOffer(string(obj, "frame", "webrtc-offer", max_len=MAX_ID_CHARS),
                           string(obj, "sdp", "webrtc-offer", max_len=MAX_MESSAGE_BYTES))


def parse_webrtc_ice(obj: Mapping[str, Any]) -> WebrtcIce:
    with refused_as("bad-message", frame=obj.get("frame") if isinstance(obj.get("frame"), str) else None):
        frame = string(obj, "frame", "webrtc-ice", max_len=MAX_ID_CHARS)
        raw = obj.get("candidate")
        if not isinstance(raw, dict):
            raise FieldError("webrtc-ice: 'candidate' must be an object {candidate, sdpMid, sdpMLineIndex}")
        where = "webrtc-ice candidate"
        line = string(raw, "candidate", where, max_len=MAX_CANDIDATE_CHARS, min_len=0)
        mid = string(raw, "sdpMid", where, max_len=MAX_ID_CHARS) if raw.get("sdpMid") is not None else None
        index = integer(raw, "sdpMLineIndex", where, 0, 255) if raw.get("sdpMLineIndex") is not None else None
        return WebrtcIce(frame, IceCandidate(line, mid, index))


def webrtc_answer(frame: str, sdp: str) -> str:
    return _dumps({"type": "webrtc-answer", "frame": frame, "sdp": sdp})


def webrtc_closed(frame: str, reason: str) -> str:
    """The service closed the frame's peer connection (`failed`, `stalled`); the frame is no longer watched."""
    if reason not in WEBRTC_CLOSE_REASONS:
        raise ValueError(f"unknown webrtc-closed reason {reason!r}")
    return _dumps({"type": "webrtc-closed", "frame": frame, "reason": reason})
