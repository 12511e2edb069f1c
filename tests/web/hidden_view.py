"""The viewer left in a background tab and brought back to the front, as the Chromium and Firefox tests drive it:
real visibility (another tab in front), the real service, pixels read from the canvas.

While the viewer's page is hidden it watches its frame without pictures (docs/protocol.md, `watch` with `video`
false): it is not counted, the frame pauses, no picture reaches it even while the page changes and the frame runs,
and it still hears the frame's state. Back in front, its old picture is never shown as current: `Updating…` stands
over it until the page as it is now is drawn. To look at the moment between the frame's `live` and its first
picture (on this machine they come within one animation frame), the page holds its binary messages back until the
test has looked, as a slow link would.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

from tests.support import Service
from tests.web.browser import BrowserTab, close_to, info, pixel, wait_pixel
from tests.webrtc.metrics import metric

# Every binary message that reaches the client is counted, and passed on unless held back (an observer of the
# client's router, which it then calls itself).
JS_OBSERVE = """(() => { const r = window.framestream.client.router, route = r.routeBinary.bind(r);
  window.fsBinary = 0; window.fsHeld = null;
  r.routeBinary = (d) => { window.fsBinary += 1; if (window.fsHeld) window.fsHeld.push(d); else route(d); };
  window.fsRelease = () => { const held = window.fsHeld; window.fsHeld = null; held.forEach(route); };
  return true; })()"""

# What the view shows (its overlay, the canvas at a point) at every animation frame from now on: none run while
# the page is hidden, so the first is the first the person sees back in front.
JS_SAMPLE = """(() => {{ window.fsShown = [];
  const sample = () => {{ const v = fsView({f});
    window.fsShown.push({{ overlay: v.overlay, px: fsPixel({f}, {x}, {y}) }});
    if (window.fsShown.length < 600) requestAnimationFrame(sample); }};
  requestAnimationFrame(sample); return true; }})()"""


async def hidden_and_back(tab: BrowserTab, service: Service, frame: str, *, at: tuple[int, int],
                          before: tuple[int, int, int], after: tuple[int, int, int],
                          change: Callable[[], Awaitable[Any]], hide: Callable[[], Awaitable[Any]],
                          show: Callable[[], Awaitable[Any]],
                          while_hidden: Callable[[], Awaitable[Any]] | None = None) -> str:
    """The viewer on `tab` shows `frame` with `before` at CSS point `at`; `hide` puts another tab in front of it,
    `change` makes the page show `after` there, `while_hidden` checks what else the hidden viewer hears, `show`
    brings the viewer back. Returns what it saw, for the log."""
    f = json.dumps(frame)
    await wait_pixel(tab, frame, at, before)
    await tab.eval(JS_OBSERVE)
    await hide()
    await tab.wait_for("document.visibilityState === 'hidden' && window.framestream.client.hidden")
    await service.wait_state_async(frame, "paused", 15)
    await tab.wait_for(f"window.framestream.client.info({f}).state.state === 'paused'")
    assert (await info(tab, frame))["state"]["viewers"] == 0
    label = f'frame="{frame}"'
    assert await asyncio.to_thread(metric, service, "framestream_hidden_watchers", label) == 1
    assert await asyncio.to_thread(metric, service, "framestream_viewers", label) == 0
    await tab.eval("window.fsBinary = 0")  # (what was on its way when the page hid has come by now)
    await change()  # an agent's input: it resumes the frame, which runs its idle time, then pauses again
    await service.wait_state_async(frame, "live", 15)
    await service.wait_state_async(frame, "paused", 15)
    assert await tab.eval("window.fsBinary") == 0, "a hidden viewer was sent pictures"
    assert close_to(await pixel(tab, frame, at), before)
    if while_hidden is not None:
        await while_hidden()
    await tab.eval(JS_SAMPLE.format(f=f, x=at[0], y=at[1]))
    await tab.eval("window.fsHeld = []")
    await show()
    await tab.wait_for("document.visibilityState === 'visible' && !window.framestream.client.hidden")
    # Live again and its pictures on their way, not yet drawn: the old picture stays, said to be old.
    await tab.wait_for(f"window.framestream.client.info({f}).state.state === 'live' && window.fsHeld.length > 0")
    await tab.wait_for("new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done))).then(() => 1)")
    held = await tab.eval(f"fsView({f})")
    assert (held["overlay"], held["state"]) == ("Updating…", "live"), held
    assert close_to(await pixel(tab, frame, at), before)
    await tab.eval("fsRelease()")
    now = await wait_pixel(tab, frame, at, after)
    await tab.wait_for(f"fsView({f}).overlay === null && fsView({f}).state === 'live'")
    await tab.wait_for("window.fsShown.some((s) => s.overlay === null)")
    shown = await tab.eval("window.fsShown")
    bare = [s for s in shown if s["overlay"] is None]
    assert all(close_to(s["px"], after) for s in bare), bare[:3]  # the old picture never shown as current
    covered = [s["overlay"] for s in shown if s["overlay"] is not None]
    assert "Updating…" in covered and set(covered) <= {"Paused", "Updating…"}, covered
    assert all(close_to(s["px"], before) for s in shown[: len(covered)]), shown[0]  # under the overlay meanwhile
    return f"hidden: paused, no picture; back: {len(covered)} animation frames under {sorted(set(covered))}, then {now}"
