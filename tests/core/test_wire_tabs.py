"""The wire format of a frame as a whole browser tab: `page`, `navigate`, `dialog-answer`, the `paste` event, the
back and forward mouse buttons, and the server's pages, dialog, file-chooser, download and clipboard messages."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from framestream.client.wire import encode_client_message, event_to_dict, navigate_body
from framestream.core import pages as core_pages
from framestream.core import wire
from framestream.core.errors import ProtocolError
from framestream.core.wire import (
    DialogAnswer,
    Input,
    MouseEvent,
    Navigate,
    PageRequest,
    PasteEvent,
    TextEvent,
    check_bounds,
    parse_client_message,
    parse_input_body,
    parse_navigate_body,
)

ENVELOPE: dict[str, Any] = {"frame": "f1", "grant": "G", "seq": 7}


def driver(kind: str, **fields: Any) -> str:
    return json.dumps({"type": kind, **ENVELOPE, **fields})


def refused(text: str, code: str) -> ProtocolError:
    with pytest.raises(ProtocolError) as info:
        parse_client_message(text)
    assert info.value.code == code
    return info.value


# --- page ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("action", ["activate", "close", "reload"])
def test_page_request(action: str) -> None:
    assert parse_client_message(driver("page", action=action, page="p2")) == PageRequest("f1", "G", 7, action, "p2")  # type: ignore[arg-type]


def test_page_request_as_documented_and_unknown_fields_ignored() -> None:
    text = '{"type":"page","frame":"f1","grant":"<drive token>","seq":14,"action":"activate","page":"p1"}'
    assert parse_client_message(text) == PageRequest("f1", "<drive token>", 14, "activate", "p1")
    assert parse_client_message(driver("page", action="close", page="p1", why="done")) == PageRequest(
        "f1", "G", 7, "close", "p1"
    )


@pytest.mark.parametrize(
    ("fields", "needle"),
    [
        ({"page": "p1"}, "page: missing 'action'"),
        ({"action": "open", "page": "p1"}, "'action' must be one of activate, close, reload"),
        ({"action": "back", "page": "p1"}, "'action' must be one of activate, close, reload"),
        ({"action": 1, "page": "p1"}, "'action' must be one of"),
        ({"action": "close"}, "page: missing 'page'"),
        ({"action": "close", "page": ""}, "'page' must be 1 to 256 characters"),
        ({"action": "close", "page": "p" * 257}, "'page' must be 1 to 256 characters"),
        ({"action": "close", "page": 2}, "'page' must be a string"),
        ({"action": "close", "page": None}, "'page' must be a string"),
    ],
)
def test_page_request_refusals_carry_seq_and_frame(fields: dict[str, Any], needle: str) -> None:
    error = refused(driver("page", **fields), "bad-input")
    assert needle in error.message
    assert (error.seq, error.frame) == (7, "f1")


def test_page_id_must_be_unicode_text() -> None:
    text = driver("page", action="close", page="PAGE").replace("PAGE", "\\ud800")
    assert "not valid Unicode" in refused(text, "bad-input").message


# --- navigate -----------------------------------------------------------------------------------------------


def test_navigate_to_a_url_or_through_history() -> None:
    text = '{"type":"navigate","frame":"f1","grant":"<drive token>","seq":17,"url":"http://127.0.0.1:3000/settings"}'
    assert parse_client_message(text) == Navigate("f1", "<drive token>", 17, url="http://127.0.0.1:3000/settings")
    for action in ("back", "forward", "reload"):
        assert parse_client_message(driver("navigate", action=action)) == Navigate("f1", "G", 7, action=action)


def test_navigate_leaves_the_url_check_to_the_frame() -> None:
    # Scheme and host are the frame's check (check_url, as at creation): here only the length is bounded.
    for url in ("javascript:alert(1)", "about:blank", "x", "u" * wire.MAX_URL_CHARS):
        parsed = parse_client_message(driver("navigate", url=url))
        assert isinstance(parsed, Navigate)
        assert (parsed.url, parsed.action) == (url, None)


@pytest.mark.parametrize(
    ("fields", "needle"),
    [
        ({}, "exactly one of 'url' or 'action'"),
        ({"url": "http://a.test/", "action": "back"}, "exactly one of 'url' or 'action'"),
        ({"url": ""}, "'url' must be 1 to 8192 characters"),
        ({"url": "h" * 8193}, "'url' must be 1 to 8192 characters"),
        ({"url": None}, "'url' must be a string"),
        ({"url": ["http://a.test/"]}, "'url' must be a string"),
        ({"action": "home"}, "'action' must be one of back, forward, reload"),
        ({"action": None}, "'action' must be one of back, forward, reload"),
    ],
)
def test_navigate_refusals_carry_seq_and_frame(fields: dict[str, Any], needle: str) -> None:
    error = refused(driver("navigate", **fields), "bad-input")
    assert needle in error.message
    assert (error.seq, error.frame) == (7, "f1")


def test_navigate_holds_exactly_one_of_url_or_action() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        Navigate("f1", "G", 1)
    with pytest.raises(ValueError, match="exactly one"):
        Navigate("f1", "G", 1, url="http://a.test/", action="back")


def test_navigate_body() -> None:
    assert parse_navigate_body({"seq": 1, "url": "http://a.test/"}, frame="f1", grant="G") == Navigate(
        "f1", "G", 1, url="http://a.test/"
    )
    assert parse_navigate_body({"seq": 2, "action": "back", "extra": 1}, frame="f2", grant="H") == Navigate(
        "f2", "H", 2, action="back"
    )


@pytest.mark.parametrize(
    ("body", "code", "seq", "needle"),
    [
        ([{"seq": 1, "url": "http://a.test/"}], "bad-message", None, "body must be a JSON object"),
        ({"url": "http://a.test/"}, "bad-message", None, "'seq' must be an integer"),
        ({"seq": -1, "action": "back"}, "bad-message", None, "'seq' must be an integer"),
        ({"seq": True, "action": "back"}, "bad-message", None, "'seq' must be an integer"),
        ({"seq": 3}, "bad-input", 3, "exactly one of 'url' or 'action'"),
        ({"seq": 3, "url": "u" * 8193}, "bad-input", 3, "'url' must be 1 to 8192"),
        ({"seq": 3, "action": "up"}, "bad-input", 3, "'action' must be one of back, forward, reload"),
    ],
)
def test_navigate_body_refusals(body: object, code: str, seq: int | None, needle: str) -> None:
    with pytest.raises(ProtocolError) as info:
        parse_navigate_body(body, frame="f1", grant="G")
    assert (info.value.code, info.value.seq) == (code, seq)
    assert needle in info.value.message


# --- dialog-answer ------------------------------------------------------------------------------------------


def test_dialog_answer_as_documented() -> None:
    confirm = '{"type":"dialog-answer","frame":"f1","grant":"<drive token>","seq":19,"id":"d3","accept":true}'
    assert parse_client_message(confirm) == DialogAnswer("f1", "<drive token>", 19, "d3", True, None)
    prompt = (
        '{"type":"dialog-answer","frame":"f1","grant":"<drive token>","seq":20,"id":"d4","accept":true,'
        '"text":"my answer"}'
    )
    assert parse_client_message(prompt) == DialogAnswer("f1", "<drive token>", 20, "d4", True, "my answer")


def test_dialog_answer_cancel_and_text_bounds() -> None:
    assert parse_client_message(driver("dialog-answer", id="d1", accept=False)) == DialogAnswer(
        "f1", "G", 7, "d1", False
    )
    # An empty prompt answer is an answer; the longest allowed is that of a text event.
    assert parse_client_message(driver("dialog-answer", id="d1", accept=True, text="")) == DialogAnswer(
        "f1", "G", 7, "d1", True, ""
    )
    longest = parse_client_message(driver("dialog-answer", id="d1", accept=True, text="é" * 10000))
    assert isinstance(longest, DialogAnswer) and longest.text == "é" * 10000


@pytest.mark.parametrize(
    ("fields", "needle"),
    [
        ({"accept": True}, "dialog-answer: missing 'id'"),
        ({"id": "", "accept": True}, "'id' must be 1 to 256 characters"),
        ({"id": 3, "accept": True}, "'id' must be a string"),
        ({"id": "d1"}, "dialog-answer: missing 'accept'"),
        ({"id": "d1", "accept": 1}, "'accept' must be true or false"),
        ({"id": "d1", "accept": "true"}, "'accept' must be true or false"),
        ({"id": "d1", "accept": None}, "'accept' must be true or false"),
        ({"id": "d1", "accept": True, "text": "x" * 10001}, "'text' must be 0 to 10000 characters"),
        ({"id": "d1", "accept": True, "text": None}, "'text' must be a string"),
        ({"id": "d1", "accept": True, "text": 5}, "'text' must be a string"),
    ],
)
def test_dialog_answer_refusals_carry_seq_and_frame(fields: dict[str, Any], needle: str) -> None:
    error = refused(driver("dialog-answer", **fields), "bad-input")
    assert needle in error.message
    assert (error.seq, error.frame) == (7, "f1")


# --- the envelope, as strict as input's -----------------------------------------------------------------------

VALID_FIELDS: dict[str, dict[str, Any]] = {
    "input": {"event": {"kind": "text", "text": "x"}},
    "page": {"action": "reload", "page": "p1"},
    "navigate": {"action": "reload"},
    "dialog-answer": {"id": "d1", "accept": True},
}


@pytest.mark.parametrize("kind", ["page", "navigate", "dialog-answer"])
@pytest.mark.parametrize(
    ("envelope", "needle", "seq", "frame"),
    [
        ({"grant": "G", "seq": 7}, "missing 'frame'", 7, None),
        ({"frame": 3, "grant": "G", "seq": 7}, "'frame' must be a string", 7, None),
        ({"frame": "f" * 257, "grant": "G", "seq": 7}, "'frame' must be 1 to 256", 7, None),  # not echoed
        ({"frame": "f1", "seq": 7}, "missing 'grant'", 7, "f1"),
        ({"frame": "f1", "grant": None, "seq": 7}, "'grant' must be a string", 7, "f1"),
        ({"frame": "f1", "grant": "g" * 4097, "seq": 7}, "'grant' must be 1 to 4096", 7, "f1"),
        ({"frame": "f1", "grant": "G"}, "missing 'seq'", None, "f1"),
        ({"frame": "f1", "grant": "G", "seq": -1}, "'seq' must be between 0 and", None, "f1"),
        ({"frame": "f1", "grant": "G", "seq": 2**53}, "'seq' must be between 0 and", None, "f1"),
        ({"frame": "f1", "grant": "G", "seq": "7"}, "'seq' must be an integer", None, "f1"),
        ({"frame": "f1", "grant": "G", "seq": 7.0}, "'seq' must be an integer", None, "f1"),
        ({"frame": "f1", "grant": "G", "seq": False}, "'seq' must be an integer", None, "f1"),
    ],
)
def test_envelope_refusals_like_input(
    kind: str, envelope: dict[str, Any], needle: str, seq: int | None, frame: str | None
) -> None:
    error = refused(json.dumps({"type": kind, **envelope, **VALID_FIELDS[kind]}), "bad-message")
    assert needle in error.message
    assert error.message.startswith(f"{kind}: ")
    assert (error.seq, error.frame) == (seq, frame)


def test_envelope_is_checked_before_the_fields() -> None:
    # A broken envelope and broken fields: the envelope's bad-message wins, as for input.
    error = refused(json.dumps({"type": "navigate", "frame": "f1", "seq": 7}), "bad-message")
    assert "missing 'grant'" in error.message


def test_unknown_type_names_every_message() -> None:
    error = refused('{"type":"tab"}', "bad-message")
    assert "expected hello, watch, unwatch, keyframe, input, page, navigate or dialog-answer" in error.message


# --- the paste event, the back and forward buttons ------------------------------------------------------------


def test_paste_event() -> None:
    parsed = parse_client_message(driver("input", event={"kind": "paste", "text": "text from the clipboard"}))
    assert parsed == Input("f1", "G", 7, (PasteEvent("text from the clipboard"),))
    events = [{"kind": "paste", "text": "é" * 10000}, {"kind": "text", "text": "a"}]
    assert parse_input_body({"seq": 1, "events": events}) == (1, (PasteEvent("é" * 10000), TextEvent("a")))
    check_bounds([PasteEvent("anywhere")], 10, 10, 1)


@pytest.mark.parametrize(
    ("event", "needle"),
    [
        ({"kind": "paste"}, "event: missing 'text'"),
        ({"kind": "paste", "text": ""}, "'text' must be 1 to 10000"),
        ({"kind": "paste", "text": "x" * 10001}, "'text' must be 1 to 10000"),
        ({"kind": "paste", "text": ["x"]}, "'text' must be a string"),
        ({"kind": "Paste", "text": "x"}, "'kind' must be one of mouse, wheel, key, text, paste, touch"),
    ],
)
def test_paste_refusals(event: dict[str, Any], needle: str) -> None:
    error = refused(driver("input", event=event), "bad-input")
    assert needle in error.message
    assert (error.seq, error.frame) == (7, "f1")


@pytest.mark.parametrize(("button", "bit"), [("back", 8), ("forward", 16)])
def test_back_and_forward_buttons(button: str, bit: int) -> None:
    press = {"kind": "mouse", "action": "down", "x": 5, "y": 6, "button": button}
    parsed = parse_client_message(driver("input", events=[press, {**press, "action": "up"}]))
    assert isinstance(parsed, Input)
    # The short form's defaults: the pressed button's bit while it is down, nothing held once it is up.
    assert parsed.events == (MouseEvent("down", 5, 6, button, bit, 1, 0), MouseEvent("up", 5, 6, button, 0, 1, 0))  # type: ignore[arg-type]
    assert wire.BUTTON_BITS[button] == bit
    move = {"kind": "mouse", "action": "move", "x": 1, "y": 1, "buttons": 24}
    held = parse_client_message(driver("input", event=move))
    assert isinstance(held, Input) and held.events == (MouseEvent("move", 1, 1, "none", 24, 0, 0),)


def test_a_press_still_needs_a_real_button() -> None:
    press = {"kind": "mouse", "action": "down", "x": 1, "y": 1, "button": "none"}
    error = refused(driver("input", event=press), "bad-input")
    assert "needs a button (left, middle, right, back or forward)" in error.message


# --- server messages ----------------------------------------------------------------------------------------

PAGES = [
    {"id": "p1", "url": "http://127.0.0.1:3000/login", "title": "Log in", "active": False, "responsive": True},
    {"id": "p2", "url": "http://127.0.0.1:3000/oauth", "title": "Sign in", "active": True, "responsive": True},
]


def test_frame_state_without_pages_is_unchanged() -> None:
    # Byte for byte what frame-state was before pages existed: no `pages` key at all, not null.
    before = '{"type":"frame-state","frame":"f1","state":"live","url":"https://a.test/","viewers":2,"driver":null}'
    assert wire.frame_state("f1", "live", "https://a.test/", 2, None) == before
    assert wire.frame_state("f1", "live", "https://a.test/", 2, None, pages=None) == before
    assert wire.frame_state("f1", "closed", "u", 0, "bob", "deleted", None) == (
        '{"type":"frame-state","frame":"f1","state":"closed","url":"u","viewers":0,"driver":"bob","message":"deleted"}'
    )


def test_frame_state_with_pages_as_documented() -> None:
    assert wire.frame_state("f1", "live", "http://127.0.0.1:3000/login", 1, "alice", pages=PAGES) == (
        '{"type":"frame-state","frame":"f1","state":"live","url":"http://127.0.0.1:3000/login","viewers":1,'
        '"driver":"alice",'
        '"pages":[{"id":"p1","url":"http://127.0.0.1:3000/login","title":"Log in","active":false,"responsive":true},'
        '{"id":"p2","url":"http://127.0.0.1:3000/oauth","title":"Sign in","active":true,"responsive":true}]}'
    )


def test_frame_state_pages_take_the_contract_fields_in_order() -> None:
    shuffled = {"responsive": False, "title": "T", "secret": "target-id", "active": True, "url": "u", "id": "p3"}
    text = wire.frame_state("f1", "error", "u", 0, None, "crashed", [shuffled])
    assert text.endswith(
        '"message":"crashed","pages":[{"id":"p3","url":"u","title":"T","active":true,"responsive":false}]}'
    )
    assert '"pages":[]' in wire.frame_state("f1", "live", "u", 0, None, pages=[])
    with pytest.raises(ValueError, match="needs title, responsive"):
        wire.frame_state("f1", "live", "u", 0, None, pages=[{"id": "p1", "url": "u", "active": True}])


def test_core_pages_describe_fits_frame_state() -> None:
    described = core_pages.Page("p1", "T1", "S1", "http://a.test/", "A").describe(True)
    assert json.loads(wire.frame_state("f1", "live", "http://a.test/", 1, None, pages=[described]))["pages"] == [
        {"id": "p1", "url": "http://a.test/", "title": "A", "active": True, "responsive": True}
    ]
    assert wire.DIALOG_KINDS == core_pages.DIALOG_KINDS


def test_dialog_messages_as_documented() -> None:
    assert wire.dialog_message("f1", "d3", "p1", "confirm", "Delete 3 files?", "") == (
        '{"type":"dialog","frame":"f1","id":"d3","page":"p1","kind":"confirm","message":"Delete 3 files?",'
        '"default":""}'
    )
    for kind in ("alert", "prompt", "beforeunload"):
        assert json.loads(wire.dialog_message("f1", "d1", "p1", kind, "m", "x"))["kind"] == kind
    assert wire.dialog_closed("f1", "d3", "answered") == (
        '{"type":"dialog-closed","frame":"f1","id":"d3","reason":"answered"}'
    )
    for reason in ("timeout", "closed"):
        assert json.loads(wire.dialog_closed("f1", "d3", reason))["reason"] == reason
    with pytest.raises(ValueError, match="dialog kind"):
        wire.dialog_message("f1", "d1", "p1", "print", "m", "")
    with pytest.raises(ValueError, match="dialog-closed reason"):
        wire.dialog_closed("f1", "d1", "dismissed")


def test_file_chooser_messages_as_documented() -> None:
    assert wire.file_chooser_message("f1", "c2", "p1", False, ("image/png", ".png")) == (
        '{"type":"file-chooser","frame":"f1","id":"c2","page":"p1","multiple":false,"accept":["image/png",".png"]}'
    )
    assert json.loads(wire.file_chooser_message("f1", "c3", "p2", True, []))["accept"] == []
    assert wire.file_chooser_closed("f1", "c2") == '{"type":"file-chooser-closed","frame":"f1","id":"c2"}'


def test_download_and_clipboard_messages_as_documented() -> None:
    assert wire.download_message("f1", "a5f3c2", "report.csv", 0, "started") == (
        '{"type":"download","frame":"f1","id":"a5f3c2","name":"report.csv","size":0,"state":"started"}'
    )
    assert wire.download_message("f1", "a5f3c2", "report.csv", 18234, "done") == (
        '{"type":"download","frame":"f1","id":"a5f3c2","name":"report.csv","size":18234,"state":"done"}'
    )
    assert json.loads(wire.download_message("f1", "a", "n", 3, "failed"))["state"] == "failed"
    with pytest.raises(ValueError, match="download state"):
        wire.download_message("f1", "a", "n", 3, "progress")
    assert wire.clipboard_message("f1", "copied text") == '{"type":"clipboard","frame":"f1","text":"copied text"}'
    # Non-ASCII is escaped, as in every server message.
    assert wire.clipboard_message("f1", "héllo") == '{"type":"clipboard","frame":"f1","text":"h\\u00e9llo"}'


@pytest.mark.parametrize(
    "code",
    ["page-limit", "url-not-allowed", "unknown-page", "unknown-dialog", "unknown-file-chooser", "dialog-open",
     "unresponsive", "printing", "navigation-failed"],
)
def test_new_error_codes(code: str) -> None:
    assert json.loads(wire.error_message(code, "m", "f1", 3)) == {
        "type": "error", "code": code, "message": "m", "frame": "f1", "seq": 3
    }


# --- client encoding and round trips -------------------------------------------------------------------------


def test_client_encoding_as_documented() -> None:
    assert encode_client_message(PageRequest("f1", "<drive token>", 15, "close", "p2")) == (
        '{"type":"page","frame":"f1","grant":"<drive token>","seq":15,"action":"close","page":"p2"}'
    )
    assert encode_client_message(Navigate("f1", "<drive token>", 18, action="back")) == (
        '{"type":"navigate","frame":"f1","grant":"<drive token>","seq":18,"action":"back"}'
    )
    assert encode_client_message(DialogAnswer("f1", "<drive token>", 19, "d3", True)) == (
        '{"type":"dialog-answer","frame":"f1","grant":"<drive token>","seq":19,"id":"d3","accept":true}'
    )
    assert event_to_dict(PasteEvent("hi")) == {"kind": "paste", "text": "hi"}
    assert navigate_body(1, url="http://a.test/") == {"seq": 1, "url": "http://a.test/"}
    assert navigate_body(2, action="forward") == {"seq": 2, "action": "forward"}
    with pytest.raises(ValueError, match="exactly one"):
        navigate_body(3)
    with pytest.raises(ValueError, match="exactly one"):
        navigate_body(3, url="http://a.test/", action="back")


texts = st.text(min_size=1, max_size=40)
ids = st.text(min_size=1, max_size=20)
seqs = st.integers(0, 2**53 - 1)
navigations = st.one_of(
    st.builds(lambda url: (url, None), st.text(min_size=1, max_size=200)),
    st.builds(lambda action: (None, action), st.sampled_from(wire.NAVIGATE_ACTIONS)),
)
coords = st.floats(min_value=0, max_value=5000, allow_nan=False)
tab_events = st.one_of(
    st.builds(PasteEvent, st.text(min_size=1, max_size=100)),
    st.builds(
        MouseEvent,
        st.sampled_from(["down", "up"]),
        coords,
        coords,
        st.sampled_from(["back", "forward"]),
        st.integers(0, 31),
        st.integers(0, 16),
        st.integers(0, 15),
    ),
)
tab_messages = st.one_of(
    st.builds(PageRequest, ids, texts, seqs, st.sampled_from(wire.PAGE_ACTIONS), ids),
    st.builds(lambda f, g, s, nav: Navigate(f, g, s, *nav), ids, texts, seqs, navigations),
    st.builds(DialogAnswer, ids, texts, seqs, ids, st.booleans(), st.none() | st.text(max_size=100)),
    st.builds(Input, ids, texts, seqs, st.lists(tab_events, min_size=1, max_size=5).map(tuple)),
)


@settings(database=None, deadline=None, max_examples=200)
@given(tab_messages)
def test_round_trip(message: wire.ClientMessage) -> None:
    assert parse_client_message(encode_client_message(message)) == message


@settings(database=None, deadline=None, max_examples=100)
@given(seqs, navigations, ids, texts)
def test_navigate_body_round_trip(seq: int, navigation: tuple[Any, Any], frame: str, grant: str) -> None:
    url, action = navigation
    body = json.loads(json.dumps(navigate_body(seq, url=url, action=action)))
    assert parse_navigate_body(body, frame=frame, grant=grant) == Navigate(frame, grant, seq, url, action)


# --- the contract's own examples ------------------------------------------------------------------------------

PROTOCOL_MD = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"


def json_examples() -> list[dict[str, Any]]:
    """Every one-line JSON object in the contract's ```json blocks, and every `{"type":...}` in its prose."""
    candidates, in_json = [], False
    for line in PROTOCOL_MD.read_text().splitlines():
        if line.startswith("```"):
            in_json = line == "```json"
        elif in_json:
            candidates.append(line)  # or one line of a longer example, which does not load
        else:
            candidates.extend(re.findall(r'`(\{"type":.*?\})`', line))
    examples = []
    for text in candidates:
        try:
            value = json.loads(text)
        except ValueError:
            continue
        if isinstance(value, dict):
            examples.append(value)
    return examples


SERVER_BUILDERS: dict[str, Any] = {
    "dialog": lambda m: wire.dialog_message(m["frame"], m["id"], m["page"], m["kind"], m["message"], m["default"]),
    "dialog-closed": lambda m: wire.dialog_closed(m["frame"], m["id"], m["reason"]),
    "file-chooser": lambda m: wire.file_chooser_message(m["frame"], m["id"], m["page"], m["multiple"], m["accept"]),
    "file-chooser-closed": lambda m: wire.file_chooser_closed(m["frame"], m["id"]),
    "download": lambda m: wire.download_message(m["frame"], m["id"], m["name"], m["size"], m["state"]),
    "clipboard": lambda m: wire.clipboard_message(m["frame"], m["text"]),
    "pong": lambda m: wire.pong(m.get("seq")),
}


CLIENT_TYPES = ("hello", "watch", "unwatch", "keyframe", "ping", "input", "page", "navigate", "dialog-answer")


def test_documented_client_examples_parse() -> None:
    seen: set[str] = set()
    for example in json_examples():
        if example.get("type") in CLIENT_TYPES:
            parse_client_message(json.dumps(example))
            seen.add(example["type"])
        elif "type" not in example and "kind" in example:  # an input event
            parse_client_message(driver("input", event=example))
            seen.add(example["kind"])
    assert {"page", "navigate", "dialog-answer", "paste", "mouse"} <= seen


def test_documented_server_examples_are_what_the_builders_write() -> None:
    seen: set[str] = set()
    for example in json_examples():
        build = SERVER_BUILDERS.get(example.get("type", ""))
        if build is not None:
            assert json.loads(build(example)) == example
            seen.add(example["type"])
    assert seen == set(SERVER_BUILDERS)
