"""Malformed messages against the running service, judged by the contract (docs/protocol.md), not by the
server's own parser.

Every message is broken on purpose, in a way the contract names, so what must happen is known without the
server's code: one `error` per message, `bad-message` when the message itself is wrong (not JSON, not an object,
NaN, over 64 KiB, an unknown type, a missing or mistyped field) and `bad-input` when an input's events break
the rules, carrying the input's `seq` (and `frame`) when those were valid. Nothing else is answered, nothing is
applied, the connection stays open and keeps streaming. Unknown extra fields are sprinkled in as noise: the
contract says they are ignored, so they must not change the answer.
"""

from __future__ import annotations

import collections
import itertools
import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.fixtures import service_fixture
from tests.support import Service, StreamClient

pytestmark = pytest.mark.integration

SEED = 20261130
W, H = 320, 200  # the frame's CSS size: the bounds of input coordinates
MAX_MESSAGE = 65536  # bytes of UTF-8; over it (and under the WebSocket layer's 256 KiB) is `bad-message`

service = service_fixture("box.html@320x200", env={"FRAMESTREAM_INPUT_RATE": "100000"})

NOT_A_STRING: list[Any] = [None, 1, 1.5, True, [], {}, [1, {"a": []}]]
NOT_AN_INTEGER: list[Any] = [None, "7", 1.5, True, [], {}]
NOT_A_NUMBER: list[Any] = [None, "10", True, [], {"x": 1}]
NOISE: list[Any] = [None, True, -1, 2**70, 1e308, "", "x" * 300, [], {}, [1, {"a": []}], "日本", -0.0]


@dataclass(frozen=True)
class Case:
    text: str
    code: str  # the error the contract requires
    why: str
    seq: int | None = None  # an input's valid seq, which its error must carry back
    frame: str | None = None  # and its valid frame


def broken_messages(frame_id: str, grant: str, rng: random.Random, count: int = 450) -> Iterator[Case]:
    seqs = itertools.count(1000)

    def valid_events() -> list[dict[str, Any]]:
        return rng.choice([
            [{"kind": "mouse", "action": "move", "x": 10, "y": 10}],
            [{"kind": "key", "action": "down", "key": "a", "code": "KeyA"},
             {"kind": "key", "action": "up", "key": "a", "code": "KeyA"}],
            [{"kind": "wheel", "x": W, "y": H, "dx": 0, "dy": 10}],
            [{"kind": "text", "text": "héllo"}],
            [{"kind": "paste", "text": "pasted"}],
            [{"kind": "touch", "action": "start", "points": [{"id": 0, "x": 5, "y": 5}]},
             {"kind": "touch", "action": "end"}],
        ])

    def an_input(events: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        events = events or valid_events()
        msg: dict[str, Any] = {"type": "input", "frame": frame_id, "grant": grant, "seq": next(seqs)}
        if len(events) == 1 and rng.random() < 0.5:
            msg["event"] = events[0]
        else:
            msg["events"] = events
        return msg

    def a_driver_message() -> dict[str, Any]:
        """A page, navigate or dialog-answer message: the same envelope as input, fields of its own."""
        own: dict[str, Any] = rng.choice([{"type": "page", "action": "reload", "page": "p1"},
                          {"type": "navigate", "action": "reload"},
                          {"type": "dialog-answer", "id": "d1", "accept": True}])
        return {**own, "frame": frame_id, "grant": grant, "seq": next(seqs)}

    def a_valid_message() -> dict[str, Any]:
        return rng.choice([{"type": "watch", "frame": frame_id}, {"type": "keyframe", "frame": frame_id},
                           an_input(), a_driver_message()])

    def with_noise(msg: dict[str, Any]) -> dict[str, Any]:
        for i in range(rng.randint(0, 2)):
            msg[f"x_unknown_{i}"] = rng.choice(NOISE)
        return msg

    def case(msg: dict[str, Any], code: str, why: str, *, input_ids: bool = False) -> Case:
        text = json.dumps(with_noise(msg))
        return Case(text, code, why, msg["seq"] if input_ids else None, msg["frame"] if input_ids else None)

    # -- the message itself is wrong: bad-message -----------------------------------------------------------

    def cut_short() -> Case:
        text = json.dumps(a_valid_message())
        return Case(text[: rng.randrange(len(text))], "bad-message", "not JSON (cut short)")

    def random_text() -> Case:
        while True:
            text = "".join(chr(rng.randint(1, 0x2FFF)) for _ in range(rng.randint(0, 200)))
            try:
                if isinstance(json.loads(text), dict):
                    continue  # an object would need judging; (practically) never happens
            except ValueError:
                pass
            return Case(text, "bad-message", "not JSON, or JSON but not an object")

    def not_an_object() -> Case:
        value = rng.choice([[], [a_valid_message()], 3, "watch", None, True])
        return Case(json.dumps(value), "bad-message", "not an object")

    def non_standard_number() -> Case:
        msg = a_valid_message()
        msg["x_unknown"] = float(rng.choice(["nan", "inf", "-inf"]))
        return Case(json.dumps(msg, allow_nan=True), "bad-message", "NaN/Infinity are not JSON")

    def too_big() -> Case:
        msg = {"type": "watch", "frame": frame_id, "x_pad": "a" * (MAX_MESSAGE + rng.randint(0, 4096))}
        return Case(json.dumps(msg), "bad-message", "over 64 KiB")

    def unknown_type() -> Case:
        msg = a_valid_message()
        if rng.random() < 0.2:
            del msg["type"]
        else:
            msg["type"] = rng.choice(["dance", "", "WATCH", "watch ", "x" * 300, None, 1, [], {}])
        return case(msg, "bad-message", "unknown type")

    def frame_field() -> Case:
        msg = {"type": rng.choice(["watch", "unwatch", "keyframe"]), "frame": rng.choice(NOT_A_STRING)}
        if rng.random() < 0.3:
            del msg["frame"]
        return case(msg, "bad-message", f"{msg['type']} without a string frame")

    def envelope_field() -> Case:
        msg = an_input() if rng.random() < 0.5 else a_driver_message()
        field = rng.choice(["frame", "grant", "seq"])
        if rng.random() < 0.3:
            del msg[field]
        else:
            msg[field] = rng.choice(NOT_AN_INTEGER if field == "seq" else NOT_A_STRING)
        if field == "seq":
            return case(msg, "bad-message", f"{msg['type']} without an integer seq")
        # The seq was valid: the error carries it (the frame only when that was valid too).
        text = json.dumps(with_noise(msg))
        return Case(text, "bad-message", f"{msg['type']} without a string {field}", msg["seq"],
                    frame_id if field != "frame" else None)

    # -- the input's events break the rules: bad-input ------------------------------------------------------

    def events_shape() -> Case:
        msg = an_input()
        events = [msg.pop("event")] if "event" in msg else msg.pop("events")
        how = rng.choice(["both", "none", "empty", "too many"])
        if how == "both":
            msg["event"], msg["events"] = events[0], events
        elif how == "empty":
            msg["events"] = []
        elif how == "too many":
            msg["events"] = [{"kind": "mouse", "action": "move", "x": 1, "y": 1}] * 257
        return case(msg, "bad-input", f"events: {how}", input_ids=True)

    def bad_event() -> Case:
        move = {"kind": "mouse", "action": "move", "x": 10, "y": 10}
        broken: list[tuple[str, dict[str, Any]]] = [
            ("unknown kind", {**move, "kind": rng.choice(["dance", "Mouse", "", "keyboard"])}),
            ("unknown mouse action", {**move, "action": rng.choice(["click", "", "DOWN"])}),
            ("unknown button", {**move, "action": "down", "button": rng.choice(["side", "LEFT", "", "wheel"])}),
            ("non-numeric x", {**move, "x": rng.choice(NOT_A_NUMBER)}),
            ("non-numeric y", {**move, "y": rng.choice(NOT_A_NUMBER)}),
            ("x outside the frame", {**move, "x": rng.choice([-1, -0.5, W + 0.5, W + 1, 1e308])}),
            ("y outside the frame", {**move, "y": rng.choice([-1, H + 0.5, H + 100, -1e308])}),
            ("modifiers outside 0..15", {**move, "modifiers": rng.choice([16, -1, 255])}),
            ("unknown key action", {"kind": "key", "action": rng.choice(["press", ""]), "key": "a"}),
            ("empty text", {"kind": "text", "text": ""}),
            ("text over 10000 characters", {"kind": "text", "text": "x" * 10001}),
            ("empty paste", {"kind": "paste", "text": ""}),
            ("wheel outside the frame", {"kind": "wheel", "x": W + 1, "y": 0, "dx": 0, "dy": 1}),
            ("more than 10 touch points",
             {"kind": "touch", "action": "start", "points": [{"id": i, "x": i, "y": i} for i in range(11)]}),
        ]
        why, event = rng.choice(broken)
        events = valid_events()
        events.insert(rng.randint(0, len(events)), event)  # one bad event refuses the whole message
        return case(an_input(events), "bad-input", why, input_ids=True)

    def bad_driver_fields() -> Case:
        msg = a_driver_message()
        options: dict[str, list[tuple[str, dict[str, Any]]]] = {
            "page": [("unknown page action", {"action": rng.choice(["open", "", "RELOAD"])}),
                     ("page without a page", {"page": rng.choice(["", None])})],
            "navigate": [("navigate with url and action", {"url": "http://127.0.0.1/"}),
                         ("navigate with neither url nor action", {"action": None}),
                         ("unknown navigate action", {"action": rng.choice(["up", "home", ""])})],
            "dialog-answer": [("accept not a boolean", {"accept": rng.choice(["yes", 1, None])}),
                              ("dialog-answer without an id", {"id": rng.choice(["", None])})],
        }
        why, fields = rng.choice(options[msg["type"]])
        msg.update(fields)
        for name in [k for k, v in fields.items() if v is None]:
            del msg[name]  # None stands for "missing"
        return case(msg, "bad-input", why, input_ids=True)

    makers: list[Callable[[], Case]] = [cut_short, random_text, not_an_object, non_standard_number, too_big,
                                        unknown_type, frame_field, envelope_field, events_shape, bad_event,
                                        bad_driver_fields]
    for _ in range(count):
        yield rng.choice(makers)()


def check_answers(cases: list[Case], errors: list[dict[str, Any]]) -> None:
    """One error per case with the contract's code; an input's error carries its seq and frame. Errors about
    inputs may overtake others (steps are applied in a task), so those are matched by seq, the rest by code."""
    assert len(errors) == len(cases)
    for error in errors:
        assert error["message"], error
    by_seq = {c.seq: c for c in cases if c.seq is not None}
    rest = collections.Counter(c.code for c in cases if c.seq is None)
    for error in errors:
        expected = by_seq.pop(error["seq"], None) if "seq" in error else None
        if expected is None:
            rest[error["code"]] -= 1
            continue
        assert error["code"] == expected.code, (expected.why, expected.text[:200], error)
        if expected.frame is not None:
            assert error.get("frame") == expected.frame, (expected.why, error)
    assert not by_seq, f"inputs answered without their seq: {[(c.why, c.seq) for c in by_seq.values()][:5]}"
    assert not +rest and not -rest, f"codes answered other than the contract says: {dict(rest)}"


async def test_every_malformed_message_gets_the_contracts_error_and_nothing_else_happens(service: Service) -> None:
    (frame_id,) = service.frame_ids()
    client = await StreamClient.connect(service)
    config = await client.watch(frame_id)
    assert (config["css_width"], config["css_height"]) == (W, H)
    await client.latest_picture(timeout=20)
    before = service.get(f"/frames/{frame_id}")[1]
    cases = list(broken_messages(frame_id, service.token("drive"), random.Random(SEED)))
    assert {c.code for c in cases} == {"bad-message", "bad-input"} and len({c.why for c in cases}) >= 25
    answered_from = len(client.texts)
    for c in cases:
        await client.ws.send(c.text)
    errors: list[dict[str, Any]] = []
    while len(errors) < len(cases):
        msg = await client.next_text(timeout=20)
        assert msg["type"] == "error", f"a malformed message may only be answered with an error; got {msg}"
        errors.append(msg)
    check_answers(cases, errors)
    # Nothing else changed: the frame is as it was (nobody drives it), the service is healthy, and the same
    # connection still streams the page, with no other answer in between.
    after = service.get(f"/frames/{frame_id}")[1]
    assert {k: after[k] for k in ("state", "url", "driver", "viewers")} == \
        {k: before[k] for k in ("state", "url", "driver", "viewers")} and after["driver"] is None
    assert service.get("/healthz", token=None) == (200, {"ok": True})
    await client.wait_for_colour(frame_id, (100, 200), (200, 40, 40), timeout=20)
    assert [m["type"] for m in client.texts[answered_from:]] == ["error"] * len(cases)
