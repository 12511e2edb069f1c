"""The viewer left in a background tab and brought back, in Firefox ESR (WebDriver BiDi): another tab activated
in front of it and the viewer's activated again, Firefox's own visibility. What must hold is in
tests/web/hidden_view.py (as for Chromium in test_viewer_robustness.py): no pictures while hidden, the frame
paused, and back in front never the old picture shown as current, then the page as it is, decoded by Firefox's
WebCodecs."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fixtures import service_fixture
from tests.support import Service
from tests.web.browser import open_viewer
from tests.web.firefox import Firefox, Tab
from tests.web.hidden_view import hidden_and_back
from tests.web.test_viewer_robustness import BOX, GREEN, RED, click_events, post_input

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

service = service_fixture(env={"FRAME_IDLE_PAUSE_S": "1"}, scope="module", pages="web_pages", timeout=60)


@pytest.fixture
def frame(service: Service, web_pages: str) -> Iterator[str]:
    status, body = service.request("POST", "/frames", {"url": f"{web_pages}/robust.html", "width": 640,
                                                        "height": 400, "dpr": 1})
    assert status == 201, body
    yield str(body["id"])
    service.request("DELETE", f"/frames/{body['id']}")


async def test_firefox_hidden_takes_no_pictures_and_comes_back_to_the_page_as_it_is(
        service: Service, frame: str, firefox: Firefox, tab: Tab) -> None:
    await open_viewer(tab, service.base, service.token("view"), [frame])
    bidi = firefox.bidi
    assert bidi is not None
    other: list[str] = []

    async def hide() -> None:
        other.append(str((await bidi.call("browsingContext.create", {"type": "tab"}))["context"]))
        await bidi.call("browsingContext.activate", {"context": other[0]})

    async def show() -> None:
        await bidi.call("browsingContext.activate", {"context": tab.context})
        await bidi.call("browsingContext.close", {"context": other[0]})

    agent = service.token("drive", subject="agent")
    print(await hidden_and_back(tab, service, frame, at=BOX, before=RED, after=GREEN, hide=hide, show=show,
                                change=lambda: post_input(service, frame, agent, click_events(BOX))))
