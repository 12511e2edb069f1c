"""Server messages: the JSON text the service sends, built in one place so every field is the contract's."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Final

PROTOCOL_VERSION: Final = 1

ERROR_CODES: Final = (
    "bad-message",
    "unknown-frame",
    "unauthorized",
    "expired",
    "forbidden",
    "replayed",
    "superseded",
    "capacity",
    "shared-frames-off",
    "bad-input",
    "rate-limited",
    "internal",
)
FRAME_STATES: Final = ("launching", "live", "paused", "closed", "error")

# WebSocket close codes.
CLOSE_PROTOCOL: Final = 4400
CLOSE_UNAUTHORIZED: Final = 4401
CLOSE_FORBIDDEN: Final = 4403
CLOSE_HELLO_TIMEOUT: Final = 4408
CLOSE_TOO_MANY: Final = 4429
CLOSE_GOING_AWAY: Final = 1001
CLOSE_INTERNAL: Final = 1011


def _dumps(obj: Mapping[str, object]) -> str:
    # ensure_ascii: strings echoed from clients may hold lone surrogates, which UTF-8 cannot carry.
    return json.dumps(obj, separators=(",", ":"), allow_nan=False)


def welcome(sandbox: str, shared_frames: bool) -> str:
    return _dumps(
        {"type": "welcome", "protocol": PROTOCOL_VERSION, "sandbox": sandbox, "shared_frames": shared_frames}
    )


def video_config(  # noqa: PLR0917 - the contract's field order
    frame: str, slot: int, codec: str, width: int, height: int, css_width: int, css_height: int
) -> str:
    return _dumps(
        {
            "type": "video-config",
            "frame": frame,
            "slot": slot,
            "codec": codec,
            "width": width,
            "height": height,
            "css_width": css_width,
            "css_height": css_height,
        }
    )


def frame_state(  # noqa: PLR0917 - the contract's field order
    frame: str, state: str, url: str, viewers: int, driver: str | None, message: str | None = None
) -> str:
    if state not in FRAME_STATES:
        raise ValueError(f"unknown frame state {state!r}")
    body: dict[str, object] = {
        "type": "frame-state",
        "frame": frame,
        "state": state,
        "url": url,
        "viewers": viewers,
        "driver": driver,
    }
    if message is not None:
        body["message"] = message
    return _dumps(body)


def control_message(frame: str, driver: str | None, you: bool) -> str:
    return _dumps({"type": "control", "frame": frame, "driver": driver, "you": you})


def input_ack(frame: str, seq: int) -> str:
    return _dumps({"type": "input-ack", "frame": frame, "seq": seq})


def error_message(code: str, message: str, frame: str | None = None, seq: int | None = None) -> str:
    # A typo in a code would reach clients as an unknown error; catch it where it is made.
    if code not in ERROR_CODES:
        raise ValueError(f"unknown error code {code!r}")
    body: dict[str, object] = {"type": "error", "code": code, "message": message}
    if frame is not None:
        body["frame"] = frame
    if seq is not None:
        body["seq"] = seq
    return _dumps(body)
