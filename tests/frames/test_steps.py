"""Input steps: `Frame.apply_step` arbitrates and applies, `server.inputs.apply_step` checks the grant first.

The frame's runtime is a fake that records what would go to the browser as CDP Input.* calls."""

from __future__ import annotations

import asyncio
import time

import pytest

from framestream.core.errors import CDPError, FrameGone, ProtocolError
from framestream.core.lifecycle import FrameState
from framestream.core.tokens import Claims, mint
from framestream.core.wire import KeyEvent, MouseEvent, Navigate
from framestream.frames.events import ControlChanged, StateChanged
from framestream.frames.manager import FrameManager
from framestream.server.context import ServiceContext
from framestream.server.inputs import apply_step
from tests.frames.fakes import SIZE, URL, Launches, live_frame, restored

MOVE = MouseEvent("move", 5, 5)
DOWN = MouseEvent("down", 5, 5, "left", 1, 1)


def grant(sub: str, iat: float, jti: str | None = None) -> Claims:
    return Claims(v=1, sbx="test", frm="*", role="drive", sub=sub, iat=iat, exp=time.time() + 600,
                  jti=jti or f"{sub}-{iat}")


async def test_the_first_driver_is_announced_and_its_events_applied(frames: FrameManager,
                                                                   launches: Launches) -> None:
    frame, watcher = await live_frame(frames)
    before_us = time.time_ns() // 1000
    started_us = await frame.apply_step(grant("alice", 1), 1, [MOVE], presenter=7)
    assert started_us >= before_us
    assert launches.last.dispatched == [MOVE]
    events = watcher.drain()
    control = events[0]
    assert isinstance(control, ControlChanged)
    assert (control.driver, control.presenter, control.kind, control.held) == ("alice", 7, "person", True)
    assert control.since_us is not None and control.since_us >= before_us
    assert isinstance(events[1], StateChanged) and events[1].driver == "alice" and len(events) == 2
    await frame.apply_step(grant("alice", 1), 2, [MOVE], presenter=7)
    assert watcher.drain() == [], "the same grant again changes nothing anyone is told"


async def test_an_older_grant_is_refused_and_a_newer_one_releases_what_the_driver_held(
        frames: FrameManager, launches: Launches) -> None:
    frame, watcher = await live_frame(frames)
    await frame.apply_step(grant("alice", 2), 1, [DOWN])
    with pytest.raises(ProtocolError) as refused:
        await frame.apply_step(grant("bob", 1), 1, [MOVE])
    assert (refused.value.code, refused.value.seq, refused.value.frame) == ("superseded", 1, frame.id)
    assert launches.last.dispatched == [DOWN]
    await frame.apply_step(grant("carol", 3), 1, [MOVE], presenter=9)
    assert launches.last.dispatched == [DOWN, MouseEvent("up", 5, 5, "left", 0, 0, 0), MOVE]
    assert [(e.driver, e.presenter, e.kind) for e in watcher.drain() if isinstance(e, ControlChanged)] == [
        ("alice", None, "person"), ("carol", 9, "person")]


async def test_a_newer_grant_waits_for_the_step_being_applied_and_releases_its_input_too(
        frames: FrameManager, launches: Launches) -> None:
    frame, _ = await live_frame(frames)
    gate = launches.last.dispatch_gate = asyncio.Event()
    key = KeyEvent("down", "a", "KeyA", 0)
    first = asyncio.create_task(frame.apply_step(grant("alice", 1), 1, [key]))
    second = asyncio.create_task(frame.apply_step(grant("carol", 2), 1, [MOVE]))
    await asyncio.sleep(0)  # both tasks reach the frame: the first is inside its step, the second waits
    assert frame.control.driver == "alice", "not admitted while another step is being applied"
    gate.set()
    await asyncio.gather(first, second)
    assert launches.last.dispatched == [key, KeyEvent("up", "a", "KeyA", 0), MOVE]


async def test_a_step_on_a_closed_frame_brings_it_up_first(frames: FrameManager, launches: Launches) -> None:
    [frame] = restored(frames, URL)
    await frame.apply_step(grant("alice", 1), 1, [MOVE])
    assert frame.state.value == "live" and launches.last.dispatched == [MOVE]


async def test_what_a_step_cannot_get_past_is_raised_as_the_frames_own_error(frames: FrameManager,
                                                                            launches: Launches) -> None:
    frame, _ = await live_frame(frames)
    launches.last.dispatch_error = CDPError("Input.dispatchMouseEvent timed out")
    with pytest.raises(CDPError):
        await frame.apply_step(grant("alice", 1), 1, [MOVE])
    await frames.delete(frame.id)
    with pytest.raises(FrameGone):
        await frame.apply_step(grant("alice", 1), 2, [MOVE])


# -- the entry point shared by the WebSocket and HTTP -------------------------------------------------------


def token(ctx: ServiceContext, role: str = "drive", *, step: bool = False, sub: str = "alice") -> str:
    return mint(ctx.key, sandbox=ctx.settings.sandbox_id, role=role, now=time.time(), frame="*", subject=sub,
                ttl=60, step=step)


async def test_the_entry_point_checks_the_grant_applies_and_counts(frames: FrameManager,
                                                                  launches: Launches) -> None:
    ctx = ServiceContext(frames.settings, frames)
    frame, _ = await live_frame(frames)
    applied = await apply_step(ctx, frame, token(ctx), 1, [MOVE], presenter=3)
    assert applied.started_us > 0 and launches.last.dispatched == [MOVE] and ctx.inputs_applied == 1

    async def refused(grant_text: str, events: list[MouseEvent]) -> str:
        with pytest.raises(ProtocolError) as err:
            await apply_step(ctx, frame, grant_text, 5, events)
        assert err.value.seq == 5
        return err.value.code

    assert await refused("not-a-token", [MOVE]) == "unauthorized"
    assert await refused(token(ctx, "view"), [MOVE]) == "forbidden"
    assert await refused(token(ctx), [MouseEvent("move", SIZE.css_width + 1, 0)]) == "bad-input"
    step = token(ctx, step=True)
    await apply_step(ctx, frame, step, 6, [MOVE])
    assert await refused(step, [MOVE]) == "replayed"
    launches.last.dispatch_error = CDPError("Input.dispatchMouseEvent timed out")
    assert await refused(token(ctx), [MOVE]) == "internal"
    await frames.delete(frame.id)
    assert await refused(token(ctx), [MOVE]) == "unknown-frame"
    assert ctx.inputs_applied == 2
    assert ctx.inputs_refused == {"unauthorized": 1, "forbidden": 1, "bad-input": 1, "replayed": 1, "internal": 1,
                                  "unknown-frame": 1}


async def test_a_frame_that_cannot_get_a_browser_refuses_input_with_capacity(frames: FrameManager) -> None:
    ctx = ServiceContext(frames.settings, frames)
    [starved] = restored(frames, URL)
    for _ in range(frames.settings.max_browsers):
        await live_frame(frames)  # every browser the cap allows, each watched
    with pytest.raises(ProtocolError) as err:
        await apply_step(ctx, starved, token(ctx), 1, [MOVE])
    assert (err.value.code, err.value.frame) == ("capacity", starved.id)
    assert ctx.inputs_refused == {"capacity": 1}


async def test_input_that_comes_while_the_frame_is_pausing_waits_and_finds_it_live(
        frames: FrameManager, launches: Launches) -> None:
    """A step that lands while a pause is freezing the page (the frame still says `live`) must not reach the page
    being frozen: in Chromium the stopped renderer never answers, the step failed after 5 s and the frame stayed
    paused (found by CI in test_fresh_pictures). It waits for the pause, which it then undoes."""
    frame, watcher = await live_frame(frames)
    frame.remove_viewer(watcher.viewer)
    runtime = launches.last
    runtime.freeze_gate = asyncio.Event()
    pausing = asyncio.create_task(frame.pause())
    try:
        await asyncio.sleep(0)  # the pause holds the frame and waits in freeze
        assert frame.state is FrameState.LIVE
        step = asyncio.create_task(frame.apply_step(grant("alice", 1), 1, [MOVE]))
        await asyncio.sleep(0)
    finally:
        runtime.freeze_gate.set()
    await asyncio.wait_for(asyncio.gather(pausing, step), 5.0)
    assert runtime.dispatched == [MOVE] and runtime.frozen_at_dispatch == [False]
    assert frame.state is FrameState.LIVE and not runtime.frozen


async def test_no_pause_starts_while_an_action_goes_in_and_the_idle_clock_restarts_after_it(
        frames: FrameManager, launches: Launches, monkeypatch: pytest.MonkeyPatch) -> None:
    """A navigation waits for its page: frozen by a pause meanwhile, the page never loads and the step fails. An
    unwatched frame therefore pauses only `idle_pause_s` after its last step ended, never under one."""
    frame, watcher = await live_frame(frames)
    frame.remove_viewer(watcher.viewer)
    loading, started = asyncio.Event(), asyncio.Event()
    reached: list[bool] = []

    async def navigate(action: Navigate) -> None:  # the page loads until the test lets it
        reached.append(launches.last.frozen)
        started.set()
        await loading.wait()
        reached.append(launches.last.frozen)

    monkeypatch.setattr(frame.browsing, "apply", navigate)
    step = asyncio.create_task(frame.apply_action(grant("agent", 1), 1, Navigate(frame.id, "g", 1, url=URL)))
    await asyncio.wait_for(started.wait(), 5.0)
    await frame.pause()  # the idle timer fires while the page loads
    assert frame.state is FrameState.LIVE and not launches.last.frozen, "no pause under a step"
    loading.set()
    before_end = time.monotonic()
    await asyncio.wait_for(step, 5.0)
    assert reached == [False, False]
    assert frame.idle_since is not None and frame.idle_since >= before_end, "idle from the step's end"
    await frame.pause()  # due once that idle time has passed (eligibility only: the timer keeps the time)
    assert frame.state is FrameState.PAUSED and launches.last.frozen
