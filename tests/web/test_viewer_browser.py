"""The viewer (web/) against the real service, in a real headless Chromium.

`framestream serve --frame <page>@640x400` runs the test page tests/web/pages/viewer.html in its own Chromium
on Xvfb; the viewer page (served by the service at `/`) decodes its H.264 with WebCodecs into a canvas, and
the test reads the canvas pixels back. Colours are the page's after H.264 (tolerance 24 per channel).
Frame CSS 640x400 at dpr 2: CSS (x, y) is device pixel (2x, 2y) in the canvas.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.fixtures import service_fixture
from tests.support import Service
from tests.web.browser import (
    JS_CANVAS_POINT,
    JS_CONTAINED_POINT,
    Page,
    close_to,
    info,
    open_viewer,
    pixel,
    wait_pixel,
)
from tests.web.viewer_page import (
    BLANK,
    BLUE,
    BOX,
    CSS_H,
    CSS_W,
    FIELD,
    FLAG,
    GREEN,
    GREY,
    MAGENTA,
    PURPLE,
    RED,
    WHITE,
    YELLOW,
)

# One event loop, one viewer browser for the module (a fresh Chromium per test costs ~1.5 s each).
pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]



service = service_fixture(f"viewer.html@{CSS_W}x{CSS_H}", scope="module", pages="web_pages", timeout=60)


def new_frame(service: Service) -> str:
    """A fresh frame of the test page (so a test that drives it starts from red)."""
    status, body = service.request("POST", "/frames", {"url": f"{service.pages}/viewer.html",
                                                        "width": CSS_W, "height": CSS_H})
    assert status == 201, body
    return str(body["id"])


async def click_css(page: Page, frame: str, css: tuple[int, int]) -> None:
    x, y = await page.eval(JS_CANVAS_POINT.format(frame=frame, fx=css[0] / CSS_W, fy=css[1] / CSS_H))
    await page.click(x, y)


async def idle_input(page: Page) -> None:
    await page.wait_for("window.framestream.client.inputInFlight === 0", within=15)


async def test_view_token_shows_the_page_box_and_recovers_from_a_decoder_error(service: Service,
                                                                                page: Page) -> None:
    frame = service.frame_ids()[0]
    await open_viewer(page, service.base, service.token("view", subject="viewer-1"), [frame])
    got = await wait_pixel(page, frame, BOX, RED)
    assert close_to(await pixel(page, frame, BLANK), WHITE)
    assert close_to(await pixel(page, frame, FLAG), GREY)
    print(f"box pixel {got}, background {await pixel(page, frame, BLANK)}")
    canvas = await page.eval(
        f"(() => {{ const c = document.querySelector('canvas[data-frame=\"{frame}\"]');"
        " return [c.width, c.height, c.style.width, c.getBoundingClientRect().width]; })()"
    )
    assert canvas == [1280, 800, "640px", 640]
    view = f"document.querySelector('.fs-frame[data-frame=\"{frame}\"]')"
    assert await page.eval(f"{view}.querySelector('.fs-mode').textContent") == "view only"
    assert await page.eval(f"{view}.querySelector('.fs-overlay').hidden") is True
    assert await page.eval(f"{view}.querySelector('.fs-state').textContent") == "live"
    assert await page.eval(f"{view}.querySelector('.fs-driver').textContent") == "nobody drives"
    cfg = (await info(page, frame))["config"]
    assert cfg["codec"].startswith("avc1.") and (cfg["css_width"], cfg["css_height"]) == (CSS_W, CSS_H)

    # A view token sends no input: clicking the box (green if it arrived) and key "b" (blue) change nothing.
    await click_css(page, frame, BOX)
    await page.key("b", "KeyB", "b", 66)
    await page.eval("new Promise((r) => setTimeout(r, 500))")
    assert await page.eval("window.framestream.client.seq") == 0
    assert close_to(await pixel(page, frame, BOX), RED)
    assert service.get(f"/frames/{frame}")[1]["driver"] is None

    # Break the decoder (junk into it, canvas painted magenta): the viewer asks for a keyframe, the service
    # sends one although the page is still, and the picture comes back.
    before = await info(page, frame)
    await page.eval(f"window.framestream.client._debugCorrupt({json.dumps(frame)}, {{wipe: '#ff00ff'}})")
    assert close_to(await pixel(page, frame, BOX), MAGENTA)
    await wait_pixel(page, frame, BOX, RED, within=10)
    await wait_pixel(page, frame, BLANK, WHITE, within=5)
    after = await info(page, frame)
    assert after["decoderErrors"] == before["decoderErrors"] + 1
    assert after["keyframeRequests"] > before["keyframeRequests"]
    assert after["drawn"] > before["drawn"]

    # A dropped connection: reconnect, watch again, the picture stays and is refreshed.
    drawn = after["drawn"]
    await page.eval("window.framestream.client._debugDropConnection()")
    await page.wait_for("window.framestream.client.connections >= 2"
                        " && window.framestream.client.state === 'open'")
    await page.wait_for(f"window.framestream.client.info({json.dumps(frame)}).drawn > {drawn}")
    assert close_to(await pixel(page, frame, BOX), RED)


async def test_only_named_frames_are_shown_and_no_frame_in_the_fragment_shows_all(service: Service,
                                                                                  page: Page) -> None:
    first = service.frame_ids()[0]
    # a second frame, at dpr 1 (the page's box centre is canvas pixel (200, 100) there)
    status, body = service.request("POST", "/frames", {"url": f"{service.pages}/viewer.html",
                                                        "width": CSS_W, "height": CSS_H, "dpr": 1})
    assert status == 201, body
    second = str(body["id"])
    try:
        await open_viewer(page, service.base, service.token("view"), [first])
        await wait_pixel(page, first, BOX, RED)
        assert await page.eval("[...document.querySelectorAll('canvas[data-frame]')].map((c) => c.dataset.frame)") \
            == [first]
        await open_viewer(page, service.base, service.token("view"), [])
        await page.wait_for(f"document.querySelectorAll('canvas[data-frame]').length === {len(service.frame_ids())}")
        listed = await page.eval(
            "[...document.querySelectorAll('canvas[data-frame]')].map((c) => c.dataset.frame)")
        assert sorted(listed) == sorted(service.frame_ids()) and {first, second} <= set(listed)
        a = await wait_pixel(page, first, BOX, RED)
        b = await page.wait_for(
            f"(() => {{ const p = fsPixel({json.dumps(second)}, {BOX[0]}, {BOX[1]});"
            " return p && p.every((v, i) => Math.abs(v - [200, 40, 40][i]) <= 24) ? p : null; })()")
        assert (await info(page, second))["config"]["width"] == CSS_W  # dpr 1
        print(f"every frame: {listed}; boxes {a} (dpr 2) and {b} (dpr 1)")
    finally:
        service.request("DELETE", f"/frames/{second}")


async def test_drive_grant_clicks_types_and_sees_it_in_the_picture(service: Service, page: Page) -> None:
    frame = new_frame(service)
    await open_viewer(page, service.base, service.token("drive", subject="ana"), [frame])
    await wait_pixel(page, frame, BOX, RED)
    view = f"document.querySelector('.fs-frame[data-frame=\"{frame}\"]')"
    assert await page.eval(f"{view}.querySelector('.fs-mode').textContent") == "driving"
    cursor = f"getComputedStyle({view}.querySelector('canvas')).cursor"
    own = await page.eval(cursor)

    # Click: the page turns its box green, and the decoded picture shows it.
    await click_css(page, frame, BOX)
    got = await wait_pixel(page, frame, BOX, GREEN)
    print(f"after click: box pixel {got}")
    await idle_input(page)
    # The server reports who drives.
    await page.wait_for(f"{view}.querySelector('.fs-driver').textContent === 'driven by ana'")

    # Keys with DOM key and code: "b" turns the box blue; Shift+B (key "B", Shift in the mask) yellow.
    await page.key("b", "KeyB", "b", 66)
    got = await wait_pixel(page, frame, BOX, BLUE)
    print(f"after key b: box pixel {got}")
    await page.send("Input.dispatchKeyEvent", {"type": "keyDown", "key": "Shift", "code": "ShiftLeft",
                                               "modifiers": 8, "windowsVirtualKeyCode": 16})
    await page.send("Input.dispatchKeyEvent", {"type": "keyDown", "key": "B", "code": "KeyB", "text": "B",
                                               "modifiers": 8, "windowsVirtualKeyCode": 66})
    await page.send("Input.dispatchKeyEvent", {"type": "keyUp", "key": "B", "code": "KeyB", "modifiers": 8,
                                               "windowsVirtualKeyCode": 66})
    await page.send("Input.dispatchKeyEvent", {"type": "keyUp", "key": "Shift", "code": "ShiftLeft",
                                               "windowsVirtualKeyCode": 16})
    got = await wait_pixel(page, frame, BOX, YELLOW)
    print(f"after Shift+B: box pixel {got}")

    # Text: click the page's field, then text arrives as {"kind":"text"} (the IME/paste path).
    assert close_to(await pixel(page, frame, FLAG), GREY)
    await click_css(page, frame, FIELD)
    await idle_input(page)
    await page.wait_for(f"{cursor} === 'text'")  # the page's I-beam over its field, on the canvas
    await page.send("Input.insertText", {"text": "hi"})
    got = await wait_pixel(page, frame, FLAG, PURPLE)
    print(f"after text 'hi': flag pixel {got}")
    await idle_input(page)

    # Capture-to-display latency, same clock: the last picture was drawn within a second of its capture.
    last = (await info(page, frame))["lastDraw"]
    latency_ms = (last["drawnUs"] - last["captureUs"]) / 1000
    print(f"capture-to-display latency of the last picture: {latency_ms:.1f} ms")
    assert 0 <= latency_ms < 1000

    # Someone with a newer drive grant takes over (over HTTP): the viewer is told and shows it.
    await asyncio.sleep(0.01)  # a later iat
    newer = service.token("drive", subject="bob")
    status, body = service.request("POST", f"/frames/{frame}/input", {"seq": 1, "event": {
        "kind": "mouse", "action": "move", "x": 5, "y": 5, "button": "none", "buttons": 0, "clicks": 0,
        "modifiers": 0}}, token=newer)
    assert status == 200, body
    await page.wait_for(f"{view}.querySelector('.fs-mode').textContent === 'control taken back'")
    await page.wait_for(f"{view}.querySelector('.fs-driver').textContent === 'driven by bob'")
    assert await page.eval(cursor) == own != "text"  # not ours to drive: the canvas's own cursor again
    # Our next click is refused as superseded, shown, and does not reach the page.
    await click_css(page, frame, BOX)
    await page.wait_for(f"{view}.querySelector('.fs-toast').textContent.startsWith('Control taken back')")
    await page.eval("new Promise((r) => setTimeout(r, 500))")
    assert close_to(await pixel(page, frame, BOX), YELLOW)


async def test_go_live_form_makes_a_frame_live_and_shows_it(service: Service, page: Page) -> None:
    control = service.token("control", subject="operator")
    await open_viewer(page, service.base, service.token("view"), [service.frame_ids()[0]])
    await page.wait_for("window.framestream.config && !document.getElementById('golive').hidden")
    before = set(service.frame_ids())
    url = f"{service.pages}/viewer.html"
    await page.eval(f"""(() => {{
      const f = document.getElementById('golive').elements;
      f.url.value = {json.dumps(url)}; f.width.value = '320'; f.height.value = '200';
      f.control.value = {json.dumps(control)};
      document.getElementById('golive').requestSubmit();
    }})()""")
    await page.wait_for("document.querySelectorAll('canvas[data-frame]').length === 2")
    new = set(service.frame_ids()) - before
    assert len(new) == 1
    frame = new.pop()
    # 320x200 CSS at dpr 2: the box (CSS 100..300 x 50..150) is partly inside: CSS (200, 100) is.
    await wait_pixel(page, frame, BOX, RED)
    assert "#" in await page.eval("location.hash") and frame in await page.eval("location.hash")
    status, _ = service.request("DELETE", f"/frames/{frame}")
    assert status == 200


async def test_full_screen_fills_the_screen_keeps_the_aspect_and_sends_keys_and_clicks(service: Service,
                                                                                        page: Page) -> None:
    frame = new_frame(service)
    await open_viewer(page, service.base, service.token("drive", subject="ana"), [frame])
    await wait_pixel(page, frame, BOX, RED)
    view = f"document.querySelector('.fs-frame[data-frame=\"{frame}\"]')"
    button = f"{view}.querySelector('.fs-full-toggle')"
    assert await page.eval(f"{button}.textContent") == "full screen"
    # Count the Keyboard Lock calls (Chromium has the API; its effect, the browser's shortcuts going to the page,
    # has no browser UI to show in headless mode).
    await page.eval("(() => { const k = navigator.keyboard; window.fsLocks = [];"
                    " const lock = k.lock.bind(k), unlock = k.unlock.bind(k);"
                    " k.lock = (...a) => { window.fsLocks.push('lock'); return lock(...a); };"
                    " k.unlock = () => { window.fsLocks.push('unlock'); return unlock(); }; return true; })()")
    x, y = await page.eval(f"(() => {{ const r = {button}.getBoundingClientRect();"
                           " return [r.left + r.width / 2, r.top + r.height / 2]; })()")
    await page.click(x, y)  # a real click: full screen needs a user's gesture
    await page.wait_for(f"document.fullscreenElement === {view}")
    await page.wait_for(f"{button}.textContent === 'exit full screen'")
    screen = await page.eval("[window.innerWidth, window.innerHeight]")
    *_, left, top, width, height, fit = await page.eval(
        JS_CONTAINED_POINT.format(frame=frame, w=CSS_W, h=CSS_H, fx=0.5, fy=0.5))
    print(f"full screen {screen}: picture at ({left:.0f}, {top:.0f}) {width:.0f}x{height:.0f}, {fit}")
    assert fit == "contain"
    assert abs(width / height - CSS_W / CSS_H) < 0.01
    # As large as fits: the stage takes the screen but for the view's bar, and the picture fills its width or its
    # height (headless Chromium's screen is 800x600: here the picture is scaled down, on a large screen up).
    stage = await page.eval(f"(() => {{ const r = {view}.querySelector('.fs-stage').getBoundingClientRect();"
                            " return [r.width, r.height]; })()")
    assert stage[0] >= screen[0] - 12 and stage[1] >= screen[1] * 0.6, (stage, screen)
    assert abs(width - stage[0]) < 1 or abs(height - stage[1]) < 1, (width, height, stage)
    await page.wait_for("window.fsLocks.length === 1")

    # Keys go to the frame at once (its input took the focus from the button just pressed): "b" turns the box blue.
    await page.key("b", "KeyB", "b", 66)
    await wait_pixel(page, frame, BOX, BLUE)
    # A click lands where the picture shows the box, scaled and letterboxed: the box turns green.
    x, y, *_ = await page.eval(JS_CONTAINED_POINT.format(frame=frame, w=CSS_W, h=CSS_H, fx=BOX[0] / CSS_W,
                                                         fy=BOX[1] / CSS_H))
    await page.click(x, y)
    await wait_pixel(page, frame, BOX, GREEN)
    await idle_input(page)

    # Out again with the button: the canvas is back at the frame's CSS size, the keyboard unlocked.
    x, y = await page.eval(f"(() => {{ const r = {button}.getBoundingClientRect();"
                           " return [r.left + r.width / 2, r.top + r.height / 2]; })()")
    await page.click(x, y)
    await page.wait_for("document.fullscreenElement === null")
    await page.wait_for(f"{button}.textContent === 'full screen'")
    assert await page.eval(f"document.querySelector('canvas[data-frame=\"{frame}\"]').getBoundingClientRect()"
                           ".width") == CSS_W
    assert await page.eval("window.fsLocks") == ["lock", "unlock"]
