"""Moving content for a viewer that takes H.264 only (issue 29), end to end: real Xvfb, Chromium, libx264 and
WebSockets, checked by the pixels of every decoded picture.

Chromium damages a box carried across the page and its frame counter as one large rectangle. The grab compares it
by macroblocks (media/changes.py) and the encoder sends what moved as copies of what the decoder shows
(media/moved_pictures.py): a block that changed but was left out, or a copy from the wrong place, would leave a
trail of blue behind the box or tear it. So every picture of the trip must show the box whole, 400 px wide at
dpr 2, with no blue above, below or beside it, and the last one must be the page as it is.
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from tests.fixtures import service_fixture
from tests.integration.test_fresh_pictures import png_rgb
from tests.support import Service, StreamClient, VideoMessage

pytestmark = pytest.mark.integration

service = service_fixture(scope="module")

BLUE = np.array([30, 90, 220])
CSS = (900, 560)
DPR = 2
STEPS = 60  # of 10 CSS px: the box ends at CSS x 600..800
TOP, SIDE = 240 * DPR, 200 * DPR  # the box's first row and its side, in device pixels


def blue(picture: np.ndarray) -> np.ndarray:
    """(rows, columns) map of the box's colour (within H.264's error at the box's edges)."""
    return np.asarray((np.abs(picture.astype(int) - BLUE) <= 40).all(axis=2))


def box_columns(picture: np.ndarray) -> list[tuple[int, int]]:
    """The runs [start, end) of blue along the box's middle row."""
    row = blue(picture)[TOP + SIDE // 2].astype(np.int8)
    edges = np.flatnonzero(np.diff(np.concatenate([[0], row, [0]])))
    return list(zip(edges[::2].tolist(), edges[1::2].tolist(), strict=True))


class Decoded:
    """Every picture a viewer got, decoded in order from its first (a keyframe), buffered ones first."""

    def __init__(self, viewer: StreamClient) -> None:
        self.viewer = viewer
        self.done = 0  # of viewer.videos
        self.last: VideoMessage | None = None

    async def next(self, timeout: float = 30.0) -> np.ndarray:
        while True:
            while self.done == len(self.viewer.videos):
                message = await self.viewer.receive(timeout)
                assert message is not None, f"no picture within {timeout:g} s after {self.last}"
            video = self.viewer.videos[self.done]
            self.done += 1
            assert self.last is not None or video.keyframe, "a viewer's first picture is a keyframe"
            self.last = video
            if (picture := self.viewer.decode(video)) is not None:
                return picture

    async def refined(self) -> np.ndarray:
        """The next refinement's picture, with the pictures before it decoded too."""
        while True:
            picture = await self.next()
            assert self.last is not None
            if self.last.refinement:
                return picture


async def test_every_picture_of_a_box_carried_across_the_page_shows_it_whole(service: Service) -> None:
    frame = service.create_frame(f"{service.pages}/moving.html?steps={STEPS}", width=CSS[0], height=CSS[1], dpr=DPR)
    await service.wait_state_async(frame, "live")
    viewer = await StreamClient.connect(service)  # no features: H.264 only
    await viewer.watch(frame)
    stream = Decoded(viewer)
    still = await stream.refined()
    assert box_columns(still) == [(0, SIDE)], box_columns(still)

    body = {"seq": 1, "events": [{"kind": "mouse", "action": "down", "x": 850, "y": 40},
                                 {"kind": "mouse", "action": "up", "x": 850, "y": 40}]}
    status, answer = await asyncio.to_thread(service.request, "POST", f"/frames/{frame}/input", body,
                                             service.token("drive", frame=frame))
    assert status == 200, answer

    final = (STEPS * 10 * DPR, STEPS * 10 * DPR + SIDE)
    positions: list[int] = []
    while not (positions and positions[-1] == final[0]):
        picture = await stream.next()
        sequence = stream.last.sequence if stream.last else None
        runs = box_columns(picture)
        assert len(runs) == 1 and abs(runs[0][1] - runs[0][0] - SIDE) <= 6, \
            f"picture {sequence}: the box's middle row is blue at {runs}, not one run {SIDE} px wide"
        left = runs[0][0]
        rows = np.flatnonzero(blue(picture).any(axis=1))
        assert rows.size and TOP - 3 <= rows[0] and rows[-1] < TOP + SIDE + 3, \
            f"picture {sequence}: blue in rows {rows[0]}..{rows[-1]}, the box is {TOP}..{TOP + SIDE}"
        outside = blue(picture)[TOP : TOP + SIDE].copy()
        outside[:, max(0, left - 6) : left + SIDE + 6] = False
        assert not outside.any(), f"picture {sequence}: blue beside the box at {left}: a trail"
        if not positions or positions[-1] != left:
            positions.append(left)
    assert len(positions) >= 20, f"the trip reached the viewer in only {len(positions)} places: {positions}"
    assert positions == sorted(positions), positions

    # Once still, the page as it is: the box at its end, white where it was (refined, and equal to a screenshot).
    settled = await stream.refined()
    assert box_columns(settled) == [final], box_columns(settled)
    status, png = await asyncio.to_thread(service.get, f"/frames/{frame}/screenshot", "view")
    assert status == 200
    difference = float(np.abs(settled.astype(int) - png_rgb(png).astype(int)).mean())
    assert difference < 2.0, f"the settled picture differs from the screenshot by {difference:.2f}"
    await viewer.close()
