"""A page's query and fragment (OAuth codes, an app's own tokens) reach only those who may drive the frame
(issue 32, suspected and confirmed): view-only viewers get `frame-state` and frame objects with the URL cut at
its path, and the service's log never holds them."""

from __future__ import annotations

from tests.fixtures import service_fixture
from tests.support import Service, StreamClient

SECRET = "s3cr3t-0f-the-app"
service = service_fixture(f"box.html?code={SECRET}#access_token={SECRET}@320x200")


async def test_view_only_viewers_get_urls_without_query_or_fragment(service: Service) -> None:
    (frame_id,) = service.frame_ids()
    viewer = await StreamClient.connect(service, service.token("view", frame=frame_id))
    await viewer.send({"type": "watch", "frame": frame_id})
    state = await viewer.next_text("frame-state")
    assert state["url"].endswith("/box.html") and SECRET not in str(state), state
    status, body = service.request("GET", f"/frames/{frame_id}", token=service.token("view", frame=frame_id))
    assert status == 200 and SECRET not in str(body), body
    status, listing = service.request("GET", "/frames", token=service.token("view"))
    assert status == 200 and SECRET not in str(listing), listing

    driver = await StreamClient.connect(service, service.token("drive", frame=frame_id))
    await driver.send({"type": "watch", "frame": frame_id})
    assert SECRET in (await driver.next_text("frame-state"))["url"]
    status, body = service.request("GET", f"/frames/{frame_id}")  # a control token: the app's own
    assert SECRET in body["url"]
    assert SECRET not in service.log()
