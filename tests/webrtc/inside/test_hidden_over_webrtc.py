"""The web viewer over WebRTC left in a background tab, in a headless Chromium on loopback: hidden, it closes its
peer connection and watches its frame without pictures (docs/protocol.md, `watch` with `video` false), so the
frame pauses; back in front, it offers a new peer connection and shows the page as it is now, never its old
picture as current (tests/web/hidden_view.py is the same over the WebSocket)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from tests.fixtures import service_fixture
from tests.support import Service
from tests.web.browser import Browser, close_to, info, pixel, wait_pixel
from tests.web.hidden_view import JS_SAMPLE
from tests.webrtc.chromium import LOOPBACK, open_webrtc_viewer, rtc
from tests.webrtc.metrics import metric

service = service_fixture("agent.html@640x400", env={"FRAMESTREAM_ICE_HOSTS": "127.0.0.1", "FRAME_IDLE_PAUSE_S": "1"})

BUTTON = (140, 100)  # tests/pages/agent.html's button: grey, red once clicked
GREY = (128, 128, 128)
RED = (220, 30, 30)

# The pictures a <video> decodes reach the canvas through requestVideoFrameCallback (and its `loadeddata`): while
# `fsHoldRtc` is set they wait (as on a slow link), so the test can look at the moment between the frame's `live`
# and its first picture.
JS_HOLD_RTC = """(() => { const proto = HTMLVideoElement.prototype, ask = proto.requestVideoFrameCallback;
  const listen = proto.addEventListener;
  window.fsHoldRtc = []; window.fsHeldRtc = 0;
  const held = (cb) => (...args) => {
    if (window.fsHoldRtc) { window.fsHeldRtc += 1; window.fsHoldRtc.push(() => cb(...args)); } else cb(...args);
  };
  proto.requestVideoFrameCallback = function (cb) { return ask.call(this, held(cb)); };
  proto.addEventListener = function (type, cb, ...rest) {
    return listen.call(this, type, type === 'loadeddata' ? held(cb) : cb, ...rest);
  };
  window.fsReleaseRtc = () => { const held = window.fsHoldRtc; window.fsHoldRtc = null; held.forEach((f) => f()); };
  return true; })()"""


async def test_a_hidden_webrtc_viewer_closes_its_peer_lets_the_frame_pause_and_comes_back_to_the_page(
        service: Service) -> None:
    [frame] = service.frame_ids()
    f = json.dumps(frame)
    label = f'frame="{frame}"'
    async with Browser(extra_args=LOOPBACK) as browser:
        page = await browser.page()
        await open_webrtc_viewer(page, service, frame, connected=20)
        await wait_pixel(page, frame, BUTTON, GREY)
        assert await asyncio.to_thread(metric, service, "framestream_webrtc_peers") == 1

        other: dict[str, Any] = await page.send("Target.createTarget", {"url": "about:blank"})
        await page.wait_for("document.visibilityState === 'hidden' && window.framestream.client.hidden")
        await page.wait_for(f"!{rtc(frame)}")  # its peer connection closed
        await service.wait_state_async(frame, "paused", 15)
        await page.wait_for(f"window.framestream.client.info({f}).state.state === 'paused'")  # it still hears it
        assert await asyncio.to_thread(metric, service, "framestream_webrtc_peers") == 0
        assert await asyncio.to_thread(metric, service, "framestream_hidden_watchers", label) == 1

        # Meanwhile an agent's click turns the button red (the frame resumes for it, then pauses again).
        status, body = await asyncio.to_thread(
            service.request, "POST", f"/frames/{frame}/input",
            {"seq": 1, "events": [{"kind": "mouse", "action": "down", "x": BUTTON[0], "y": BUTTON[1]},
                                  {"kind": "mouse", "action": "up", "x": BUTTON[0], "y": BUTTON[1]}]},
            service.token("drive", frame=frame, subject="agent", step=True))
        assert status == 200, body
        await service.wait_state_async(frame, "paused", 15)
        assert close_to(await pixel(page, frame, BUTTON), GREY)

        await page.eval(JS_SAMPLE.format(f=f, x=BUTTON[0], y=BUTTON[1]))
        await page.eval(JS_HOLD_RTC)
        await page.send("Target.closeTarget", {"targetId": other["targetId"]})
        # Live again, a new peer connection up and its pictures decoded, not yet drawn: the old picture stays,
        # said to be old.
        await page.wait_for(f"window.framestream.client.info({f})?.transport === 'webrtc'", within=20)
        await page.wait_for(f"window.framestream.client.info({f}).state.state === 'live' && window.fsHeldRtc > 0",
                            within=20)
        await page.wait_for("new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))"
                            ".then(() => 1)")
        held = await page.eval(f"fsView({f})")
        assert (held["overlay"], held["state"]) == ("Updating…", "live"), held
        assert close_to(await pixel(page, frame, BUTTON), GREY)
        await page.eval("fsReleaseRtc()")
        await wait_pixel(page, frame, BUTTON, RED)
        await page.wait_for(f"fsView({f}).overlay === null")
        await page.wait_for("window.fsShown.some((s) => s.overlay === null)")
        shown = await page.eval("window.fsShown")
        bare = [s for s in shown if s["overlay"] is None]
        # The old grey button was never shown without an overlay: the first bare picture is the page as it is now.
        assert all(close_to(s["px"], RED) for s in bare), bare[:3]
        seen = await info(page, frame)
        assert seen["decoded"] == 0 and seen["state"]["viewers"] == 1  # drawn from RTP again, counted again
        assert await asyncio.to_thread(metric, service, "framestream_webrtc_peers") == 1
        covered = sorted({s["overlay"] for s in shown if s["overlay"] is not None})
        print(f"back over WebRTC: {len(shown) - len(bare)} animation frames under {covered}, then the red button")
