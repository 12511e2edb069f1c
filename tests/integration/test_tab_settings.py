"""The whole-tab settings: FRAMESTREAM_PERMISSIONS grants what it lists without a prompt (everything else is denied:
test_whole_tab.py), and FRAMESTREAM_DIALOG_TIMEOUT_S dismisses a dialog nobody answers."""

from __future__ import annotations

from typing import Any

import pytest

from tests.fixtures import service_fixture
from tests.support import Service, StreamClient

pytestmark = pytest.mark.integration

service = service_fixture(env={"FRAMESTREAM_PERMISSIONS": "notifications", "FRAMESTREAM_DIALOG_TIMEOUT_S": "1"},
                          scope="module")


async def click(client: StreamClient, service: Service, frame: str, seq: int, at: tuple[int, int]) -> None:
    x, y = at
    grant = service.token("drive", frame=frame)
    await client.send({"type": "input", "frame": frame, "grant": grant, "seq": seq, "events": [
        {"kind": "mouse", "action": "down", "x": x, "y": y}, {"kind": "mouse", "action": "up", "x": x, "y": y}]})
    assert (await client.next_text("input-ack"))["seq"] == seq


async def test_a_listed_permission_is_granted_without_a_prompt(service: Service, pages: str) -> None:
    frame = service.create_frame(f"{pages}/tab_more.html", width=640, height=400, dpr=1)
    client = await StreamClient.connect(service, service.token("drive", frame=frame))
    await client.watch(frame)
    await client.wait_for_colour(frame, (360, 320), (128, 128, 128))
    await click(client, service, frame, 1, (415, 40))
    await client.wait_for_colour(frame, (360, 320), (30, 180, 60))


async def text_of(client: StreamClient, type_: str) -> dict[str, Any]:
    """The first message of `type_`, received already or within 15 s."""
    for msg in client.texts:
        if msg.get("type") == type_:
            return msg
    return await client.next_text(type_, timeout=15)


async def test_a_dialog_nobody_answers_is_dismissed_and_viewers_are_told(service: Service, pages: str) -> None:
    frame = service.create_frame(f"{pages}/tab.html", width=640, height=400, dpr=1)
    client = await StreamClient.connect(service, service.token("drive", frame=frame))
    await client.watch(frame)
    await client.wait_for_colour(frame, (360, 320), (128, 128, 128))
    await click(client, service, frame, 1, (100, 130))
    dialog = await text_of(client, "dialog")
    closed = await text_of(client, "dialog-closed")
    assert closed == {"type": "dialog-closed", "frame": frame, "id": dialog["id"], "reason": "timeout"}
    await client.wait_for_colour(frame, (360, 320), (220, 30, 30))  # dismissed: confirm() answered false
    await click(client, service, frame, 2, (320, 40))  # and the page takes input again
