"""The web viewer's first picture of a frame that paused before anyone watched it, and of one that gave back its
buffers, shows the page (issue 26): before, it drew the blank window its first keyframe caught before the page
painted (a white flash) and the page a few pictures later. Read from the canvas as it was after its first draw."""

from __future__ import annotations

from tests.fixtures import service_fixture
from tests.support import Service, wait_released
from tests.web.browser import FIRST_DRAWN_HOOK, Browser, close_to, first_drawn, open_viewer

service = service_fixture("box.html@640x400", env={"FRAME_IDLE_PAUSE_S": "0.5", "FRAMESTREAM_PAUSED_RELEASE_S": "0.5"})

RED = (200, 40, 40)
WHITE = (255, 255, 255)
BOX = (0.3125, 0.25)  # the centre of box.html's #box (CSS 200, 100 of 640x400), as a fraction of the canvas
ABOVE = (0.3125, 0.1)  # white page above it


async def first_picture(service: Service, frame: str) -> None:
    async with Browser() as browser:
        page = await browser.page()
        await page.send("Page.addScriptToEvaluateOnNewDocument", {"source": FIRST_DRAWN_HOOK})
        await open_viewer(page, service.base, service.token("view"), [frame])
        box, above = await first_drawn(page, frame, BOX), await first_drawn(page, frame, ABOVE)
        assert close_to(box, RED) and close_to(above, WHITE), f"first picture: {box} at the box, {above} above it"


async def test_the_viewers_first_picture_of_a_paused_frame_shows_the_page(service: Service) -> None:
    frame = service.frame_ids()[0]
    await service.wait_state_async(frame, "paused")
    await first_picture(service, frame)


async def test_the_viewers_first_picture_of_a_released_frame_shows_the_page(service: Service) -> None:
    frame = service.frame_ids()[0]
    await service.wait_state_async(frame, "paused")
    await wait_released(service, frame)
    await first_picture(service, frame)
