"""The viewer (web/) through a frame resized (`PATCH /frames/{id}`), in headless Chromium and in Firefox ESR: its
WebCodecs decoder takes the stream of the new size after the new `video-config`, the canvas takes the new size, and
the page shows laid out at it (a colour in each corner of its viewport), with no decoder error. The frame launches at
640x400 CSS and dpr 2: 480x300 at dpr 2 is taken in place, 800x500 at dpr 1 relaunches the browser (another dpr),
and 640x400 at dpr 1 is in place again."""

from __future__ import annotations

import asyncio

import pytest

from tests.fixtures import service_fixture
from tests.support import Service
from tests.web.browser import BrowserTab, Page, info, open_viewer, wait_pixel
from tests.web.firefox import Tab

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

service = service_fixture("resizable.html@640x400", scope="module", timeout=60)

TOP_LEFT, TOP_RIGHT, BOTTOM_LEFT, BOTTOM_RIGHT = (200, 40, 40), (30, 180, 60), (30, 60, 220), (240, 200, 0)


async def shows_page_at(tab: BrowserTab, frame: str, css: tuple[int, int], dpr: int) -> None:
    """The canvas is the frame's new size and shows the page's four corners at it."""
    w, h = css
    for at, colour in (((6, 6), TOP_LEFT), ((w - 6, 6), TOP_RIGHT), ((6, h - 6), BOTTOM_LEFT),
                       ((w - 6, h - 6), BOTTOM_RIGHT)):
        await wait_pixel(tab, frame, at, colour)
    state = await info(tab, frame)
    config = state["config"]
    assert (config["width"], config["height"], config["css_width"], config["css_height"]) == \
        (w * dpr, h * dpr, w, h), config
    assert state["decoderErrors"] == 0, state
    canvas = f"document.querySelector('canvas[data-frame=\"{frame}\"]')"
    assert await tab.eval(f"[{canvas}.width, {canvas}.height]") == [w * dpr, h * dpr]


async def resized_viewer(service: Service, tab: BrowserTab) -> None:
    frame = service.frame_ids()[0]
    status, answer = await asyncio.to_thread(service.request, "PATCH", f"/frames/{frame}",
                                             {"width": 640, "height": 400})  # as launched (the module's other test)
    assert status == 200, answer
    await open_viewer(tab, service.base, service.token("view"), [frame])
    await shows_page_at(tab, frame, (640, 400), 2)
    for body, dpr in (({"width": 480, "height": 300}, 2), ({"width": 800, "height": 500, "dpr": 1}, 1),
                      ({"width": 640, "height": 400, "dpr": 1}, 1)):
        status, answer = await asyncio.to_thread(service.request, "PATCH", f"/frames/{frame}", body)
        assert status == 200, answer
        await shows_page_at(tab, frame, (int(body["width"]), int(body["height"])), dpr)


async def test_chromium_shows_a_frame_resized_in_place_at_its_new_size(service: Service, page: Page) -> None:
    await resized_viewer(service, page)


async def test_firefox_shows_a_frame_resized_in_place_at_its_new_size(service: Service, tab: Tab) -> None:
    await resized_viewer(service, tab)
