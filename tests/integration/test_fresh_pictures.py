"""Fresh pictures (issue 26): whatever a viewer is sent first shows the page as it is, never an older picture.

The invariant is tested as a property: a random run of paints, joins (plain and with `patches`), leaves, pauses,
releases (a paused frame gives its buffers back) and reopens (its browser closed at the cap, reopened when
watched, the page's colour kept in its profile's localStorage). After each join the joiner's very first video
message must be a keyframe, and that keyframe decoded on its own must equal `GET /frames/{id}/screenshot` taken
after the page settled, both showing the colour of the last paint. The page (tests/pages/paint.html) paints a
new colour on each click, so any older picture shows.
The seed is random (printed on failure; FRAMESTREAM_TEST_SEED repeats a run).
"""

from __future__ import annotations

import asyncio
import io
import os
import random
from pathlib import Path

import av
import numpy as np

from tests.fixtures import service_fixture
from tests.support import Service, StreamClient, colour_near, wait_released

GREY = (128, 128, 128)
COLOURS = [(220, 40, 40), (40, 180, 60), (40, 80, 220), (230, 200, 40), (200, 50, 200), (40, 200, 200)]
SIZE = {"width": 320, "height": 200, "dpr": 2}
ENV = {"FRAME_IDLE_PAUSE_S": "0.3", "FRAMESTREAM_PAUSED_RELEASE_S": "0.5", "MAX_BROWSERS": "1"}


service = service_fixture(env=ENV, scope="module")


def decode_alone(payload: bytes) -> np.ndarray:
    """A keyframe decoded by a decoder that has seen nothing else (RGB)."""
    codec = av.CodecContext.create("h264", "r")
    frames = codec.decode(av.Packet(payload)) + codec.decode(None)
    assert frames, "a keyframe must decode on its own"
    return frames[0].to_ndarray(format="rgb24")


def png_rgb(png: bytes) -> np.ndarray:
    with av.open(io.BytesIO(png)) as container:
        return next(container.decode(video=0)).to_ndarray(format="rgb24")


class Model:
    """The frame under test and what its page shows, with the viewers watching it."""

    def __init__(self, service: Service, frame: str, other: str, seed: int) -> None:
        self.svc, self.frame, self.other, self.seed = service, frame, other, seed
        self.paints = 0
        self.viewers: list[StreamClient] = []
        self.log: list[str] = []

    @property
    def colour(self) -> tuple[int, int, int]:
        return COLOURS[(self.paints - 1) % len(COLOURS)] if self.paints else GREY

    def where(self) -> str:
        return f"seed {self.seed}, after {' '.join(self.log)}"

    async def settled_screenshot(self) -> np.ndarray:
        """The screenshot once it shows the last paint's colour (the page settled)."""
        for _ in range(100):
            status, png = await asyncio.to_thread(self.svc.get, f"/frames/{self.frame}/screenshot", "view")
            assert status == 200, png
            picture = png_rgb(png)
            if colour_near(picture[200, 320], self.colour):
                return picture
            await asyncio.sleep(0.1)
        raise AssertionError(f"the screenshot never showed {self.colour}: {picture[200, 320]} ({self.where()})")

    async def paint(self) -> None:
        body = {"seq": 1, "events": [{"kind": "mouse", "action": "down", "x": 160, "y": 100},
                                     {"kind": "mouse", "action": "up", "x": 160, "y": 100}]}
        token = self.svc.token("drive", frame=self.frame)
        status, answer = await asyncio.to_thread(self.svc.request, "POST", f"/frames/{self.frame}/input", body, token)
        assert status == 200, answer
        self.paints += 1
        await self.settled_screenshot()

    async def join(self, features: list[str] | None) -> None:
        viewer = await StreamClient.connect(self.svc, features=features)
        self.viewers.append(viewer)
        await viewer.send({"type": "watch", "frame": self.frame})
        first = await viewer.next_video(timeout=30.0)
        assert first.keyframe, f"a joiner's first picture is a keyframe ({self.where()})"
        shown = decode_alone(first.payload)
        expected = await self.settled_screenshot()
        assert colour_near(shown[200, 320], self.colour), \
            f"the joiner's first picture shows {shown[200, 320]}, the page {self.colour} ({self.where()})"
        difference = float(np.abs(shown.astype(int) - expected.astype(int)).mean())
        assert difference < 4.0, f"first picture differs from the screenshot by {difference:.1f} ({self.where()})"

    async def leave(self) -> None:
        if self.viewers:
            await self.viewers.pop(random.Random(len(self.log)).randrange(len(self.viewers))).close()

    async def pause(self) -> None:
        while self.viewers:
            await self.viewers.pop().close()
        state = (await asyncio.to_thread(self.svc.get, f"/frames/{self.frame}"))[1]["state"]
        if state in ("live", "launching"):
            await self.svc.wait_state_async(self.frame, "paused")

    async def release(self) -> None:
        await self.pause()
        if (await asyncio.to_thread(self.svc.get, f"/frames/{self.frame}"))[1]["state"] != "paused":
            return  # (closed already)
        await wait_released(self.svc, self.frame)

    async def reopen(self) -> None:
        """Close its browser at the cap (another frame watched), so the next join reopens it at its last URL."""
        await self.pause()
        other = await StreamClient.connect(self.svc)
        try:
            await other.watch(self.other)
            await self.svc.wait_state_async(self.frame, "closed")
        finally:
            await other.close()


async def test_a_joiners_first_picture_is_the_page_as_it_is(service: Service) -> None:
    seed = int(os.environ.get("FRAMESTREAM_TEST_SEED") or random.randrange(1 << 30))
    rng = random.Random(seed)
    other = service.create_frame(f"{service.pages}/box.html", **SIZE)  # (MAX_BROWSERS=1: they take turns)
    await service.wait_state_async(other, "paused")
    frame = service.create_frame(f"{service.pages}/paint.html", **SIZE)
    model = Model(service, frame, other, seed)
    ops = {
        "paint": model.paint, "join": lambda: model.join(None), "join-patches": lambda: model.join(["patches"]),
        "leave": model.leave, "pause": model.pause, "release": model.release, "reopen": model.reopen,
    }
    # Every kind of step at least once, joins after each way a frame can stop showing, the rest at random.
    plan = ["join", "pause", "join", "paint", "release", "join-patches", "paint", "reopen", "join"]
    plan += [*rng.choices(list(ops), weights=[3, 3, 2, 1, 2, 2, 1], k=10), "join"]
    try:
        for step in plan:
            model.log.append(step)
            await ops[step]()
    finally:
        for viewer in model.viewers:
            await viewer.close()


async def test_after_a_restart_the_first_picture_is_the_reopened_page(service: Service, tmp_path: Path) -> None:
    for listed in service.frame_ids():  # (the first test's, when it ran: only one browser may run)
        # A frame left live with no viewer pauses, or the cap closes it: `paused` only while its close runs beside
        # the launch it made room for (FrameManager._close_for_room), which a poll may miss.
        await service.wait_state_async(listed, ("paused", "closed"))
    frame = service.create_frame(f"{service.pages}/paint.html", **SIZE)
    model = Model(service, frame, frame, 0)
    await model.paint()
    await model.paint()  # (kept in the page's localStorage, in the frame's profile: the restart keeps it)
    service.stop()
    service.start()
    assert (await asyncio.to_thread(service.get, f"/frames/{frame}"))[1]["state"] == "closed"
    model.log.append("restart")
    await model.join(None)
    await model.join(["patches"])
    for viewer in model.viewers:
        await viewer.close()
