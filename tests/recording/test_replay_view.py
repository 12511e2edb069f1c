"""The replay view (web/replay.html) in real headless Chromium: it plays a real recording in a <video>, lists the
steps, and clicking a step seeks to it, marks where it acted and shows its picture; the pointer is drawn where the
steps left it, in the shape of the page's cursor then."""

from __future__ import annotations

import asyncio
import base64
import time
import urllib.parse
from typing import Any

from framestream.client import png_to_rgb
from tests.fixtures import service_fixture
from tests.recording.recorded import recordings
from tests.support import Service, StreamClient, colour_near, until
from tests.web.browser import Browser, Page

service = service_fixture(env={"FRAMESTREAM_RECORD": "on", "FRAME_IDLE_PAUSE_S": "1.0"})

RED, GREEN, YELLOW = (220, 30, 30), (30, 180, 60), (250, 220, 60)


def click(x: int, y: int) -> list[dict[str, Any]]:
    return [{"kind": "mouse", "action": "down", "x": x, "y": y}, {"kind": "mouse", "action": "up", "x": x, "y": y}]


async def test_the_replay_view_seeks_to_a_step_and_shows_its_picture(service: Service) -> None:
    frame = await asyncio.to_thread(service.create_frame, f"{service.pages}/replay.html", width=640, height=400,
                                    dpr=1)
    await service.wait_state_async(frame, "live")
    drive = service.token("drive", frame, subject="agent")
    viewer = await StreamClient.connect(service, drive)
    await viewer.watch(frame)
    status, body = await asyncio.to_thread(service.request, "POST", f"/frames/{frame}/input",
                                           {"seq": 1, "events": click(100, 60)}, drive)
    assert status == 200, body
    # The next step only once the click's picture and the page's cursor were told: the recording has them before it.
    await viewer.wait_for_colour(frame, (60, 100), GREEN)
    await cursor_told(viewer, frame, "pointer")
    status, body = await asyncio.to_thread(service.request, "POST", f"/frames/{frame}/navigate",
                                           {"seq": 2, "url": f"{service.pages}/replay.html?page=2"}, drive)
    assert status == 200, body
    await viewer.wait_for_colour(frame, (200, 320), YELLOW)
    await cursor_told(viewer, frame, "default")
    await viewer.close()
    await service.wait_state_async(frame, "paused")
    await until("the ended recording", lambda: _ended(service, frame), 30.0)

    fragment = urllib.parse.urlencode({"token": service.token("control"), "frame": frame})
    async with Browser() as browser:
        page = await browser.page()
        await page.navigate(f"{service.base}/web/replay.html#{fragment}")
        await page.wait_for("window.framestreamReplay && window.framestreamReplay.ready", within=30)
        labels = await page.eval("[...document.querySelectorAll('#steps li[data-step] button')]"
                                 ".map(b => b.textContent)")
        assert len(labels) == 2 and labels[0].startswith("agent: click 100,60") and "navigate" in labels[1], labels
        # A click on the first step seeks to it: the button is still red then, and the mark is on it.
        await page.eval("document.querySelector('#steps li[data-step=\"0\"] button').click()")
        await page.wait_for("framestreamReplay.current === 0 && !framestreamReplay.video.seeking")
        before = await page.eval("framestreamReplay.pixel(100, 60)")
        assert colour_near(_np(before), RED, 40), before
        mark = await page.eval("(() => { const m = document.getElementById('mark'), v = framestreamReplay.video;"
                               " return [m.hidden, parseFloat(m.style.left) / v.clientWidth * 640,"
                               " parseFloat(m.style.top) / v.clientWidth * 640]; })()")
        assert mark[0] is False and abs(mark[1] - 100) < 2 and abs(mark[2] - 60) < 2, mark
        # Just before the next step: the click's picture, and the pointer as the page then showed it.
        after = await page.eval(f"{BEFORE_STEP_1}.then(() => framestreamReplay.pixel(100, 60))")
        assert colour_near(_np(after), GREEN, 40), after
        # The pointer, as the screen shows it once the page told its hand: over the button, the page's hand (white
        # where the arrow is black), named after who moved it.
        await page.eval(HAND_TOLD)
        hand = await shown_pointer(page)
        assert hand["shape"] == "hand" and hand["who"] == "agent", hand
        assert colour_near(_np(hand["inside"]), (255, 255, 255), 40), hand  # the button shows green there
        # At the end: the second page. Chromium may fire `seeked` before the <video> holds the new position's
        # picture (on a busy machine the read showed the first page's white there), so the read waits for it.
        await page.eval(AT_THE_END)
        later = await page.wait_for(
            "(() => { const p = framestreamReplay.pixel(320, 200);"
            f" return p.every((v, i) => Math.abs(v - {list(YELLOW)}[i]) <= 40) ? p : null; }})()", within=10)
        assert colour_near(_np(later), YELLOW, 40), later
        # The new document has nothing under the pointer, which stayed where the click left it: the arrow.
        arrow = await shown_pointer(page)
        assert arrow["shape"] == "arrow" and (arrow["x"], arrow["y"]) == (hand["x"], hand["y"]), arrow
        assert colour_near(_np(arrow["inside"]), (0, 0, 0), 40), arrow
        # Up goes to the step before: the click, with its picture, the step marked in the list.
        assert await page.eval("framestreamReplay.current") == 1
        await page.key("ArrowUp", "ArrowUp", key_code=38)
        await page.wait_for("framestreamReplay.current === 0 && !framestreamReplay.video.seeking")
        assert await page.eval("document.querySelector('#steps li.current').dataset.step") == "0"
        assert colour_near(_np(await page.eval("framestreamReplay.pixel(100, 60)")), RED, 40)
        # Before the first step the pointer was nowhere.
        await page.eval("framestreamReplay.seek(0).then(() => framestreamReplay.showPointer())")
        assert await page.eval("document.getElementById('pointer').hidden") is True
        assert not page.exceptions, page.exceptions


# Seeks in the replay view: to just before the second step (the first one's picture was seen before it was sent),
# to when the page told its hand over the button, and to the recording's last picture (after both steps).
BEFORE_STEP_1 = ("framestreamReplay.seekToStep(0).then(() => framestreamReplay.seek("
                 "framestreamReplay.seconds(framestreamReplay.steps[1].t_us) - 0.001))")
HAND_TOLD = ("framestreamReplay.seek(framestreamReplay.seconds(framestreamReplay.lines.find("
             "(l) => l.type === 'cursor' && l.cursor === 'pointer').t_us))")
AT_THE_END = "framestreamReplay.seekToStep(1).then(() => framestreamReplay.seek(framestreamReplay.video.duration))"


async def cursor_told(viewer: StreamClient, frame: str, cursor: str, timeout: float = 15.0) -> None:
    """Until the last `cursor` message `viewer` got for `frame` says `cursor`."""
    deadline = time.monotonic() + timeout

    def told() -> list[str]:
        return [m["cursor"] for m in viewer.texts if m.get("type") == "cursor" and m.get("frame") == frame]

    while told()[-1:] != [cursor]:
        left = deadline - time.monotonic()
        assert left > 0, f"the cursor never became {cursor!r}: {told()}"
        await viewer.next_text("cursor", timeout=left)


async def shown_pointer(page: Page) -> dict[str, Any]:
    """The drawn pointer: its shape, who moved it, its hot spot in the frame's CSS pixels, and what the screen shows
    2 px right of and 12 px below the hot spot (inside both the arrow, black, and the hand, white)."""
    found: dict[str, Any] = await page.eval("""(() => {
        const el = document.getElementById('pointer'), v = framestreamReplay.video;
        const box = el.getBoundingClientRect(), video = v.getBoundingClientRect(), scale = v.clientWidth / 640;
        const hot = (name) => parseFloat(el.style.getPropertyValue(name)), hx = hot('--hot-x'), hy = hot('--hot-y');
        return {shape: el.dataset.shape, who: el.querySelector('.who').textContent, hidden: el.hidden,
                x: (box.left + hx - video.left) / scale, y: (box.top + hy - video.top) / scale,
                sx: box.left + hx + 2, sy: box.top + hy + 12};
    })()""")
    assert found["hidden"] is False, found
    assert abs(found["x"] - 100) < 1.5 and abs(found["y"] - 60) < 1.5, found
    shot = await page.send("Page.captureScreenshot", {
        "format": "png", "clip": {"x": found["sx"], "y": found["sy"], "width": 1, "height": 1, "scale": 1}})
    found["inside"] = [int(v) for v in png_to_rgb(base64.b64decode(shot["data"]))[0, 0]]
    return found


def _np(rgb: list[int]) -> Any:
    import numpy as np

    return np.array(rgb)


async def _ended(service: Service, frame: str) -> dict[str, Any] | None:
    found = [r for r in await asyncio.to_thread(recordings, service, frame) if not r["active"] and r["steps"]]
    return found[-1] if found else None
