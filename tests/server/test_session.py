"""The viewer session in-process: hello, watching, limits, step order and every text it sends, with fake frames.

No aiohttp, no browser, no clock: each message is given with the time it arrived, and the actions returned are
compared with what the glue (server/ws.py) must do, texts byte for byte.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from framestream.core.errors import ProtocolError, TokenError
from framestream.core.lifecycle import FrameState
from framestream.core.tokens import Claims
from framestream.core.wire import Hello, Unwatch, Watch
from framestream.frames.events import ControlChanged, PageCursor, StateChanged
from framestream.server.session import (
    Action,
    ApplyStep,
    BringUp,
    Close,
    RequestKeyframe,
    Send,
    StartWatching,
    StopWatching,
    ViewerSession,
)
from framestream.service.config import FrameSize, Settings

CODEC = "avc1.42C020"
GOOD = "good-token"


@dataclass
class FakeFeed:
    codec: str | None = CODEC


@dataclass(eq=False)
class FakeFrame:
    id: str
    state: FrameState = FrameState.LIVE
    size: FrameSize = field(default_factory=lambda: FrameSize(320, 200, 2))
    feed: FakeFeed = field(default_factory=FakeFeed)
    viewers: int = 0
    driver: str | None = None

    def state_event(self) -> StateChanged:
        return StateChanged(self.id, self.state, f"http://pages.test/{self.id}", self.viewers, self.driver, None)

    def control_event(self) -> ControlChanged:
        return ControlChanged(self.id, self.driver, None, "agent" if self.driver else None, 1_000_000, False)


def claims(role: str = "view", frm: str = "*", sub: str = "ann") -> Claims:
    return Claims(v=1, sbx="test", frm=frm, role=role, sub=sub, iat=0.0, exp=600.0, jti="j")


class Tokens:
    """verify(): GOOD gives `self.claims`; anything else is refused as a forged token would be."""

    def __init__(self, granted: Claims) -> None:
        self.claims = granted
        self.seen: list[str] = []

    def verify(self, token: str) -> Claims:
        self.seen.append(token)
        if token == "expired-token":
            raise TokenError("expired", "token expired 12 s ago")
        if token != GOOD:
            raise TokenError("unauthorized", "bad signature")
        return self.claims


def settings(**changes: Any) -> Settings:
    return Settings(**{"secret": b"s" * 32, "insecure_dev": False, "sandbox_id": "test", **changes})


Session = ViewerSession[FakeFrame]


def session(*frames: FakeFrame, granted: Claims | None = None, opened: float = 100.0, **limits: Any) -> Session:
    tokens = Tokens(granted or claims())
    by_id = {f.id: f for f in frames}
    return ViewerSession(settings(**limits), verify=tokens.verify, lookup=by_id.get, now=opened, number=7)


def welcomed(*frames: FakeFrame, granted: Claims | None = None, **limits: Any) -> Session:
    s = session(*frames, granted=granted, **limits)
    assert s.receive(hello(), 100.0) == [Send('{"type":"welcome","protocol":1,"sandbox":"test","shared_frames":true}')]
    return s


def message(kind: str, **fields: Any) -> str:
    return json.dumps({"type": kind, **fields})


def hello(token: str = GOOD) -> str:
    return message("hello", token=token)


def watch(frame_id: str) -> str:
    return message("watch", frame=frame_id)


def unwatch(frame_id: str) -> str:
    return message("unwatch", frame=frame_id)


def keyframe(frame_id: str) -> str:
    return message("keyframe", frame=frame_id)


def move(frame_id: str, seq: int, count: int = 1, grant: str = "drive-grant") -> str:
    events = [{"kind": "mouse", "action": "move", "x": 10, "y": 10}] * count
    return message("input", frame=frame_id, grant=grant, seq=seq, events=events)


def texts(actions: list[Action[FakeFrame]]) -> list[dict[str, Any]]:
    """The JSON of every Send, and nothing else may be in `actions`."""
    assert all(isinstance(a, Send) for a in actions), actions
    return [json.loads(a.text) for a in actions if isinstance(a, Send)]


def error(actions: list[Action[FakeFrame]]) -> dict[str, Any]:
    (only,) = texts(actions)
    assert only["type"] == "error", only
    return only


# -- hello --------------------------------------------------------------------------------------------------


def test_a_valid_hello_is_welcomed_and_keeps_the_claims() -> None:
    s = session()
    assert s.deadline == 105.0  # hello_timeout_s after it opened
    assert s.receive(hello(), 101.0) == [
        Send('{"type":"welcome","protocol":1,"sandbox":"test","shared_frames":true}')
    ]
    assert s.claims == claims() and not s.closed
    assert s.deadline == 605.0  # the token's exp (600) plus the 5 s of skew
    assert s.check_time(604.9) == []


def test_welcome_says_when_shared_frames_are_off() -> None:
    s = ViewerSession[FakeFrame](settings(shared_frames=False, sandbox_id="sb"), verify=Tokens(claims()).verify,
                                 lookup=lambda _: None, now=0.0)
    assert s.receive(hello(), 1.0) == [Send('{"type":"welcome","protocol":1,"sandbox":"sb","shared_frames":false}')]


@pytest.mark.parametrize(("first", "code", "reason"), [
    (hello("forged"), 4401, "bad signature"),
    (hello("expired-token"), 4401, "token expired 12 s ago"),
    (watch("f1"), 4401, "hello expected first"),
    ('{"type":"hello"}', 4401, "hello expected: hello: missing 'token'"),
    ("not json", 4401, "hello expected: message is not valid JSON"),
    ('{"type":"nope"}', 4401, "hello expected: unknown message type 'nope'; expected hello, watch, unwatch, "
                              "keyframe, input, page, navigate or dialog-answer"),
    (b'{"type":"hello","token":"good-token"}', 4401,
     "hello expected: binary messages are not accepted; send JSON text"),
])
def test_anything_but_a_good_hello_first_closes_with_4401(first: str | bytes, code: int, reason: str) -> None:
    s = session(FakeFrame("f1"))
    assert s.receive(first, 101.0) == [Close(code, reason)]
    assert s.closed and s.claims is None
    assert s.receive(hello(), 101.5) == []  # nothing after the close
    assert s.check_time(200.0) == []


def test_a_token_that_may_not_view_closes_with_4403() -> None:
    s = session(granted=claims(role="nobody"))
    assert s.receive(hello(), 101.0) == [Close(4403, "this token may not view frames")]
    assert s.closed


def test_a_good_hello_past_the_welcomed_connections_cap_closes_with_4429() -> None:
    asked: list[bool] = []

    def admit() -> bool:
        asked.append(True)
        return False

    s = ViewerSession[FakeFrame](settings(), verify=Tokens(claims()).verify, lookup=lambda _: None, now=0.0,
                                 admit=admit)
    assert s.receive(hello("forged"), 1.0) == [Close(4401, "bad signature")]
    assert asked == []  # a refused token is never counted
    s = ViewerSession[FakeFrame](settings(), verify=Tokens(claims()).verify, lookup=lambda _: None, now=0.0,
                                 admit=admit)
    assert s.receive(hello(), 1.0) == [Close(4429, "too many connections")]
    assert asked == [True] and s.closed and s.claims is None


# -- the token's lifetime ------------------------------------------------------------------------------------


def refreshing(granted: dict[str, Claims], wall_offset: float = 0.0) -> Session:
    """A welcomed session whose verify() knows several tokens by name (the hello's is GOOD)."""
    def verify(token: str) -> Claims:
        if token not in granted:
            raise TokenError("unauthorized", "bad signature")
        return granted[token]

    s = ViewerSession[FakeFrame](settings(), verify=verify, lookup=lambda _: None, now=100.0,
                                 wall_offset=wall_offset)
    assert texts(s.receive(hello(), 100.0))[0]["type"] == "welcome"
    return s


EXPIRED = "token expired: send refresh with a newer token before exp"


def test_a_connection_closes_with_4401_once_its_token_expired() -> None:
    # The wall clock is 1000 s ahead of the session's: exp 1200 (wall) is 205 on the session's clock, plus skew.
    s = refreshing({GOOD: Claims(1, "test", "*", "view", "ann", 1000.0, 1200.0, "j")}, wall_offset=1000.0)
    assert s.deadline == 205.0
    assert s.check_time(204.9) == []
    assert s.check_time(205.0) == [Close(4401, EXPIRED)]
    assert s.closed and s.deadline is None
    late = refreshing({GOOD: Claims(1, "test", "*", "view", "ann", 0.0, 200.0, "j")})
    assert late.receive(keyframe("f1"), 206.0) == [Close(4401, EXPIRED)]  # a message after exp: closed too


def test_a_refresh_moves_the_deadline_and_a_refused_one_does_not() -> None:
    now = Claims(1, "test", "*", "view", "ann", 0.0, 200.0, "j")
    later = Claims(1, "test", "*", "view", "ann", 100.0, 700.0, "k")
    s = refreshing({GOOD: now, "later": later,
                    "other-sub": Claims(1, "test", "*", "view", "bob", 100.0, 700.0, "k"),
                    "other-role": Claims(1, "test", "*", "drive", "ann", 100.0, 220.0, "k"),
                    "other-frame": Claims(1, "test", "f1", "view", "ann", 100.0, 700.0, "k"),
                    "older": Claims(1, "test", "*", "view", "ann", 0.0, 150.0, "k"),
                    "step": Claims(1, "test", "*", "drive", "ann", 100.0, 130.0, "k", step=True)})
    for i, (token, code, word) in enumerate([
            ("forged", "unauthorized", "bad signature"), ("other-sub", "forbidden", "subject"),
            ("other-role", "forbidden", "role"), ("other-frame", "forbidden", "frame"),
            ("older", "forbidden", "later"), ("step", "forbidden", "step grant")]):
        answer = error(s.receive(message("refresh", token=token), 140.0 + i))  # one a second, the refresh rate
        assert answer["code"] == code and word in answer["message"], (token, answer)
        assert s.deadline == 205.0 and s.claims == now
    assert s.receive(message("refresh", token="later"), 150.0) == []  # accepted: nothing to answer
    assert s.claims == later and s.deadline == 705.0
    assert s.check_time(300.0) == []


def test_a_step_grant_may_not_say_hello() -> None:
    step = Claims(1, "test", "f1", "drive", "agent", 0.0, 30.0, "j", step=True)
    s = session(granted=step)
    (close,) = s.receive(hello(), 101.0)
    assert isinstance(close, Close) and close.code == 4403 and "step grant" in close.reason
    assert s.closed and s.claims is None


def test_a_refused_token_is_never_in_the_close_reason() -> None:
    token = "x" * 40
    (close,) = session().receive(hello(token), 101.0)
    assert isinstance(close, Close) and token not in close.reason


def test_no_hello_by_the_deadline_closes_with_4408() -> None:
    s = session(opened=100.0, hello_timeout_s=2.5)
    assert s.deadline == 102.5
    assert s.check_time(102.4) == []  # not yet
    assert not s.closed
    assert s.check_time(102.5) == [Close(4408, "no hello in time")]
    assert s.closed and s.deadline is None


def test_a_hello_that_arrives_after_the_deadline_is_too_late() -> None:
    s = session(opened=100.0, hello_timeout_s=2.5)
    assert s.receive(hello(), 102.6) == [Close(4408, "no hello in time")]


def test_a_hello_just_before_the_deadline_is_in_time() -> None:
    s = session(opened=100.0, hello_timeout_s=2.5)
    assert texts(s.receive(hello(), 102.49))[0]["type"] == "welcome"


def test_hello_twice_is_answered_with_bad_message_and_the_connection_stays() -> None:
    s = welcomed()
    assert error(s.receive(hello(), 101.0)) == {"type": "error", "code": "bad-message",
                                               "message": "hello was already accepted"}
    assert not s.closed


def test_binary_after_welcome_closes_with_4400() -> None:
    s = welcomed(FakeFrame("f1"))
    assert s.receive(b"\x01\x02", 101.0) == [Close(4400, "binary messages are not part of the protocol")]
    assert s.closed
    assert s.receive(watch("f1"), 101.5) == []


# -- bad messages after welcome: one error each, the connection goes on ---------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    ("{", {"code": "bad-message", "message": "message is not valid JSON"}),
    ("[1]", {"code": "bad-message", "message": "message must be a JSON object"}),
    ('{"type":"watch"}', {"code": "bad-message", "message": "watch: missing 'frame'"}),
    ('{"type":"dance","frame":"f1"}', {"code": "bad-message", "message": "unknown message type 'dance'; "
                                       "expected hello, watch, unwatch, keyframe, input, page, navigate or "
                                       "dialog-answer"}),
    ('{"type":"input","frame":"f1","grant":"g","seq":4,"event":{"kind":"mouse","action":"fly","x":1,"y":1}}',
     {"code": "bad-input", "message": "event: 'action' must be one of move, down, up", "frame": "f1", "seq": 4}),
])
def test_a_bad_message_gets_one_error(text: str, expected: dict[str, Any]) -> None:
    s = welcomed(FakeFrame("f1"))
    assert error(s.receive(text, 101.0)) == {"type": "error", **expected}
    assert not s.closed


def test_a_message_over_the_size_limit_is_bad_message() -> None:
    s = welcomed(FakeFrame("f1"), max_message_bytes=1024)
    big = json.dumps({"type": "watch", "frame": "f1", "pad": "x" * 1100})
    assert error(s.receive(big, 101.0))["message"] == "message larger than 1024 bytes"


# -- ping: is the connection alive ----------------------------------------------------------------------------


def test_a_ping_is_answered_pong_at_once_with_its_seq_and_nothing_else() -> None:
    s = welcomed(FakeFrame("f1"))
    assert s.receive(message("ping", seq=3), 101.0) == [Send('{"type":"pong","seq":3}')]
    assert s.receive(message("ping"), 101.1) == [Send('{"type":"pong"}')]
    assert s.receive(message("ping", seq=2**53 - 1, extra="ignored"), 101.2) == [
        Send('{"type":"pong","seq":9007199254740991}')]
    assert not s.closed and not s.watching


@pytest.mark.parametrize("seq", [-1, 2**53, 1.5, "3", True, None])
def test_a_ping_with_a_bad_seq_gets_one_error_and_no_pong(seq: object) -> None:
    s = welcomed(FakeFrame("f1"))
    found = error(s.receive(json.dumps({"type": "ping", "seq": seq}), 101.0))
    assert found["code"] == "bad-message" and "ping: 'seq'" in found["message"], found
    assert not s.closed


def test_a_ping_before_hello_is_refused_as_any_other_message() -> None:
    s = session(FakeFrame("f1"))
    assert s.receive(message("ping", seq=1), 100.5) == [Close(4401, "hello expected first")]
    assert s.closed


def test_pings_count_against_the_message_rate() -> None:
    s = welcomed(FakeFrame("f1"), message_rate_per_s=2.0)
    answers = [texts(s.receive(message("ping", seq=i), 101.0)) for i in range(6)]
    assert answers[:5] == [[{"type": "pong", "seq": i}] for i in range(5)]  # the burst: 2.5 times the rate
    assert answers[5] == [{"type": "error", "code": "rate-limited",
                           "message": "at most 2 messages a second per connection"}]


# -- watching -----------------------------------------------------------------------------------------------


def test_watching_a_live_frame_sends_its_config_then_its_state_then_watches_and_brings_it_up() -> None:
    frame = FakeFrame("f1", viewers=2, driver="bob")
    s = welcomed(frame)
    assert s.receive(watch("f1"), 101.0) == [
        Send('{"type":"video-config","frame":"f1","slot":1,"codec":"avc1.42C020","width":640,"height":400,'
             '"css_width":320,"css_height":200}'),
        Send('{"type":"frame-state","frame":"f1","state":"live","url":"http://pages.test/f1","viewers":2,'
             '"driver":"bob"}', key="frame-state:f1"),  # only the newest state of a frame waits in the queue
        StartWatching(frame, 1, configured=True),
        BringUp(frame),
    ]
    assert s.watching == {"f1": 1}


@pytest.mark.parametrize("frame", [
    FakeFrame("f1", state=FrameState.PAUSED),
    FakeFrame("f1", state=FrameState.CLOSED),
    FakeFrame("f1", state=FrameState.LAUNCHING),
    FakeFrame("f1", feed=FakeFeed(codec=None)),  # live, but no picture encoded yet
])
def test_a_frame_not_live_or_without_a_codec_is_configured_by_its_first_keyframe(frame: FakeFrame) -> None:
    s = welcomed(frame)
    actions = s.receive(watch("f1"), 101.0)
    assert [type(a) for a in actions] == [Send, StartWatching, BringUp]
    assert texts(actions[:1])[0]["type"] == "frame-state"
    assert actions[1] == StartWatching(frame, 1, configured=False)


def test_watching_a_frame_again_asks_for_a_keyframe_and_nothing_else() -> None:
    frame = FakeFrame("f1")
    s = welcomed(frame)
    s.receive(watch("f1"), 101.0)
    assert s.receive(watch("f1"), 101.1) == [RequestKeyframe(frame)]
    assert s.watching == {"f1": 1}


def test_watching_without_video_sends_the_state_only_and_neither_configures_nor_brings_the_frame_up() -> None:
    frame = FakeFrame("f1", state=FrameState.PAUSED)
    s = welcomed(frame)
    actions = s.receive(message("watch", frame="f1", video=False), 101.0)
    assert [type(a) for a in actions] == [Send, StartWatching]
    assert texts(actions[:1])[0]["type"] == "frame-state"
    assert actions[1] == StartWatching(frame, 1, configured=False, video=False)
    assert s.watching == {"f1": 1} and s.without_video == {"f1"}
    assert s.receive(message("watch", frame="f1", video=False), 101.1) == []  # watched so already
    assert s.receive(keyframe("f1"), 101.2) == []  # no pictures: no keyframe made for it


def test_turning_video_on_and_off_watches_the_frame_anew_under_a_new_slot() -> None:
    frame = FakeFrame("f1")
    s = welcomed(frame)
    s.receive(message("watch", frame="f1", video=False), 101.0)
    on = s.receive(watch("f1"), 102.0)  # the page shows again: pictures from a keyframe, the frame brought up
    assert [type(a) for a in on] == [StopWatching, Send, Send, StartWatching, BringUp]
    assert [t["type"] for t in texts(on[1:3])] == ["video-config", "frame-state"]
    assert texts(on[1:2])[0]["slot"] == 2
    assert on[3] == StartWatching(frame, 2, configured=True)
    assert s.without_video == set()
    off = s.receive(message("watch", frame="f1", video=False), 103.0)
    assert off[0] == StopWatching(frame) and off[-1] == StartWatching(frame, 3, configured=False, video=False)
    assert [type(a) for a in off] == [StopWatching, Send, StartWatching]
    assert s.watching == {"f1": 3} and s.without_video == {"f1"}
    assert s.receive(unwatch("f1"), 104.0) == [StopWatching(frame)]
    assert s.watching == {} and s.without_video == set()


@pytest.mark.parametrize("video", [0, 1, "false", None, [], {}])
def test_a_watch_whose_video_is_not_true_or_false_is_a_bad_message_and_changes_nothing(video: Any) -> None:
    s = welcomed(FakeFrame("f1"))
    assert error(s.receive(message("watch", frame="f1", video=video), 101.0)) == {
        "type": "error", "code": "bad-message", "message": "watch: 'video' must be true or false", "frame": "f1"}
    assert s.watching == {}


def test_watching_an_unknown_frame_is_unknown_frame() -> None:
    s = welcomed(FakeFrame("f1"))
    assert error(s.receive(watch("nope"), 101.0)) == {"type": "error", "code": "unknown-frame",
                                                     "message": "no frame 'nope'", "frame": "nope"}
    assert s.watching == {}


def test_watching_a_frame_the_token_does_not_cover_is_forbidden() -> None:
    s = welcomed(FakeFrame("f1"), FakeFrame("f2"), granted=claims(frm="f1"))
    assert error(s.receive(watch("f2"), 101.0)) == {"type": "error", "code": "forbidden",
                                                   "message": "this token may not view this frame", "frame": "f2"}
    assert [type(a) for a in s.receive(watch("f1"), 101.1)][-1] is BringUp


def test_a_connection_watches_at_most_its_limit_and_an_unwatch_frees_a_place() -> None:
    frames = [FakeFrame(f"f{i}") for i in range(4)]
    s = welcomed(*frames, max_watch_per_connection=3)
    for f in frames[:3]:
        assert BringUp(f) in s.receive(watch(f.id), 101.0)
    assert error(s.receive(watch("f3"), 101.0)) == {"type": "error", "code": "capacity",
                                                   "message": "a connection may watch at most 3 frames",
                                                   "frame": "f3"}
    assert s.receive(unwatch("f0"), 101.0) == [StopWatching(frames[0])]
    assert StartWatching(frames[3], 4, configured=True) in s.receive(watch("f3"), 101.0)


def test_slots_count_up_are_not_reused_by_rewatching_and_wrap_after_65535() -> None:
    a, b = FakeFrame("a"), FakeFrame("b", state=FrameState.PAUSED)
    s = welcomed(a, b, granted=Claims(1, "test", "*", "view", "ann", 0.0, 1e9, "j"))
    assert StartWatching(a, 1, configured=True) in s.receive(watch("a"), 101.0)
    slots = []
    for i in range(65535):  # parsed messages: the loop tests slots, not JSON; at the watch rate (10 a second)
        now = 102.0 + i * 0.2
        started = [x for x in s.receive_message(Watch("b"), now) if isinstance(x, StartWatching)]
        slots.append(started[0].slot)
        assert s.receive_message(Unwatch("b"), now) == [StopWatching(b)]
    assert slots[:3] == [2, 3, 4]
    assert slots[-2:] == [65535, 1]  # 16 bits, 0 never handed out
    assert s.watching == {"a": 1}


def test_parsed_messages_go_the_same_way_as_text() -> None:
    frame = FakeFrame("f1")
    assert session(frame).receive_message(Watch("f1"), 101.0) == [Close(4401, "hello expected first")]
    as_text, parsed = welcomed(frame), welcomed(frame)
    assert parsed.receive_message(Watch("f1"), 101.0) == as_text.receive(watch("f1"), 101.0)
    assert parsed.receive_message(Watch("f1"), 101.0) == [RequestKeyframe(frame)]
    assert error(parsed.receive_message(Hello(GOOD), 101.0))["message"] == "hello was already accepted"


def test_unwatching_a_frame_not_watched_or_unknown_says_nothing() -> None:
    s = welcomed(FakeFrame("f1"))
    assert s.receive(unwatch("f1"), 101.0) == []
    assert s.receive(unwatch("nope"), 101.0) == []


def test_a_keyframe_request_is_passed_on_for_a_frame_the_token_may_view() -> None:
    frame = FakeFrame("f1")
    s = welcomed(frame, FakeFrame("f2"), granted=claims(frm="f1"))
    assert s.receive(keyframe("f1"), 101.0) == [RequestKeyframe(frame)]
    assert error(s.receive(keyframe("f2"), 101.0))["code"] == "forbidden"
    assert error(s.receive(keyframe("f9"), 101.0))["code"] == "unknown-frame"


def test_a_frame_that_cannot_be_brought_up_for_capacity_is_unwatched_with_an_error() -> None:
    frame = FakeFrame("f1", state=FrameState.CLOSED)
    s = welcomed(frame)
    s.receive(watch("f1"), 101.0)
    failed = ProtocolError("capacity", "all 6 browsers are in use by viewers; close a frame or wait")
    assert s.bring_up_failed(frame, failed) == [
        StopWatching(frame),
        Send('{"type":"error","code":"capacity","message":"all 6 browsers are in use by viewers; close a frame or '
             'wait","frame":"f1"}'),
    ]
    assert s.watching == {}


def test_a_frame_deleted_while_coming_up_is_unknown_frame() -> None:
    frame = FakeFrame("f1", state=FrameState.CLOSED)
    s = welcomed(frame)
    s.receive(watch("f1"), 101.0)
    gone = ProtocolError("unknown-frame", "frame f1 was deleted")
    assert s.bring_up_failed(frame, gone) == [
        Send('{"type":"error","code":"unknown-frame","message":"frame f1 was deleted","frame":"f1"}')
    ]


def test_losing_the_connection_stops_every_watch() -> None:
    a, b = FakeFrame("a"), FakeFrame("b")
    s = welcomed(a, b)
    s.receive(watch("a"), 101.0)
    s.receive(watch("b"), 101.0)
    assert s.connection_lost() == [StopWatching(a), StopWatching(b)]
    assert s.closed and s.watching == {}
    assert s.receive(watch("a"), 102.0) == []


# -- what frames emit ---------------------------------------------------------------------------------------


def test_frame_events_become_this_connections_messages() -> None:
    s = welcomed()
    changed = StateChanged("f1", FrameState.LAUNCHING, "http://pages.test/", 3, None, "the page crashed; reloading")
    assert s.event_text(changed) == ('{"type":"frame-state","frame":"f1","state":"launching",'
                                     '"url":"http://pages.test/","viewers":3,"driver":null,'
                                     '"message":"the page crashed; reloading"}')
    ours = ControlChanged("f1", "ann", presenter=s.presenter, kind="person", since_us=5, held=True)
    assert s.event_text(ours) == ('{"type":"control","frame":"f1","driver":"ann","you":true,"kind":"person",'
                                  '"since_us":5,"held":true}')
    handed_back = ControlChanged("f1", None, presenter=s.presenter, since_us=6, note="done, over to you")
    assert s.event_text(handed_back) == ('{"type":"control","frame":"f1","driver":null,"you":false,"kind":null,'
                                         '"since_us":6,"held":false,"note":"done, over to you"}')
    assert json.loads(s.event_text(ControlChanged("f1", "bob", presenter=s.presenter + 1)))["you"] is False
    assert json.loads(s.event_text(ControlChanged("f1", "bob", presenter=None)))["you"] is False  # over HTTP


def test_the_pages_cursor_is_told_only_to_connections_that_may_drive_the_frame() -> None:
    driver, viewer = welcomed(granted=claims("drive")), welcomed(granted=claims("view"))
    assert driver.event_text(PageCursor("f1", "pointer")) == '{"type":"cursor","frame":"f1","cursor":"pointer"}'
    assert viewer.event_text(PageCursor("f1", "pointer")) is None
    other = welcomed(granted=claims("drive", frm="f2"))  # a drive grant for another frame
    assert other.event_text(PageCursor("f1", "pointer")) is None


# -- input ----------------------------------------------------------------------------------------------------


def test_steps_are_given_out_one_at_a_time_and_answered_in_order() -> None:
    frame = FakeFrame("f1", driver="carl")
    s = welcomed(frame)
    (first,) = s.receive(move("f1", 1), 101.0)
    assert isinstance(first, ApplyStep) and first.frame is frame and first.message.seq == 1
    assert s.receive(move("f1", 2), 101.0) == []  # waits for the first
    assert s.receive(move("f1", 3), 101.0) == []
    done = s.step_done(None)
    assert done[0] == Send('{"type":"input-ack","frame":"f1","seq":1}')
    assert isinstance(done[1], ApplyStep) and done[1].message.seq == 2 and len(done) == 2
    superseded = ProtocolError("superseded", "a newer drive grant holds this frame (driver: carl)", seq=2)
    done = s.step_done(superseded)
    assert done[:2] == [
        Send('{"type":"error","code":"superseded","message":"a newer drive grant holds this frame (driver: carl)",'
             '"frame":"f1","seq":2}'),
        # not watching f1: the holder hears who drives from this
        Send('{"type":"control","frame":"f1","driver":"carl","you":false,"kind":"agent","since_us":1000000,'
             '"held":false}'),
    ]
    assert isinstance(done[2], ApplyStep) and done[2].message.seq == 3 and len(done) == 3
    assert s.step_done(None) == [Send('{"type":"input-ack","frame":"f1","seq":3}')]
    assert s.step_done(None) == []  # nothing was given out
    assert isinstance(s.receive(move("f1", 4), 101.0)[0], ApplyStep)  # idle again: given out at once


def test_a_superseded_watcher_gets_only_the_error() -> None:
    s = welcomed(FakeFrame("f1", driver="carl"))
    s.receive(watch("f1"), 101.0)
    s.receive(move("f1", 5), 101.0)
    done = s.step_done(ProtocolError("superseded", "newer grant"))
    assert texts(done) == [{"type": "error", "code": "superseded", "message": "newer grant", "frame": "f1",
                            "seq": 5}]


@pytest.mark.parametrize("code", ["unauthorized", "expired", "forbidden", "replayed", "bad-input", "capacity",
                                  "unknown-frame", "internal"])
def test_a_refused_step_is_answered_with_its_code_frame_and_seq(code: str) -> None:
    s = welcomed(FakeFrame("f1"))
    s.receive(move("f1", 9), 101.0)
    assert error(s.step_done(ProtocolError(code, "why"))) == {"type": "error", "code": code, "message": "why",
                                                               "frame": "f1", "seq": 9}


def test_input_to_an_unknown_or_forbidden_frame_is_refused_before_it_is_queued() -> None:
    s = welcomed(FakeFrame("f1"), FakeFrame("f2"), granted=claims(role="drive", frm="f1"))
    assert error(s.receive(move("nope", 1), 101.0)) == {"type": "error", "code": "unknown-frame",
                                                        "message": "no frame 'nope'", "frame": "nope"}
    assert error(s.receive(move("f2", 2), 101.0)) == {"type": "error", "code": "forbidden",
                                                      "message": "this token may not view this frame", "frame": "f2"}
    assert isinstance(s.receive(move("f1", 3), 101.0)[0], ApplyStep)


def test_input_is_limited_by_events_per_second_from_the_time_given() -> None:
    s = welcomed(FakeFrame("f1"), input_rate_per_s=10.0)
    assert isinstance(s.receive(move("f1", 1, count=10), 200.0)[0], ApplyStep)  # the whole burst
    assert error(s.receive(move("f1", 2), 200.0)) == {
        "type": "error", "code": "rate-limited", "message": "at most 10 input events a second per connection",
        "frame": "f1", "seq": 2,
    }
    assert s.receive(move("f1", 3, count=2), 200.25) == []  # 2.5 events back a quarter second later (queued)
    assert error(s.receive(move("f1", 4), 200.25))["code"] == "rate-limited"  # half an event left
    assert s.receive(move("f1", 5, count=10), 202.0) == []  # a full bucket after a quiet second
    acks = [s.step_done(None)[0] for _ in range(3)]
    assert [json.loads(a.text)["seq"] for a in acks if isinstance(a, Send)] == [1, 3, 5]


def test_every_message_type_is_rate_limited_and_a_flood_is_closed_with_4429() -> None:
    s = welcomed(FakeFrame("f1"), message_rate_per_s=20.0)
    # watch, unwatch and webrtc-offer share 10 a second (bursts of 40); keyframe 10 (20); refresh 1 (4).
    answers = [s.receive(watch("nope") if i % 2 else unwatch("nope"), 200.0) for i in range(40)]
    assert all(error(a)["code"] == "unknown-frame" for a in answers[1::2]) and answers[0::2] == [[]] * 20
    limited = error(s.receive(watch("f1"), 200.0))
    assert limited == {"type": "error", "code": "rate-limited", "frame": "f1",
                       "message": "at most 10 watch messages a second per connection"}
    assert BringUp(FakeFrame("f1")) not in s.receive(watch("f1"), 200.0)  # refused: nothing done
    assert any(isinstance(a, BringUp) for a in s.receive(watch("f1"), 200.5))  # back half a second later
    # Every message, even one that cannot be read, takes from one bucket (20 a second, bursts of 50).
    s = welcomed(FakeFrame("f1"), message_rate_per_s=20.0)
    answers = [error(s.receive("not json", 300.0))["code"] for _ in range(51)]
    assert answers[:50] == ["bad-message"] * 50 and answers[50] == "rate-limited"
    # Refusals come at most 10 a second (bursts of 100): a client that keeps flooding is closed.
    closes = [a for _ in range(200) for a in s.receive(keyframe("f1"), 300.0) if isinstance(a, Close)]
    assert closes == [Close(4429, "messages too fast")] and s.closed
    assert s.receive(keyframe("f1"), 300.0) == []


def test_steps_not_yet_applied_are_dropped_when_the_connection_is_lost() -> None:
    s = welcomed(FakeFrame("f1"))
    s.receive(move("f1", 1), 101.0)
    s.receive(move("f1", 2), 101.0)
    assert s.connection_lost() == []
    assert s.step_done(None) == []
