"""The page's cursor at the driver's pointer reaches the viewers that may drive the frame (`cursor`): a hand over a
link, an I-beam over text and in a field, the arrow beside a line of text, a page's own keyword (an image's
fallback), a cross-site iframe's, a change under a still pointer after a click, a click without a move (an agent's),
and a new document's. A viewer that joins hears the current one; a view-only viewer hears none.
tests/pages/cursors.html lays it out."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest

from tests.fixtures import service_fixture
from tests.integration.test_whole_tab import Driver, drive_page
from tests.support import Service, StreamClient

service = service_fixture(scope="module")


@pytest.fixture
async def pointing(service: Service, pages: str) -> AsyncIterator[Driver]:
    async for d in drive_page(service, f"{pages}/cursors.html"):
        yield d


def cursors(client: StreamClient, frame: str) -> list[str]:
    return [m["cursor"] for m in client.texts if m.get("type") == "cursor" and m.get("frame") == frame]


async def cursor_now(client: StreamClient, frame: str, expected: str, timeout: float = 15.0) -> None:
    """Until the last `cursor` message `client` got for `frame` says `expected`."""
    deadline = time.monotonic() + timeout
    while cursors(client, frame)[-1:] != [expected]:
        left = deadline - time.monotonic()
        assert left > 0, f"the cursor never became {expected!r}: {cursors(client, frame)}"
        await client.next_text("cursor", timeout=left)


async def point(d: Driver, x: float, y: float, expected: str) -> None:
    ack = await d.send({"type": "input", "events": [{"kind": "mouse", "action": "move", "x": x, "y": y}]})
    assert ack["type"] == "input-ack", ack
    await cursor_now(d.client, d.frame, expected)


async def test_the_cursor_at_the_drivers_pointer_reaches_those_who_may_drive(pointing: Driver,
                                                                             service: Service) -> None:
    d = pointing
    # Each place's cursor differs from the one before it, so each wait sees a change the page told.
    for (x, y), expected in [
        ((100, 40), "pointer"),  # a link: the browser's own stylesheet
        ((40, 92), "text"),  # on a word of a paragraph: `auto` is an I-beam
        ((270, 92), "default"),  # in the paragraph, beside its only word: the arrow, as Chromium shows
        ((370, 45), "crosshair"),  # the page's keyword
        ((530, 45), "move"),  # a cursor image (not loadable here): its fallback keyword, never the url
        ((120, 170), "text"),  # a textarea
        ((450, 220), "grab"),  # the cross-site iframe's page
        ((600, 385), "default"),  # nothing there
        ((450, 230), "grab"),  # back in the iframe, which told it before: it tells again
    ]:
        await point(d, x, y, expected)
    assert not any("url" in c for c in cursors(d.client, d.frame))

    assert (await d.click(120, 240))["type"] == "input-ack"  # #busy turns its own cursor to `wait`
    await cursor_now(d.client, d.frame, "wait")  # the pointer did not move: the page looked again after the click

    joiner = await StreamClient.connect(service, service.token("drive", frame=d.frame))
    watcher = await StreamClient.connect(service, service.token("view", frame=d.frame))
    try:
        await joiner.watch(d.frame)
        await cursor_now(joiner, d.frame, "wait")  # who joins hears the cursor as it is
        await watcher.watch(d.frame)
        await point(d, 100, 40, "pointer")
        await cursor_now(joiner, d.frame, "pointer")
        await joiner.close()
        # The frame-state of two viewers left after the cursor on the watcher's connection too: it heard none.
        deadline = time.monotonic() + 15.0
        while not any(m.get("type") == "frame-state" and m.get("viewers") == 2 for m in watcher.texts):
            await watcher.next_text("frame-state", timeout=deadline - time.monotonic())
        assert cursors(watcher, d.frame) == []
    finally:
        await joiner.close()
        await watcher.close()

    # An agent's click comes without a move before it (the client's and MCP's): the press tells where it is.
    press = {"kind": "mouse", "action": "down", "x": 370, "y": 45}
    assert (await d.send({"type": "input", "events": [press, {**press, "action": "up"}]}))["type"] == "input-ack"
    await cursor_now(d.client, d.frame, "crosshair")

    # The link opens a page without it: the new document tells its cursor with the pointer still.
    assert (await d.click(100, 40))["type"] == "input-ack"
    await cursor_now(d.client, d.frame, "default")
