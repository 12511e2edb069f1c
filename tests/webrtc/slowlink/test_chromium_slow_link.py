"""A headless Chromium watches a busy page over WebRTC through a 1 Mbit/s link (every packet on `lo` through one
token bucket): its REMB reaches the service, the frame counts it as a slow viewer, and it keeps decoding pictures
(at CSS size: the frame's light stream), and stays connected past the 30 s after which ICE gives up on a peer
that answers none of its consent checks (RFC 7675): a sender that kept the link full would lose the connection.

The page is benchmarks/pages/scroll_fast.html at 1280x800 dpr 2, text scrolling 3 px a frame: about 1.6 Mbit/s,
more than the link carries. Every step waits for a condition (a metric, a count, a size); the deadlines are only
there so a broken build fails instead of hanging, and are far from what a working one needs.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import pytest

from tests.fixtures import service_fixture
from tests.support import Service, until
from tests.web.browser import Browser, Page
from tests.webrtc.chromium import LOOPBACK, inbound_video, open_webrtc_viewer, rtc
from tests.webrtc.metrics import metric

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(540)]

CSS = (1280, 800)
CONSENT_EXPIRY_S = 30.0  # RFC 7675: consent is lost after this long without an answered check
service = service_fixture(f"scroll_fast.html@{CSS[0]}x{CSS[1]}", scope="module", pages="bench_pages", timeout=60,
                          env={"FRAMESTREAM_ICE_HOSTS": "127.0.0.1"})


async def read_metric(service: Service, name: str, labels: str = "") -> float:
    return await asyncio.to_thread(metric, service, name, labels)


async def test_remb_makes_a_chromium_viewer_slow_and_it_keeps_decoding(service: Service) -> None:
    try:
        await _slow_and_decoding(service)
    except AssertionError as exc:  # what the service saw of the peer (REMB, losses, keyframe requests) says why
        raise AssertionError(f"{exc}\nservice log:\n{service.log()[-6000:]}") from None


async def _slow_and_decoding(service: Service) -> None:
    frame = service.frame_ids()[0]
    slow = f'frame="{frame}"'

    async with Browser(extra_args=LOOPBACK) as browser:
        page: Page = await browser.page()
        await open_webrtc_viewer(page, service, frame, connected=60)
        answer = await page.eval(f"{rtc(frame)}.pc.remoteDescription.sdp")
        assert "goog-remb" in answer and "transport-cc" not in answer, answer

        async def decoded() -> float:
            return float((await inbound_video(page, frame)).get("framesDecoded", 0))

        await until("the first decoded picture", decoded)
        first_decoded_at = time.monotonic()
        # Chromium estimates the link on its side and reports it (REMB) to our sender.
        await until("a REMB estimate", lambda: read_metric(service, "framestream_webrtc_remb_total"))

        async def slow_now() -> bool:
            return await read_metric(service, "framestream_slow_viewers", slow) == 1

        await until("the frame counts one slow viewer", slow_now)
        # It keeps receiving pictures (decoded ones, not merely packets) once slow.
        start = await decoded()
        await until("30 more decoded pictures", lambda: _more(decoded, start + 30))
        # ...the light stream's: the frame at CSS size (over RTP the size changes at its keyframe).
        width = await until(f"a decoded picture {CSS[0]} wide",
                            lambda: _width_is(page, frame, CSS[0]))
        assert width == CSS[0]
        after = await decoded()
        await until("decoded pictures of the light stream", lambda: _more(decoded, after + 10))
        # Watched on past consent's 30 s from the start (our ICE agent checks consent every 5 s, each check
        # answered within 0.5 s or failed, so a queue kept full fails them all), the full stream tried meanwhile.
        watched_until = first_decoded_at + CONSENT_EXPIRY_S + 15
        while time.monotonic() < watched_until:
            # `disconnected` may come and go while a try of the full stream fills the link; it must not end.
            state = await page.eval(f"{rtc(frame)}?.pc?.connectionState ?? 'gone'")
            assert state in ("connected", "disconnected"), f"the peer connection is {state}"
            await asyncio.sleep(1.0)  # watching for a duration is the point here
        last = await decoded()
        await until("decoded pictures 45 s in", lambda: _more(decoded, last + 10))


async def _more(decoded: Callable[[], Awaitable[float]], least: float) -> bool:
    return await decoded() >= least


async def _width_is(page: Page, frame: str, width: int) -> int | None:
    seen = (await inbound_video(page, frame)).get("frameWidth")
    return width if seen == width else None
