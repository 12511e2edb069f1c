"""The service's web viewer with `#transport=webrtc` in a headless Chromium (tests/web/browser.py), on loopback."""

from __future__ import annotations

import json
import urllib.parse
from typing import Any

from tests.support import Service
from tests.web.browser import JS_HELPERS, Page

# Host candidates on loopback (the only interface here), and no mDNS names for them.
LOOPBACK = ("--allow-loopback-in-peer-connection", "--disable-features=WebRtcHideLocalIpsWithMdns")


async def open_webrtc_viewer(page: Page, service: Service, frame: str, *, connected: float | None = None) -> None:
    """The service's viewer for `frame` with `#transport=webrtc`, and the tests' pixel helpers in it; with
    `connected`, until its pictures come over WebRTC (within that many seconds)."""
    fragment = urllib.parse.urlencode([("token", service.token("view")), ("frame", frame), ("transport", "webrtc")])
    await page.navigate("about:blank")
    await page.wait_for("location.href === 'about:blank'")
    await page.navigate(f"{service.base}/#{fragment}")
    # (the client is null until the page has asked for its demo tokens: wait for the client itself)
    await page.wait_for("window.framestream && window.framestream.client")
    assert await page.eval("window.framestream.client.videoTransport") == "webrtc"
    await page.eval(JS_HELPERS)
    if connected is not None:
        await page.wait_for(f"window.framestream.client.info({json.dumps(frame)})?.transport === 'webrtc'",
                            within=connected)


def rtc(frame: str) -> str:
    """The expression for the viewer's `WebRtcVideo` of `frame` (web/lib/webrtc.js)."""
    return f"window.framestream.client.rtc.get({json.dumps(frame)})"


async def inbound_video(page: Page, frame: str) -> dict[str, Any]:
    """The peer connection's `inbound-rtp` video statistics (framesDecoded, frameWidth...); {} before any."""
    stats: dict[str, Any] = await page.eval(
        f"(async () => {{ const pc = {rtc(frame)}?.pc; if (!pc) return {{}};"
        " for (const s of (await pc.getStats()).values())"
        "   if (s.type === 'inbound-rtp' && s.kind === 'video') return s;"
        " return {}; })()")
    return stats or {}
