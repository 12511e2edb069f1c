"""A frame's states and what its viewers hear, with fake runtimes standing in for Xvfb, Chromium and the pipeline."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from framestream.core.errors import BrowserError, CapacityError, FrameGone
from framestream.core.lifecycle import FrameState
from framestream.frames.events import StateChanged
from framestream.frames.frame import Frame
from framestream.frames.manager import FrameManager
from framestream.frames.recovery import RESTARTS_PER_MINUTE, RestartBudget
from tests.frames.fakes import SIZE, URL, Launches, Watcher, live_frame, managed, picture, states

LAUNCHING, LIVE, PAUSED, CLOSED, ERROR = (FrameState.LAUNCHING, FrameState.LIVE, FrameState.PAUSED,
                                          FrameState.CLOSED, FrameState.ERROR)


async def test_a_watched_frame_goes_live_and_its_viewers_hear_each_state(frames: FrameManager,
                                                                       launches: Launches) -> None:
    frame = await frames.create(URL, SIZE)
    watcher = Watcher(frame)
    frame.add_viewer(watcher.viewer)
    await frame.ensure_running()
    assert states(watcher) == [(LAUNCHING, None), (LIVE, None)]
    assert frame.state_event() == StateChanged(frame.id, LIVE, URL, 1, None, None, css_size=(320, 200))
    assert len(launches.runtimes) == 1 and frame.browser_running


async def test_a_page_that_does_not_load_is_an_error_until_the_page_goes_somewhere(
        frames: FrameManager, launches: Launches) -> None:
    launches.next_load_error = "net::ERR_NAME_NOT_RESOLVED"
    frame = await frames.create(URL, SIZE)
    await frame.ensure_running()
    assert (frame.state, frame.message) == (ERROR, f"could not load {URL}: net::ERR_NAME_NOT_RESOLVED")
    assert frame.browser_running, "the browser runs on, showing Chrome's error page"
    watcher = Watcher(frame)
    frame.add_viewer(watcher.viewer)
    watcher.drain()
    launches.last.hooks.on_navigated("http://pages.test/b")
    assert (frame.state, frame.url) == (LIVE, "http://pages.test/b")
    assert states(watcher) == [(LIVE, None)]


async def test_a_failed_launch_is_torn_down_says_why_and_is_tried_again_when_asked(
        frames: FrameManager, launches: Launches) -> None:
    launches.next_start_error = BrowserError("Chromium did not come up")
    frame = await frames.create(URL, SIZE)
    await frame.ensure_running()
    assert (frame.state, frame.message) == (ERROR, "Chromium did not come up")
    assert launches.last.stopped and not frame.browser_running
    await frame.ensure_running()
    assert frame.state is LIVE and len(launches.runtimes) == 2


async def test_an_unwatched_frame_pauses_and_resumes_with_the_same_browser(frames: FrameManager,
                                                                         launches: Launches) -> None:
    frame, watcher = await live_frame(frames)
    await frame.pause()
    assert frame.state is LIVE and not launches.last.frozen, "a watched frame never pauses"
    frame.remove_viewer(watcher.viewer)
    await frame.pause()
    assert frame.state is PAUSED and launches.last.frozen
    frame.add_viewer(watcher.viewer)
    await frame.ensure_running()
    assert frame.state is LIVE and not launches.last.frozen and len(launches.runtimes) == 1


async def test_the_last_viewer_leaving_starts_the_pause_timer(state_dir: Path, launches: Launches) -> None:
    async with managed(state_dir, launches, idle_pause_s=0.05) as frames:
        frame, watcher = await live_frame(frames)
        frame.remove_viewer(watcher.viewer)
        await asyncio.wait_for(launches.last.froze.wait(), 5.0)
        assert frame.state is PAUSED


def watch_without_video(frame: Frame, slot: int) -> Watcher:
    """A watcher of `frame` without its pictures, as a hidden page's connection makes one."""
    watcher = Watcher(frame, slot)
    frame.add_viewer(watcher.viewer, video=False)
    return watcher


async def test_a_watcher_without_video_hears_the_frame_pause_takes_no_picture_and_is_not_counted(
        state_dir: Path, launches: Launches) -> None:
    async with managed(state_dir, launches, idle_pause_s=0.05) as frames:
        frame, watcher = await live_frame(frames)
        hidden = watch_without_video(frame, 2)
        assert frame.viewers == 1 and frame.feed.audience() == [watcher.viewer, hidden.viewer]
        assert states(hidden) == [(LIVE, None)]  # told what the frame is at once (the others heard it change)
        launches.last.post(picture())
        assert len(watcher.viewer.outbox) == 1 and len(hidden.viewer.outbox) == 0
        frame.remove_viewer(watcher.viewer)  # the last viewer with pictures leaves: the pause timer starts
        paused = await hidden.until_state(PAUSED)
        assert paused.viewers == 0 and launches.last.frozen
        watch_without_video(frame, 3)
        assert frame.state is PAUSED, "a watcher without video does not resume a frame"
        frame.remove_viewer(hidden.viewer)
        assert hidden.viewer not in frame.feed.audience() and frame.viewers == 0


async def test_at_the_cap_a_browser_watched_only_without_video_closes_to_make_room(
        state_dir: Path, launches: Launches) -> None:
    async with managed(state_dir, launches, max_browsers=1) as frames:
        first, watcher = await live_frame(frames)
        hidden = watch_without_video(first, 2)
        first.remove_viewer(watcher.viewer)
        second = await frames.create("http://pages.test/b", SIZE)
        await second.ensure_running()
        assert second.state is LIVE
        await hidden.until_state(CLOSED)  # told, and it reopens when it is watched with video again


async def test_a_deleted_frame_tells_its_viewers_lets_them_go_and_cannot_come_back(
        frames: FrameManager, launches: Launches) -> None:
    frame, watcher = await live_frame(frames)
    assert await frames.delete(frame.id)
    assert states(watcher) == [(CLOSED, "deleted")]
    assert frame.viewers == 0 and launches.last.stopped and frames.get(frame.id) is None
    with pytest.raises(FrameGone):
        await frame.ensure_running()
    assert frame.id not in frames.registry.path.read_text()


async def test_at_the_cap_the_least_recently_viewed_unwatched_browser_closes(
        state_dir: Path, launches: Launches) -> None:
    async with managed(state_dir, launches, max_browsers=1) as frames:
        first = await frames.create(URL, SIZE)
        await first.ensure_running()
        second = await frames.create("http://pages.test/b", SIZE)
        async with first.run_lock:  # taken for its close, which goes on beside the launch
            assert first.state is CLOSED and launches.runtimes[0].stopped
        watcher = Watcher(second)
        second.add_viewer(watcher.viewer)
        await second.ensure_running()
        with pytest.raises(CapacityError):
            await first.ensure_running()  # the only browser is watched
        assert first.state is CLOSED and second.state is LIVE


async def test_a_browser_closing_to_make_room_does_not_hold_up_the_launch_and_a_watch_waits_for_it(
        state_dir: Path, launches: Launches) -> None:
    """The victim's close (its page's last storage writes get up to 1.5 s: ChromeBrowser.close) goes on beside the
    newcomer's launch: a reopen waited for it (0.59 -> 2.49 s in `benchmarks.run --only lifecycle`)."""
    closed = asyncio.Event()
    async with managed(state_dir, launches, max_browsers=1) as frames:
        try:
            first = await frames.create(URL, SIZE)
            await first.ensure_running()
            launches.runtimes[0].stop_gate = closed
            second = await frames.create("http://pages.test/b", SIZE)
            await second.ensure_running()
            # Still closing, and `paused` meanwhile (its page is stopped), not `live`: live, paused, closed.
            assert second.state is LIVE and first.state is PAUSED and not launches.runtimes[0].stopped
            reopen = asyncio.create_task(first.ensure_running())
            await asyncio.sleep(0)
            assert not reopen.done() and len(launches.runtimes) == 2  # a watch of it waits for its close
            closed.set()
            await reopen
            async with second.run_lock:  # closing now, to make room for the first again
                assert launches.runtimes[0].stopped and first.state is LIVE and second.state is CLOSED
        finally:
            closed.set()  # (a failed assertion above must not leave the shutdown waiting for that close)


async def test_a_frame_watched_while_the_cap_waited_for_its_lock_is_not_closed(
        state_dir: Path, launches: Launches) -> None:
    """The victim is chosen unwatched, but its run lock may be held (a step under way) and a watch may come before
    the cap has it: that frame is passed over, and with no other the newcomer is refused `capacity`."""
    async with managed(state_dir, launches, max_browsers=1) as frames:
        first = await frames.create(URL, SIZE)
        await first.ensure_running()
        async with first.run_lock:  # a step under way
            second = asyncio.create_task(frames.create("http://pages.test/b", SIZE))
            await asyncio.sleep(0)
            assert not second.done()  # the cap chose it, and waits for its lock
            watcher = Watcher(first)
            first.add_viewer(watcher.viewer)
        with pytest.raises(CapacityError):
            await second
        await first.ensure_running()
        assert first.state is LIVE and not launches.runtimes[0].stopped and len(frames.frames) == 1


async def test_a_browser_whose_close_for_room_failed_reads_closed_and_reopens(
        state_dir: Path, launches: Launches) -> None:
    """Its runtime is gone whatever its close did: `paused` (while closing) must not outlive it, or a watch would
    'resume' a frame with no browser."""
    async with managed(state_dir, launches, max_browsers=1) as frames:
        first = await frames.create(URL, SIZE)
        await first.ensure_running()
        launches.runtimes[0].stop_error = OSError("the browser's close failed")
        second = await frames.create("http://pages.test/b", SIZE)
        await second.ensure_running()
        async with first.run_lock:  # its close has ended
            assert first.state is CLOSED and first.runtime is None
        await first.ensure_running()
        async with second.run_lock:  # closing now, to make room for the first again
            assert first.state is LIVE and first.runtime is launches.runtimes[2] and second.state is CLOSED


async def test_a_fault_relaunches_the_frame_until_the_budget_is_spent(frames: FrameManager,
                                                                     launches: Launches) -> None:
    frame, watcher = await live_frame(frames)
    reason = "the browser or its display exited"
    for n in range(1, RESTARTS_PER_MINUTE + 1):
        launches.last.hooks.on_fault(reason)
        told = await watcher.until_state(LAUNCHING)
        assert told.message == reason, "viewers hear why before the teardown"
        await watcher.until_state(LIVE)
        assert len(launches.runtimes) == n + 1 and launches.runtimes[-2].stopped
    launches.last.hooks.on_fault(reason)
    gave_up = await watcher.until_state(ERROR)
    assert gave_up.message == f"{reason}; gave up after {RESTARTS_PER_MINUTE} restarts a minute"
    assert frames.restarts == RESTARTS_PER_MINUTE + 1 and not frame.browser_running


async def test_one_death_reported_twice_relaunches_once(frames: FrameManager, launches: Launches) -> None:
    """A killed display is seen by the watchdog (the process exited) and by the pipeline (its X connection
    broke). The second report must not tear down the runtime the first one launched, nor spend the budget."""
    frame, watcher = await live_frame(frames)
    dead = launches.last
    dead.hooks.on_fault("the browser or its display exited")
    dead.hooks.on_fault("capture failed: lost the connection to X display :1")
    await watcher.until_state(LAUNCHING)
    await watcher.until_state(LIVE)
    fresh = launches.last
    assert fresh is not dead and dead.stopped
    dead.hooks.on_fault("capture failed: lost the connection to X display :1")  # later still: also ignored
    for _ in range(RESTARTS_PER_MINUTE - 1):  # the budget is untouched by the repeats: more real faults recover
        launches.last.hooks.on_fault("the browser or its display exited")
        await watcher.until_state(LAUNCHING)
        await watcher.until_state(LIVE)
    assert frames.restarts == RESTARTS_PER_MINUTE and frame.browser_running
    assert len(launches.runtimes) == RESTARTS_PER_MINUTE + 1


async def test_a_crashed_page_is_reloaded_in_the_same_browser(frames: FrameManager, launches: Launches) -> None:
    _, watcher = await live_frame(frames)
    launches.last.hooks.on_crashed()
    assert (await watcher.until_state(LAUNCHING)).message == "the page crashed; reloading"
    await watcher.until_state(LIVE)
    assert len(launches.runtimes) == 1 and launches.last.keyframe_requests


async def test_a_page_that_keeps_crashing_is_not_reloaded_without_end(frames: FrameManager,
                                                                        launches: Launches) -> None:
    frame, watcher = await live_frame(frames)
    for _ in range(RESTARTS_PER_MINUTE):
        launches.last.hooks.on_crashed()
        await watcher.until_state(LAUNCHING)
        await watcher.until_state(LIVE)
    launches.last.hooks.on_crashed()  # one more within the minute: left on the crash page, and said so
    state = await watcher.until_state(ERROR)
    assert state.message is not None and "crashed more than" in state.message
    assert frame.browser_running and len(launches.runtimes) == 1  # the browser and its other pages live on


async def test_a_picture_of_a_stopped_pipeline_never_reaches_the_next_ones_viewers(
        frames: FrameManager, launches: Launches) -> None:
    frame = await frames.create(URL, SIZE)
    await frame.ensure_running()
    old = launches.last
    old.post(picture())
    assert frame.feed.pictures == 1
    await frame.close_browser()
    await frame.ensure_running()
    new = launches.last
    assert new is not old and new.pipeline is not old.pipeline
    # The old worker outlived its stop (a join that timed out) and posts once more, after the new one started.
    old.post(picture())
    assert frame.feed.pictures == 1
    new.post(picture())
    assert frame.feed.pictures == 2


def test_the_restart_budget_is_per_minute() -> None:
    budget = RestartBudget(per_minute=3)
    assert [budget.spend(t) for t in (0.0, 10.0, 20.0, 30.0)] == [True, True, True, False]
    assert budget.spend(75.0), "the two oldest are over a minute old by now"
