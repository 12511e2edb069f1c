"""A frame resized (`PATCH /frames/{id}`), proven by the decoded stream of a real Chromium on a real Xvfb: smaller
and larger than it launched, the page takes the size in place and keeps its state (a button a click turned green
stays green); at another dpr the browser relaunches at the new size and the page loads again. Every picture after
the new `video-config` is of the new size and shows the page laid out at it: the first one already has the four
corners of the new viewport (never a picture of the page as it was)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.fixtures import service_fixture
from tests.support import Service, StreamClient, VideoMessage, colour_near

pytestmark = pytest.mark.integration

service = service_fixture()

TOP_LEFT, TOP_RIGHT, BOTTOM_LEFT, BOTTOM_RIGHT = (200, 40, 40), (30, 180, 60), (30, 60, 220), (240, 200, 0)
RED, GREEN = (220, 30, 30), (30, 180, 60)
BUTTON = (80, 100)  # CSS (y, x) inside the button at 40-160 x 40-120


def laid_out(picture: np.ndarray, dpr: int, button: tuple[int, int, int]) -> bool:
    """The page at the picture's size: each corner's colour in its corner, to the last row and column (the window
    covers the whole picture), and the button in `button`'s colour."""
    h, w = picture.shape[:2]
    corners = {(0, 0): TOP_LEFT, (0, w - 1): TOP_RIGHT, (h - 1, 0): BOTTOM_LEFT, (h - 1, w - 1): BOTTOM_RIGHT}
    at = (BUTTON[0] * dpr, BUTTON[1] * dpr)
    return all(colour_near(picture[p], c) for p, c in corners.items()) and colour_near(picture[at], button)


async def first_picture_after_config(viewer: StreamClient, size: tuple[int, int]) -> np.ndarray:
    """The next `video-config` (of `size`) and the first picture decoded after it; every message in between is
    checked: no picture of another size arrives once the config of the new one did."""
    config = await viewer.next_text("video-config", timeout=30.0)
    assert (config["width"], config["height"]) == size, config
    while True:
        message = await viewer.receive(20.0)
        assert message is not None, "no picture after the new video-config"
        if isinstance(message, VideoMessage):
            assert message.keyframe, "the stream of the new size starts at a keyframe"
            picture = viewer.decode(message)
            if picture is not None:
                assert picture.shape[:2] == (size[1], size[0])
                return picture


async def patch(service: Service, frame_id: str, body: dict[str, Any], token: str = "control") -> tuple[int, Any]:
    return await asyncio.to_thread(service.request, "PATCH", f"/frames/{frame_id}", body, token)


async def click(service: Service, frame_id: str, seq: int) -> None:
    drive = service.token("drive", frame_id, subject="ana")
    x, y = BUTTON[1], BUTTON[0]
    events = [{"kind": "mouse", "action": action, "x": x, "y": y, "button": "left"} for action in ("down", "up")]
    status, body = await asyncio.to_thread(service.request, "POST", f"/frames/{frame_id}/input",
                                           {"seq": seq, "events": events}, drive)
    assert status == 200, body


async def test_a_frame_resized_in_place_keeps_its_page_and_at_another_dpr_reopens_at_the_new_size(
        service: Service) -> None:
    frame_id = await asyncio.to_thread(service.create_frame, f"{service.pages}/resizable.html", width=640,
                                       height=400, dpr=1)
    await service.wait_state_async(frame_id, "live")
    viewer = await StreamClient.connect(service)
    config = await viewer.watch(frame_id)
    assert (config["width"], config["height"]) == (640, 400)
    await viewer.wait_for_picture(frame_id, "the page at 640x400", lambda p: laid_out(p, 1, RED), BUTTON)
    await click(service, frame_id, 1)
    await viewer.wait_for_picture(frame_id, "the button turned green", lambda p: laid_out(p, 1, GREEN), BUTTON)

    # Smaller, in place: the page keeps its state; the first picture of the new size already shows it laid out.
    status, body = await patch(service, frame_id, {"width": 480, "height": 300, "dpr": 1})
    assert status == 200 and (body["width"], body["height"], body["encoded_width"]) == (480, 300, 480), body
    picture = await first_picture_after_config(viewer, (480, 300))
    assert laid_out(picture, 1, GREEN), picture[BUTTON]
    # Larger than it launched: still in place, still the same page.
    status, body = await patch(service, frame_id, {"width": 1024, "height": 640, "dpr": 1})
    assert status == 200, body
    picture = await first_picture_after_config(viewer, (1024, 640))
    assert laid_out(picture, 1, GREEN), picture[BUTTON]
    assert (await asyncio.to_thread(service.get, f"/frames/{frame_id}"))[1]["state"] == "live"

    # Another dpr (2 unless given): a relaunch at the new size, the page loaded again.
    status, body = await patch(service, frame_id, {"width": 400, "height": 250})
    assert status == 200 and (body["dpr"], body["encoded_width"], body["encoded_height"]) == (2, 800, 500), body
    picture = await first_picture_after_config(viewer, (800, 500))
    assert laid_out(picture, 2, RED), picture[BUTTON[0] * 2, BUTTON[1] * 2]
    await service.wait_state_async(frame_id, "live")
    await viewer.close()


async def test_a_bad_resize_is_refused_and_changes_nothing(service: Service) -> None:
    frame_id = await asyncio.to_thread(service.create_frame, f"{service.pages}/resizable.html", width=320,
                                       height=200, dpr=1)
    before = (await asyncio.to_thread(service.get, f"/frames/{frame_id}"))[1]
    for body in ({"width": 480}, {"width": "480", "height": 300}, {"width": 480, "height": 300, "dpr": 3},
                 {"width": 20, "height": 300}, [480, 300]):
        status, answer = await patch(service, frame_id, body)  # type: ignore[arg-type]
        assert (status, answer["error"]) == (400, "bad-message"), (body, answer)
    status, answer = await patch(service, frame_id, {"width": 480, "height": 300}, token="view")
    assert status == 403, answer
    status, answer = await patch(service, frame_id, {"width": 480, "height": 300},
                                 token=service.token("control", "other"))
    assert status == 403, answer
    status, answer = await patch(service, "nosuchframe", {"width": 480, "height": 300})
    assert (status, answer["error"]) == (404, "unknown-frame"), answer
    assert (await asyncio.to_thread(service.get, f"/frames/{frame_id}"))[1] == before


async def test_a_paused_frame_resized_keeps_its_page_and_shows_it_at_the_new_size(pages: str, tmp_path: Path) -> None:
    """Nobody watches the frame: it paused (its page's processes stopped), and is resized so; the next viewer's
    first picture is of the new size, with the state the page had before the pause."""
    svc = Service(tmp_path / "state", env_extra={"FRAME_IDLE_PAUSE_S": "0.5"}, pages=pages)
    try:
        svc.start()
        frame_id = await asyncio.to_thread(svc.create_frame, f"{pages}/resizable.html", width=640, height=400,
                                           dpr=1)
        await svc.wait_state_async(frame_id, "live")
        viewer = await StreamClient.connect(svc)
        await viewer.watch(frame_id)
        await click(svc, frame_id, 1)
        await viewer.wait_for_picture(frame_id, "the button turned green", lambda p: laid_out(p, 1, GREEN), BUTTON)
        await viewer.close()
        await svc.wait_state_async(frame_id, "paused")
        status, body = await patch(svc, frame_id, {"width": 480, "height": 300, "dpr": 1})
        assert status == 200 and (body["width"], body["height"]) == (480, 300), body
        viewer = await StreamClient.connect(svc)
        config = await viewer.watch(frame_id)
        assert (config["width"], config["height"]) == (480, 300), config
        picture = await viewer.latest_picture()
        assert picture.shape[:2] == (300, 480) and laid_out(picture, 1, GREEN), picture[BUTTON]
        await viewer.close()
    finally:
        svc.stop()
        svc.kill_leftovers()
