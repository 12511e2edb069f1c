"""A frame resumed before it gave back its buffers, in Firefox ESR (WebDriver BiDi). Its stream then goes on from its
live encoder with a fresh keyframe of the screen and the two refinements that sharpen it; Firefox's WebCodecs decodes
them into the canvas without an error or a gap, and the canvas shows the page (a released frame: beside it, in
tests/web/test_viewer_firefox_resume.py)."""

from __future__ import annotations

import pytest

from tests.fixtures import service_fixture
from tests.support import Service
from tests.web.firefox import Tab
from tests.web.test_viewer_firefox_resume import watch_resumed

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

service = service_fixture("box.html@640x400", env={"FRAME_IDLE_PAUSE_S": "0.5", "FRAMESTREAM_PAUSED_RELEASE_S": "600"})


async def test_firefox_resumes_a_paused_frame_with_its_live_encoder(service: Service, tab: Tab) -> None:
    frame = service.frame_ids()[0]
    await service.wait_state_async(frame, "paused")
    # The keyframe and the two refinements that sharpen it (the page is still: nothing else comes).
    await watch_resumed(tab, service, frame, decoded=3)
