"""One viewer connection cannot take every peer slot (issue 32, suspected and confirmed): past
FRAMESTREAM_MAX_PEERS_PER_CONNECTION its offers are refused `capacity` while another connection still gets one."""

from __future__ import annotations

from tests.fixtures import service_fixture
from tests.support import Service
from tests.webrtc.rtc_client import RtcViewer

service = service_fixture("box.html@320x200", "counter.html@320x200", env={
    "FRAMESTREAM_ICE_HOSTS": "127.0.0.1", "FRAMESTREAM_MAX_PEERS_PER_CONNECTION": "1"})


async def test_a_connection_past_its_peer_cap_is_refused_and_others_are_not(service: Service) -> None:
    first, second = service.frame_ids()
    greedy = RtcViewer(service.ws_url, service.token("view"), first)
    other = RtcViewer(service.ws_url, service.token("view"), second)
    kept = None
    try:
        await greedy.connect()
        await greedy.offer()
        await greedy.accept_answer()
        kept, greedy.pc = greedy.pc, None
        greedy.frame = second  # a second peer on the same connection
        await greedy.offer()
        refused = await greedy.wait_message(lambda m: m["type"] == "error" and m.get("frame") == second)
        assert refused["code"] == "capacity" and "a viewer connection" in refused["message"], refused
        await other.connect()
        await other.offer()
        await other.accept_answer()  # another viewer's offer for the same frame is answered
    finally:
        if kept is not None:
            await kept.close()
        await greedy.close()
        await other.close()
