"""A frame resized (`PATCH /frames/{id}`) while the web viewer watches it over WebRTC, in a headless Chromium on
loopback only: the pictures of the new size come over RTP (the resolution changes at the new size's IDR, the
WebSocket carries its `video-config`) and the canvas shows the page laid out at it, smaller and then larger than
the size the peer connection was negotiated for (1280x800 at dpr 2: a higher level than the answer's)."""

from __future__ import annotations

import asyncio

import pytest

from tests.fixtures import service_fixture
from tests.support import Service
from tests.web.browser import Browser, info, wait_pixel
from tests.webrtc.chromium import LOOPBACK, open_webrtc_viewer, rtc

pytestmark = pytest.mark.asyncio(loop_scope="module")

service = service_fixture("resizable.html@640x400", scope="module", env={"FRAMESTREAM_ICE_HOSTS": "127.0.0.1"})

CORNERS = ((200, 40, 40), (30, 180, 60), (30, 60, 220), (240, 200, 0))  # top-left, top-right, bottom-left, -right


async def test_chromium_over_webrtc_shows_a_frame_resized_smaller_then_larger(service: Service) -> None:
    frame = service.frame_ids()[0]
    async with Browser(extra_args=LOOPBACK) as browser:
        page = await browser.page()
        await open_webrtc_viewer(page, service, frame, connected=20)
        for css in ((640, 400), (480, 300), (1280, 800)):
            if css != (640, 400):
                status, answer = await asyncio.to_thread(service.request, "PATCH", f"/frames/{frame}",
                                                         {"width": css[0], "height": css[1]})
                assert status == 200, answer
            w, h = css
            for at, colour in zip(((4, 4), (w - 4, 4), (4, h - 4), (w - 4, h - 4)), CORNERS, strict=True):
                await wait_pixel(page, frame, at, colour)
            await page.wait_for(f"{rtc(frame)}.video.videoWidth === {w * 2}")
            seen = await info(page, frame)
            assert (seen["config"]["width"], seen["config"]["height"]) == (w * 2, h * 2), seen["config"]
            assert seen["transport"] == "webrtc" and seen["decoded"] == 0, seen  # drawn from RTP only
