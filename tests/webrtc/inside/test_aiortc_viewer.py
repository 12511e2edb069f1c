"""An aiortc viewer on loopback: it decodes the frame's own pictures and finds the test page's box, a PLI gets
it a keyframe, refused offers say why, a peer that never connects is closed and counted, and offers and closes
leave nothing behind."""

from __future__ import annotations

import asyncio

import numpy as np

from framestream.webrtc.sdp import h264_profile_level_ids
from tests.fixtures import service_fixture
from tests.support import Service, colour_near
from tests.webrtc.metrics import metric
from tests.webrtc.rtc_client import RtcViewer

service = service_fixture("box.html@640x400", scope="module", env={
    "FRAMESTREAM_ICE_HOSTS": "127.0.0.1", "FRAMESTREAM_MAX_PEER_CONNECTIONS": "3", "FRAMESTREAM_ICE_TIMEOUT_S": "2"})

RED = (200, 40, 40)
WHITE = (255, 255, 255)


def shows_box(picture: np.ndarray) -> bool:
    # The box is at CSS (100,50) size 200x100: at dpr 2, pixels x 200..600, y 100..300.
    return (picture.shape[:2] == (800, 1280) and colour_near(picture[200, 400], RED)
            and colour_near(picture[90, 400], WHITE) and colour_near(picture[200, 620], WHITE))


async def viewer(service: Service, frame: str | None = None) -> RtcViewer:
    rtc = RtcViewer(service.ws_url, service.token("view"), frame or service.frame_ids()[0])
    await rtc.connect()
    return rtc


async def wait_box(rtc: RtcViewer) -> np.ndarray:
    while not shows_box(picture := await rtc.next_picture()):
        pass
    return picture


async def until(condition: object, timeout: float = 30.0) -> None:
    async def poll() -> None:
        while not condition():  # type: ignore[operator]  # noqa: ASYNC110 - /metrics has no event to wait on
            await asyncio.sleep(0.05)
    await asyncio.wait_for(poll(), timeout)


async def test_an_aiortc_viewer_decodes_the_frames_own_pictures(service: Service) -> None:
    rtc = await viewer(service)
    try:
        await rtc.offer()
        await rtc.accept_answer()
        # Only loopback host candidates, and the stream's own level (1280x800: 3.2) in the answer.
        candidates = [line for line in rtc.answer_sdp.splitlines() if line.startswith("a=candidate:")]
        assert candidates and all(" 127.0.0.1 " in line and " typ host" in line for line in candidates)
        assert h264_profile_level_ids(rtc.answer_sdp) == ["42c020"]
        await wait_box(rtc)
        assert not any(isinstance(m.get("type"), str) and m["type"] == "error" for m in rtc.messages), rtc.messages
    finally:
        await rtc.close()


async def test_a_pli_becomes_the_frames_keyframe_request(service: Service) -> None:
    rtc = await viewer(service)
    try:
        await rtc.offer()
        await rtc.accept_answer()
        await wait_box(rtc)
        # A still page sends no keyframe unless asked: ask with RTCP PLI, as a browser that lost one does.
        keyframes = metric(service, "framestream_keyframes_total", f'frame="{rtc.frame}"')
        decoded = rtc.keyframes_decoded
        await rtc.send_pli()
        await until(lambda: metric(service, "framestream_keyframes_total", f'frame="{rtc.frame}"') > keyframes)
        await until(lambda: rtc.keyframes_decoded > decoded)  # and the client decoded it
        while not rtc.pictures.empty():
            assert shows_box(rtc.pictures.get_nowait())
    finally:
        await rtc.close()


async def test_refused_offers_say_why(service: Service) -> None:
    frame = service.frame_ids()[0]
    rtc = await viewer(service)
    try:
        await rtc.send({"type": "webrtc-offer", "frame": frame, "sdp": "not sdp"})
        refused = await rtc.wait_message(lambda m: m["type"] == "error")
        assert (refused["code"], refused["frame"]) == ("bad-message", frame), refused
        other = RtcViewer(service.ws_url, service.token("view", frame="elsewhere"), frame)
        await other.connect()
        await other.send({"type": "webrtc-offer", "frame": frame, "sdp": "v=0"})
        assert (await other.wait_message(lambda m: m["type"] == "error"))["code"] == "forbidden"
        await other.close()
    finally:
        await rtc.close()


async def test_too_many_peer_connections(service: Service) -> None:
    viewers = [await viewer(service) for _ in range(4)]
    try:
        for rtc in viewers[:3]:
            await rtc.offer()
            await rtc.accept_answer()
        await viewers[3].offer()
        refused = await viewers[3].wait_message(lambda m: m["type"] == "error")
        assert refused["code"] == "capacity", refused
    finally:
        for rtc in viewers:
            await rtc.close()
    await until(lambda: metric(service, "framestream_webrtc_peers") == 0)


async def test_a_peer_that_never_connects_is_closed_and_counted(service: Service) -> None:
    stalled = metric(service, "framestream_webrtc_closed_total", 'reason="stalled"')
    rtc = await viewer(service)
    try:
        await rtc.offer()  # and never takes the answer: ICE cannot complete
        closed = await rtc.wait_message(lambda m: m["type"] == "webrtc-closed")
        assert closed == {"type": "webrtc-closed", "frame": rtc.frame, "reason": "stalled"}
        assert metric(service, "framestream_webrtc_closed_total", 'reason="stalled"') == stalled + 1
        assert metric(service, "framestream_webrtc_peers") == 0
    finally:
        await rtc.close()


async def test_offers_and_closes_leave_nothing_behind(service: Service) -> None:
    async def round_trip() -> None:
        rtc = await viewer(service)
        await rtc.offer()
        await rtc.accept_answer()
        await rtc.next_picture()
        await rtc.send({"type": "unwatch", "frame": rtc.frame})
        await rtc.close()

    await round_trip()  # aiortc's imports and first-use allocations before the baseline
    await until(lambda: metric(service, "framestream_webrtc_peers") == 0)
    tasks, fds = metric(service, "framestream_tasks"), metric(service, "process_open_fds")
    closed = metric(service, "framestream_webrtc_closed_total", 'reason="closed"')
    rounds = 30
    for _ in range(rounds):
        await round_trip()
    await until(lambda: metric(service, "framestream_webrtc_closed_total", 'reason="closed"') == closed + rounds)
    await until(lambda: metric(service, "framestream_webrtc_peers") == 0
                and metric(service, "framestream_tasks") <= tasks and metric(service, "process_open_fds") <= fds)


async def test_trickled_candidates_are_taken_and_bad_ones_refused(service: Service) -> None:
    rtc = await viewer(service)
    lines: list[str] = []

    def without_candidates(sdp: str) -> str:
        kept = []
        for line in sdp.split("\r\n"):
            if line.startswith("a=candidate:"):
                lines.append(line.removeprefix("a="))
            elif line != "a=end-of-candidates":
                kept.append(line)
        return "\r\n".join(kept)

    try:
        await rtc.offer(without_candidates)
        assert lines
        for line in lines:
            await rtc.send({"type": "webrtc-ice", "frame": rtc.frame,
                            "candidate": {"candidate": line, "sdpMid": "0", "sdpMLineIndex": 0}})
        await rtc.send({"type": "webrtc-ice", "frame": rtc.frame,
                        "candidate": {"candidate": "candidate:nonsense", "sdpMid": "0", "sdpMLineIndex": 0}})
        refused = await rtc.wait_message(lambda m: m["type"] == "error")
        assert (refused["code"], refused["frame"]) == ("bad-message", rtc.frame), refused
        await rtc.send({"type": "webrtc-ice", "frame": rtc.frame,
                        "candidate": {"candidate": "", "sdpMid": "0", "sdpMLineIndex": 0}})
        await rtc.accept_answer()
        await wait_box(rtc)
    finally:
        await rtc.close()
