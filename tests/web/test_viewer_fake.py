"""The viewer in a real headless Chromium against a scripted stand-in service (fake_service.py).

The stand-in lets these tests cause what the real service does only now and then: sequence gaps, state
changes, dropped connections, control taken back. Pixels are read back from the viewer's canvas; the colours
are those of the fake's box after H.264 (tolerance 24 per channel). The real service: test_viewer_browser.py.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from tests.web.browser import JS_CANVAS_POINT, JS_PIXEL, Browser, Page, chrome_available, close_to
from tests.web.fake_service import FakeFrame, FakeService, fake_token

pytestmark = pytest.mark.skipif(not chrome_available(),
                                reason="needs Chromium (/usr/bin/chromium or CHROME_PATH)")

BLUE = (30, 90, 220)
GREEN = (20, 170, 60)
RED = (210, 30, 30)
WHITE = (255, 255, 255)
MAGENTA = (255, 0, 255)
# The fake's box is at CSS (40, 40) 120x80 in a 320x200 frame, dpr 2: its centre is device pixel (200, 160).
BOX_CENTRE = (200, 160)
OUTSIDE = (20, 20)


@dataclass
class Env:
    fake: FakeService
    base: str
    page: Page

    async def open(self, fragment: str) -> None:
        # via about:blank: a navigation that only changes the fragment would not reload the page
        await self.page.navigate("about:blank")
        await self.page.wait_for("location.href === 'about:blank'")
        await self.page.navigate(f"{self.base}/#{fragment}")
        await self.page.wait_for("window.framestream && window.framestream.client !== undefined")

    async def pixel(self, frame: str, x: int, y: int) -> list[int] | None:
        return await self.page.eval(JS_PIXEL.format(frame=frame, x=x, y=y))  # type: ignore[no-any-return]

    async def wait_pixel(self, frame: str, xy: tuple[int, int], rgb: tuple[int, int, int],
                         within: float = 10) -> None:
        js = JS_PIXEL.format(frame=frame, x=xy[0], y=xy[1])
        want = json.dumps(list(rgb))
        await self.page.wait_for(
            f"(() => {{ const p = {js}; const w = {want};"
            " return p && p.every((v, i) => Math.abs(v - w[i]) <= 24) ? p : null; })()",
            within=within,
        )

    async def info(self, frame: str) -> dict:  # type: ignore[type-arg]
        return await self.page.eval(  # type: ignore[no-any-return]
            f"JSON.parse(JSON.stringify(window.framestream.client.info({json.dumps(frame)})))"
        )

    async def canvas_point(self, frame: str, fx: float, fy: float) -> tuple[float, float]:
        x, y = await self.page.eval(JS_CANVAS_POINT.format(frame=frame, fx=fx, fy=fy))
        return x, y


@pytest.fixture
async def env() -> AsyncIterator[Env]:
    fake = FakeService([FakeFrame("f1"), FakeFrame("f2", color=(240, 200, 0))])
    base = await fake.start()
    try:
        async with Browser() as browser:
            page = await browser.page()
            yield Env(fake, base, page)
            assert not page.exceptions, page.exceptions
    finally:
        await fake.stop()


async def test_view_token_draws_the_box_at_device_size_and_says_view_only(env: Env) -> None:
    await env.open(f"token={fake_token('view')}&frame=f1")
    await env.wait_pixel("f1", BOX_CENTRE, BLUE)
    assert close_to(await env.pixel("f1", *OUTSIDE), WHITE)
    canvas = await env.page.eval(
        "(() => { const c = document.querySelector('canvas[data-frame=f1]');"
        " return [c.width, c.height, c.style.width, c.getBoundingClientRect().width]; })()"
    )
    assert canvas == [640, 400, "320px", 320]  # device pixels inside, CSS size outside
    texts = await env.page.eval(
        "(() => { const f = document.querySelector('.fs-frame[data-frame=f1]');"
        " return [f.querySelector('.fs-mode').textContent, f.querySelector('.fs-overlay').hidden,"
        " f.querySelector('.fs-state').textContent, f.querySelector('.fs-driver').textContent]; })()"
    )
    assert texts == ["view only", True, "live", "nobody drives"]
    # only frame f1 was named: f2 is not shown
    assert await env.page.eval("document.querySelectorAll('canvas[data-frame]').length") == 1
    # a view token sends no input: click the box, nothing reaches the service, nothing changes
    x, y = await env.canvas_point("f1", 0.3125, 0.4)
    await env.page.click(x, y)
    await env.page.key("r", "KeyR", "r", 82)
    await env.page.eval("new Promise((r) => setTimeout(r, 300))")
    assert env.fake.inputs == []
    assert close_to(await env.pixel("f1", *BOX_CENTRE), BLUE)


async def test_no_frame_in_fragment_shows_every_frame(env: Env) -> None:
    await env.open(f"token={fake_token('view')}")
    await env.wait_pixel("f1", BOX_CENTRE, BLUE)
    await env.wait_pixel("f2", BOX_CENTRE, (240, 200, 0))


async def test_sequence_gap_drops_deltas_until_a_keyframe(env: Env) -> None:
    await env.open(f"token={fake_token('view')}&frame=f1")
    await env.wait_pixel("f1", BOX_CENTRE, BLUE)
    env.fake.ignore_keyframe_requests = True
    before = len(env.fake.keyframe_requests)
    env.fake.frames["f1"].color = RED
    await env.fake.push("f1", skip=2)  # two pictures lost on the way
    await env.page.wait_for("window.framestream.client.info('f1').gaps === 1")
    await env.fake.push("f1")  # follows the lost one: still not decodable
    await env.page.eval("new Promise((r) => setTimeout(r, 300))")
    assert len(env.fake.keyframe_requests) == before + 1  # asked once, not per dropped picture
    assert close_to(await env.pixel("f1", *BOX_CENTRE), BLUE), "a delta after a gap must not be drawn"
    info = await env.info("f1")
    assert info["waitingForKeyframe"] is True
    assert info["dropped"] == 2
    await env.fake.push("f1", key=True)
    await env.wait_pixel("f1", BOX_CENTRE, RED)
    assert (await env.info("f1"))["waitingForKeyframe"] is False


async def test_decoder_error_asks_for_a_keyframe_and_the_picture_comes_back(env: Env) -> None:
    await env.open(f"token={fake_token('view')}&frame=f1")
    await env.wait_pixel("f1", BOX_CENTRE, BLUE)
    before = len(env.fake.keyframe_requests)
    await env.page.eval("window.framestream.client._debugCorrupt('f1', {wipe: '#ff00ff'})")
    assert close_to(await env.pixel("f1", *BOX_CENTRE), MAGENTA)
    await env.wait_pixel("f1", BOX_CENTRE, BLUE)
    await env.wait_pixel("f1", OUTSIDE, WHITE)
    info = await env.info("f1")
    assert info["decoderErrors"] >= 1
    assert len(env.fake.keyframe_requests) > before
    # and the stream goes on after recovery: a delta is drawn
    env.fake.frames["f1"].color = GREEN
    await env.fake.push("f1")
    await env.wait_pixel("f1", BOX_CENTRE, GREEN)


async def test_paused_closed_error_show_over_the_last_picture(env: Env) -> None:
    await env.open(f"token={fake_token('view')}&frame=f1")
    await env.wait_pixel("f1", BOX_CENTRE, BLUE)
    overlay = ("(() => { const o = document.querySelector('.fs-frame[data-frame=f1] .fs-overlay');"
               " return o.hidden ? null : o.textContent; })()")
    for state, text in [("paused", "Paused"), ("launching", "Starting"), ("closed", "Closed"),
                        ("error", "Error: chrome crashed")]:
        await env.fake.set_state("f1", state, message="chrome crashed" if state == "error" else None)
        got = await env.page.wait_for(f"(({overlay}) || '').startsWith({json.dumps(text)}) && {overlay}")
        assert got.startswith(text), got
        # the overlay is HTML over the canvas: the last picture is still there, not a black box
        assert close_to(await env.pixel("f1", *BOX_CENTRE), BLUE)
    await env.fake.set_state("f1", "live")
    await env.page.wait_for(f"{overlay} === null")


async def test_lost_connection_reconnects_and_watches_again(env: Env) -> None:
    await env.open(f"token={fake_token('view')}&frame=f1")
    await env.wait_pixel("f1", BOX_CENTRE, BLUE)
    drawn = (await env.info("f1"))["drawn"]
    env.fake.frames["f1"].color = GREEN  # the picture after the reconnect differs
    await env.fake.drop_connections()
    await env.page.wait_for("window.framestream.client.connections >= 2", within=15)
    await env.wait_pixel("f1", BOX_CENTRE, GREEN)
    assert env.fake.hellos == 2
    assert env.fake.watches == ["f1", "f1"]
    assert (await env.info("f1"))["drawn"] > drawn
    conn = await env.page.eval("document.getElementById('conn').textContent")
    assert conn == "connected"


async def test_refused_token_does_not_reconnect(env: Env) -> None:
    await env.open("token=not-a-token&frame=f1")
    await env.page.wait_for("window.framestream.client.state === 'closed'")
    msg = await env.page.eval("document.getElementById('page-msg').textContent")
    assert "refused" in msg and "4401" in msg
    await env.page.eval("new Promise((r) => setTimeout(r, 600))")
    assert await env.page.eval("window.framestream.client.connections") == 1


async def test_drive_grant_sends_mapped_input_and_sees_the_result(env: Env) -> None:
    token = fake_token("drive", sub="ana")
    await env.open(f"token={token}&frame=f1")
    await env.wait_pixel("f1", BOX_CENTRE, BLUE)
    assert await env.page.eval("document.querySelector('.fs-frame[data-frame=f1] .fs-mode').textContent") \
        == "driving"
    # Show the canvas at half its size: a click in the box's centre must still land at CSS (100, 80).
    await env.page.eval("document.querySelector('canvas[data-frame=f1]').style.width = '160px'")
    x, y = await env.canvas_point("f1", 100 / 320, 80 / 200)
    await env.page.click(x, y)
    await env.wait_pixel("f1", BOX_CENTRE, GREEN)
    downs = [e for e in env.fake.inputs if e["kind"] == "mouse" and e["action"] == "down"]
    assert len(downs) == 1
    d = downs[0]
    assert (d["button"], d["buttons"], d["clicks"], d["modifiers"]) == ("left", 1, 1, 0)
    # one viewer pixel is two frame pixels at this size, and CDP rounds the click to whole pixels
    assert abs(d["x"] - 100) <= 2.5 and abs(d["y"] - 80) <= 2.5, d
    ups = [e for e in env.fake.inputs if e["kind"] == "mouse" and e["action"] == "up"]
    assert len(ups) == 1 and ups[0]["buttons"] == 0

    # keyboard goes to the frame (the click gave it focus), with DOM key and code
    await env.page.key("r", "KeyR", "r", 82)
    await env.wait_pixel("f1", BOX_CENTRE, RED)
    keys = [e for e in env.fake.inputs if e["kind"] == "key"]
    assert keys[:2] == [
        {"kind": "key", "action": "down", "key": "r", "code": "KeyR", "modifiers": 0},
        {"kind": "key", "action": "up", "key": "r", "code": "KeyR", "modifiers": 0},
    ]
    # modifiers: Shift+Ctrl held while pressing A
    await env.page.send("Input.dispatchKeyEvent", {"type": "keyDown", "key": "A", "code": "KeyA",
                                                   "modifiers": 10, "windowsVirtualKeyCode": 65})
    await env.page.wait_for("window.framestream.client.inputInFlight === 0")
    a = [e for e in env.fake.inputs if e.get("key") == "A"]
    assert a and a[0]["modifiers"] == 10
    # A is still down: losing focus must release it (no stuck keys)
    await env.page.eval("document.activeElement.blur()")
    await env.page.wait_for("window.framestream.client.inputInFlight === 0")
    assert env.fake.inputs[-1] == {"kind": "key", "action": "up", "key": "A", "code": "KeyA", "modifiers": 0}

    # double click: the second down carries clicks 2
    await env.page.mouse("mousePressed", x, y, button="left", click_count=1, buttons=1)
    await env.page.mouse("mouseReleased", x, y, button="left", click_count=1, buttons=0)
    await env.page.mouse("mousePressed", x, y, button="left", click_count=2, buttons=1)
    await env.page.mouse("mouseReleased", x, y, button="left", click_count=2, buttons=0)
    await env.page.wait_for("window.framestream.client.inputInFlight === 0")
    downs = [e for e in env.fake.inputs if e["kind"] == "mouse" and e["action"] == "down"]
    assert [e["clicks"] for e in downs[-2:]] == [1, 2]

    # moves are coalesced and carry the held button while dragging, clamped into the frame
    await env.page.mouse("mousePressed", x, y, button="right", click_count=1, buttons=2)
    for i in range(20):
        await env.page.mouse("mouseMoved", x + i * 40, y, button="right", buttons=2)
    await env.page.mouse("mouseReleased", x + 800, y, button="right", click_count=1, buttons=0)
    await env.page.wait_for("window.framestream.client.inputInFlight === 0")
    moves = [e for e in env.fake.inputs if e["kind"] == "mouse" and e["action"] == "move"]
    assert moves and moves[-1]["button"] == "right" and moves[-1]["buttons"] == 2
    assert max(m["x"] for m in moves) <= 319.99
    assert env.fake.inputs[-1]["action"] == "up" and env.fake.inputs[-1]["x"] == 319.99

    # wheel
    await env.page.send("Input.dispatchMouseEvent", {"type": "mouseWheel", "x": x, "y": y, "deltaX": 0,
                                                     "deltaY": 120})
    await env.page.wait_for("window.framestream.client.inputInFlight === 0")
    wheels = [e for e in env.fake.inputs if e["kind"] == "wheel"]
    assert wheels and wheels[-1]["dy"] == 120 and abs(wheels[-1]["x"] - 100) <= 2.5

    # text (IME / paste path)
    await env.page.send("Input.insertText", {"text": "héllo"})
    await env.page.wait_for("window.framestream.client.inputInFlight === 0")
    assert {"kind": "text", "text": "héllo"} in env.fake.inputs

    # every input carried the grant and increasing seqs (checked by the fake acking them all)
    assert await env.page.eval("window.framestream.client.seq") >= 10


async def test_control_taken_back_is_shown(env: Env) -> None:
    await env.open(f"token={fake_token('drive', sub='ana')}&frame=f1")
    await env.wait_pixel("f1", BOX_CENTRE, BLUE)
    await env.fake.send_control("f1", "bob", you=False)
    mode = "document.querySelector('.fs-frame[data-frame=f1] .fs-mode').textContent"
    await env.page.wait_for(f"{mode} === 'control taken back'")
    toast = await env.page.eval("document.querySelector('.fs-frame[data-frame=f1] .fs-toast').textContent")
    assert toast == "Control taken back by bob"
    assert await env.page.eval("document.querySelector('.fs-frame[data-frame=f1] .fs-driver').textContent") \
        == "driven by bob"
    await env.fake.send_control("f1", "ana", you=True)
    await env.page.wait_for(f"{mode} === 'driving'")


async def test_superseded_error_is_shown(env: Env) -> None:
    await env.open(f"token={fake_token('drive', sub='ana', iat=1000.0)}&frame=f1")
    await env.wait_pixel("f1", BOX_CENTRE, BLUE)
    env.fake.frames["f1"].driver, env.fake.frames["f1"].driver_iat = "bob", 2000.0
    x, y = await env.canvas_point("f1", 0.5, 0.5)
    await env.page.click(x, y)
    await env.page.wait_for(
        "document.querySelector('.fs-frame[data-frame=f1] .fs-toast').textContent.startsWith('Control taken')"
    )
    assert await env.page.eval("document.querySelector('.fs-frame[data-frame=f1] .fs-mode').textContent") \
        == "control taken back"


async def test_stats_overlay_toggles_with_s_and_shows_numbers(env: Env) -> None:
    await env.open(f"token={fake_token('view')}&frame=f1")
    await env.wait_pixel("f1", BOX_CENTRE, BLUE)
    stats = "document.querySelector('.fs-frame[data-frame=f1] .fs-stats')"
    assert await env.page.eval(f"{stats}.hidden") is True
    await env.page.key("s", "KeyS", "s", 83)
    assert await env.page.eval(f"{stats}.hidden") is False
    for _ in range(5):
        await env.fake.push("f1")
    text = await env.page.wait_for(f"{stats}.textContent.includes('latency') && {stats}.textContent")
    assert "fps" in text and "kbit/s" in text and "decode" in text and "640x400" in text
    snap = (await env.info("f1"))["stats"]
    assert snap["fps"] > 0 and snap["kbps"] > 0
    assert 0 <= snap["latencyMs"] < 1000  # same clock: capture to display within a second
    await env.page.key("s", "KeyS", "s", 83)
    assert await env.page.eval(f"{stats}.hidden") is True


async def test_go_live_form_follows_shared_frames(env: Env) -> None:
    await env.open(f"token={fake_token('view')}&frame=f1")
    await env.page.wait_for("window.framestream.config !== null")
    assert await env.page.eval("document.getElementById('golive').hidden") is False
    env.fake.shared_frames = False
    await env.open(f"token={fake_token('view')}&frame=f1&x=1")
    await env.page.wait_for("window.framestream.config !== null")
    assert await env.page.eval("document.getElementById('golive').hidden") is True


async def test_a_picture_lost_on_the_way_is_noticed_by_its_sequence(env: Env) -> None:
    await env.open(f"token={fake_token('view')}&frame=f1")
    await env.wait_pixel("f1", BOX_CENTRE, BLUE)
    before = len(env.fake.keyframe_requests)
    await env.page.eval("window.framestream.client._debugDropNext('f1', 1)")
    env.fake.frames["f1"].color = GREEN
    await env.fake.push("f1")  # lost (the viewer throws it away)
    env.fake.frames["f1"].color = RED
    await env.fake.push("f1")  # arrives, but follows a picture the decoder never saw: gap, keyframe asked
    await env.wait_pixel("f1", BOX_CENTRE, RED)  # the fake answers the request with an IDR
    assert len(env.fake.keyframe_requests) == before + 1
    assert (await env.info("f1"))["gaps"] == 1
