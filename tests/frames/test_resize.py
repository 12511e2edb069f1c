"""A frame resized: in place while its dpr stays, else a relaunch at the new size;
what its viewers hear, and which pictures reach them. Fake runtimes stand in for Xvfb, Chromium and the pipeline
(tests/integration/test_resize.py proves the same by the decoded pictures of a real frame)."""

from __future__ import annotations

import asyncio
import json

import pytest

from framestream.core.errors import BrowserError, FrameGone
from framestream.core.lifecycle import FrameState
from framestream.frames.frame import Frame
from framestream.frames.manager import FrameManager
from framestream.service.config import FrameSize
from tests.frames.fakes import SIZE, URL, Launches, Watcher, live_frame, picture, restored, states

SMALLER = FrameSize(240, 160, 1)
LARGER = FrameSize(400, 300, 1)
SHARPER = FrameSize(400, 300, 2)  # another dpr


def watching(frame: Frame) -> Watcher:
    """A second viewer of `frame`, added now."""
    watcher = Watcher(frame, slot=2)
    frame.add_viewer(watcher.viewer)
    return watcher


async def test_a_smaller_size_is_taken_in_place_and_only_the_new_pipelines_pictures_reach_viewers(
        frames: FrameManager, launches: Launches) -> None:
    frame, _ = await live_frame(frames)
    runtime = launches.last
    viewer = watching(frame)
    runtime.post(picture())
    assert viewer.configs == [SIZE]
    old_pipeline = runtime.pipeline
    await frame.resizing.resize(SMALLER)
    assert len(launches.runtimes) == 1 and runtime.sizes == [SMALLER], "the same browser took the size"
    assert runtime.pipeline is not old_pipeline
    assert frame.size == SMALLER and frame.state is FrameState.LIVE
    assert (frame.describe()["width"], frame.describe()["height"]) == (240, 160)
    published = frame.feed.pictures
    runtime.hooks.on_picture(old_pipeline, picture())  # the old worker, late: not the page at its new size
    assert frame.feed.pictures == published
    runtime.post(picture(keyframe=False))
    assert viewer.viewer.waiting_keyframe, "a viewer starts the new stream at its keyframe"
    runtime.post(picture())
    assert viewer.configs == [SIZE, SMALLER], "a video-config of the new size before it"
    assert runtime.fresh_keyframe_requests == 2, "one at the launch, one once the page painted at the new size"
    assert runtime.painted_relaid == [False, True], "the new layout's own wait: it is presented frames later"


async def test_a_larger_size_is_in_place_too_and_another_dpr_relaunches_the_browser_at_it(
        frames: FrameManager, launches: Launches) -> None:
    frame, _ = await live_frame(frames)
    viewer = watching(frame)
    first = launches.last
    await frame.resizing.resize(LARGER)
    assert len(launches.runtimes) == 1 and first.sizes == [LARGER]
    states(viewer)
    await frame.resizing.resize(SHARPER)
    assert len(launches.runtimes) == 2 and first.stopped and first.sizes == [LARGER]
    assert launches.last.launched_size == SHARPER and frame.state is FrameState.LIVE
    assert states(viewer) == [(FrameState.LAUNCHING, "resized; reopening at the new size"),
                               (FrameState.LIVE, None)]
    launches.last.post(picture())
    assert viewer.configs[-1] == SHARPER
    # At the new dpr: in place again.
    await frame.resizing.resize(FrameSize(320, 200, 2))
    assert len(launches.runtimes) == 2 and launches.last.sizes == [FrameSize(320, 200, 2)]


async def test_a_page_that_does_not_take_the_size_relaunches_the_frame(frames: FrameManager,
                                                                        launches: Launches) -> None:
    frame, _ = await live_frame(frames)
    launches.last.resize_error = BrowserError("Emulation.setDeviceMetricsOverride timed out")
    await frame.resizing.resize(SMALLER)
    assert len(launches.runtimes) == 2 and launches.last.launched_size == SMALLER
    assert frame.state is FrameState.LIVE


async def test_a_paused_frame_resumes_to_take_the_size(frames: FrameManager, launches: Launches) -> None:
    frame, watcher = await live_frame(frames)
    frame.remove_viewer(watcher.viewer)
    await frame.pause()
    assert frame.state is FrameState.PAUSED
    await frame.resizing.resize(SMALLER)
    assert frame.state is FrameState.LIVE and not launches.last.frozen and launches.last.sizes == [SMALLER]


async def test_a_closed_frame_keeps_the_size_for_its_next_launch(frames: FrameManager, launches: Launches) -> None:
    (frame,) = restored(frames, URL)
    await frame.resizing.resize(SHARPER)
    assert launches.runtimes == [] and frame.state is FrameState.CLOSED
    await frames.registry.save_in_background()
    saved = json.loads(frames.registry.path.read_text())["frames"][0]
    assert (saved["width"], saved["height"], saved["dpr"]) == (400, 300, 2)
    await frame.ensure_running()
    assert launches.last.launched_size == SHARPER


async def test_the_same_size_changes_nothing_and_a_deleted_frame_is_gone(frames: FrameManager,
                                                                        launches: Launches) -> None:
    frame, _ = await live_frame(frames)
    runtime, pipeline = launches.last, launches.last.pipeline
    await frame.resizing.resize(SIZE)
    assert runtime.sizes == [] and runtime.pipeline is pipeline
    await frames.delete(frame.id)
    with pytest.raises(FrameGone):
        await frame.resizing.resize(SMALLER)


async def test_a_resize_that_waited_for_a_shutdown_is_refused_and_launches_nothing(frames: FrameManager,
                                                                                 launches: Launches) -> None:
    frame, _ = await live_frame(frames)
    runtime = launches.last
    runtime.resize_gate = asyncio.Event()
    under_way = asyncio.create_task(frame.resizing.resize(SMALLER))
    await asyncio.sleep(0)  # it holds the frame's lock, waiting in the runtime
    shutdown = asyncio.create_task(frames.shutdown())
    await asyncio.sleep(0)
    sharper = asyncio.create_task(frame.resizing.resize(SHARPER))  # another dpr: a relaunch, after the shutdown
    runtime.resize_gate.set()
    await asyncio.gather(under_way, shutdown)
    with pytest.raises(FrameGone):
        await sharper
    assert len(launches.runtimes) == 1 and frame.runtime is None, "no browser launched under the shutdown"


async def test_resizes_queued_behind_one_under_way_are_coalesced_to_the_newest(frames: FrameManager,
                                                                             launches: Launches) -> None:
    frame, _ = await live_frame(frames)
    runtime = launches.last
    runtime.resize_gate = asyncio.Event()
    sizes = [FrameSize(300, 190, 1), FrameSize(280, 180, 1), FrameSize(260, 170, 1), SMALLER]
    first = asyncio.create_task(frame.resizing.resize(sizes[0]))
    await asyncio.sleep(0)  # the first holds the frame's lock, waiting in the runtime
    queued = [asyncio.create_task(frame.resizing.resize(size)) for size in sizes[1:]]
    await asyncio.sleep(0)
    runtime.resize_gate.set()
    await asyncio.gather(first, *queued)
    assert runtime.sizes == [sizes[0], SMALLER] and frame.size == SMALLER
