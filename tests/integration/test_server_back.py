"""A page whose server is not up (a dev server starting with the sandbox, or restarting) loads by itself once the
server accepts connections (browser/server_wait.py): a frame made before its server goes from `error` to `live`
showing the page, and a page that failed later comes back without anyone reloading it. Real Chromium; the page's
server is started on its port only after the frame showed Chrome's error page, and stopped and started again."""

from __future__ import annotations

import asyncio

from tests.fixtures import service_fixture
from tests.support import Service, StreamClient, colour_near, free_port, page_server, until
from tests.webrtc.metrics import metric

service = service_fixture()

RED = (200, 40, 40)  # tests/pages/box.html's box, at (x 100-300, y 50-150) of 320x200
AT = (100, 200)  # (y, x)


async def test_a_page_whose_server_is_down_loads_by_itself_once_the_server_answers(service: Service) -> None:
    port = free_port()
    frame_id = await asyncio.to_thread(service.create_frame, f"http://127.0.0.1:{port}/box.html", width=320,
                                       height=200, dpr=1)
    failed = await service.wait_state_async(frame_id, "error")
    assert "ERR_CONNECTION_REFUSED" in failed["message"], failed
    viewer = await StreamClient.connect(service)
    await viewer.watch(frame_id)
    await viewer.wait_for_picture(frame_id, "Chrome's error page", lambda p: not colour_near(p[AT], RED), AT, 20.0)
    await until("the service waiting for the server", lambda: _waiting(service, 1))
    with page_server(port=port):  # the dev server is up: nobody reloads, the frame loads its page
        await viewer.wait_for_picture(frame_id, "the page", lambda p: colour_near(p[AT], RED), AT, 20.0)
        await service.wait_state_async(frame_id, "live")

    # The server goes away and the page is reloaded meanwhile (a person's reload, a dev server's own reload).
    drive = service.token("drive", frame_id, subject="ana")
    status, body = await asyncio.to_thread(service.request, "POST", f"/frames/{frame_id}/navigate",
                                           {"seq": 1, "action": "reload"}, drive)
    assert status == 200, body
    await viewer.wait_for_picture(frame_id, "Chrome's error page", lambda p: not colour_near(p[AT], RED), AT, 20.0)
    await until("the service waiting for the server again", lambda: _waiting(service, 2))
    with page_server(port=port):
        await viewer.wait_for_picture(frame_id, "the page again", lambda p: colour_near(p[AT], RED), AT, 20.0)
    assert (await asyncio.to_thread(service.get, f"/frames/{frame_id}"))[1]["state"] == "live"
    await until("both returns counted", lambda: _counted(service, frame_id, 2))  # (told once the load ended)
    await viewer.close()


async def _waiting(service: Service, times: int) -> bool:
    """Whether the service said `times` times that a page waits for its server (its log)."""
    return service.log().count("refuses connections, the page loads again once it answers") == times


async def _counted(service: Service, frame_id: str, times: int) -> bool:
    return await asyncio.to_thread(metric, service, "framestream_pages_server_back_total",
                                   f'frame="{frame_id}"') == times
