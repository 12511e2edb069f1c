"""Input events to Chrome DevTools `Input.*` parameters, keys for a US layout.

Keys: the client sends DOM `key` (what the key means, layout and Shift applied) and `code` (which physical
key). Text comes from `key`, so a viewer on another layout types what their keyboard shows; the virtual key
code comes from `code` when it agrees with `key`, otherwise from `key` on a US layout (as browsers report
`keyCode` for the letter typed). On Linux, Chromium runs editing shortcuts (Ctrl+A select all, Ctrl+C/V/X/Z)
from the keyDown's virtual key code and Ctrl modifier, so no `commands` are needed; a character must then
not be sent as text, or Ctrl+A would also type "a".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, NamedTuple

from framestream.core.wire import (
    MOD_ALT,
    MOD_CTRL,
    MOD_META,
    InputEvent,
    KeyEvent,
    MouseButton,
    MouseEvent,
    PasteEvent,
    TextEvent,
    TouchEvent,
    WheelEvent,
)


class _Key(NamedTuple):
    vk: int  # Windows virtual key code, which Chromium uses as keyCode
    plain: str | None = None  # text without Shift
    shifted: str | None = None  # text with Shift


def _build_codes() -> dict[str, _Key]:
    codes: dict[str, _Key] = {}
    for i in range(26):
        lower = chr(ord("a") + i)
        codes[f"Key{lower.upper()}"] = _Key(ord(lower.upper()), lower, lower.upper())
    for digit, shifted in zip("0123456789", ")!@#$%^&*(", strict=True):
        codes[f"Digit{digit}"] = _Key(ord(digit), digit, shifted)
        codes[f"Numpad{digit}"] = _Key(96 + int(digit), digit, digit)
    punctuation = {
        "Semicolon": (186, ";", ":"),
        "Equal": (187, "=", "+"),
        "Comma": (188, ",", "<"),
        "Minus": (189, "-", "_"),
        "Period": (190, ".", ">"),
        "Slash": (191, "/", "?"),
        "Backquote": (192, "`", "~"),
        "BracketLeft": (219, "[", "{"),
        "Backslash": (220, "\\", "|"),
        "BracketRight": (221, "]", "}"),
        "Quote": (222, "'", '"'),
        "Space": (32, " ", " "),
        "NumpadMultiply": (106, "*", "*"),
        "NumpadAdd": (107, "+", "+"),
        "NumpadSubtract": (109, "-", "-"),
        "NumpadDecimal": (110, ".", "."),
        "NumpadDivide": (111, "/", "/"),
    }
    for code, (vk, plain, shifted) in punctuation.items():
        codes[code] = _Key(vk, plain, shifted)
    named = {
        "Enter": 13,
        "NumpadEnter": 13,
        "Backspace": 8,
        "Tab": 9,
        "Escape": 27,
        "ArrowLeft": 37,
        "ArrowUp": 38,
        "ArrowRight": 39,
        "ArrowDown": 40,
        "Insert": 45,
        "Delete": 46,
        "Home": 36,
        "End": 35,
        "PageUp": 33,
        "PageDown": 34,
        "ShiftLeft": 16,
        "ShiftRight": 16,
        "ControlLeft": 17,
        "ControlRight": 17,
        "AltLeft": 18,
        "AltRight": 18,
        "MetaLeft": 91,
        "MetaRight": 92,
        "CapsLock": 20,
        "NumLock": 144,
        "ScrollLock": 145,
        "Pause": 19,
        "PrintScreen": 44,
        "ContextMenu": 93,
    }
    for code, vk in named.items():
        codes[code] = _Key(vk)
    for n in range(1, 25):
        codes[f"F{n}"] = _Key(111 + n)
    return codes


CODES: Final[Mapping[str, _Key]] = _build_codes()

# US layout: which physical key types each printable character (numpad keys excluded: the main row wins).
CHAR_CODES: Final[Mapping[str, str]] = {
    char: code
    for code, entry in CODES.items()
    if not code.startswith("Numpad")
    for char in (entry.plain, entry.shifted)
    if char is not None
}

# DOM key names whose physical key is implied when the client sends no (or an unknown) code.
NAMED_KEYS: Final[Mapping[str, str]] = {
    **{name: name for name, entry in CODES.items() if entry.plain is None and not name.startswith("Numpad")},
    "Shift": "ShiftLeft",
    "Control": "ControlLeft",
    "Alt": "AltLeft",
    "Meta": "MetaLeft",
    "Enter": "Enter",
}


def _location(code: str) -> int:
    if code.startswith("Numpad"):
        return 3
    if code.endswith("Left") and code[:-4] in ("Shift", "Control", "Alt", "Meta"):
        return 1
    if code.endswith("Right") and code[:-5] in ("Shift", "Control", "Alt", "Meta"):
        return 2
    return 0


def _resolve(event: KeyEvent) -> tuple[str, int]:
    """The physical code to report and the virtual key code for this key."""
    code, key = event.code, event.key
    entry = CODES.get(code)
    if len(key) == 1:
        if entry is not None and key in (entry.plain, entry.shifted):
            return code, entry.vk
        typed = CHAR_CODES.get(key)
        if typed is not None:  # another layout, or no code: key on the US key that types this character
            return code or typed, CODES[typed].vk
        return code, entry.vk if entry is not None else 0
    if entry is not None:
        return code, entry.vk
    named = NAMED_KEYS.get(key)
    if named is not None:
        return code or named, CODES[named].vk
    return code, 0


def _is_altgr_character(event: KeyEvent) -> bool:
    """Windows reports AltGr as Ctrl+Alt: a one-character key that is not what its US key would type (German
    AltGr+Q gives "@") is typing, not a shortcut."""
    if event.modifiers & MOD_META or (event.modifiers & (MOD_CTRL | MOD_ALT)) != (MOD_CTRL | MOD_ALT):
        return False
    if len(event.key) != 1:
        return False
    us = CODES.get(event.code)
    return us is None or event.key not in (us.plain, us.shifted)


def _text(event: KeyEvent) -> str | None:
    if event.modifiers & (MOD_CTRL | MOD_META) and not _is_altgr_character(event):
        return None  # a shortcut, not typing
    if len(event.key) == 1:
        return event.key
    if event.key == "Enter":
        return "\r"
    return None


def key_event_params(event: KeyEvent) -> list[dict[str, object]]:
    """The `Input.dispatchKeyEvent` parameter sets for one key event, in order."""
    code, vk = _resolve(event)
    location = _location(code)
    params: dict[str, object] = {
        "type": "keyUp",
        "key": event.key,
        "code": code,
        "windowsVirtualKeyCode": vk,
        "nativeVirtualKeyCode": vk,
        "modifiers": event.modifiers,
        "location": location,
    }
    if location == 3:
        params["isKeypad"] = True
    if event.action == "down":
        text = _text(event)
        if text is None:
            params["type"] = "rawKeyDown"
        else:
            # keyDown with text makes Chromium send the keydown and then the keypress that inserts it.
            params.update(type="keyDown", text=text, unmodifiedText=text)
        params["autoRepeat"] = event.repeat
    return [params]


_MOUSE_TYPES: Final = {"move": "mouseMoved", "down": "mousePressed", "up": "mouseReleased"}
_TOUCH_TYPES: Final = {"start": "touchStart", "move": "touchMove", "end": "touchEnd", "cancel": "touchCancel"}


# A move's `button` while buttons are held: the first of these it holds (a DOM event's order, the web viewer's too).
_HELD_BUTTONS: Final[tuple[tuple[MouseButton, int], ...]] = (
    ("left", 1), ("right", 2), ("middle", 4), ("back", 8), ("forward", 16))


def mouse_event_params(event: MouseEvent) -> dict[str, object]:
    """`Input.dispatchMouseEvent` parameters. CDP names the buttons as the contract does (left, middle, right,
    back, forward, none) and takes the same DOM `buttons` mask (left 1, right 2, middle 4, back 8, forward 16).

    A move with buttons held names the held button, whatever `button` said: Chromium starts a page's drag (HTML5
    drag and drop, `draggable`) only from moves that name it, and an agent's drag, whose moves said `none`,
    dragged nothing."""
    button = event.button
    if event.action == "move" and button == "none" and event.buttons:
        button = next((name for name, bit in _HELD_BUTTONS if event.buttons & bit), "none")
    return {
        "type": _MOUSE_TYPES[event.action],
        "x": event.x,
        "y": event.y,
        "button": button,
        "buttons": event.buttons,
        "clickCount": event.clicks,
        "modifiers": event.modifiers,
    }


def wheel_event_params(event: WheelEvent) -> dict[str, object]:
    """`Input.dispatchMouseEvent` parameters for a wheel turn (CSS pixels, positive scrolls down/right)."""
    return {
        "type": "mouseWheel",
        "x": event.x,
        "y": event.y,
        "deltaX": event.dx,
        "deltaY": event.dy,
        "modifiers": event.modifiers,
    }


def touch_event_params(event: TouchEvent) -> dict[str, object]:
    """`Input.dispatchTouchEvent` parameters.

    Chromium's semantics (read in its input_handler.cc): touchStart presses the listed points, touchMove moves
    them, touchEnd lifts the listed points or, when none are listed, every point; touchCancel must list none
    and cancels every point. So `points` on `end` are the fingers lifted, and `cancel` sends an empty list.
    """
    points = () if event.action == "cancel" else event.points
    return {
        "type": _TOUCH_TYPES[event.action],
        "touchPoints": [{"id": p.id, "x": p.x, "y": p.y} for p in points],
    }


def cdp_calls(event: InputEvent) -> list[tuple[str, dict[str, object]]]:
    """The DevTools calls (method, params) that apply one input event, in order."""
    if isinstance(event, KeyEvent):
        return [("Input.dispatchKeyEvent", p) for p in key_event_params(event)]
    if isinstance(event, MouseEvent):
        return [("Input.dispatchMouseEvent", mouse_event_params(event))]
    if isinstance(event, WheelEvent):
        return [("Input.dispatchMouseEvent", wheel_event_params(event))]
    if isinstance(event, TouchEvent):
        return [("Input.dispatchTouchEvent", touch_event_params(event))]
    if isinstance(event, TextEvent):
        return [("Input.insertText", {"text": event.text})]
    if isinstance(event, PasteEvent):
        # No Input call gives a page a paste event with clipboardData: the frame fills its clipboard and runs
        # the editing command itself (browser.tabs.Tabs.paste). Reaching here means a caller skipped that.
        raise ValueError("a paste event is applied by the frame (its clipboard, then a paste), not as a CDP call")
    raise TypeError(f"not an input event: {event!r}")
