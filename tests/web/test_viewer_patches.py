"""The viewer (web/) with patches, in a real headless Chromium against the real service: a typed letter arrives
as a PNG patch and shows pixel-exact on the canvas; a viewer that lost a message draws no patch until the
keyframe that resumes it.

Frame CSS 480x120 at dpr 2 on tests/web/pages/typing.html (a focused text field, caret hidden).
"""

from __future__ import annotations

import base64
import io
import json
from typing import Any

import av
import numpy as np
import pytest

from tests.fixtures import service_fixture
from tests.support import Service
from tests.web.browser import Page, info, open_viewer

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

service = service_fixture("typing.html@480x120", scope="module", pages="web_pages", timeout=60)

# The whole canvas as base64 RGBA, and a record of everything the decoder traced for the frame.
JS_CANVAS = """
(() => {{
  const c = document.querySelector('canvas[data-frame="{frame}"]');
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  let s = '';
  for (let i = 0; i < d.length; i += 0x8000) s += String.fromCharCode.apply(null, d.subarray(i, i + 0x8000));
  return [c.width, c.height, btoa(s)];
}})()
"""
JS_TRACE = """
(() => {{
  window.fsTrace = [];
  return window.framestream.client._debugTrace("{frame}", (e) => window.fsTrace.push(e));
}})()
"""


def png_rgb(png: bytes) -> np.ndarray:
    with av.open(io.BytesIO(png)) as container:
        return np.asarray(next(container.decode(video=0)).to_ndarray(format="rgb24"))


def screenshot(service: Service, frame: str) -> np.ndarray:
    status, body = service.request("GET", f"/frames/{frame}/screenshot", token="view")
    assert status == 200, body
    return png_rgb(body)


async def canvas_rgb(page: Page, frame: str) -> np.ndarray:
    width, height, data = await page.eval(JS_CANVAS.format(frame=frame))
    return np.frombuffer(base64.b64decode(data), np.uint8).reshape(height, width, 4)[:, :, :3]


def type_letter(service: Service, frame: str, grant: str, seq: int, letter: str) -> None:
    events: list[dict[str, Any]] = [
        {"kind": "key", "action": action, "key": letter, "code": f"Key{letter.upper()}"} for action in ("down", "up")
    ]
    status, body = service.request("POST", f"/frames/{frame}/input", {"seq": seq, "events": events}, token=grant)
    assert status == 200, body


async def open_patch_viewer(service: Service, page: Page, frame: str) -> None:
    await open_viewer(page, service.base, service.token("view", subject="watcher"), [frame])
    await page.wait_for("window.framestream.client.welcome && window.framestream.client.welcome.features")
    assert await page.eval("window.framestream.client.welcome.features") == ["patches", "copies"]
    await page.wait_for(f"window.framestream.client.info({json.dumps(frame)})?.drawn > 0", within=30)
    assert await page.eval(JS_TRACE.format(frame=frame))
    # Drawn first is the frame's kept keyframe; a frame that was paused makes a fresh one as it resumes, and a
    # letter typed before that is made goes in it, as video. So the tests type once a keyframe asked now is drawn.
    asked = await page.eval("window.fsTrace.length")
    await page.eval(f"window.framestream.client.requestKeyframe({json.dumps(frame)})")
    await page.wait_for(f"(() => {{ const i = window.fsTrace.findIndex((e, n) => n >= {asked} && e.keyframe"
                        " && e.action === 'decode');"
                        " return i >= 0 && window.fsTrace.slice(i).some((e) => 'drawn' in e); })()", within=20)


async def test_a_typed_letter_shows_pixel_exact(service: Service, page: Page) -> None:
    (frame,) = service.frame_ids()
    grant = service.token("drive", frame=frame, subject="typist")
    await open_patch_viewer(service, page, frame)
    before = screenshot(service, frame)
    patches = (await info(page, frame))["patchesDrawn"]
    type_letter(service, frame, grant, 1, "w")
    await page.wait_for(f"window.framestream.client.info({json.dumps(frame)}).patchesDrawn > {patches}", within=20)
    after = screenshot(service, frame)
    letter = np.any(after != before, axis=2)
    assert letter.sum() > 50, "the letter changed the page"
    # The patch drew it; nothing (no video picture) drew over it since.
    await page.wait_for("window.fsTrace.some((e) => e.drawn !== undefined && e.patch)")
    trace = await page.eval("window.fsTrace")
    last_drawn = [e for e in trace if "drawn" in e][-1]
    assert last_drawn.get("patch"), trace
    shown = await canvas_rgb(page, frame)
    assert shown.shape == after.shape
    wrong = np.any(shown[letter] != after[letter], axis=1)
    assert not wrong.any(), f"{wrong.sum()} of {letter.sum()} letter pixels differ on the canvas"


async def test_a_viewer_that_lost_a_message_draws_no_patch_until_a_keyframe(service: Service, page: Page) -> None:
    (frame,) = service.frame_ids()
    grant = service.token("drive", frame=frame, subject="typist")
    await open_patch_viewer(service, page, frame)
    await page.eval(f"window.framestream.client._debugDropNext({json.dumps(frame)}, 1)")
    for seq, letter in enumerate("lost", start=10):
        type_letter(service, frame, grant, seq, letter)
    # The first letter's patch is lost; the next ones follow a gap and are dropped; the keyframe resumes.
    await page.wait_for("window.fsTrace.some((e) => e.action === 'lost')", within=20)
    await page.wait_for("(() => { const i = window.fsTrace.findIndex((e) => e.action === 'lost');"
                        " return window.fsTrace.slice(i).some((e) => e.keyframe && e.action === 'decode'); })()",
                        within=20)
    trace = await page.eval("window.fsTrace")
    lost = next(i for i, e in enumerate(trace) if e.get("action") == "lost")
    key = next(i for i, e in enumerate(trace) if i > lost and e.get("keyframe") and e.get("action") == "decode")
    between = trace[lost + 1 : key]
    assert not any(e.get("patch") and "drawn" in e for e in between), trace
    assert not any(e.get("patch") and e.get("action") == "decode" for e in between), trace
    assert any(e.get("action") == "drop" for e in between) or not between, trace
    # After the keyframe the canvas shows the page: every letter, within H.264's tolerance.
    await page.wait_for(f"window.framestream.client.info({json.dumps(frame)}).waitingForKeyframe === false")
    shot = screenshot(service, frame)
    await page.wait_for(f"window.framestream.client.info({json.dumps(frame)}).lastDraw.captureUs > 0")
    shown = await canvas_rgb(page, frame)
    assert np.abs(shown.astype(int) - shot.astype(int)).mean() < 4
