"""A page whose server is not up (a dev server starting with the sandbox, or restarting) loads by itself once the
server accepts connections (browser/server_wait.py): a frame made before its server goes from `error` to `live`
showing the page, and a page that failed later comes back without anyone reloading it. Real Chromium; the page's
server is started on its port only after the frame showed Chrome's error page, and stopped and started again."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import numpy as np

from tests.fixtures import service_fixture
from tests.support import Service, StreamClient, VideoMessage, colour_near, free_port, page_server, until
from tests.webrtc.metrics import metric

service = service_fixture()

RED = (200, 40, 40)  # tests/pages/box.html's box, at (x 100-300, y 50-150) of 320x200
AT = (100, 200)  # (y, x)


async def until_picture(viewer: StreamClient, frame_id: str, what: str, test: Callable[[np.ndarray], bool],
                        timeout: float = 20.0) -> np.ndarray:
    """Decode the frame's pictures (from a keyframe asked for now) until one passes `test`."""
    await viewer.send({"type": "keyframe", "frame": frame_id})
    deadline, seen_key, last = time.monotonic() + timeout, False, None
    while (left := deadline - time.monotonic()) > 0:
        msg = await viewer.receive(left)
        if not isinstance(msg, VideoMessage):
            continue
        seen_key = seen_key or msg.keyframe
        picture = viewer.decode(msg) if seen_key else None
        if picture is not None:
            last = picture
            if test(picture):
                return picture
    raise AssertionError(f"never saw {what}; last pixel {None if last is None else last[AT]}")


async def test_a_page_whose_server_is_down_loads_by_itself_once_the_server_answers(service: Service) -> None:
    port = free_port()
    frame_id = await asyncio.to_thread(service.create_frame, f"http://127.0.0.1:{port}/box.html", width=320,
                                       height=200, dpr=1)
    failed = await service.wait_state_async(frame_id, "error")
    assert "ERR_CONNECTION_REFUSED" in failed["message"], failed
    viewer = await StreamClient.connect(service)
    await viewer.watch(frame_id)
    await until_picture(viewer, frame_id, "Chrome's error page", lambda p: not colour_near(p[AT], RED))
    await until("the service waiting for the server", lambda: _waiting(service, 1))
    with page_server(port=port):  # the dev server is up: nobody reloads, the frame loads its page
        await until_picture(viewer, frame_id, "the page", lambda p: colour_near(p[AT], RED))
        await service.wait_state_async(frame_id, "live")

    # The server goes away and the page is reloaded meanwhile (a person's reload, a dev server's own reload).
    drive = service.token("drive", frame_id, subject="ana")
    status, body = await asyncio.to_thread(service.request, "POST", f"/frames/{frame_id}/navigate",
                                           {"seq": 1, "action": "reload"}, drive)
    assert status == 200, body
    await until_picture(viewer, frame_id, "Chrome's error page", lambda p: not colour_near(p[AT], RED))
    await until("the service waiting for the server again", lambda: _waiting(service, 2))
    with page_server(port=port):
        await until_picture(viewer, frame_id, "the page again", lambda p: colour_near(p[AT], RED))
    assert (await asyncio.to_thread(service.get, f"/frames/{frame_id}"))[1]["state"] == "live"
    await until("both returns counted", lambda: _counted(service, frame_id, 2))  # (told once the load ended)
    await viewer.close()


async def _waiting(service: Service, times: int) -> bool:
    """Whether the service said `times` times that a page waits for its server (its log)."""
    return service.log().count("refuses connections, the page loads again once it answers") == times


async def _counted(service: Service, frame_id: str, times: int) -> bool:
    return await asyncio.to_thread(metric, service, "framestream_pages_server_back_total",
                                   f'frame="{frame_id}"') == times
