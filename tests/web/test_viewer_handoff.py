"""Handing a frame over in the web viewer (issue 27), in a real headless Chromium against the real service (Xvfb,
Chromium, libx264, WebSockets) with the Python agent client (`framestream.client`) driving.

The agent drives tests/pages/agent.html (CSS 640x400, dpr 1) and asks for help; the person, in the viewer page
served at `/`, sees who drives and the request, really clicks Take over (DevTools input), types into the page
through the viewer while the agent's freshly minted steps are refused, then types a note and clicks Hand back: the
agent's request returns the note and its next click changes the page, read from the viewer's decoded canvas. The
agent's pointer is drawn by the viewer over the canvas, never into it.

The viewer takes its tokens from a token function, as an app's page does: here the demo page's `dev/token`, answered
through DevTools (Fetch) with a token the test mints for the person. Take over needs a grant newer than the agent's
last step, so it must come fresh from that function at the click.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

from framestream.client import Client, SandboxKey, TakenOver, png_to_rgb
from framestream.tokens import mint_token
from tests.client.agent_page import BUTTON, FIELD, GREY, RED, near, typed_text
from tests.fixtures import service_fixture
from tests.support import TEST_SECRET, Service, until
from tests.web.browser import JS_CANVAS_POINT, Page, open_viewer, wait_pixel
from tests.web.handoff_view import centre_of, in_view, shown, token_endpoint

# One event loop, one viewer browser for the module.
pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

HOLD_S = 30  # the person's hold outlasts every pause here: only the hand-back ends it
service = service_fixture(scope="module", env={"FRAMESTREAM_PERSON_HOLD_S": str(HOLD_S)}, timeout=60)

CSS_W, CSS_H = 640, 400
VIEWPORT_W = 560  # narrower than the frame: the canvas is shown scaled, so no mapping is 1:1 by chance
REASON = "a login needs your password"
NOTE = "logged in, over to you"
TYPED = "abcdefghij"
MARKER = (255, 212, 0)  # the viewer's pointer marker (web/lib/handoffui.js, #ffd400)
Message = dict[str, Any]


class Heard:
    """Every text message one client received, with when it arrived (perf_counter), and a way to wait for one."""

    def __init__(self, client: Client) -> None:
        self.messages: list[tuple[float, Message]] = []
        self._changed = asyncio.Event()
        self.stop = client.listen(self._heard)

    def _heard(self, message: Message) -> None:
        self.messages.append((time.perf_counter(), message))
        self._changed.set()

    async def first(self, match: Callable[[Message], bool], after: int = 0,
                    within: float = 20.0) -> tuple[float, Message]:
        async with asyncio.timeout(within):
            while True:
                for at, message in self.messages[after:]:
                    if match(message):
                        return at, message
                self._changed.clear()
                await self._changed.wait()


def control(driver: str | None, **fields: object) -> Callable[[Message], bool]:
    return lambda m: (m.get("type") == "control" and m.get("driver") == driver
                      and all(m.get(k) == v for k, v in fields.items()))


def person_token(frame: str) -> str:
    """A drive token for the person (alice), minted now: newer than every agent step before it."""
    return mint_token(TEST_SECRET, role="drive", sandbox_id="test", frame=frame, subject="alice")


@contextlib.asynccontextmanager
async def narrow_viewport(page: Page, width: int) -> AsyncIterator[None]:
    await page.send("Emulation.setDeviceMetricsOverride",
                    {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": False})
    try:
        yield
    finally:
        await page.send("Emulation.clearDeviceMetricsOverride")


async def click_css(page: Page, frame: str, css: tuple[int, int]) -> None:
    """A real click on the frame's canvas at its CSS point."""
    x, y = await page.eval(JS_CANVAS_POINT.format(frame=frame, fx=css[0] / CSS_W, fy=css[1] / CSS_H))
    await page.click(x, y)


async def type_keys(page: Page, text: str) -> None:
    """Real key presses in the viewer's browser, one per character."""
    for ch in text:
        code = f"Key{ch.upper()}" if ch.isalpha() else ""
        await page.key(ch, code, ch, ord(ch.upper()) if ch.isalpha() else 0)


async def screen_pixel(page: Page, x: float, y: float) -> tuple[int, int, int]:
    """What the viewer's screen shows at (x, y): overlays included, unlike the canvas's own pixels."""
    shot = await page.send("Page.captureScreenshot", {
        "format": "png", "clip": {"x": x, "y": y, "width": 1, "height": 1, "scale": 1}})
    r, g, b = (int(v) for v in png_to_rgb(base64.b64decode(shot["data"]))[0, 0])
    return r, g, b


async def shown_marker(page: Page, frame: str, action: str, css: tuple[int, int]) -> dict[str, Any]:
    """Once the view shows the agent's pointer for `action` (not yet fading): the marker's centre on the page, where
    the frame's CSS point `css` is on the displayed canvas, the canvas's own pixel there, and whether a pointer
    there would reach the canvas through the marker."""
    found: dict[str, Any] = await page.wait_for(f"""(() => {{
      const m = {in_view(frame, '.fs-pointer')};
      if (m.hidden || m.dataset.action !== {json.dumps(action)} || 'fading' in m.dataset) return null;
      const c = document.querySelector('canvas[data-frame="{frame}"]');
      const mr = m.getBoundingClientRect(), cr = c.getBoundingClientRect();
      const x = mr.left + mr.width / 2, y = mr.top + mr.height / 2;
      return {{ x, y, want: [cr.left + {css[0]} * cr.width / {CSS_W}, cr.top + {css[1]} * cr.height / {CSS_H}],
                canvas: fsPixel({json.dumps(frame)}, {css[0]}, {css[1]}),
                hit: document.elementFromPoint(x, y) === c }}; }})()""")
    return found


async def page_typed(client: Client, frame: str, text: str) -> None:
    """Until the frame's own (lossless) picture shows `text` in agent.html's field."""
    async def probe() -> bool:
        return typed_text(png_to_rgb((await client.screenshot(frame)).png)) == text
    await until(f"{text!r} typed in the page", probe, within=20)


@pytest.fixture
def frame(service: Service) -> Iterator[str]:
    """A fresh live frame of agent.html (CSS 640x400, dpr 1), purged after the test."""
    frame_id = service.create_frame(f"{service.pages}/agent.html", width=CSS_W, height=CSS_H, dpr=1)
    service.wait_state(frame_id, "live")
    yield frame_id
    service.request("DELETE", f"/frames/{frame_id}?purge=1")


async def test_the_person_takes_over_in_the_viewer_holds_and_hands_back_with_a_note(
        service: Service, page: Page, frame: str, key: SandboxKey) -> None:
    watcher_token = service.token("view", frame=frame, subject="watcher")
    async with token_endpoint(page, lambda: person_token(frame)) as minted, narrow_viewport(page, VIEWPORT_W), \
            await Client.connect(service.base, key=key) as agent, \
            await Client.connect(service.base, token=watcher_token) as watcher, contextlib.AsyncExitStack() as stack:
        agent_heard, watcher_heard = Heard(agent), Heard(watcher)
        agent_view = await agent.watch(frame)
        await watcher.watch(frame)
        await agent_view.picture_after(0, where=lambda p: near(p.pixel(*BUTTON), GREY))
        await open_viewer(page, service.base, person_token(frame), [frame])
        await wait_pixel(page, frame, BUTTON, GREY)
        assert minted, "the viewer did not take its tokens from its token function"
        scale = await page.eval(f"document.querySelector('canvas[data-frame=\"{frame}\"]')"
                                f".getBoundingClientRect().width / {CSS_W}")
        assert 0.5 < scale < 0.95, f"the canvas is shown at {scale:.3f} of the frame's size"

        # The agent drives (after the page got its tokens); the viewer says so and offers Take over.
        await agent.move(frame, 20, 20)
        await page.wait_for(f"{in_view(frame, '.fs-kind')}.textContent === 'agent'"
                            f" && {in_view(frame, '.fs-driver')}.textContent === 'driven by agent'"
                            f" && {shown(in_view(frame, '.fs-take-over'))}")
        assert await page.eval(f"{in_view(frame, '.fs-hand-back')}.hidden")

        # The agent asks for help: the viewer shows the reason, who asked, and Take over.
        asking = asyncio.create_task(agent.request_help(frame, REASON, timeout=120))
        stack.callback(asking.cancel)
        await page.wait_for(f"!{in_view(frame, '.fs-help')}.hidden")
        banner = await page.eval(f"""(() => {{ const b = {in_view(frame, '.fs-help')};
          return {{ reason: b.querySelector('.fs-help-reason').textContent,
                    subject: b.querySelector('.fs-help-subject').textContent, open: b.dataset.open }}; }})()""")
        assert banner == {"reason": REASON, "subject": "agent", "open": "true"}, banner
        # A person on another tab sees it in the tab strip: the page's title says who asks.
        assert await page.eval("document.title") == "(1) agent asks for help · framestream"
        await agent.move(frame, 30, 30)  # one more agent step: the page's token is older than the driving grant

        # The person clicks the banner's Take over: every watcher hears a person holds it (the pointer is on the
        # button first, as a person's is). How soon, against the issue's 100 ms, is `make bench`'s (benchmarks/
        # agent.py, the viewer's Take over); here it is printed, never asserted: a busy machine may take longer.
        x, y = await centre_of(page, in_view(frame, ".fs-help-take-over"))
        await page.mouse("mouseMoved", x, y)
        marks = len(agent_heard.messages), len(watcher_heard.messages)
        tokens_before = len(minted)
        clicked = time.perf_counter()
        await page.mouse("mousePressed", x, y, button="left", click_count=1, buttons=1)
        await page.mouse("mouseReleased", x, y, button="left", click_count=1, buttons=0)
        person = control("alice", kind="person", held=True, you=False)
        try:
            (agent_at, taken), (watcher_at, _) = await asyncio.gather(
                agent_heard.first(person, after=marks[0], within=20), watcher_heard.first(person, after=marks[1],
                                                                                         within=20))
        except TimeoutError:
            status = await page.eval(f"{in_view(frame, '.fs-handoff-status')}.textContent")
            raise AssertionError(f"no control (kind person) after Take over; the viewer says {status!r}") from None
        latency_ms = {"agent": (agent_at - clicked) * 1000, "watcher": (watcher_at - clicked) * 1000}
        print(f"Take over clicked -> control kind person: agent {latency_ms['agent']:.1f} ms,"
              f" view-only watcher {latency_ms['watcher']:.1f} ms")
        assert len(minted) > tokens_before, "Take over did not ask the token function for a fresh grant"
        assert isinstance(taken["since_us"], int)
        await page.wait_for(f"{in_view(frame, '.fs-kind')}.textContent === 'you · holding'"
                            f" && {shown(in_view(frame, '.fs-hand-back-button'))}"
                            f" && {in_view(frame, '.fs-take-over')}.hidden"
                            f" && {in_view(frame, '.fs-help-take-over')}.hidden")

        # The person types into the page through the viewer; the agent's next ten fresh steps are refused.
        await click_css(page, frame, FIELD)
        for letter in TYPED:
            with pytest.raises(TakenOver) as refused:
                await agent.click(frame, *BUTTON)
            assert "alice" in refused.value.message and refused.value.frame == frame
            await type_keys(page, letter)
        await page.wait_for("window.framestream.client.inputInFlight === 0", within=15)
        await page_typed(watcher, frame, TYPED)
        assert near(tuple(png_to_rgb((await watcher.screenshot(frame)).png)[BUTTON[1], BUTTON[0]]), GREY)
        assert not asking.done()

        # The person writes a note and clicks Hand back: the agent's request for help returns it.
        await page.click(*await centre_of(page, in_view(frame, ".fs-note")))
        await type_keys(page, NOTE)
        assert await page.eval(f"{in_view(frame, '.fs-note')}.value") == NOTE
        await page.click(*await centre_of(page, in_view(frame, ".fs-hand-back-button")))
        assert await asyncio.wait_for(asking, 20) == NOTE
        await watcher_heard.first(control(None, kind=None, held=False, note=NOTE))
        await page.wait_for(f"{in_view(frame, '.fs-help')}.dataset.open === 'false'"
                            f" && {in_view(frame, '.fs-help-note')}.textContent.startsWith('Handed back by alice')"
                            f" && {shown(in_view(frame, '.fs-take-over'))}")
        assert await page.eval("document.title") == "framestream"  # answered: nobody asks any more

        # The agent's next click changes the page, in the viewer's decoded canvas.
        mark = len(watcher_heard.messages)
        await agent.click(frame, *BUTTON)
        await wait_pixel(page, frame, BUTTON, RED)
        await watcher_heard.first(control("agent", kind="agent"), after=mark)

        # Where it acted is drawn over the canvas, at the CSS point mapped as input maps, never into the picture.
        marker = await shown_marker(page, frame, "click", BUTTON)
        on_screen = await screen_pixel(page, marker["x"], marker["y"])
        print(f"agent pointer at ({marker['x']:.1f}, {marker['y']:.1f}), wanted {marker['want']};"
              f" canvas {marker['canvas']}, screen {on_screen}")
        assert abs(marker["x"] - marker["want"][0]) <= 1 and abs(marker["y"] - marker["want"][1]) <= 1, marker
        assert near(tuple(marker["canvas"]), RED), f"the canvas under the marker is {marker['canvas']}"
        assert marker["hit"], "the marker takes pointer events meant for the canvas"
        assert near(on_screen, MARKER), f"the marker is not on screen: {on_screen}"
        agent_shot = png_to_rgb((await agent.screenshot(frame)).png)
        assert near(tuple(agent_shot[BUTTON[1], BUTTON[0]]), RED), "the agent's own picture is not the page's"


async def test_a_view_only_viewer_sees_who_drives_and_the_request_but_gets_no_buttons(
        service: Service, page: Page, frame: str, key: SandboxKey) -> None:
    async with await Client.connect(service.base, key=key) as agent:
        await open_viewer(page, service.base, service.token("view", frame=frame, subject="bob"), [frame])
        await wait_pixel(page, frame, BUTTON, GREY)
        await agent.move(frame, 20, 20)
        asked = await asyncio.gather(agent.request_help(frame, REASON, timeout=3), page.wait_for(f"""(() => {{
          const b = {in_view(frame, '.fs-help')};
          return !b.hidden && {in_view(frame, '.fs-kind')}.textContent === 'agent' && {{
            reason: b.querySelector('.fs-help-reason').textContent,
            buttons: [...{in_view(frame, '.fs-bar')}.querySelectorAll('button'), ...b.querySelectorAll('button')]
              .filter((e) => e.getClientRects().length).map((e) => e.textContent) }}; }})()"""))
        # Only the view's own buttons: no Take over, no answer to the request.
        assert asked[1] == {"reason": REASON, "buttons": ["stats", "full screen"]}, asked[1]
        # Nobody came: the agent hears so, and the banner says it.
        assert asked[0] is None
        await page.wait_for(f"{in_view(frame, '.fs-help-note')}.textContent === 'Nobody took over in time'"
                            f" && {in_view(frame, '.fs-help')}.dataset.open === 'false'")
