"""Input events as the contract defines them: what a viewer or an agent asks the browser to do."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal

# CDP modifier bits.
MOD_ALT: Final = 1
MOD_CTRL: Final = 2
MOD_META: Final = 4
MOD_SHIFT: Final = 8
MAX_MODIFIERS: Final = 15

MouseAction = Literal["move", "down", "up"]
MouseButton = Literal["left", "middle", "right", "back", "forward", "none"]
KeyAction = Literal["down", "up"]
TouchAction = Literal["start", "move", "end", "cancel"]

MOUSE_ACTIONS: Final = ("move", "down", "up")
MOUSE_BUTTONS: Final = ("left", "middle", "right", "back", "forward", "none")
KEY_ACTIONS: Final = ("down", "up")
TOUCH_ACTIONS: Final = ("start", "move", "end", "cancel")
# DOM `buttons` bit of each button, used for defaults and for releasing held buttons.
BUTTON_BITS: Final[Mapping[str, int]] = {"left": 1, "right": 2, "middle": 4, "back": 8, "forward": 16, "none": 0}


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
class PasteEvent:
    """A real paste: the frame's clipboard holds `text` and the page gets a `paste` event (the frame applies it,
    not a DevTools Input call)."""

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


InputEvent = MouseEvent | WheelEvent | KeyEvent | TextEvent | PasteEvent | TouchEvent
