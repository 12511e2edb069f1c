"""The client side of the wire format: the JSON text a client sends, the inverse of the service's parser.

The message classes are the service's own (`framestream.core.wire`), so `parse_client_message` of what this
writes gives back the same message (tests/core/test_wire.py checks that round trip on arbitrary messages).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from framestream.core.wire import (
    ClientMessage,
    DialogAnswer,
    Hello,
    Input,
    InputEvent,
    KeyEvent,
    KeyframeRequest,
    MouseEvent,
    Navigate,
    NavigateAction,
    PageRequest,
    PasteEvent,
    Ping,
    Refresh,
    Release,
    RequestHelp,
    TakeOver,
    TextEvent,
    Unwatch,
    Watch,
    WheelEvent,
)

__all__ = ["encode_client_message", "event_to_dict", "navigate_body"]


def _num_out(value: float) -> float | int:
    # Whole numbers go out as integers: shorter, and what a JavaScript client would send.
    return int(value) if float(value).is_integer() else value


def event_to_dict(event: InputEvent) -> dict[str, object]:
    """The JSON object for one input event (the inverse of the parser)."""
    if isinstance(event, MouseEvent):
        return {
            "kind": "mouse",
            "action": event.action,
            "x": _num_out(event.x),
            "y": _num_out(event.y),
            "button": event.button,
            "buttons": event.buttons,
            "clicks": event.clicks,
            "modifiers": event.modifiers,
        }
    if isinstance(event, WheelEvent):
        return {
            "kind": "wheel",
            "x": _num_out(event.x),
            "y": _num_out(event.y),
            "dx": _num_out(event.dx),
            "dy": _num_out(event.dy),
            "modifiers": event.modifiers,
        }
    if isinstance(event, KeyEvent):
        out: dict[str, object] = {
            "kind": "key",
            "action": event.action,
            "key": event.key,
            "code": event.code,
            "modifiers": event.modifiers,
        }
        if event.repeat:
            out["repeat"] = True
        return out
    if isinstance(event, TextEvent):
        return {"kind": "text", "text": event.text}
    if isinstance(event, PasteEvent):
        return {"kind": "paste", "text": event.text}
    return {
        "kind": "touch",
        "action": event.action,
        "points": [{"id": p.id, "x": _num_out(p.x), "y": _num_out(p.y)} for p in event.points],
    }


def _dumps(obj: Mapping[str, object]) -> str:
    # Compact, like the viewer's JSON.stringify; NaN and Infinity are refused, as the service refuses them.
    return json.dumps(obj, separators=(",", ":"), allow_nan=False)


def encode_client_message(message: ClientMessage) -> str:
    """The JSON text a client sends for `message` (the inverse of parse_client_message)."""
    if isinstance(message, Hello):
        return _dumps({"type": "hello", "token": message.token})
    if isinstance(message, Refresh):
        return _dumps({"type": "refresh", "token": message.token})
    if isinstance(message, Watch):
        return _dumps({"type": "watch", "frame": message.frame, **({} if message.video else {"video": False})})
    if isinstance(message, Unwatch):
        return _dumps({"type": "unwatch", "frame": message.frame})
    if isinstance(message, KeyframeRequest):
        return _dumps({"type": "keyframe", "frame": message.frame})
    if isinstance(message, Ping):
        return _dumps({"type": "ping"} if message.seq is None else {"type": "ping", "seq": message.seq})
    if not isinstance(message, Input | PageRequest | Navigate | DialogAnswer | TakeOver | Release | RequestHelp):
        raise TypeError(f"no client encoding for {type(message).__name__}")
    envelope: dict[str, object] = {"frame": message.frame, "grant": message.grant, "seq": message.seq}
    if isinstance(message, TakeOver):
        return _dumps({"type": "take-over", **envelope})
    if isinstance(message, Release):
        return _dumps({"type": "release", **envelope, "note": message.note})
    if isinstance(message, RequestHelp):
        return _dumps({"type": "request-help", **envelope, "reason": message.reason, "timeout_s": message.timeout_s})
    if isinstance(message, PageRequest):
        return _dumps({"type": "page", **envelope, "action": message.action, "page": message.page})
    if isinstance(message, Navigate):
        return _dumps({"type": "navigate", **envelope, **_navigation(message.url, message.action)})
    if isinstance(message, DialogAnswer):
        answer: dict[str, object] = {"type": "dialog-answer", **envelope, "id": message.id, "accept": message.accept}
        if message.text is not None:
            answer["text"] = message.text
        return _dumps(answer)
    body: dict[str, object] = {"type": "input", **envelope}
    if len(message.events) == 1:
        body["event"] = event_to_dict(message.events[0])
    else:
        body["events"] = [event_to_dict(e) for e in message.events]
    return _dumps(body)


def _navigation(url: str | None, action: NavigateAction | None) -> dict[str, object]:
    return {"url": url} if url is not None else {"action": action}


def navigate_body(seq: int, *, url: str | None = None, action: NavigateAction | None = None) -> dict[str, object]:
    """The JSON body of POST /frames/{id}/navigate: go to `url`, or back, forward or reload (`action`)."""
    if (url is None) == (action is None):
        raise ValueError("navigate needs exactly one of url or action")
    return {"seq": seq, **_navigation(url, action)}
