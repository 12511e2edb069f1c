"""The wire format: client messages in, server messages out, the 16-byte video header.

Everything a client sends is parsed here into frozen dataclasses; anything the contract does not allow
raises one `ProtocolError` whose `code` is `bad-message` (the message itself) or `bad-input` (its events),
carrying the input's `seq` whenever it could be read, so the edge can answer with one clear error.
Unknown extra fields are ignored: the contract may grow new fields without breaking old servers.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, NamedTuple, cast

from framestream.errors import ProtocolError

PROTOCOL_VERSION: Final = 1

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

CLOSE_PROTOCOL: Final = 4400
CLOSE_UNAUTHORIZED: Final = 4401
CLOSE_FORBIDDEN: Final = 4403
CLOSE_HELLO_TIMEOUT: Final = 4408
CLOSE_TOO_MANY: Final = 4429
CLOSE_GOING_AWAY: Final = 1001
CLOSE_INTERNAL: Final = 1011

# CDP modifier bits.
MOD_ALT: Final = 1
MOD_CTRL: Final = 2
MOD_META: Final = 4
MOD_SHIFT: Final = 8
MAX_MODIFIERS: Final = 15

MouseAction = Literal["move", "down", "up"]
MouseButton = Literal["left", "middle", "right", "none"]
KeyAction = Literal["down", "up"]
TouchAction = Literal["start", "move", "end", "cancel"]

MOUSE_ACTIONS: Final = ("move", "down", "up")
MOUSE_BUTTONS: Final = ("left", "middle", "right", "none")
KEY_ACTIONS: Final = ("down", "up")
TOUCH_ACTIONS: Final = ("start", "move", "end", "cancel")
# DOM `buttons` bit of each button, used for defaults and for releasing held buttons.
BUTTON_BITS: Final[Mapping[str, int]] = {"left": 1, "right": 2, "middle": 4, "none": 0}


# --- input events -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MouseEvent:
    action: MouseAction
    x: float
    y: float
    button: MouseButton = "none"
    buttons: int = 0
    clicks: int = 0
    modifiers: int = 0


@dataclass(frozen=True, slots=True)
class WheelEvent:
    x: float
    y: float
    dx: float
    dy: float
    modifiers: int = 0


@dataclass(frozen=True, slots=True)
class KeyEvent:
    action: KeyAction
    key: str
    code: str
    modifiers: int = 0
    repeat: bool = False


@dataclass(frozen=True, slots=True)
class TextEvent:
    text: str


@dataclass(frozen=True, slots=True)
class TouchPoint:
    id: int
    x: float
    y: float


@dataclass(frozen=True, slots=True)
class TouchEvent:
    action: TouchAction
    points: tuple[TouchPoint, ...]


InputEvent = MouseEvent | WheelEvent | KeyEvent | TextEvent | TouchEvent


# --- client messages ----------------------------------------------------------------------------------------


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


# --- encoding client messages (test clients, a Python agent, round-trip tests) ------------------------------


def _num_out(value: float) -> float | int:
    # Whole numbers go out as integers: shorter, and what a JavaScript client would send.
    return int(value) if value.is_integer() else value


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
    return {
        "kind": "touch",
        "action": event.action,
        "points": [{"id": p.id, "x": _num_out(p.x), "y": _num_out(p.y)} for p in event.points],
    }


def _dumps(obj: Mapping[str, object]) -> str:
    # ensure_ascii: strings echoed from clients may hold lone surrogates, which UTF-8 cannot carry.
    return json.dumps(obj, separators=(",", ":"), allow_nan=False)


def encode_client_message(message: ClientMessage) -> str:
    """The JSON text a client sends for `message` (the inverse of parse_client_message)."""
    if isinstance(message, Hello):
        return _dumps({"type": "hello", "token": message.token})
    if isinstance(message, Watch):
        return _dumps({"type": "watch", "frame": message.frame})
    if isinstance(message, Unwatch):
        return _dumps({"type": "unwatch", "frame": message.frame})
    if isinstance(message, KeyframeRequest):
        return _dumps({"type": "keyframe", "frame": message.frame})
    body: dict[str, object] = {
        "type": "input",
        "frame": message.frame,
        "grant": message.grant,
        "seq": message.seq,
    }
    if len(message.events) == 1:
        body["event"] = event_to_dict(message.events[0])
    else:
        body["events"] = [event_to_dict(e) for e in message.events]
    return _dumps(body)


# --- server messages ----------------------------------------------------------------------------------------


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


# --- binary video messages ----------------------------------------------------------------------------------

VIDEO_HEADER: Final = struct.Struct(">BBHIQ")
KIND_VIDEO: Final = 1
FLAG_KEYFRAME: Final = 1
FLAG_REFINEMENT: Final = 2


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


def pack_video_header(flags: int, slot: int, sequence: int, capture_us: int) -> bytes:
    """The 16-byte header in front of one access unit. `sequence` wraps modulo 2**32."""
    if not 0 <= flags <= 0xFF:
        raise ValueError(f"flags {flags} out of range 0..255")
    if not 0 <= slot <= 0xFFFF:
        raise ValueError(f"slot {slot} out of range 0..65535")
    if not 0 <= capture_us < 2**64:
        raise ValueError(f"capture time {capture_us} out of range")
    return VIDEO_HEADER.pack(KIND_VIDEO, flags, slot, sequence & 0xFFFFFFFF, capture_us)


def unpack_video_header(data: bytes) -> VideoHeader:
    """Read the header from the start of a binary message (the payload follows at VIDEO_HEADER.size)."""
    if len(data) < VIDEO_HEADER.size:
        raise ValueError(f"video message shorter than its {VIDEO_HEADER.size}-byte header")
    return VideoHeader(*VIDEO_HEADER.unpack_from(data))
