"""While someone gives input the frame's display runs at the faster rate, and Chromium draws at it; after the hold
it goes back to the stream's rate (core/refresh.py, frames/refresh.py). Seen by what the page paints: the test page
counts its own animation frames and paints a box blue at about 30 a second and green at about 60."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator

import numpy as np
import pytest

from framestream.client import Client, FrameView, SandboxKey
from tests.fixtures import service_fixture
from tests.support import TEST_SECRET, Service, colour_near

pytestmark = pytest.mark.integration

service = service_fixture("frame_rate.html@320x200", scope="module")

BOX = (120, 80)
BLUE = (40, 60, 220)
GREEN = (30, 180, 60)


def near(rgb: tuple[int, int, int], want: tuple[int, int, int]) -> bool:
    return colour_near(np.asarray(rgb), want, tol=30)


@contextlib.asynccontextmanager
async def at_the_streams_rate(service: Service) -> AsyncIterator[tuple[Client, str, FrameView]]:
    """A client watching the page once nobody has given input for the hold: Chromium draws at the stream's 30 a
    second (the box blue)."""
    frame = service.frame_ids()[0]
    key = SandboxKey(TEST_SECRET, "test", subject="agent")
    async with await Client.connect(service.base, key=key) as client:
        view = await client.watch(frame)
        await view.picture_after(0, where=lambda p: near(p.pixel(*BOX), BLUE), timeout=30)
        yield client, frame, view


async def test_chromium_draws_faster_while_input_comes_and_slower_after(service: Service) -> None:
    async with at_the_streams_rate(service) as (client, frame, view):
        # Input every 0.1 s (a pointer moving over the page) keeps the faster rate, which the page shows.
        moving = asyncio.create_task(_keep_moving(client, frame))
        try:
            started = time.time_ns() // 1000
            await view.picture_after(started, where=lambda p: near(p.pixel(*BOX), GREEN), timeout=30)
        finally:
            moving.cancel()
            await asyncio.gather(moving, return_exceptions=True)
        # Input stops: after the hold, back to 30 a second.
        stopped = time.time_ns() // 1000
        await view.picture_after(stopped, where=lambda p: near(p.pixel(*BOX), BLUE), timeout=30)


async def _keep_moving(client: Client, frame: str) -> None:
    x = 0
    while True:
        x = (x + 7) % 300
        await client.move(frame, 10 + x, 180)
        await asyncio.sleep(0.1)


async def test_a_resize_in_place_is_drawn_at_the_faster_rate_too(service: Service) -> None:
    # The new layout reaches the screen four animation frames after it is made (frames/runtime.py `painted`): at the
    # faster rate those cost what two did at the stream's.
    async with at_the_streams_rate(service) as (client, frame, view):
        info = await client.frame_info(frame)
        resized = time.time_ns() // 1000
        await client.resize_frame(frame, info.width - 20, info.height, dpr=info.dpr)
        picture = await view.picture_after(resized, where=lambda p: near(p.pixel(*BOX), GREEN), timeout=30)
        assert picture.width == (info.width - 20) * info.dpr, "in place, at the new size"
        assert (await client.frame_info(frame)).state == "live"
