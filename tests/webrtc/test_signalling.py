"""WebRTC signalling in the sans-I/O session: an offer watches the frame over its own peer connection, with the
view rules of `watch`; candidates only after an offer; a refused or closed peer unwatches and says why."""

from __future__ import annotations

import json

from framestream.core.errors import ProtocolError
from framestream.core.wire import (
    IceCandidate,
    WebrtcIce,
    WebrtcOffer,
    parse_client_message,
    webrtc_answer,
    webrtc_closed,
)
from framestream.server.session import AddIceCandidate, BringUp, Send, StartWatching, StopWatching
from tests.core.test_wire_tabs import json_examples
from tests.server.test_session import FakeFrame, claims, error, message, texts, watch, welcomed

OFFER = "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\n"


def offer(frame_id: str, sdp: str = OFFER) -> str:
    return message("webrtc-offer", frame=frame_id, sdp=sdp)


def ice(frame_id: str, candidate: object) -> str:
    return message("webrtc-ice", frame=frame_id, candidate=candidate)


def test_an_offer_watches_the_frame_over_a_peer_connection() -> None:
    f1 = FakeFrame("f1")
    s = welcomed(f1)
    actions = s.receive(offer("f1"), 101.0)
    assert [type(a) for a in actions] == [Send, Send, StartWatching, BringUp]
    start = actions[2]
    assert isinstance(start, StartWatching) and start.offer == OFFER and start.slot == 1
    assert [t["type"] for t in texts(actions[:2])] == ["video-config", "frame-state"]
    assert s.watching == {"f1": 1} and s.webrtc == {"f1"}


def test_an_offer_replaces_a_websocket_watch_and_unwatch_ends_it() -> None:
    f1 = FakeFrame("f1")
    s = welcomed(f1)
    s.receive(watch("f1"), 101.0)
    actions = s.receive(offer("f1"), 102.0)
    assert isinstance(actions[0], StopWatching)
    assert any(isinstance(a, StartWatching) and a.offer == OFFER and a.slot == 2 for a in actions)
    assert s.receive(message("unwatch", frame="f1"), 103.0) == [StopWatching(f1)]
    assert s.webrtc == set() and s.watching == {}


def test_candidates_go_to_the_frames_peer_and_only_after_an_offer() -> None:
    f1 = FakeFrame("f1")
    s = welcomed(f1)
    line = {"candidate": "candidate:1 1 udp 2130706431 127.0.0.1 5000 typ host", "sdpMid": "0", "sdpMLineIndex": 0}
    assert error(s.receive(ice("f1", line), 101.0)) == {
        "type": "error", "code": "bad-message", "frame": "f1",
        "message": "webrtc-ice before a webrtc-offer for this frame"}
    s.receive(offer("f1"), 102.0)
    assert s.receive(ice("f1", line), 103.0) == [AddIceCandidate(f1, IceCandidate(str(line["candidate"]), "0", 0))]
    end = {"candidate": "", "sdpMid": None, "sdpMLineIndex": None}
    assert s.receive(ice("f1", end), 104.0) == [AddIceCandidate(f1, IceCandidate("", None, None))]


def test_the_view_rules_of_watch_apply() -> None:
    f1, f2 = FakeFrame("f1"), FakeFrame("f2")
    s = welcomed(f1, f2, granted=claims("view", frm="f1"))
    assert error(s.receive(offer("f2"), 101.0))["code"] == "forbidden"
    assert error(s.receive(offer("nope"), 101.0))["code"] == "unknown-frame"
    capped = welcomed(f1, f2, max_watch_per_connection=1)
    capped.receive(offer("f1"), 101.0)
    assert error(capped.receive(offer("f2"), 102.0))["code"] == "capacity"


def test_malformed_signalling_is_a_bad_message() -> None:
    s = welcomed(FakeFrame("f1"))
    for text in (message("webrtc-offer", frame="f1"), message("webrtc-offer", frame="f1", sdp=5),
                 ice("f1", "candidate:1"), ice("f1", {"candidate": 3})):
        assert error(s.receive(text, 101.0))["code"] == "bad-message", text
    assert parse_client_message(offer("f1")) == WebrtcOffer("f1", OFFER)


def test_a_refused_or_failed_peer_unwatches_and_says_why() -> None:
    f1 = FakeFrame("f1")
    s = welcomed(f1)
    s.receive(offer("f1"), 101.0)
    refused = s.peer_ended(f1, ProtocolError("bad-message", "not a usable SDP offer (ValueError)"))
    assert refused[0] == StopWatching(f1)
    assert json.loads(refused[1].text) == {  # type: ignore[union-attr]
        "type": "error", "code": "bad-message", "message": "not a usable SDP offer (ValueError)", "frame": "f1"}
    assert s.peer_ended(f1, "failed") == []  # no longer watched over WebRTC: nothing more to say
    s.receive(offer("f1"), 102.0)
    assert s.peer_ended(f1, "stalled") == [
        StopWatching(f1), Send('{"type":"webrtc-closed","frame":"f1","reason":"stalled"}')]


def test_the_contracts_examples() -> None:
    examples = {e["type"]: e for e in json_examples() if str(e.get("type", "")).startswith("webrtc-")}
    assert set(examples) == {"webrtc-offer", "webrtc-answer", "webrtc-ice", "webrtc-closed"}
    offer_example, ice_example = examples["webrtc-offer"], examples["webrtc-ice"]
    assert parse_client_message(json.dumps(offer_example)) == WebrtcOffer("f1", offer_example["sdp"])
    candidate = ice_example["candidate"]
    assert parse_client_message(json.dumps(ice_example)) == WebrtcIce(
        "f1", IceCandidate(candidate["candidate"], candidate["sdpMid"], candidate["sdpMLineIndex"]))
    answer, closed = examples["webrtc-answer"], examples["webrtc-closed"]
    assert json.loads(webrtc_answer(answer["frame"], answer["sdp"])) == answer
    assert json.loads(webrtc_closed(closed["frame"], closed["reason"])) == closed
