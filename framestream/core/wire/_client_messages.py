"""Client messages: each WebSocket message (and input POST body) parsed into frozen dataclasses.

Anything the contract does not allow raises one `ProtocolError` whose `code` is `bad-message` (the message
itself) or `bad-input` (its events, or the fields of a `page`, `navigate` or `dialog-answer`), carrying the
message's `seq` whenever it could be read, so the edge can answer with one clear error. Unknown extra fields
are ignored: the contract may grow new fields without breaking old servers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, cast

from framestream.core.errors import ProtocolError
from framestream.core.wire._events import (
    BUTTON_BITS,
    KEY_ACTIONS,
    MAX_MODIFIERS,
    MOUSE_ACTIONS,
    MOUSE_BUTTONS,
    TOUCH_ACTIONS,
    InputEvent,
    KeyAction,
    KeyEvent,
    MouseAction,
    MouseButton,
    MouseEvent,
    PasteEvent,
    TextEvent,
    TouchAction,
    TouchEvent,
    TouchPoint,
    WheelEvent,
)
from framestream.core.wire._fields import (
    FieldError,
    body_with_seq,
    boolean,
    choice,
    envelope,
    frame_of,
    integer,
    load_json,
    number,
    refused_as,
    string,
)
from framestream.core.wire._handoff_messages import (
    Release,
    RequestHelp,
    TakeOver,
    parse_release,
    parse_request_help,
    parse_take_over,
)
from framestream.core.wire._limits import (
    MAX_BUTTONS_MASK,
    MAX_CLICKS,
    MAX_EVENTS,
    MAX_ID_CHARS,
    MAX_KEY_CHARS,
    MAX_MESSAGE_BYTES,
    MAX_SEQ,
    MAX_TEXT_CHARS,
    MAX_TOKEN_CHARS,
    MAX_TOUCH_ID,
    MAX_TOUCH_POINTS,
    MAX_WHEEL_DELTA,
)
from framestream.core.wire._tab_messages import (
    DialogAnswer,
    Navigate,
    PageRequest,
    parse_dialog_answer,
    parse_navigate,
    parse_page,
)
from framestream.core.wire._webrtc_messages import WebrtcIce, WebrtcOffer, parse_webrtc_ice, parse_webrtc_offer

# What a client may ask for in hello's `features` (the service grants those it has; unknown names are ignored).
# `copies` (a scroll as a copy of what the viewer shows, docs/protocol.md) is used only beside `patches`.
FEATURES = ("patches", "copies")
_MAX_FEATURES = 16
_MAX_FEATURE_CHARS = 64


@dataclass(frozen=True, slots=True)
class Hello:
    token: str
    features: tuple[str, ...] | None = None  # None: the hello had no `features` (welcome then names none)


@dataclass(frozen=True, slots=True)
class Refresh:
    """A newer token for the connection (same `sub`, `role` and `frm`), before the hello token expires."""

    token: str


@dataclass(frozen=True, slots=True)
class Watch:
    """Watch `frame`; without `video`, only what happens to it (a viewer whose page is hidden)."""

    frame: str
    video: bool = True


@dataclass(frozen=True, slots=True)
class Unwatch:
    frame: str


@dataclass(frozen=True, slots=True)
class KeyframeRequest:
    frame: str


@dataclass(frozen=True, slots=True)
class Ping:
    """Is the connection alive? Answered at once with `pong` (a browser's WebSocket cannot send a ping frame)."""

    seq: int | None = None


@dataclass(frozen=True, slots=True)
class Input:
    frame: str
    grant: str
    seq: int
    events: tuple[InputEvent, ...]


ClientMessage = (Hello | Refresh | Watch | Unwatch | KeyframeRequest | Ping | Input | PageRequest | Navigate
                 | DialogAnswer | TakeOver | Release | RequestHelp | WebrtcOffer | WebrtcIce)


# --- parsing ------------------------------------------------------------------------------------------------


def _parse_mouse(obj: Mapping[str, Any], where: str) -> MouseEvent:
    action = cast(MouseAction, choice(obj, "action", where, MOUSE_ACTIONS))
    x, y = number(obj, "x", where), number(obj, "y", where)
    # Everything but action and coordinates has a default, so an agent can send the short form.
    default_button = "none" if action == "move" else "left"
    button = choice(obj, "button", where, MOUSE_BUTTONS) if "button" in obj else default_button
    if action != "move" and button == "none":
        raise FieldError(f"{where}: mouse '{action}' needs a button (left, middle, right, back or forward)")
    default_buttons = BUTTON_BITS[button] if action == "down" else 0
    buttons = integer(obj, "buttons", where, 0, MAX_BUTTONS_MASK, default=default_buttons)
    clicks = integer(obj, "clicks", where, 0, MAX_CLICKS, default=0 if action == "move" else 1)
    modifiers = integer(obj, "modifiers", where, 0, MAX_MODIFIERS, default=0)
    return MouseEvent(action, x, y, cast(MouseButton, button), buttons, clicks, modifiers)


def _parse_wheel(obj: Mapping[str, Any], where: str) -> WheelEvent:
    return WheelEvent(
        number(obj, "x", where),
        number(obj, "y", where),
        number(obj, "dx", where, MAX_WHEEL_DELTA),
        number(obj, "dy", where, MAX_WHEEL_DELTA),
        integer(obj, "modifiers", where, 0, MAX_MODIFIERS, default=0),
    )


def _parse_key(obj: Mapping[str, Any], where: str) -> KeyEvent:
    action = cast(KeyAction, choice(obj, "action", where, KEY_ACTIONS))
    key = string(obj, "key", where, max_len=MAX_KEY_CHARS)
    # DOM `code` is "" for keys a virtual keyboard cannot place; allow it and go by `key`.
    code = string(obj, "code", where, max_len=MAX_KEY_CHARS, min_len=0) if "code" in obj else ""
    modifiers = integer(obj, "modifiers", where, 0, MAX_MODIFIERS, default=0)
    return KeyEvent(action, key, code, modifiers, boolean(obj, "repeat", where, default=False))


def _parse_text(obj: Mapping[str, Any], where: str) -> TextEvent:
    return TextEvent(string(obj, "text", where, max_len=MAX_TEXT_CHARS))


def _parse_paste(obj: Mapping[str, Any], where: str) -> PasteEvent:
    return PasteEvent(string(obj, "text", where, max_len=MAX_TEXT_CHARS))


def _parse_touch(obj: Mapping[str, Any], where: str) -> TouchEvent:
    action = cast(TouchAction, choice(obj, "action", where, TOUCH_ACTIONS))
    raw = obj.get("points", [])
    if not isinstance(raw, list):
        raise FieldError(f"{where}: 'points' must be a list")
    if len(raw) > MAX_TOUCH_POINTS:
        raise FieldError(f"{where}: at most {MAX_TOUCH_POINTS} touch points")
    if action in ("start", "move") and not raw:
        raise FieldError(f"{where}: touch '{action}' needs at least one point")
    points: list[TouchPoint] = []
    for i, item in enumerate(raw):
        pw = f"{where} point {i}"
        if not isinstance(item, dict):
            raise FieldError(f"{pw}: must be an object")
        point_id = integer(item, "id", pw, 0, MAX_TOUCH_ID)
        points.append(TouchPoint(point_id, number(item, "x", pw), number(item, "y", pw)))
    if len({p.id for p in points}) != len(points):
        raise FieldError(f"{where}: touch point ids must be unique")
    return TouchEvent(action, tuple(points))


_EVENT_PARSERS: Final[Mapping[str, Callable[[Mapping[str, Any], str], InputEvent]]] = {
    "mouse": _parse_mouse,
    "wheel": _parse_wheel,
    "key": _parse_key,
    "text": _parse_text,
    "paste": _parse_paste,
    "touch": _parse_touch,
}


def _parse_event(obj: object, where: str) -> InputEvent:
    if not isinstance(obj, dict):
        raise FieldError(f"{where}: must be an object")
    kind = obj.get("kind")
    parser = _EVENT_PARSERS.get(kind) if isinstance(kind, str) else None
    if parser is None:
        raise FieldError(f"{where}: 'kind' must be one of {', '.join(_EVENT_PARSERS)}")
    return parser(obj, where)


def _parse_events(obj: Mapping[str, Any]) -> tuple[InputEvent, ...]:
    has_one, has_many = "event" in obj, "events" in obj
    if has_one == has_many:
        raise FieldError("input needs exactly one of 'event' or 'events'")
    if has_one:
        return (_parse_event(obj["event"], "event"),)
    raw = obj["events"]
    if not isinstance(raw, list):
        raise FieldError("'events' must be a list")
    if not 1 <= len(raw) <= MAX_EVENTS:
        raise FieldError(f"'events' must hold 1 to {MAX_EVENTS} events")
    return tuple(_parse_event(item, f"event {i}") for i, item in enumerate(raw))


def _parse_input(obj: Mapping[str, Any]) -> Input:
    frame, grant, seq = envelope(obj, "input")
    with refused_as("bad-input", seq=seq, frame=frame):
        return Input(frame, grant, seq, _parse_events(obj))


# A driver's messages: the envelope of `input` (frame, grant, seq), answered `input-ack` or an error.
_DRIVER_PARSERS: Final[Mapping[str, Callable[[Mapping[str, Any]], ClientMessage]]] = {
    "input": _parse_input,
    "page": parse_page,
    "navigate": parse_navigate,
    "dialog-answer": parse_dialog_answer,
    "take-over": parse_take_over,
    "release": parse_release,
    "request-help": parse_request_help,
}


def _features(obj: dict[str, Any]) -> tuple[str, ...] | None:
    """hello's optional `features`: a list of names; unknown names are kept out, a wrong type is refused."""
    raw = obj.get("features")
    if raw is None:
        return None
    if not isinstance(raw, list) or len(raw) > _MAX_FEATURES or not all(
        isinstance(name, str) and len(name) <= _MAX_FEATURE_CHARS for name in raw
    ):
        raise ProtocolError("bad-message", f"hello's features must be a list of at most {_MAX_FEATURES} names")
    return tuple(name for name in FEATURES if name in raw)


def parse_client_message(text: str | bytes, *, max_bytes: int = MAX_MESSAGE_BYTES) -> ClientMessage:
    """Parse one WebSocket message from a client; raise ProtocolError for anything the contract forbids."""
    obj = load_json(text, max_bytes)
    if not isinstance(obj, dict):
        raise ProtocolError("bad-message", "message must be a JSON object")
    kind = obj.get("type")
    driver_parser = _DRIVER_PARSERS.get(kind) if isinstance(kind, str) else None
    if driver_parser is not None:
        return driver_parser(obj)
    if kind == "webrtc-offer":
        return parse_webrtc_offer(obj)
    if kind == "webrtc-ice":
        return parse_webrtc_ice(obj)
    with refused_as("bad-message", frame=frame_of(obj)):
        if kind == "hello":
            return Hello(string(obj, "token", "hello", max_len=MAX_TOKEN_CHARS), _features(obj))
        if kind == "refresh":
            return Refresh(string(obj, "token", "refresh", max_len=MAX_TOKEN_CHARS))
        if kind == "watch":
            return Watch(string(obj, "frame", "watch", max_len=MAX_ID_CHARS),
                         boolean(obj, "video", "watch", default=True))
        if kind == "unwatch":
            return Unwatch(string(obj, "frame", "unwatch", max_len=MAX_ID_CHARS))
        if kind == "keyframe":
            return KeyframeRequest(string(obj, "frame", "keyframe", max_len=MAX_ID_CHARS))
        if kind == "ping":
            return Ping(integer(obj, "seq", "ping", 0, MAX_SEQ) if "seq" in obj else None)
    shown = kind if isinstance(kind, str) and len(kind) <= 32 else "?"
    raise ProtocolError(
        "bad-message",
        f"unknown message type '{shown}'; expected hello, watch, unwatch, keyframe, input, page, navigate or "
        "dialog-answer",
    )


def parse_input_body(obj: object) -> tuple[int, tuple[InputEvent, ...]]:
    """Parse a decoded POST /frames/{id}/input body: `{"seq","event"}` or `{"seq","events"}`."""
    body, seq = body_with_seq(obj)
    with refused_as("bad-input", seq=seq):
        return seq, _parse_events(body)


def check_bounds(events: Iterable[InputEvent], css_width: int, css_height: int, seq: int | None) -> None:
    """Refuse coordinates outside the frame: x in [0, css_width], y in [0, css_height], edges included.

    Inclusive so that a client which maps the canvas's far edge to exactly `width` is not refused.
    """

    def check(x: float, y: float, where: str) -> None:
        if not (0 <= x <= css_width and 0 <= y <= css_height):
            raise ProtocolError(
                "bad-input",
                f"{where}: ({x:g}, {y:g}) is outside the frame's {css_width}x{css_height} CSS pixels",
                seq=seq,
            )

    for i, event in enumerate(events):
        if isinstance(event, MouseEvent | WheelEvent):
            check(event.x, event.y, f"event {i}")
        elif isinstance(event, TouchEvent):
            for point in event.points:
                check(point.x, point.y, f"event {i} touch {point.id}")
