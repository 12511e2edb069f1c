"""The web viewer on a 1 Mbit/s link (issue 18), in a real headless Chromium that reads its canvas back.

Inside a network namespace with only `lo`, every packet through one token bucket (tests/web/test_viewer_slow_link.py).
The frame is tests/web/pages/slowlink.html at 1280x800 dpr 2: blue all over, a 16 px square that changes every
animation frame (a small stream), and a noise area that a click starts (a few Mbit/s, more than the link carries).

The viewer first gets the full stream (2560x1600) and draws it; the noise makes its link too slow, the service moves
it to the frame's light stream (1280x800, `"stream":"light"`), and the canvas keeps 2560x1600 and its place on the
page, with the light pictures drawn scaled into it: blue where the page is blue, at the moment of the switch too
(the canvas was not cleared). A click then turns the page green, which only light pictures can show, over the whole
canvas. When the noise stops the stream fits the link again and the viewer is moved back: the canvas again neither
resized nor cleared (green at the switch), and the full stream's pictures blue again after one more click. Every
step waits for a condition; the deadlines are only there so a broken build fails instead of hanging.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable
from typing import Any

import pytest

from tests.fixtures import service_fixture
from tests.support import Service, until
from tests.web.browser import Page, close_to, info, open_viewer
from tests.webrtc.metrics import metric

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(600)]

CSS = (1280, 800)
FULL = (2560, 1600)  # dpr 2
BLUE = (30, 60, 200)
GREEN = (30, 180, 60)
NOISE = (1120, 680)  # CSS centre of #noise (960,560 320x240)
ELSEWHERE = (640, 400)  # a click here turns the page green, or blue again
# Points of the canvas (fractions of its size) where the page is always blue: away from #tick and #noise.
POINTS = [(0.5, 0.5), (0.25, 0.25), (0.75, 0.2), (0.2, 0.8), (0.6, 0.6)]

service = service_fixture(f"slowlink.html@{CSS[0]}x{CSS[1]}", scope="module", pages="web_pages", timeout=60)


# Installed in the viewer page: pixels by fractions of the canvas (whatever its size and the stream's), and every
# video-config of the frame with what the canvas was right after the viewer handled it (the client passes the
# message on once its decoder configured itself).
JS_RECORD = """
(() => {
  const frame = FRAME;
  const canvas = document.querySelector(`canvas[data-frame="${frame}"]`);
  window.fsAt = (fx, fy) => {
    if (canvas.width < 4) return null;
    const d = canvas.getContext('2d').getImageData(Math.floor(fx * canvas.width), Math.floor(fy * canvas.height),
      1, 1).data;
    return [d[0], d[1], d[2]];
  };
  window.fsCanvas = () => ({ width: canvas.width, height: canvas.height,
    cssWidth: canvas.getBoundingClientRect().width, cssHeight: canvas.getBoundingClientRect().height });
  window.fsConfigs = [];
  window.framestream.client.on('video-config', (m) => {
    if (m.frame !== frame) return;
    const i = window.framestream.client.info(frame);
    window.fsConfigs.push({ stream: m.stream ?? null, width: m.width, height: m.height,
      link_kbps: m.link_kbps ?? null, drawn: i.drawn, light: i.link.light, canvas: window.fsCanvas(),
      px: window.fsAt(0.5, 0.5) });
  });
  return true;
})()
"""


async def slow_viewers(service: Service, frame: str) -> float:
    return await asyncio.to_thread(metric, service, "framestream_slow_viewers", f'frame="{frame}"')


async def click(service: Service, frame: str, css: tuple[int, int], seq: int) -> None:
    """A click by another party (an agent's drive grant, over HTTP): in NOISE starts or stops the noise, anywhere
    else turns the page green or blue again."""
    x, y = css
    events = [{"kind": "mouse", "action": action, "x": x, "y": y, "button": "left", "buttons": buttons,
               "clicks": 1, "modifiers": 0} for action, buttons in (("down", 1), ("up", 0))]
    status, body = await asyncio.to_thread(service.request, "POST", f"/frames/{frame}/input",
                                           {"seq": seq, "events": events},
                                           "drive")
    assert status == 200, body


async def everywhere(page: Page, frame: str, rgb: tuple[int, int, int], within: float = 60) -> list[list[int]]:
    """Wait until the canvas shows `rgb` at every one of POINTS; the pixels, or an AssertionError saying them."""
    points = json.dumps(POINTS)
    want = json.dumps(list(rgb))
    try:
        return await page.wait_for(  # type: ignore[no-any-return]
            f"(() => {{ const w = {want}; const px = {points}.map(([x, y]) => fsAt(x, y));"
            " return px.every((p) => p && p.every((v, i) => Math.abs(v - w[i]) <= 24)) ? px : null; })()",
            within=within, interval=0.1)
    except TimeoutError as exc:
        seen = await page.eval(f"{points}.map(([x, y]) => fsAt(x, y))")
        raise AssertionError(f"not {rgb} at {POINTS}: {seen}\ninfo: {await info(page, frame)}") from exc


async def configs(page: Page) -> list[dict[str, Any]]:
    return await page.eval("window.fsConfigs")  # type: ignore[no-any-return]


async def test_the_canvas_keeps_its_size_and_picture_across_the_light_stream(service: Service, page: Page) -> None:
    frame = service.frame_ids()[0]
    f = json.dumps(frame)
    client_info = f"window.framestream.client.info({f})"
    await open_viewer(page, service.base, service.token("view"), [frame])
    await page.eval(JS_RECORD.replace("FRAME", f))

    # The full stream, drawn: the canvas is the frame at dpr 2, at its CSS size on the page.
    await page.wait_for(f"{client_info}?.drawn > 0 && {client_info}.config.width === {FULL[0]}", within=60)
    await everywhere(page, frame, BLUE)
    full_canvas = await page.eval("fsCanvas()")
    assert full_canvas == {"width": FULL[0], "height": FULL[1], "cssWidth": CSS[0], "cssHeight": CSS[1]}
    assert (await info(page, frame))["link"]["light"] is False

    # The noise makes the stream heavier than the link: the service moves the viewer to the light stream.
    await click(service, frame, NOISE, 1)
    await page.wait_for(f"{client_info}.link.light === true", within=120)
    at = next(i for i, c in enumerate(await configs(page)) if c["stream"] == "light")
    switch = (await configs(page))[at]
    assert (switch["width"], switch["height"]) == CSS, switch
    assert switch["drawn"] > 0 and switch["light"] is True, switch
    # Right after the switch's video-config: the same canvas, still showing the full stream's last picture.
    assert switch["canvas"] == full_canvas, switch
    assert close_to(switch["px"], BLUE), f"the canvas was cleared at the switch: {switch}"
    await until("the frame counts one slow viewer", lambda: _equals(slow_viewers(service, frame), 1), within=120.0)

    # Light pictures keep coming, drawn scaled into the 2560x1600 canvas.
    await page.wait_for(f"{client_info}.link.light && {client_info}.drawn >= {switch['drawn'] + 10}", within=120)
    await everywhere(page, frame, BLUE)
    assert await page.eval("fsCanvas()") == full_canvas
    # The page turns green: light pictures alone show it, over the whole canvas (drawn at the light size, they
    # would leave the full stream's blue in three quarters of it).
    await click(service, frame, ELSEWHERE, 2)
    await everywhere(page, frame, GREEN)
    since = (await configs(page))[at:]
    assert [c["stream"] for c in since] == ["light"], f"only the light stream drew it: {since}"
    assert await page.eval("fsCanvas()") == full_canvas
    light = await info(page, frame)
    assert light["link"]["light"] is True and light["config"]["stream"] == "light", light["link"]
    assert light["link"]["serverKbps"] == switch["link_kbps"], (light["link"], switch)
    assert light["link"]["kbps"] > 0, light["link"]
    # The stats overlay says so.
    await page.eval(f"document.querySelector('.fs-frame[data-frame={f}] .fs-stats-toggle').click()")
    overlay = await page.wait_for(
        f"(() => {{ const t = document.querySelector('.fs-frame[data-frame={f}] .fs-stats').textContent;"
        f" return t.includes('light stream {CSS[0]}x{CSS[1]}') ? t : null; }})()", within=10)
    print(f"light: switch {switch}; link {light['link']}; overlay {overlay!r}")

    # Without the noise the full stream fits the link again: back to it, the canvas neither resized nor cleared.
    await click(service, frame, NOISE, 3)
    await page.wait_for(f"{client_info}.link.light === false", within=180)
    back = next(c for c in (await configs(page))[at + 1:] if c["stream"] is None)
    assert (back["width"], back["height"]) == FULL, back
    assert back["canvas"] == full_canvas, back
    assert close_to(back["px"], GREEN), f"the canvas was cleared going back: {back}"
    await page.wait_for(f"!{client_info}.link.light && {client_info}.drawn > {back['drawn']}", within=60)
    await click(service, frame, ELSEWHERE, 4)  # blue again, drawn by the full stream
    await everywhere(page, frame, BLUE)
    assert await page.eval("fsCanvas()") == full_canvas
    await until("no slow viewer", lambda: _equals(slow_viewers(service, frame), 0), within=120.0)
    print(f"back: {back}; configs {await configs(page)}")


async def _equals(value: Awaitable[float], want: float) -> bool:
    return await value == want
