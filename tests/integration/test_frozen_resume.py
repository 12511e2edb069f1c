"""A frame resumed before its release: the keyframe made once its page froze, if nothing was drawn since.

Real Xvfb, a real second X client drawing on it, real libx264, and PyAV decoding what the pipeline emitted
(media/parked.py's `FrozenScreen`)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass

import av
import numpy as np

from framestream.browser.xvfb import XvfbServer
from framestream.media.picture import Picture
from framestream.media.pipeline import FramePipeline
from tests.integration.test_density import Pictures, assert_shows, display, wait_for
from tests.media.test_capture import Painter

__all__ = ["display"]  # the fixture, shared

RED, BLUE = 0xC83228, 0x2850C8
RED_BGR, BLUE_BGR = [40, 50, 200], [200, 80, 40]


def screen(pipeline: FramePipeline, at: tuple[int, int], bgr: list[int]) -> np.ndarray:
    """The pipeline's kept picture once it shows `bgr` at (y, x)."""
    found: list[np.ndarray] = []

    def shows() -> bool:
        snap = pipeline.snapshot()
        if snap is None or snap[0][at][:3].tolist() != bgr:
            return False
        found.append(snap[0])
        return True

    wait_for(shows)
    return found[-1]


def decode_from(pictures: list[Picture]) -> np.ndarray:
    """The last of `pictures` (the first a keyframe) decoded in order, as BGR."""
    codec = av.CodecContext.create("h264", "r")
    frames = []
    for picture in pictures:
        frames += codec.decode(av.Packet(picture.data))
    frames += codec.decode(None)
    assert len(frames) == len(pictures), "every picture decodes, in order, from the keyframe on"
    return np.asarray(frames[-1].to_ndarray(format="bgr24"))


@dataclass
class Setup:
    pipeline: FramePipeline
    pictures: Pictures
    painter: Painter


@contextlib.contextmanager
def running(display: XvfbServer, release_after_s: float) -> Iterator[Setup]:
    """A 640x400 pipeline on `display` and a second X client to draw on it; no failure by the end."""
    pictures = Pictures()
    failures: list[Exception] = []
    painter = Painter(display.name)
    pipeline = FramePipeline(display.name, 640, 400, on_picture=pictures.add, on_failure=failures.append,
                             release_after_s=release_after_s)
    pipeline.start()
    try:
        yield Setup(pipeline, pictures, painter)
        assert not failures
    finally:
        pipeline.stop()
        painter.close()


def paused_with_its_keyframe_made(pipeline: FramePipeline, painter: Painter) -> np.ndarray:
    """A red screen, the pipeline paused and told its page froze: returns the screen once the keyframe is made."""
    painter.fill(0, 0, 640, 400, RED)
    red = screen(pipeline, (200, 320), RED_BGR)
    pipeline.set_paused(True)
    pipeline.page_frozen()
    wait_for(lambda: pipeline.stats.frozen_keyframes == 1)
    return red


def test_a_frame_resumed_before_its_release_sends_the_keyframe_made_while_it_was_frozen(display: XvfbServer) -> None:
    with running(display, release_after_s=600.0) as setup:
        pipeline, pictures, painter = setup.pipeline, setup.pictures, setup.painter
        red = paused_with_its_keyframe_made(pipeline, painter)
        count = len(pictures.items)
        resumed_at = time.time_ns() // 1000
        pipeline.set_paused(False)
        (resumed,) = pictures.wait_keyframes(count, 1)
        # Made before the resume, and sent as the screen at the resume: nothing was drawn since.
        assert resumed.encoded_us < resumed_at <= resumed.capture_us, (resumed.encoded_us, resumed_at)
        assert_shows(resumed, red)
        assert not pipeline.released, "resumed before the release, with its encoder"

        # The stream goes on from it: a box drawn now reaches a decoder that started at that keyframe.
        painter.fill(100, 100, 200, 100, BLUE)
        boxed = screen(pipeline, (150, 200), BLUE_BGR)
        wait_for(lambda: any(p.changed and not p.keyframe for p in pictures.items[count + 1:]))
        following = [p for p in pictures.items[count + 1:] if not p.light and not p.patch]
        shown = decode_from([resumed, *following])
        diff = np.abs(shown.astype(int) - boxed[:, :, :3].astype(int))
        assert diff.mean() < 2 and diff.max() < 40, (diff.mean(), diff.max())


def test_a_screen_drawn_on_after_its_page_froze_is_resumed_from_a_fresh_keyframe(display: XvfbServer) -> None:
    with running(display, release_after_s=600.0) as setup:
        pipeline, pictures, painter = setup.pipeline, setup.pictures, setup.painter
        paused_with_its_keyframe_made(pipeline, painter)
        painter.fill(100, 100, 200, 100, BLUE)  # drawn over what the held keyframe shows
        count = len(pictures.items)
        resumed_at = time.time_ns() // 1000
        pipeline.set_paused(False)
        (resumed,) = pictures.wait_keyframes(count, 1)
        boxed = screen(pipeline, (150, 200), BLUE_BGR)
        assert_shows(resumed, boxed)  # the blue box: the held keyframe (all red) is older, never sent
        assert resumed.encoded_us >= resumed_at


def test_a_frame_released_after_its_page_froze_parks_the_keyframe_it_made(display: XvfbServer) -> None:
    with running(display, release_after_s=2.0) as setup:
        pipeline, pictures, painter = setup.pipeline, setup.pictures, setup.painter
        red = paused_with_its_keyframe_made(pipeline, painter)
        made_by_us = time.time_ns() // 1000  # the keyframe was made by now; the release comes 2 s after the pause
        wait_for(lambda: pipeline.released)
        count = len(pictures.items)
        resumed_at = time.time_ns() // 1000
        pipeline.set_paused(False)
        parked, fresh = pictures.wait_keyframes(count, 2)
        # The keyframe made when the page froze was parked as it was (no second grab and encode at the release).
        assert parked.encoded_us <= made_by_us < resumed_at <= parked.capture_us
        assert pipeline.stats.frozen_keyframes == 1
        for key in (parked, fresh):
            assert_shows(key, red)
