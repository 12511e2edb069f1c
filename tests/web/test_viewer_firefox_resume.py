"""A frame that gave back its buffers, resumed in Firefox ESR (WebDriver BiDi). Its stream then starts with the
keyframe parked at the release (media/parked.py) and the new encoder's own right after it (which comes first, by
pixels: tests/integration/test_density.py); Firefox's WebCodecs decodes them into the canvas without an error or a
gap, and the canvas shows the page (as tests/web/test_viewer_first_picture.py checks in Chromium)."""

from __future__ import annotations

import pytest

from tests.fixtures import service_fixture
from tests.support import Service, wait_released
from tests.web.browser import close_to, info, open_viewer, pixel, wait_pixel
from tests.web.firefox import Tab

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

service = service_fixture("box.html@640x400", env={"FRAME_IDLE_PAUSE_S": "0.5", "FRAMESTREAM_PAUSED_RELEASE_S": "0.5"})

RED = (200, 40, 40)
WHITE = (255, 255, 255)
BOX = (200, 100)  # CSS: the centre of box.html's #box
ABOVE = (200, 40)  # the white page above it


async def test_firefox_resumes_a_released_frame_from_its_parked_keyframe_and_the_next(service: Service,
                                                                                     tab: Tab) -> None:
    frame = service.frame_ids()[0]
    await service.wait_state_async(frame, "paused")
    await wait_released(service, frame)
    # Both keyframes decoded (the page is still: nothing else comes), with no error and no gap.
    await watch_resumed(tab, service, frame, decoded=2)


async def watch_resumed(tab: Tab, service: Service, frame: str, *, decoded: int) -> None:
    """Watch the paused `frame` in `tab`: the canvas shows the box, `decoded` pictures decode with no decoder error
    and no gap, and it still shows the box red on the white page."""
    await open_viewer(tab, service.base, service.token("view"), [frame])
    await wait_pixel(tab, frame, BOX, RED)
    await tab.wait_for(f"window.framestream.client.info({frame!r}).decoded >= {decoded}")
    state = await info(tab, frame)
    assert state["decoderErrors"] == 0 and state["gaps"] == 0, state
    assert close_to(await pixel(tab, frame, BOX), RED) and close_to(await pixel(tab, frame, ABOVE), WHITE)
