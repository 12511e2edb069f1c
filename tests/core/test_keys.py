from __future__ import annotations

import pytest

from framestream.core.keys import (
    cdp_calls,
    key_event_params,
    mouse_event_params,
    touch_event_params,
    wheel_event_params,
)
from framestream.core.wire import KeyEvent, MouseEvent, PasteEvent, TextEvent, TouchEvent, TouchPoint, WheelEvent

CTRL, META, SHIFT, ALT = 2, 4, 8, 1


def down(key: str, code: str, modifiers: int = 0, repeat: bool = False) -> dict[str, object]:
    (params,) = key_event_params(KeyEvent("down", key, code, modifiers, repeat))
    return params


def test_enter_types_a_carriage_return() -> None:
    assert down("Enter", "Enter") == {
        "type": "keyDown",
        "key": "Enter",
        "code": "Enter",
        "windowsVirtualKeyCode": 13,
        "nativeVirtualKeyCode": 13,
        "modifiers": 0,
        "location": 0,
        "text": "\r",
        "unmodifiedText": "\r",
        "autoRepeat": False,
    }
    numpad = down("Enter", "NumpadEnter")
    assert (numpad["text"], numpad["windowsVirtualKeyCode"], numpad["location"], numpad["isKeypad"]) == (
        "\r",
        13,
        3,
        True,
    )


@pytest.mark.parametrize(
    ("key", "vk"),
    [
        ("Backspace", 8),
        ("Tab", 9),
        ("Escape", 27),
        ("ArrowLeft", 37),
        ("ArrowUp", 38),
        ("ArrowRight", 39),
        ("ArrowDown", 40),
        ("Delete", 46),
        ("Insert", 45),
        ("Home", 36),
        ("End", 35),
        ("PageUp", 33),
        ("PageDown", 34),
        ("F1", 112),
        ("F12", 123),
        ("CapsLock", 20),
    ],
)
def test_named_keys_are_raw_key_downs(key: str, vk: int) -> None:
    params = down(key, key)
    assert params["type"] == "rawKeyDown"
    assert params["windowsVirtualKeyCode"] == vk == params["nativeVirtualKeyCode"]
    assert "text" not in params
    assert params["location"] == 0


def test_ctrl_a_sends_no_text() -> None:
    params = down("a", "KeyA", CTRL)
    assert params == {
        "type": "rawKeyDown",
        "key": "a",
        "code": "KeyA",
        "windowsVirtualKeyCode": 65,
        "nativeVirtualKeyCode": 65,
        "modifiers": 2,
        "location": 0,
        "autoRepeat": False,
    }
    assert "text" not in down("a", "KeyA", META)
    assert "text" not in down("Enter", "Enter", CTRL)
    assert "text" not in down("1", "Digit1", CTRL | SHIFT)


def test_shift_letters_type_uppercase() -> None:
    params = down("A", "KeyA", SHIFT)
    assert (params["type"], params["text"], params["unmodifiedText"], params["windowsVirtualKeyCode"]) == (
        "keyDown",
        "A",
        "A",
        65,
    )
    assert down("z", "KeyZ")["text"] == "z"
    assert down("z", "KeyZ")["windowsVirtualKeyCode"] == 90


@pytest.mark.parametrize(
    ("key", "code", "modifiers", "vk"),
    [
        ("!", "Digit1", SHIFT, 49),
        (")", "Digit0", SHIFT, 48),
        ("1", "Digit1", 0, 49),
        (";", "Semicolon", 0, 186),
        (":", "Semicolon", SHIFT, 186),
        ("=", "Equal", 0, 187),
        ("+", "Equal", SHIFT, 187),
        (",", "Comma", 0, 188),
        ("_", "Minus", SHIFT, 189),
        (".", "Period", 0, 190),
        ("?", "Slash", SHIFT, 191),
        ("`", "Backquote", 0, 192),
        ("{", "BracketLeft", SHIFT, 219),
        ("|", "Backslash", SHIFT, 220),
        ("]", "BracketRight", 0, 221),
        ('"', "Quote", SHIFT, 222),
        (" ", "Space", 0, 32),
        ("7", "Numpad7", 0, 103),
        ("*", "NumpadMultiply", 0, 106),
    ],
)
def test_punctuation_on_a_us_layout(key: str, code: str, modifiers: int, vk: int) -> None:
    params = down(key, code, modifiers)
    assert (params["type"], params["text"], params["code"], params["windowsVirtualKeyCode"]) == (
        "keyDown",
        key,
        code,
        vk,
    )


@pytest.mark.parametrize(
    ("code", "vk", "location"),
    [
        ("ShiftLeft", 16, 1),
        ("ShiftRight", 16, 2),
        ("ControlLeft", 17, 1),
        ("ControlRight", 17, 2),
        ("AltLeft", 18, 1),
        ("AltRight", 18, 2),
        ("MetaLeft", 91, 1),
        ("MetaRight", 92, 2),
    ],
)
def test_modifier_keys_have_locations(code: str, vk: int, location: int) -> None:
    params = down(code[:-4] if code.endswith("Left") else code[:-5], code)
    assert (params["type"], params["windowsVirtualKeyCode"], params["location"]) == (
        "rawKeyDown",
        vk,
        location,
    )


def test_key_up() -> None:
    assert key_event_params(KeyEvent("up", "a", "KeyA", 0)) == [
        {
            "type": "keyUp",
            "key": "a",
            "code": "KeyA",
            "windowsVirtualKeyCode": 65,
            "nativeVirtualKeyCode": 65,
            "modifiers": 0,
            "location": 0,
        }
    ]


def test_missing_or_unknown_code_is_derived_from_key() -> None:
    assert (down("a", "")["code"], down("a", "")["windowsVirtualKeyCode"], down("a", "")["text"]) == (
        "KeyA",
        65,
        "a",
    )
    assert (down("@", "")["code"], down("@", "")["windowsVirtualKeyCode"]) == ("Digit2", 50)
    escape = down("Escape", "")
    assert (escape["code"], escape["windowsVirtualKeyCode"], escape["type"]) == ("Escape", 27, "rawKeyDown")
    shift = down("Shift", "")
    assert (shift["code"], shift["windowsVirtualKeyCode"], shift["location"]) == ("ShiftLeft", 16, 1)
    accent = down("é", "")
    assert (accent["type"], accent["text"], accent["windowsVirtualKeyCode"]) == ("keyDown", "é", 0)
    unknown = down("a", "Lang1")
    assert (unknown["code"], unknown["windowsVirtualKeyCode"], unknown["text"]) == ("Lang1", 65, "a")
    odd = down("AudioVolumeUp", "AudioVolumeUp")
    assert (odd["type"], odd["windowsVirtualKeyCode"]) == ("rawKeyDown", 0)


def test_other_layout_types_what_the_key_says() -> None:
    # AZERTY: the US "KeyA" position types "q"; browsers report keyCode 81 for it.
    params = down("q", "KeyA")
    assert (params["code"], params["text"], params["windowsVirtualKeyCode"]) == ("KeyA", "q", 81)


def test_repeat_and_alt() -> None:
    assert down("a", "KeyA", repeat=True)["autoRepeat"] is True
    assert down("a", "KeyA", ALT)["modifiers"] == 1


def test_mouse_wheel_touch_params() -> None:
    assert mouse_event_params(MouseEvent("down", 10.5, 20, "left", 1, 2, 8)) == {
        "type": "mousePressed",
        "x": 10.5,
        "y": 20,
        "button": "left",
        "buttons": 1,
        "clickCount": 2,
        "modifiers": 8,
    }
    assert mouse_event_params(MouseEvent("move", 1, 2))["type"] == "mouseMoved"
    # A move with a button held names it (Chromium drags a page's draggable only then), the first held as the DOM
    # orders them; a move that names one keeps it.
    assert mouse_event_params(MouseEvent("move", 1, 2, "none", 1, 0))["button"] == "left"
    assert mouse_event_params(MouseEvent("move", 1, 2, "none", 6, 0))["button"] == "right"
    assert mouse_event_params(MouseEvent("move", 1, 2, "none", 16, 0))["button"] == "forward"
    assert mouse_event_params(MouseEvent("move", 1, 2, "middle", 4, 0))["button"] == "middle"
    assert mouse_event_params(MouseEvent("move", 1, 2, "none", 0, 0))["button"] == "none"
    assert mouse_event_params(MouseEvent("up", 1, 2, "right", 0, 1, 0))["type"] == "mouseReleased"
    assert wheel_event_params(WheelEvent(5, 6, -3, 120, 2)) == {
        "type": "mouseWheel",
        "x": 5,
        "y": 6,
        "deltaX": -3,
        "deltaY": 120,
        "modifiers": 2,
    }
    points = (TouchPoint(1, 10, 20), TouchPoint(2, 30, 40))
    assert touch_event_params(TouchEvent("start", points)) == {
        "type": "touchStart",
        "touchPoints": [{"id": 1, "x": 10, "y": 20}, {"id": 2, "x": 30, "y": 40}],
    }
    assert touch_event_params(TouchEvent("move", points[:1]))["type"] == "touchMove"
    # touchEnd lifts the listed fingers (none listed: all of them); touchCancel must list none.
    assert touch_event_params(TouchEvent("end", points[1:])) == {
        "type": "touchEnd",
        "touchPoints": [{"id": 2, "x": 30, "y": 40}],
    }
    assert touch_event_params(TouchEvent("cancel", points)) == {"type": "touchCancel", "touchPoints": []}


def test_cdp_calls() -> None:
    assert cdp_calls(TextEvent("hi")) == [("Input.insertText", {"text": "hi"})]
    assert cdp_calls(KeyEvent("up", "a", "KeyA"))[0][0] == "Input.dispatchKeyEvent"
    assert cdp_calls(MouseEvent("move", 1, 2))[0][0] == "Input.dispatchMouseEvent"
    assert cdp_calls(WheelEvent(1, 2, 0, 1))[0] == (
        "Input.dispatchMouseEvent",
        wheel_event_params(WheelEvent(1, 2, 0, 1)),
    )
    assert cdp_calls(TouchEvent("end", ()))[0] == (
        "Input.dispatchTouchEvent",
        {"type": "touchEnd", "touchPoints": []},
    )


@pytest.mark.parametrize(("button", "bit"), [("back", 8), ("forward", 16)])
def test_back_and_forward_buttons_use_cdps_names(button: str, bit: int) -> None:
    # CDP's MouseButton names them as the contract does, and `buttons` is the same DOM mask.
    assert cdp_calls(MouseEvent("down", 3, 4, button, bit, 1, 0)) == [  # type: ignore[arg-type]
        (
            "Input.dispatchMouseEvent",
            {"type": "mousePressed", "x": 3, "y": 4, "button": button, "buttons": bit, "clickCount": 1, "modifiers": 0},
        )
    ]
    assert mouse_event_params(MouseEvent("up", 3, 4, button, 0, 1, 0))["button"] == button  # type: ignore[arg-type]


def test_paste_is_not_a_cdp_input_call() -> None:
    # The frame applies a paste itself (clipboard, then the paste command); reaching cdp_calls is a caller's bug,
    # refused loudly rather than typed as text or dropped.
    with pytest.raises(ValueError, match="applied by the frame"):
        cdp_calls(PasteEvent("pasted"))


def test_altgr_from_windows_types_its_character_but_ctrl_alt_shortcuts_do_not() -> None:
    from framestream.core.keys import key_event_params
    from framestream.core.wire import MOD_ALT, MOD_CTRL, KeyEvent

    at = key_event_params(KeyEvent("down", "@", "KeyQ", MOD_CTRL | MOD_ALT))
    assert at[0]["type"] == "keyDown" and at[0]["text"] == "@"
    shortcut = key_event_params(KeyEvent("down", "t", "KeyT", MOD_CTRL | MOD_ALT))
    assert "text" not in shortcut[0] or not shortcut[0]["text"]
    ctrl_only = key_event_params(KeyEvent("down", "@", "KeyQ", MOD_CTRL))
    assert "text" not in ctrl_only[0] or not ctrl_only[0]["text"]
