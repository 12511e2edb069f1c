"""Fresh pictures over WebRTC (issue 26): an aiortc viewer's very first decoded picture of a frame that paused
before anyone watched it (and of one paused long enough to give its buffers back) shows the page, never the
blank window its first keyframe caught before the page painted; so does the first picture the web viewer in
Chromium draws from RTP."""

from __future__ import annotations

from tests.fixtures import service_fixture
from tests.support import Service, colour_near, wait_released
from tests.web.browser import FIRST_DRAWN_HOOK, Browser, close_to, first_drawn
from tests.webrtc.chromium import LOOPBACK, open_webrtc_viewer
from tests.webrtc.rtc_client import RtcViewer

service = service_fixture("box.html@640x400", env={
    "FRAMESTREAM_ICE_HOSTS": "127.0.0.1", "FRAME_IDLE_PAUSE_S": "0.5", "FRAMESTREAM_PAUSED_RELEASE_S": "0.5"})

RED = (200, 40, 40)
WHITE = (255, 255, 255)


async def first_picture(service: Service, frame: str) -> None:
    rtc = RtcViewer(service.ws_url, service.token("view"), frame)
    await rtc.connect()
    try:
        await rtc.offer()
        await rtc.accept_answer()
        first = await rtc.next_picture()
        # The box is at CSS (100,50) size 200x100: at dpr 2, pixels x 200..600, y 100..300.
        assert first.shape[:2] == (800, 1280)
        assert colour_near(first[200, 400], RED) and colour_near(first[90, 400], WHITE), \
            f"the first picture shows {first[200, 400]} where the page has its red box"
    finally:
        await rtc.close()


async def test_the_first_picture_of_a_frame_paused_before_anyone_watched_shows_the_page(service: Service) -> None:
    frame = service.frame_ids()[0]
    await service.wait_state_async(frame, "paused")
    await first_picture(service, frame)


async def released(service: Service, frame: str) -> None:
    await service.wait_state_async(frame, "paused")
    await wait_released(service, frame)


async def test_the_first_picture_of_a_released_frame_shows_the_page(service: Service) -> None:
    frame = service.frame_ids()[0]
    await released(service, frame)
    await first_picture(service, frame)


async def test_chromiums_first_picture_over_webrtc_of_a_released_frame_shows_the_page(service: Service) -> None:
    frame = service.frame_ids()[0]
    await released(service, frame)
    async with Browser(extra_args=LOOPBACK) as browser:
        page = await browser.page()
        await page.send("Page.addScriptToEvaluateOnNewDocument", {"source": FIRST_DRAWN_HOOK})
        await open_webrtc_viewer(page, service, frame)
        box, above = await first_drawn(page, frame, (0.3125, 0.25)), await first_drawn(page, frame, (0.3125, 0.1))
        assert close_to(box, RED) and close_to(above, WHITE), f"first picture: {box} at the box, {above} above it"
        assert await page.eval(f"window.framestream.client.info({frame!r}).transport") == "webrtc"
