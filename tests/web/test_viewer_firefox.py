"""The viewer (web/) against the real service, in Firefox ESR (Debian's firefox-esr) over WebDriver BiDi.

The same service and page as tests/web/test_viewer_browser.py: `framestream serve --frame viewer.html@640x400`
(Chromium on Xvfb, libx264, dpr 2), whose #box starts red, turns green on a click, blue on key "b" and yellow on
Shift+B. The viewer page runs in a headless Firefox (tests/web/firefox.py): its WebCodecs VideoDecoder decodes the
H.264 into the canvas, the test reads the canvas pixels back (getImageData, the helpers of tests/web/browser.py),
and real input goes through BiDi `input.performActions` on the canvas. Colours are the page's after H.264
(tolerance 24 per channel).
"""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest

from framestream.client import rgb_to_png
from tests.fixtures import service_fixture
from tests.support import Service
from tests.web.browser import JS_CANVAS_POINT, close_to, info, open_viewer, pixel, wait_pixel
from tests.web.firefox import Tab
from tests.web.viewer_page import BLANK, BLUE, BOX, CSS_H, CSS_W, FIELD, FLAG, GREEN, GREY, RED, WHITE, YELLOW

# One event loop and one Firefox for the module (a fresh one costs ~3 s).
pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

SHIFT = "\ue008"  # WebDriver's key value for Shift

service = service_fixture(f"viewer.html@{CSS_W}x{CSS_H}", scope="module", pages="web_pages", timeout=60)


async def click_css(tab: Tab, frame: str, css: tuple[int, int]) -> None:
    """A real mouse click (BiDi input) on the viewer's canvas where it shows the frame's CSS point `css`."""
    x, y = await tab.eval(JS_CANVAS_POINT.format(frame=frame, fx=css[0] / CSS_W, fy=css[1] / CSS_H))
    await tab.click(x, y)


async def test_firefox_decodes_the_stream_with_webcodecs_and_the_canvas_shows_the_page(service: Service,
                                                                                         tab: Tab) -> None:
    frame = service.frame_ids()[0]
    await open_viewer(tab, service.base, service.token("view"), [frame])
    assert "Firefox/" in await tab.eval("navigator.userAgent")
    got = await wait_pixel(tab, frame, BOX, RED)
    assert close_to(await pixel(tab, frame, BLANK), WHITE)
    assert close_to(await pixel(tab, frame, FLAG), GREY)

    # The picture came through this browser's own WebCodecs VideoDecoder, with the stream's codec and size.
    state = await info(tab, frame)
    cfg = state["config"]
    assert cfg["codec"].startswith("avc1.") and (cfg["css_width"], cfg["css_height"]) == (CSS_W, CSS_H)
    support = await tab.eval(
        f"VideoDecoder.isConfigSupported({{codec: {json.dumps(cfg['codec'])}, codedWidth: {cfg['width']},"
        f" codedHeight: {cfg['height']}, optimizeForLatency: true}}).then((r) => r.supported)")
    assert support is True, f"Firefox's WebCodecs does not decode {cfg['codec']} {cfg['width']}x{cfg['height']}"
    assert state["drawn"] >= 1 and state["decoderErrors"] == 0, state
    assert await tab.eval(f"document.querySelector('canvas[data-frame=\"{frame}\"]').width") == 1280  # dpr 2
    view = f"document.querySelector('.fs-frame[data-frame=\"{frame}\"]')"
    assert await tab.eval(f"{view}.querySelector('.fs-state').textContent") == "live"
    print(f"{cfg['codec']} {cfg['width']}x{cfg['height']} in Firefox: box pixel {got}, {state['drawn']} drawn")


async def test_firefox_click_and_keys_on_the_canvas_reach_the_page(service: Service, tab: Tab) -> None:
    frame = service.create_frame(f"{service.pages}/viewer.html", width=CSS_W, height=CSS_H)  # red box again
    try:
        await service.wait_state_async(frame, "live")
        await open_viewer(tab, service.base, service.token("drive", subject="fox"), [frame])
        await wait_pixel(tab, frame, BOX, RED)
        view = f"document.querySelector('.fs-frame[data-frame=\"{frame}\"]')"
        assert await tab.eval(f"{view}.querySelector('.fs-mode').textContent") == "driving"

        # A real click on the canvas: the page turns its box green, and the decoded picture shows it.
        await click_css(tab, frame, BOX)
        got = await wait_pixel(tab, frame, BOX, GREEN, within=15)
        print(f"after the click: box pixel {got}")
        await tab.wait_for(f"{view}.querySelector('.fs-driver').textContent === 'driven by fox'")

        # Real key presses into the viewer (focused by the click): "b" blue, Shift+B yellow.
        await tab.keys("b")
        got = await wait_pixel(tab, frame, BOX, BLUE, within=15)
        print(f"after key b: box pixel {got}")
        await tab.actions({"type": "key", "id": "keyboard", "actions": [
            {"type": "keyDown", "value": SHIFT}, {"type": "keyDown", "value": "B"},
            {"type": "keyUp", "value": "B"}, {"type": "keyUp", "value": SHIFT}]})
        got = await wait_pixel(tab, frame, BOX, YELLOW, within=15)
        print(f"after Shift+B: box pixel {got}")
        # Over the page's field, the canvas shows the page's I-beam.
        await click_css(tab, frame, FIELD)
        await tab.wait_for(f"getComputedStyle({view}.querySelector('canvas')).cursor === 'text'", within=15)
        await tab.wait_for("window.framestream.client.inputInFlight === 0", within=15)
        assert (await info(tab, frame))["decoderErrors"] == 0
    finally:
        service.request("DELETE", f"/frames/{frame}")


async def test_firefox_files_dropped_on_the_canvas_reach_the_pages_drop_zone(service: Service, tab: Tab,
                                                                             pages: str) -> None:
    """Firefox's drag events on the driver's canvas, with a DataTransfer of files as a desktop's drag brings them
    (BiDi has no drag of files from outside): tests/pages/drop.html's zone reads them and its bar turns green."""
    frame = service.create_frame(f"{pages}/drop.html", width=CSS_W, height=CSS_H)
    try:
        await service.wait_state_async(frame, "live")
        await open_viewer(tab, service.base, service.token("drive", subject="fox"), [frame])
        bar = (320, 360)
        await wait_pixel(tab, frame, bar, (128, 128, 128))
        png = base64.b64encode(rgb_to_png(np.full((1, 1, 3), (40, 60, 220), np.uint8))).decode()
        fx, fy = 400 / CSS_W, 140 / CSS_H
        await tab.eval(f"""(() => {{
            const c = document.querySelector('canvas[data-frame="{frame}"]'), r = c.getBoundingClientRect();
            const at = {{clientX: r.left + r.width * {fx}, clientY: r.top + r.height * {fy}}};
            const files = new DataTransfer();
            files.items.add(new File(['hello from the desktop\\n'], 'hello.txt', {{type: 'text/plain'}}));
            const png = Uint8Array.from(atob('{png}'), (ch) => ch.charCodeAt(0));
            files.items.add(new File([png], 'blue.png', {{type: 'image/png'}}));
            for (const type of ['dragenter', 'dragover', 'drop']) {{
              c.dispatchEvent(new DragEvent(type, {{bubbles: true, cancelable: true, dataTransfer: files, ...at}}));
            }}
            return true;
        }})()""")
        got = await wait_pixel(tab, frame, bar, GREEN, within=15)
        print(f"after the drop in Firefox: bar pixel {got}")
    finally:
        service.request("DELETE", f"/frames/{frame}?purge=1")
