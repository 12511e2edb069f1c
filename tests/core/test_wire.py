from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from framestream.client.wire import encode_client_message
from framestream.core import wire
from framestream.core.errors import ProtocolError
from framestream.core.wire import (
    Hello,
    Input,
    KeyEvent,
    KeyframeRequest,
    MouseEvent,
    PasteEvent,
    Ping,
    TextEvent,
    TouchEvent,
    TouchPoint,
    Unwatch,
    Watch,
    WheelEvent,
    check_bounds,
    pack_video_header,
    parse_client_message,
    parse_input_body,
    unpack_video_header,
)


def msg(**fields: Any) -> str:
    return json.dumps(fields)


def inp(*events: Any, seq: Any = 7, **extra: Any) -> str:
    body: dict[str, Any] = {"type": "input", "frame": "f1", "grant": "G", "seq": seq, **extra}
    if len(events) == 1:
        body["event"] = events[0]
    elif events:
        body["events"] = list(events)
    return json.dumps(body)


def bad(text: str | bytes, code: str = "bad-message", **kwargs: Any) -> ProtocolError:
    with pytest.raises(ProtocolError) as info:
        parse_client_message(text, **kwargs)
    assert info.value.code == code
    return info.value


MOVE = {
    "kind": "mouse",
    "action": "move",
    "x": 10,
    "y": 20.5,
    "button": "none",
    "buttons": 0,
    "clicks": 0,
    "modifiers": 0,
}


# --- simple messages ----------------------------------------------------------------------------------------


def test_simple_messages() -> None:
    assert parse_client_message('{"type":"hello","token":"T.S"}') == Hello("T.S")
    assert parse_client_message(msg(type="watch", frame="f1")) == Watch("f1")
    assert parse_client_message(msg(type="watch", frame="f1", video=False)) == Watch("f1", video=False)
    assert parse_client_message(msg(type="watch", frame="f1", video=True)) == Watch("f1")
    assert parse_client_message(msg(type="unwatch", frame="f1")) == Unwatch("f1")
    assert parse_client_message(msg(type="keyframe", frame="f1")) == KeyframeRequest("f1")
    assert parse_client_message(msg(type="ping", seq=7)) == Ping(7)
    assert parse_client_message(msg(type="ping")) == Ping(None)
    assert parse_client_message(b'{"type":"watch","frame":"f1"}'.decode()) == Watch("f1")
    # Unknown fields are ignored so the contract can grow.
    assert parse_client_message(msg(type="watch", frame="f1", quality="high")) == Watch("f1")


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("not json", "not valid JSON"),
        ("[1,2]", "JSON object"),
        ('"hello"', "JSON object"),
        ("{}", "unknown message type"),
        ('{"type":"launch"}', "unknown message type 'launch'"),
        ('{"type":5}', "unknown message type"),
        ('{"type":"hello"}', "missing 'token'"),
        ('{"type":"hello","token":5}', "'token' must be a string"),
        ('{"type":"hello","token":""}', "'token' must be 1 to"),
        ('{"type":"watch"}', "missing 'frame'"),
        ('{"type":"watch","frame":["f"]}', "'frame' must be a string"),
        ('{"type":"watch","frame":"' + "f" * 257 + '"}', "'frame' must be 1 to 256"),
        ('{"type":"watch","frame":"\\ud800"}', "not valid Unicode"),
        ('{"type":"watch","frame":NaN}', "not valid JSON"),
        ('{"type":"watch","frame":Infinity}', "not valid JSON"),
    ],
)
def test_bad_messages(text: str, needle: str) -> None:
    assert needle in bad(text).message


def test_binary_refused() -> None:
    assert "binary" in bad(b'{"type":"watch","frame":"f1"}').message


def test_oversized_refused() -> None:
    text = msg(type="watch", frame="f1", pad="x" * 65536)
    assert "larger than 65536 bytes" in bad(text).message
    assert "larger than 100 bytes" in bad(msg(type="watch", frame="f", pad="é" * 50), max_bytes=100).message


def test_deep_nesting_refused() -> None:
    assert "not valid JSON" in bad("[" * 30000 + "]" * 30000).message


# --- input --------------------------------------------------------------------------------------------------


def test_input_single_and_many() -> None:
    parsed = parse_client_message(inp(MOVE))
    assert parsed == Input("f1", "G", 7, (MouseEvent("move", 10.0, 20.5, "none", 0, 0, 0),))
    many = parse_client_message(
        inp(
            {
                "kind": "mouse",
                "action": "down",
                "x": 1,
                "y": 2,
                "button": "left",
                "buttons": 1,
                "clicks": 2,
                "modifiers": 8,
            },
            {"kind": "wheel", "x": 1, "y": 2, "dx": 0, "dy": -120.5, "modifiers": 2},
            {"kind": "key", "action": "down", "key": "a", "code": "KeyA", "modifiers": 2},
            {"kind": "key", "action": "down", "key": "a", "code": "KeyA", "modifiers": 0, "repeat": True},
            {"kind": "text", "text": "héllo 👋"},
            {"kind": "touch", "action": "start", "points": [{"id": 3, "x": 5, "y": 6}]},
            {"kind": "touch", "action": "end", "points": []},
        )
    )
    assert isinstance(many, Input)
    assert many.events == (
        MouseEvent("down", 1.0, 2.0, "left", 1, 2, 8),
        WheelEvent(1.0, 2.0, 0.0, -120.5, 2),
        KeyEvent("down", "a", "KeyA", 2, False),
        KeyEvent("down", "a", "KeyA", 0, True),
        TextEvent("héllo 👋"),
        TouchEvent("start", (TouchPoint(3, 5.0, 6.0),)),
        TouchEvent("end", ()),
    )


def test_mouse_defaults_for_the_short_form() -> None:
    parsed = parse_client_message(inp({"kind": "mouse", "action": "down", "x": 1, "y": 2}))
    assert isinstance(parsed, Input)
    assert parsed.events == (MouseEvent("down", 1.0, 2.0, "left", 1, 1, 0),)
    parsed = parse_client_message(inp({"kind": "mouse", "action": "up", "x": 1, "y": 2, "button": "right"}))
    assert isinstance(parsed, Input)
    assert parsed.events == (MouseEvent("up", 1.0, 2.0, "right", 0, 1, 0),)
    parsed = parse_client_message(inp({"kind": "mouse", "action": "move", "x": 1, "y": 2}))
    assert isinstance(parsed, Input)
    assert parsed.events == (MouseEvent("move", 1.0, 2.0, "none", 0, 0, 0),)
    parsed = parse_client_message(inp({"kind": "key", "action": "up", "key": "Unidentified"}))
    assert isinstance(parsed, Input)
    assert parsed.events == (KeyEvent("up", "Unidentified", "", 0, False),)


@pytest.mark.parametrize(
    ("event", "needle"),
    [
        ({"kind": "pen", "x": 1}, "'kind' must be one of"),
        ({"x": 1}, "'kind' must be one of"),
        ("move", "must be an object"),
        ({**MOVE, "action": "drag"}, "'action' must be one of move, down, up"),
        ({**MOVE, "button": "side"}, "'button' must be one of left, middle, right, back, forward, none"),
        ({**MOVE, "action": "down", "button": "none"}, "needs a button"),
        ({**MOVE, "x": "10"}, "'x' must be a number"),
        ({**MOVE, "x": True}, "'x' must be a number"),
        ({**MOVE, "y": None}, "'y' must be a number"),
        ({**MOVE, "x": "<1e999>"}, "finite"),  # written as the JSON number 1e999, which overflows to inf
        ({**MOVE, "x": 10**400}, "out of range"),
        ({k: v for k, v in MOVE.items() if k != "x"}, "missing 'x'"),
        ({**MOVE, "modifiers": 16}, "'modifiers' must be between 0 and 15"),
        ({**MOVE, "modifiers": -1}, "'modifiers' must be between 0 and 15"),
        ({**MOVE, "modifiers": 1.0}, "'modifiers' must be an integer"),
        ({**MOVE, "buttons": 32}, "'buttons' must be between 0 and 31"),
        ({"kind": "wheel", "x": 1, "y": 1, "dx": 0}, "missing 'dy'"),
        ({"kind": "key", "action": "press", "key": "a", "code": "KeyA"}, "'action' must be one of down, up"),
        ({"kind": "key", "action": "down", "key": "", "code": "KeyA"}, "'key' must be 1 to 64"),
        ({"kind": "key", "action": "down", "key": "a", "code": 65}, "'code' must be a string"),
        ({"kind": "key", "action": "down", "key": "a", "repeat": 1}, "'repeat' must be true or false"),
        ({"kind": "text", "text": ""}, "'text' must be 1 to 10000"),
        ({"kind": "text", "text": "x" * 10001}, "'text' must be 1 to 10000"),
        ({"kind": "text"}, "missing 'text'"),
        ({"kind": "touch", "action": "start", "points": []}, "needs at least one point"),
        ({"kind": "touch", "action": "tap", "points": []}, "'action' must be one of"),
        ({"kind": "touch", "action": "move", "points": {"id": 1}}, "'points' must be a list"),
        (
            {"kind": "touch", "action": "move", "points": [{"id": i, "x": 1, "y": 1} for i in range(11)]},
            "at most 10 touch points",
        ),
        (
            {
                "kind": "touch",
                "action": "move",
                "points": [{"id": 1, "x": 1, "y": 1}, {"id": 1, "x": 2, "y": 2}],
            },
            "unique",
        ),
        ({"kind": "touch", "action": "move", "points": [{"id": -1, "x": 1, "y": 1}]}, "'id' must be between"),
        ({"kind": "touch", "action": "move", "points": [5]}, "point 0: must be an object"),
    ],
)
def test_bad_input_events_carry_seq_and_frame(event: Any, needle: str) -> None:
    error = bad(inp(event, seq=42).replace('"<1e999>"', "1e999"), "bad-input")
    assert needle in error.message
    assert (error.seq, error.frame) == (42, "f1")


def test_event_count_limits() -> None:
    ok = parse_client_message(inp(*[MOVE] * 256))
    assert isinstance(ok, Input) and len(ok.events) == 256
    assert "1 to 256" in bad(inp(*[MOVE] * 257), "bad-input").message
    assert "1 to 256" in bad(inp(events=[]), "bad-input").message
    error = bad(inp(seq=9), "bad-input")
    assert "exactly one of 'event' or 'events'" in error.message
    assert error.seq == 9
    assert "exactly one" in bad(inp(MOVE, events=[MOVE]), "bad-input").message
    assert "'events' must be a list" in bad(inp(events={"a": MOVE}), "bad-input").message
    assert "event 1: 'x' must be a number" in bad(inp(MOVE, {**MOVE, "x": "1"}), "bad-input").message


@pytest.mark.parametrize(
    ("fields", "needle", "seq"),
    [
        ({"seq": -1}, "'seq' must be between 0 and", None),
        ({"seq": "7"}, "'seq' must be an integer", None),
        ({"seq": True}, "'seq' must be an integer", None),
        ({"seq": 2**53}, "'seq' must be between", None),
        ({"grant": None}, "'grant' must be a string", 7),
        ({"frame": 3}, "'frame' must be a string", 7),
    ],
)
def test_bad_input_envelope(fields: dict[str, Any], needle: str, seq: int | None) -> None:
    body = {"type": "input", "frame": "f1", "grant": "G", "seq": 7, "event": MOVE, **fields}
    error = bad(json.dumps(body))
    assert needle in error.message
    assert error.seq == seq


def test_parse_input_body() -> None:
    assert parse_input_body({"seq": 3, "event": {"kind": "text", "text": "hi"}}) == (3, (TextEvent("hi"),))
    assert parse_input_body({"seq": 0, "events": [MOVE, MOVE]})[1] == (MouseEvent("move", 10, 20.5),) * 2
    with pytest.raises(ProtocolError) as info:
        parse_input_body({"event": MOVE})
    assert info.value.code == "bad-message"
    with pytest.raises(ProtocolError) as info:
        parse_input_body([MOVE])
    assert info.value.code == "bad-message"
    with pytest.raises(ProtocolError) as info:
        parse_input_body({"seq": 5, "event": {"kind": "mouse"}})
    assert (info.value.code, info.value.seq) == ("bad-input", 5)


# --- bounds -------------------------------------------------------------------------------------------------


def test_check_bounds_inclusive_edges() -> None:
    check_bounds(
        [
            MouseEvent("move", 0, 0),
            MouseEvent("move", 1280, 800),
            WheelEvent(1280, 0, 0, 5),
            TouchEvent("move", (TouchPoint(1, 640, 800),)),
            TextEvent("x"),
            KeyEvent("down", "a", "KeyA"),
        ],
        1280,
        800,
        1,
    )


@pytest.mark.parametrize(
    "event",
    [
        MouseEvent("move", -0.5, 10),
        MouseEvent("down", 1280.01, 10, "left", 1, 1, 0),
        WheelEvent(10, 800.5, 0, 1),
        TouchEvent("start", (TouchPoint(1, 5, 5), TouchPoint(2, 5, -1))),
    ],
)
def test_check_bounds_refuses_outside(event: wire.InputEvent) -> None:
    with pytest.raises(ProtocolError) as info:
        check_bounds([TextEvent("ok"), event], 1280, 800, 12)
    assert (info.value.code, info.value.seq) == ("bad-input", 12)
    assert "event 1" in info.value.message
    assert "1280x800" in info.value.message


# --- video header -------------------------------------------------------------------------------------------


def test_video_header_layout() -> None:
    assert wire.VIDEO_HEADER.size == 16
    header = pack_video_header(wire.FLAG_KEYFRAME, 2, 258, 1_700_000_000_123_456)
    assert header.hex() == "01010002000001020006 0a2418202240".replace(" ", "")
    parsed = unpack_video_header(header + b"\x00\x00\x00\x01\x67")
    assert parsed == (1, 1, 2, 258, 1_700_000_000_123_456)
    assert parsed.kind == wire.KIND_VIDEO
    assert parsed.keyframe and not parsed.refinement
    assert unpack_video_header(pack_video_header(wire.FLAG_REFINEMENT, 0, 0, 0)).refinement


def test_video_header_sequence_wraps_and_ranges() -> None:
    assert unpack_video_header(pack_video_header(0, 1, 2**32 + 5, 1)).sequence == 5
    assert unpack_video_header(pack_video_header(0, 65535, 2**32 - 1, 2**64 - 1)) == (
        1,
        0,
        65535,
        2**32 - 1,
        2**64 - 1,
    )
    for args in [(0, 65536, 0, 0), (256, 0, 0, 0), (0, 0, 0, -1), (-1, 0, 0, 0)]:
        with pytest.raises(ValueError):
            pack_video_header(*args)
    with pytest.raises(ValueError):
        unpack_video_header(b"\x01" * 15)


# --- server messages ----------------------------------------------------------------------------------------


def test_server_messages_exact_json() -> None:
    assert (
        wire.welcome("sbx-1", True)
        == '{"type":"welcome","protocol":1,"sandbox":"sbx-1","shared_frames":true}'
    )
    assert wire.video_config("f1", 0, "avc1.42E01F", 2560, 1600, 1280, 800) == (
        '{"type":"video-config","frame":"f1","slot":0,"codec":"avc1.42E01F","width":2560,"height":1600,'
        '"css_width":1280,"css_height":800}'
    )
    assert wire.frame_state("f1", "live", "https://a.test/", 2, None) == (
        '{"type":"frame-state","frame":"f1","state":"live","url":"https://a.test/","viewers":2,"driver":null}'
    )
    assert wire.frame_state("f1", "error", "u", 0, "bob", "Chromium exited") == (
        '{"type":"frame-state","frame":"f1","state":"error","url":"u","viewers":0,"driver":"bob",'
        '"message":"Chromium exited"}'
    )
    assert wire.frame_state("f1", "paused", "u", 0, None, css_size=(1280, 800)) == (
        '{"type":"frame-state","frame":"f1","state":"paused","url":"u","viewers":0,"driver":null,'
        '"width":1280,"height":800}'
    )
    assert (
        wire.control_message("f1", "agent", False, kind="agent", since_us=7)
        == '{"type":"control","frame":"f1","driver":"agent","you":false,"kind":"agent","since_us":7,"held":false}'
    )
    assert wire.help_requested("f1", "h1", "a login", "agent", 9) == (
        '{"type":"help-requested","frame":"f1","id":"h1","reason":"a login","subject":"agent","until_us":9}')
    assert wire.help_ended("f1", "h1", "answered", note="logged in", by="alice") == (
        '{"type":"help-ended","frame":"f1","id":"h1","outcome":"answered","note":"logged in","by":"alice"}')
    assert wire.help_ended("f1", "h1", "timeout") == (
        '{"type":"help-ended","frame":"f1","id":"h1","outcome":"timeout"}')
    assert wire.agent_pointer("f1", 10.004, 20, "click", "agent") == (
        '{"type":"agent-pointer","frame":"f1","x":10.0,"y":20,"action":"click","subject":"agent"}')
    assert wire.input_ack("f1", 9) == '{"type":"input-ack","frame":"f1","seq":9}'
    assert wire.error_message("superseded", "a newer grant drives", "f1", 9) == (
        '{"type":"error","code":"superseded","message":"a newer grant drives","frame":"f1","seq":9}'
    )
    assert wire.error_message("bad-message", "no") == '{"type":"error","code":"bad-message","message":"no"}'
    # Client-chosen strings that UTF-8 cannot carry are escaped, not sent raw.
    assert wire.error_message("unknown-frame", "no such frame", frame="\ud800") == (
        '{"type":"error","code":"unknown-frame","message":"no such frame","frame":"\\ud800"}'
    )
    with pytest.raises(ValueError):
        wire.error_message("oops", "x")
    with pytest.raises(ValueError):
        wire.frame_state("f1", "running", "u", 0, None)
    assert wire.cursor_message("f1", "not-allowed") == '{"type":"cursor","frame":"f1","cursor":"not-allowed"}'
    for not_a_keyword in ("auto", "url(x.png), pointer", "Pointer", " text", ""):  # resolved, an image, typos
        with pytest.raises(ValueError):
            wire.cursor_message("f1", not_a_keyword)


def test_constants() -> None:
    # The codes the server may send are exactly the contract's Errors table, in its order.
    doc = (Path(__file__).parents[2] / "docs" / "protocol.md").read_text()
    table = doc[doc.index("\n## Errors"):doc.index("\n### Close codes")]
    assert wire.ERROR_CODES == tuple(re.findall(r"^\| `([a-z-]+)` \|", table, re.M))
    assert (wire.CLOSE_PROTOCOL, wire.CLOSE_UNAUTHORIZED, wire.CLOSE_FORBIDDEN, wire.CLOSE_HELLO_TIMEOUT) == (
        4400,
        4401,
        4403,
        4408,
    )
    assert (wire.CLOSE_TOO_MANY, wire.CLOSE_GOING_AWAY, wire.CLOSE_INTERNAL) == (4429, 1001, 1011)


def test_the_cursor_keywords_are_the_same_in_the_contract_the_viewer_and_its_types() -> None:
    root = Path(__file__).parents[2]
    doc = (root / "docs" / "protocol.md").read_text()
    section = doc[doc.index("### The page's cursor"):doc.index("## WebRTC")]
    told = section[section.index("`cursor` is one of"):section.index("The page resolves")]
    assert tuple(re.findall(r"`([a-z-]+)`", told))[1:] == wire.CURSORS  # (the first names the field)
    viewer = (root / "web" / "lib" / "pagecursor.js").read_text()
    listed = viewer[viewer.index("PAGE_CURSORS = Object.freeze(["):viewer.index("]);")]
    assert tuple(re.findall(r"'([a-z-]+)'", listed)) == wire.CURSORS
    types = (root / "web" / "protocol.d.ts").read_text()
    union = types[types.index("export type PageCursor ="):types.index("export interface CursorMessage")]
    assert tuple(re.findall(r"'([a-z-]+)'", union)) == wire.CURSORS


# --- property tests -----------------------------------------------------------------------------------------

coords = st.floats(min_value=0, max_value=5000, allow_nan=False)
mods = st.integers(0, 15)
events = st.one_of(
    st.builds(
        MouseEvent,
        st.just("move"),
        coords,
        coords,
        st.sampled_from(["left", "middle", "right", "back", "forward", "none"]),
        st.integers(0, 31),
        st.integers(0, 16),
        mods,
    ),
    st.builds(
        MouseEvent,
        st.sampled_from(["down", "up"]),
        coords,
        coords,
        st.sampled_from(["left", "middle", "right", "back", "forward"]),
        st.integers(0, 31),
        st.integers(0, 16),
        mods,
    ),
    st.builds(WheelEvent, coords, coords, st.floats(-1e4, 1e4), st.floats(-1e4, 1e4), mods),
    st.builds(
        KeyEvent,
        st.sampled_from(["down", "up"]),
        st.text(min_size=1, max_size=20),
        st.text(max_size=20),
        mods,
        st.booleans(),
    ),
    st.builds(TextEvent, st.text(min_size=1, max_size=100)),
    st.builds(PasteEvent, st.text(min_size=1, max_size=100)),
    st.builds(
        TouchEvent,
        st.sampled_from(["start", "move"]),
        st.lists(
            st.builds(TouchPoint, st.integers(0, 100), coords, coords),
            min_size=1,
            max_size=10,
            unique_by=lambda p: p.id,
        ).map(tuple),
    ),
    st.builds(
        TouchEvent,
        st.sampled_from(["end", "cancel"]),
        st.lists(
            st.builds(TouchPoint, st.integers(0, 100), coords, coords), max_size=10, unique_by=lambda p: p.id
        ).map(tuple),
    ),
)
frames = st.text(min_size=1, max_size=30)
messages = st.one_of(
    st.builds(Hello, st.text(min_size=1, max_size=100)),
    st.builds(Watch, frames, st.booleans()),
    st.builds(Unwatch, frames),
    st.builds(KeyframeRequest, frames),
    st.builds(Ping, st.none() | st.integers(0, 2**53 - 1)),
    st.builds(
        Input,
        frames,
        st.text(min_size=1, max_size=100),
        st.integers(0, 2**53 - 1),
        st.lists(events, min_size=1, max_size=20).map(tuple),
    ),
)


@settings(database=None, deadline=None, max_examples=150)
@given(messages)
def test_round_trip(message: wire.ClientMessage) -> None:
    assert parse_client_message(encode_client_message(message)) == message


def only_protocol_errors(text: str | bytes) -> None:
    try:
        parse_client_message(text)
    except ProtocolError as exc:
        assert exc.code in ("bad-message", "bad-input")
        assert exc.message


@settings(database=None, deadline=None, max_examples=150)
@given(st.text(max_size=200) | st.binary(max_size=200))
def test_arbitrary_text_and_bytes(text: str | bytes) -> None:
    only_protocol_errors(text)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
    max_leaves=12,
)
field = (
    st.sampled_from(
        [
            "mouse",
            "wheel",
            "key",
            "text",
            "paste",
            "touch",
            "move",
            "back",
            "forward",
            "reload",
            "activate",
            "close",
            "down",
            "up",
            "start",
            "end",
            "cancel",
            "left",
            "none",
            "a",
            "KeyA",
            "",
        ]
    )
    | json_values
)
event_like = st.dictionaries(
    st.sampled_from(
        [
            "kind",
            "action",
            "x",
            "y",
            "button",
            "buttons",
            "clicks",
            "modifiers",
            "dx",
            "dy",
            "key",
            "code",
            "repeat",
            "text",
            "points",
            "id",
        ]
    ),
    field | st.lists(st.dictionaries(st.sampled_from(["id", "x", "y"]), field | coords), max_size=3),
    max_size=10,
)
message_like = st.fixed_dictionaries(
    {
        "type": st.sampled_from(
            ["hello", "watch", "unwatch", "keyframe", "ping", "input", "page", "navigate", "dialog-answer", "other"]
        )
        | json_values
    },
    optional={
        "frame": st.just("f1") | json_values,
        "grant": st.just("G") | json_values,
        "token": st.just("T") | json_values,
        "seq": st.integers(-2, 2**60) | json_values,
        "event": event_like | json_values,
        "events": st.lists(event_like, max_size=4) | json_values,
        "action": field,
        "page": st.just("p1") | json_values,
        "url": st.just("http://a.test/") | json_values,
        "id": st.just("d1") | json_values,
        "accept": st.booleans() | json_values,
        "text": field,
    },
)


@settings(database=None, deadline=None, max_examples=150)
@given(json_values | message_like)
def test_arbitrary_json_only_raises_protocol_error(value: object) -> None:
    # allow_nan: json.dumps writes NaN/Infinity tokens, which the parser must refuse cleanly.
    only_protocol_errors(json.dumps(value))
