"""The events of one agent step, built from what an agent means: a click, a drag, a chord ("Control+A").

Pure functions returning the contract's event classes (`framestream.core.wire`); `wire.py` encodes them.
Coordinates are the frame's CSS pixels.
"""

from __future__ import annotations

from typing import Final

from framestream.core.wire import (
    InputEvent,
    KeyEvent,
    MouseButton,
    MouseEvent,
    TextEvent,
    WheelEvent,
)

__all__ = ["MODIFIER_BITS", "chord", "click", "drag", "move", "parse_chord", "scroll", "text"]

BUTTON_BITS: Final[dict[str, int]] = {"left": 1, "right": 2, "middle": 4, "back": 8, "forward": 16}
MODIFIER_BITS: Final[dict[str, int]] = {"Alt": 1, "Control": 2, "Meta": 4, "Shift": 8}
_MODIFIER_ALIASES: Final[dict[str, str]] = {
    "alt": "Alt", "option": "Alt", "control": "Control", "ctrl": "Control", "meta": "Meta", "cmd": "Meta",
    "command": "Meta", "super": "Meta", "shift": "Shift",
}
_MODIFIER_CODES: Final[dict[str, str]] = {"Alt": "AltLeft", "Control": "ControlLeft", "Meta": "MetaLeft",
                                          "Shift": "ShiftLeft"}
# Names an agent may write, as DOM `key` values (the service derives `code` from `key`).
_KEY_ALIASES: Final[dict[str, str]] = {
    "enter": "Enter", "return": "Enter", "tab": "Tab", "escape": "Escape", "esc": "Escape",
    "backspace": "Backspace", "delete": "Delete", "del": "Delete", "space": " ", "up": "ArrowUp",
    "down": "ArrowDown", "left": "ArrowLeft", "right": "ArrowRight", "arrowup": "ArrowUp",
    "arrowdown": "ArrowDown", "arrowleft": "ArrowLeft", "arrowright": "ArrowRight", "home": "Home", "end": "End",
    "pageup": "PageUp", "pagedown": "PageDown", "insert": "Insert", "plus": "+",
}
# US layout: what Shift makes of a key, and the physical key (`code`) of the unshifted character.
_SHIFTED: Final = dict(zip("1234567890-=[]\\;',./`", '!@#$%^&*()_+{}|:"<>?~', strict=True))
_PUNCTUATION_CODES: Final = {"-": "Minus", "=": "Equal", "[": "BracketLeft", "]": "BracketRight",
                             "\\": "Backslash", ";": "Semicolon", "'": "Quote", ",": "Comma", ".": "Period",
                             "/": "Slash", "`": "Backquote", " ": "Space"}
MAX_TEXT: Final = 10000  # characters per text event (the contract's limit)


def click(x: float, y: float, *, button: MouseButton = "left", count: int = 1, modifiers: int = 0
          ) -> list[InputEvent]:
    """Move there, then press and release `count` times (`count` 2 is a double click: clicks 1 then 2). The move
    first, as a person's hand and Playwright's click make it: some controls act only once hovered (a date field's
    calendar button ignored a bare press)."""
    bit = BUTTON_BITS[button]
    events: list[InputEvent] = [MouseEvent("move", x, y, "none", 0, 0, modifiers)]
    for n in range(1, count + 1):
        events.append(MouseEvent("down", x, y, button, bit, n, modifiers))
        events.append(MouseEvent("up", x, y, button, 0, n, modifiers))
    return events


def move(x: float, y: float, *, modifiers: int = 0) -> list[InputEvent]:
    return [MouseEvent("move", x, y, "none", 0, 0, modifiers)]


def drag(x0: float, y0: float, x1: float, y1: float, *, steps: int = 10, button: MouseButton = "left"
         ) -> list[InputEvent]:
    """Press at (x0, y0), move there in `steps` even moves (pages see a real drag), release at (x1, y1)."""
    bit = BUTTON_BITS[button]
    events: list[InputEvent] = [MouseEvent("move", x0, y0), MouseEvent("down", x0, y0, button, bit, 1)]
    steps = max(1, steps)
    for i in range(1, steps + 1):
        x = x0 + (x1 - x0) * i / steps
        y = y0 + (y1 - y0) * i / steps
        events.append(MouseEvent("move", x, y, "none", bit, 0))
    events.append(MouseEvent("up", x1, y1, button, 0, 1))
    return events


def scroll(x: float, y: float, dx: float = 0.0, dy: float = 0.0, *, modifiers: int = 0) -> list[InputEvent]:
    """A wheel at (x, y): positive `dy` scrolls down, positive `dx` right (CSS pixels)."""
    return [WheelEvent(x, y, dx, dy, modifiers)]


def text(value: str) -> list[InputEvent]:
    """Typed text (inserted as IME text), in pieces of the contract's 10000 characters."""
    if not value:
        raise ValueError("text to type must not be empty")
    return [TextEvent(value[i:i + MAX_TEXT]) for i in range(0, len(value), MAX_TEXT)]


def parse_chord(spec: str) -> tuple[list[str], str]:
    """"Control+Shift+a" -> (["Control", "Shift"], "a"). The last part is the key ("Control++" is Ctrl and plus)."""
    if spec == "+":
        head, key = "", "+"
    elif spec.endswith("++"):
        head, key = spec[:-2], "+"
    else:
        head, _, key = spec.rpartition("+")
    key = key if len(key) == 1 else key.strip()
    if not key:
        raise ValueError(f"bad key chord {spec!r}")
    modifiers = []
    for mod in (m.strip() for m in head.split("+")) if head else ():
        name = _MODIFIER_ALIASES.get(mod.lower())
        if name is None:
            raise ValueError(f"unknown modifier {mod!r} in {spec!r} (Control, Shift, Alt, Meta)")
        modifiers.append(name)
    if len(key) > 1:
        key = _MODIFIER_ALIASES.get(key.lower()) or _KEY_ALIASES.get(key.lower(), key)
    return modifiers, key


def chord(spec: str) -> list[InputEvent]:
    """The key events of a chord such as "Enter", "Control+A" or "Shift+Tab": modifiers down in order, the key
    down and up, modifiers up in reverse. Letters follow Shift ("Shift+a" sends "A"); with Control or Meta a
    letter is sent lower-case, as a browser reports Ctrl+A."""
    modifiers, key = parse_chord(spec)
    code = _code_of(key)
    if len(key) == 1 and key.isalpha():
        key = key.upper() if "Shift" in modifiers else key.lower()
    elif "Shift" in modifiers:
        key = _SHIFTED.get(key, key)
    events: list[InputEvent] = []
    held = 0
    for mod in modifiers:
        held |= MODIFIER_BITS[mod]
        events.append(KeyEvent("down", mod, _MODIFIER_CODES[mod], held))
    if key in MODIFIER_BITS:  # a lone modifier ("Shift")
        bit = MODIFIER_BITS[key]
        return [*events, KeyEvent("down", key, _MODIFIER_CODES[key], held | bit),
                KeyEvent("up", key, _MODIFIER_CODES[key], held), *_release(modifiers, held)]
    events.append(KeyEvent("down", key, code, held))
    events.append(KeyEvent("up", key, code, held))
    return [*events, *_release(modifiers, held)]


def _code_of(key: str) -> str:
    """The physical key of an unshifted character on a US layout ("" for named keys: the service derives it)."""
    if len(key) != 1:
        return ""
    if "a" <= key.lower() <= "z":
        return "Key" + key.upper()
    if key.isdigit():
        return "Digit" + key
    return _PUNCTUATION_CODES.get(key, "")


def _release(modifiers: list[str], held: int) -> list[InputEvent]:
    events: list[InputEvent] = []
    for mod in reversed(modifiers):
        held &= ~MODIFIER_BITS[mod]
        events.append(KeyEvent("up", mod, _MODIFIER_CODES[mod], held))
    return events
