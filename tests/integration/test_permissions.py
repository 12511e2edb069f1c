"""Permission prompts never show: FRAMESTREAM_PERMISSIONS grants what it lists, everything else is denied (the deny
side is in test_whole_tab.py)."""

from __future__ import annotations

import pytest

from tests.fixtures import service_fixture
from tests.support import Service, StreamClient

pytestmark = pytest.mark.integration

service = service_fixture(env={"FRAMESTREAM_PERMISSIONS": "notifications"})


async def test_a_listed_permission_is_granted_without_a_prompt(service: Service, pages: str) -> None:
    frame = service.create_frame(f"{pages}/tab_more.html", width=640, height=400, dpr=1)
    client = await StreamClient.connect(service, service.token("drive", frame=frame))
    await client.watch(frame)
    await client.wait_for_colour(frame, (360, 320), (128, 128, 128))
    grant = service.token("drive", frame=frame)
    await client.send({"type": "input", "frame": frame, "grant": grant, "seq": 1, "events": [
        {"kind": "mouse", "action": "down", "x": 415, "y": 40}, {"kind": "mouse", "action": "up", "x": 415, "y": 40}]})
    assert (await client.next_text("input-ack"))["seq"] == 1
    await client.wait_for_colour(frame, (360, 320), (30, 180, 60))
