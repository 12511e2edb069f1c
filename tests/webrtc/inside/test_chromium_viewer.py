"""The web viewer with `#transport=webrtc` in a headless Chromium, on loopback only: it shows a 2560x1600 frame
(1280x800 at dpr 2, level 5.0 announced in the answer) from pictures that came over RTP, and a Chromium that may
not use loopback candidates (so ICE cannot connect) falls back to the WebSocket and shows the frame too."""

from __future__ import annotations

import json

import pytest

from tests.fixtures import service_fixture
from tests.support import Service
from tests.web.browser import Browser, info, wait_pixel
from tests.webrtc.chromium import LOOPBACK, open_webrtc_viewer

pytestmark = pytest.mark.asyncio(loop_scope="module")

service = service_fixture("box.html@1280x800", scope="module", env={"FRAMESTREAM_ICE_HOSTS": "127.0.0.1"})

RED = (200, 40, 40)
WHITE = (255, 255, 255)
BOX = (200, 100)  # CSS centre of #box (100,50 size 200x100)
BLANK = (20, 20)


async def test_chromium_shows_a_2560x1600_frame_over_webrtc(service: Service) -> None:
    frame = service.frame_ids()[0]
    async with Browser(extra_args=LOOPBACK) as browser:
        page = await browser.page()
        await open_webrtc_viewer(page, service, frame, connected=20)
        await wait_pixel(page, frame, BOX, RED)
        await wait_pixel(page, frame, BLANK, WHITE)
        seen = await info(page, frame)
        assert seen["config"]["width"] == 2560 and seen["config"]["height"] == 1600
        assert seen["decoded"] == 0 and seen["drawn"] > 0  # drawn from RTP, not from WebCodecs over the socket
        rtc = f"window.framestream.client.rtc.get({json.dumps(frame)})"
        assert await page.eval(f"{rtc}.video.videoWidth") == 2560
        # The view's statistics say which transport carries the pictures (at the end of a line: the link's own
        # line may follow).
        await page.eval(f"document.querySelector('.fs-frame[data-frame=\"{frame}\"] .fs-stats-toggle').click()")
        await page.wait_for(f"document.querySelector('.fs-frame[data-frame=\"{frame}\"] .fs-stats')"
                            ".textContent.split('\\n').some((line) => line.endsWith(' · webrtc'))")
        answer = await page.eval(f"{rtc}.pc.remoteDescription.sdp")
        assert "profile-level-id=42c032" in answer, answer
        # The receiver's congestion feedback: REMB (aiortc has no transport-cc), so Chromium estimates the link
        # on its side (with abs-send-time) and reports it to us.
        h264 = next(line.split()[0].split(":")[1] for line in answer.splitlines() if "H264/90000" in line)
        assert f"a=rtcp-fb:{h264} goog-remb" in answer.splitlines(), answer
        assert "transport-cc" not in answer and "abs-send-time" in answer, answer
        assert all(" 127.0.0.1 " in line for line in answer.splitlines() if line.startswith("a=candidate:"))


async def test_chromium_falls_back_to_the_websocket_when_ice_cannot_connect(service: Service) -> None:
    frame = service.frame_ids()[0]
    async with Browser() as browser:  # no loopback candidates: nothing to connect over
        page = await browser.page()
        await open_webrtc_viewer(page, service, frame)
        fallback = await page.wait_for(
            f"window.framestream.client.info({json.dumps(frame)})?.webrtcFallback", within=30)
        assert fallback in ("ice-timeout", "failed", "stalled"), fallback
        await wait_pixel(page, frame, BOX, RED)
        seen = await info(page, frame)
        assert seen["transport"] == "websocket" and seen["decoded"] > 0  # WebCodecs, over the socket
