"""An agent reads back what it did: `framestream.client` lists the recorded steps and gets the picture after one,
and `framestream mcp` answers the same through its replay tools (real service, Chromium, libx264)."""

from __future__ import annotations

import asyncio
import io
import json
import time

import av
import numpy as np

from framestream.client import Client, SandboxKey
from tests.fixtures import service_fixture
from tests.mcp.session import mcp_session, pngs, texts
from tests.support import TEST_SECRET, Service, colour_near, until

service = service_fixture("replay.html@640x400", env={"FRAMESTREAM_RECORD": "on"})

GREEN = (30, 180, 60)


def _rgb(png: bytes) -> np.ndarray:
    with av.open(io.BytesIO(png), "r") as container:
        return next(container.decode(video=0)).to_ndarray(format="rgb24")


async def test_the_client_and_the_mcp_tools_read_the_recorded_steps_and_their_pictures(service: Service) -> None:
    key = SandboxKey(TEST_SECRET, "test", subject="agent")
    async with await Client.connect(service.base, key=key) as client:
        frame = (await client.list_frames())[0].id
        await client.watch(frame)  # (a watched frame stays live: one recording)
        step = await client.click(frame, 100, 60)
        # The picture 0.5 s after the step must have been recorded: the clock is what is awaited here.
        await asyncio.sleep(max(0.0, step.acked_us / 1e6 + 1.5 - time.time()))
        steps = await until("the recorded click", lambda: _clicks(client, frame), 15.0)
        assert steps[-1]["subject"] == "agent" and steps[-1]["ok"] and steps[-1]["step"] is True
        picture = await client.recordings.picture_at_step(frame, steps[-1])
        assert colour_near(_rgb(picture.png)[60, 100], GREEN, 30)
        recordings = await client.recordings.of_frame(frame)
        assert len(recordings) == 1 and recordings[0].active and recordings[0].steps >= 1

        async with mcp_session(service) as session:
            listed = json.loads(texts(await session.call_tool("recorded_steps", {"frame": frame}))[0])
            assert [s["t_us"] for s in listed] == [s["t_us"] for s in steps]
            shown = await session.call_tool("recorded_picture", {"t_us": listed[-1]["t_us"], "frame": frame})
            assert not shown.is_error, texts(shown)
            assert colour_near(_rgb(pngs(shown)[0])[60, 100], GREEN, 30)
            wrong = await session.call_tool("recorded_picture", {"t_us": 1, "frame": frame})
            assert wrong.is_error and "recorded_steps lists them" in texts(wrong)[0]


async def _clicks(client: Client, frame: str) -> list[dict[str, object]] | None:
    found = await client.recordings.steps(frame)
    return found or None
