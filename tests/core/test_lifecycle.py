from __future__ import annotations

import pytest

from framestream.core.lifecycle import (
    CapacityError,
    FrameState,
    FrameView,
    choose_browser_to_close,
    pause_deadline,
)


def view(fid: str, state: FrameState, viewers: int = 0, last: float = 0.0, running: bool = True) -> FrameView:
    return FrameView(fid, state, viewers, last, running)


def test_pause_after_idle_period_only_when_live_and_unwatched() -> None:
    assert pause_deadline(FrameState.LIVE, 0, 10.0, 5.0) == 15.0  # not before 15.0, from 15.0 on
    assert pause_deadline(FrameState.LIVE, 1, 10.0, 5.0) is None  # watched: never
    assert pause_deadline(FrameState.PAUSED, 0, 10.0, 5.0) is None  # already paused
    assert pause_deadline(FrameState.LIVE, 0, None, 5.0) is None  # no idle period started
    assert pause_deadline(FrameState.LIVE, 2, 10.0, 5.0) is None


def test_under_the_cap_nothing_closes() -> None:
    frames = [view("a", FrameState.LIVE), view("b", FrameState.PAUSED)]
    assert choose_browser_to_close(frames, cap=3) is None
    # Closed frames do not count.
    frames.append(view("c", FrameState.CLOSED, running=False))
    assert choose_browser_to_close(frames, cap=3) is None


def test_at_the_cap_the_least_recently_viewed_unwatched_frame_closes() -> None:
    frames = [
        view("watched-old", FrameState.LIVE, viewers=2, last=1.0),
        view("paused-mid", FrameState.PAUSED, last=5.0),
        view("live-older", FrameState.LIVE, last=3.0),
    ]
    assert choose_browser_to_close(frames, cap=3) == "live-older"
    assert choose_browser_to_close(frames[:2], cap=2) == "paused-mid"


def test_launching_and_watched_frames_never_close() -> None:
    frames = [view("a", FrameState.LIVE, viewers=1), view("b", FrameState.LAUNCHING, last=0.0)]
    with pytest.raises(CapacityError) as err:
        choose_browser_to_close(frames, cap=2)
    assert err.value.cap == 2 and "2" in str(err.value)


def test_the_frame_starting_does_not_count_against_itself() -> None:
    frames = [view("a", FrameState.PAUSED, last=1.0), view("me", FrameState.LAUNCHING)]
    assert choose_browser_to_close(frames, cap=2, starting="me") is None
    assert choose_browser_to_close(frames, cap=1, starting="me") == "a"
