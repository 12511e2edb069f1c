"""framestream.client watching a frame without its pictures (docs/protocol.md, `watch`): it hears what happens to
the frame and keeps it from nothing, and watched again with pictures it shows the page as it is now."""

from __future__ import annotations

import dataclasses
import time

import pytest

from framestream.client import Client, SandboxKey, png_to_rgb
from tests.client.agent_page import BUTTON, RED, near
from tests.fixtures import service_fixture
from tests.support import Service

pytestmark = pytest.mark.integration

service = service_fixture("agent.html@640x400", env={"FRAME_IDLE_PAUSE_S": "1"})


async def test_a_client_watching_without_video_hears_the_frame_and_lets_it_pause(service: Service,
                                                                                 key: SandboxKey) -> None:
    [frame] = service.frame_ids()
    listening = dataclasses.replace(key, subject="listener")
    async with await Client.connect(service.base, key=listening) as listener, \
            await Client.connect(service.base, key=key) as agent:
        view = await listener.watch(frame, video=False)
        assert view.state is not None and view.config is None  # answered by the frame's state
        await view.wait_for(lambda v: v.state is not None and v.state.state == "paused")
        assert view.state.viewers == 0  # not counted: the frame paused as one nobody views

        await agent.click(frame, *BUTTON)  # (the step resumes the frame to apply it; nobody views it after)
        await view.wait_for(lambda v: v.state is not None and v.state.driver == "agent")
        # The display shows the click before the frame pauses (a screenshot is a fresh grab): on a loaded machine
        # Chromium may not have drawn it within the second before the pause, and then it is drawn after the resume,
        # a picture after the keyframe, which showed the screen as it was.
        deadline = time.monotonic() + 30
        while not near(png_to_rgb((await agent.screenshot(frame, css=True)).png)[BUTTON[1], BUTTON[0]], RED):
            assert time.monotonic() < deadline, "the click never showed on the display"
        await view.wait_for(lambda v: v.state is not None and v.state.state == "paused")
        assert view.pictures_received == 0 and view.latest is None

        # With pictures again: the frame resumes, and its first pictures show the click the listener only heard of.
        again = await listener.watch(frame)
        assert again is view and view.config is not None and view.config.width == 1280
        shown = await view.picture_after(0, where=lambda p: near(p.pixel(*BUTTON, dpr=2), RED), timeout=30)
        assert shown.keyframe
        await view.wait_for(lambda v: v.state is not None and (v.state.state, v.state.viewers) == ("live", 1))
