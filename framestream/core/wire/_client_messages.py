"""Client messages: each WebSocket message (and input POST body) parsed into frozen dataclasses.

Anything the contract does not allow raises one `ProtocolError` whose `code` is `bad-message` (the message
itself) or `bad-input` (its events), carrying the input's `seq` whenever it could be read, so the edge can
answer with one clear error. Unknown extra fields are ignored: the contract may grow new fields without
breaking old servers.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, cast

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
    TextEvent,
    TouchAction,
    TouchEvent,
    TouchPoint,
    WheelEvent,
)
from framestream.errors import ProtocolError

# Limits (the contract's, plus bounds that keep one message's work small).
MAX_MESSAGE_BYTES: Final = 65536
MAX_EVENTS: Final = 256
MAX_TEXT_CHARS: Final = 10000
MAX_TOUCH_POINTS: Final = 10
MAX_ID_CHARS: Final = 256  # frame ids
MAX_TOKEN_CHARS: Final = 4096  # same bound as core.tokens.MAX_TOKEN_CHARS
MAX_KEY_CHARS: Final = 64  # longest DOM key/code names are about 25 characters
MAX_SEQ: Final = 2**53 - 1  # what a JavaScript number holds exactly
MAX_CLICKS: Final = 16
MAX_BUTTONS_MASK: Final = 31  # left 1, right 2, middle 4, back 8, forward 16
MAX_WHEEL_DELTA: Final = 1e6
MAX_TOUCH_ID: Final = 2**31 - 1


@dataclass(frozen=True, slots=True)
class Hello:
    token: str


@dataclass(frozen=True, slots=True)
class Watch:
    frame: str


@dataclass(frozen=True, slots=True)
class Unwatch:
    frame: str


@dataclass(frozen=True, slots=True)
class KeyframeRequest:
    frame: str


@dataclass(frozen=True, slots=True)
class Input:
    frame: str
    grant: str
    seq: int
    events: tuple[InputEvent, ...]


ClientMessage = Hello | Watch | Unwatch | KeyframeRequest | Input


# --- parsing ------------------------------------------------------------------------------------------------


class _Bad(Exception):
    """Internal: a field failed; turned into a ProtocolError with the right code, seq and frame."""


def _reject_constant(name: str) -> Any:
    # json accepts NaN and Infinity by default; the contract's JSON does not.
    raise ValueError(f"{name} is not valid JSON")


def _load_json(text: str | bytes, max_bytes: int) -> Any:
    if isinstance(text, bytes | bytearray | memoryview):
        raise ProtocolError("bad-message", "binary messages are not accepted; send JSON text")
    # A str has at least one byte per character, so the cheap length check catches most oversize text.
    # surrogatepass: a lone surrogate must give a size, not a UnicodeEncodeError.
    if len(text) > max_bytes or len(text.encode("utf-8", "surrogatepass")) > max_bytes:
        raise ProtocolError("bad-message", f"message larger than {max_bytes} bytes")
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError; deep nesting recurses
        raise ProtocolError("bad-message", "message is not valid JSON") from exc


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _req(obj: Mapping[str, Any], name: str, where: str) -> Any:
    if name not in obj:
        raise _Bad(f"{where}: missing '{name}'")
    return obj[name]


def _str(obj: Mapping[str, Any], name: str, where: str, *, max_len: int, min_len: int = 1) -> str:
    value = _req(obj, name, where)
    if not isinstance(value, str):
        raise _Bad(f"{where}: '{name}' must be a string")
    if not min_len <= len(value) <= max_len:
        raise _Bad(f"{where}: '{name}' must be {min_len} to {max_len} characters")
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate from a \ud800 escape: not text anyone typed
            raise _Bad(f"{where}: '{name}' is not valid Unicode text") from None
    return value


def _int(
    obj: Mapping[str, Any], name: str, where: str, lo: int, hi: int, *, default: int | None = None
) -> int:
    if name not in obj and default is not None:
        return default
    value = _req(obj, name, where)
    if not isinstance(value, int) or isinstance(value, bool):
        raise _Bad(f"{where}: '{name}' must be an integer")
    if not lo <= value <= hi:
        raise _Bad(f"{where}: '{name}' must be between {lo} and {hi}")
    return value


def _num(obj: Mapping[str, Any], name: str, where: str, bound: float = 1e9) -> float:
    value = _req(obj, name, where)
    if not _is_number(value):
        raise _Bad(f"{where}: '{name}' must be a number")
    try:
        number = float(value)
    except OverflowError:  # an integer too large for a float
        raise _Bad(f"{where}: '{name}' is out of range") from None
    if not math.isfinite(number) or abs(number) > bound:
        raise _Bad(f"{where}: '{name}' must be a finite number within +-{bound:g}")
    return number


def _choice(obj: Mapping[str, Any], name: str, where: str, allowed: tuple[str, ...]) -> str:
    value = _req(obj, name, where)
    if not isinstance(value, str) or value not in allowed:
        raise _Bad(f"{where}: '{name}' must be one of {', '.join(allowed)}")
    return value


def _parse_mouse(obj: Mapping[str, Any], where: str) -> MouseEvent:
    action = cast(MouseAction, _choice(obj, "action", where, MOUSE_ACTIONS))
    x, y = _num(obj, "x", where), _num(obj, "y", where)
    # Everything but action and coordinates has a default, so an agent can send the short form.
    default_button = "none" if action == "move" else "left"
    button = _choice(obj, "button", where, MOUSE_BUTTONS) if "button" in obj else default_button
    if action != "move" and button == "none":
        raise _Bad(f"{where}: mouse '{action}' needs a button (left, middle or right)")
    default_buttons = BUTTON_BITS[button] if action == "down" else 0
    buttons = _int(obj, "buttons", where, 0, MAX_BUTTONS_MASK, default=default_buttons)
    clicks = _int(obj, "clicks", where, 0, MAX_CLICKS, default=0 if action == "move" else 1)
    modifiers = _int(obj, "modifiers", where, 0, MAX_MODIFIERS, default=0)
    return MouseEvent(action, x, y, cast(MouseButton, button), buttons, clicks, modifiers)


def _parse_wheel(obj: Mapping[str, Any], where: str) -> WheelEvent:
    return WheelEvent(
        _num(obj, "x", where),
        _num(obj, "y", where),
        _num(obj, "dx", where, MAX_WHEEL_DELTA),
        _num(obj, "dy", where, MAX_WHEEL_DELTA),
        _int(obj, "modifiers", where, 0, MAX_MODIFIERS, default=0),
    )


def _parse_key(obj: Mapping[str, Any], where: str) -> KeyEvent:
    action = cast(KeyAction, _choice(obj, "action", where, KEY_ACTIONS))
    key = _str(obj, "key", where, max_len=MAX_KEY_CHARS)
    # DOM `code` is "" for keys a virtual keyboard cannot place; allow it and go by `key`.
    code = _str(obj, "code", where, max_len=MAX_KEY_CHARS, min_len=0) if "code" in obj else ""
    modifiers = _int(obj, "modifiers", where, 0, MAX_MODIFIERS, default=0)
    repeat = obj.get("repeat", False)
    if not isinstance(repeat, bool):
        raise _Bad(f"{where}: 'repeat' must be true or false")
    return KeyEvent(action, key, code, modifiers, repeat)


def _parse_text(obj: Mapping[str, Any], where: str) -> TextEvent:
    return TextEvent(_str(obj, "text", where, max_len=MAX_TEXT_CHARS))


def _parse_touch(obj: Mapping[str, Any], where: str) -> TouchEvent:
    action = cast(TouchAction, _choice(obj, "action", where, TOUCH_ACTIONS))
    raw = obj.get("points", [])
    if not isinstance(raw, list):
        raise _Bad(f"{where}: 'points' must be a list")
    if len(raw) > MAX_TOUCH_POINTS:
        raise _Bad(f"{where}: at most {MAX_TOUCH_POINTS} touch points")
    if action in ("start", "move") and not raw:
        raise _Bad(f"{where}: touch '{action}' needs at least one point")
    points: list[TouchPoint] = []
    for i, item in enumerate(raw):
        pw = f"{where} point {i}"
        if not isinstance(item, dict):
            raise _Bad(f"{pw}: must be an object")
        point_id = _int(item, "id", pw, 0, MAX_TOUCH_ID)
        points.append(TouchPoint(point_id, _num(item, "x", pw), _num(item, "y", pw)))
    if len({p.id for p in points}) != len(points):
        raise _Bad(f"{where}: touch point ids must be unique")
    return TouchEvent(action, tuple(points))


_EVENT_PARSERS: Final[Mapping[str, Callable[[Mapping[str, Any], str], InputEvent]]] = {
    "mouse": _parse_mouse,
    "wheel": _parse_wheel,
    "key": _parse_key,
    "text": _parse_text,
    "touch": _parse_touch,
}


def _parse_event(obj: object, where: str) -> InputEvent:
    if not isinstance(obj, dict):
        raise _Bad(f"{where}: must be an object")
    kind = obj.get("kind")
    parser = _EVENT_PARSERS.get(kind) if isinstance(kind, str) else None
    if parser is None:
        raise _Bad(f"{where}: 'kind' must be one of {', '.join(_EVENT_PARSERS)}")
    return parser(obj, where)


def _parse_events(obj: Mapping[str, Any]) -> tuple[InputEvent, ...]:
    has_one, has_many = "event" in obj, "events" in obj
    if has_one == has_many:
        raise _Bad("input needs exactly one of 'event' or 'events'")
    if has_one:
        return (_parse_event(obj["event"], "event"),)
    raw = obj["events"]
    if not isinstance(raw, list):
        raise _Bad("'events' must be a list")
    if not 1 <= len(raw) <= MAX_EVENTS:
        raise _Bad(f"'events' must hold 1 to {MAX_EVENTS} events")
    return tuple(_parse_event(item, f"event {i}") for i, item in enumerate(raw))


def _seq_of(obj: Mapping[str, Any]) -> int | None:
    """The seq if it is a valid one, so errors can carry it back to the client."""
    value = obj.get("seq")
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_SEQ:
        return value
    return None


def _parse_input(obj: Mapping[str, Any]) -> Input:
    seq = _seq_of(obj)
    frame = obj.get("frame") if isinstance(obj.get("frame"), str) else None
    try:
        frame = _str(obj, "frame", "input", max_len=MAX_ID_CHARS)
        grant = _str(obj, "grant", "input", max_len=MAX_TOKEN_CHARS)
        seq = _int(obj, "seq", "input", 0, MAX_SEQ)
    except _Bad as exc:
        raise ProtocolError("bad-message", str(exc), seq=seq, frame=frame) from None
    try:
        events = _parse_events(obj)
    except _Bad as exc:
        raise ProtocolError("bad-input", str(exc), seq=seq, frame=frame) from None
    return Input(frame, grant, seq, events)


def parse_client_message(text: str | bytes, *, max_bytes: int = MAX_MESSAGE_BYTES) -> ClientMessage:
    """Parse one WebSocket message from a client; raise ProtocolError for anything the contract forbids."""
    obj = _load_json(text, max_bytes)
    if not isinstance(obj, dict):
        raise ProtocolError("bad-message", "message must be a JSON object")
    kind = obj.get("type")
    if kind == "input":
        return _parse_input(obj)
    frame = obj.get("frame") if isinstance(obj.get("frame"), str) else None
    try:
        if kind == "hello":
            return Hello(_str(obj, "token", "hello", max_len=MAX_TOKEN_CHARS))
        if kind == "watch":
            return Watch(_str(obj, "frame", "watch", max_len=MAX_ID_CHARS))
        if kind == "unwatch":
            return Unwatch(_str(obj, "frame", "unwatch", max_len=MAX_ID_CHARS))
        if kind == "keyframe":
            return KeyframeRequest(_str(obj, "frame", "keyframe", max_len=MAX_ID_CHARS))
    except _Bad as exc:
        raise ProtocolError("bad-message", str(exc), frame=frame) from None
    shown = kind if isinstance(kind, str) and len(kind) <= 32 else "?"
    raise ProtocolError(
        "bad-message", f"unknown message type '{shown}'; expected hello, watch, unwatch, keyframe or input"
    )


def parse_input_body(obj: object) -> tuple[int, tuple[InputEvent, ...]]:
    """Parse a decoded POST /frames/{id}/input body: `{"seq","event"}` or `{"seq","events"}`."""
    if not isinstance(obj, dict):
        raise ProtocolError("bad-message", "body must be a JSON object")
    seq = _seq_of(obj)
    if seq is None:
        raise ProtocolError("bad-message", f"'seq' must be an integer between 0 and {MAX_SEQ}")
    try:
        return seq, _parse_events(obj)
    except _Bad as exc:
        raise ProtocolError("bad-input", str(exc), seq=seq) from None


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
