"""The task that switches a frame's display as core/refresh.py says (frames/refresh.py), with a display that records
what it is asked (the real switch is tests/integration/test_input_refresh.py)."""

from __future__ import annotations

import asyncio

from framestream.core.refresh import RefreshPolicy
from framestream.frames.refresh import DisplayRefresh


class Display:
    def __init__(self, works: bool = True) -> None:
        self.rates: list[int] = []
        self.works = works
        self.changed = asyncio.Event()

    async def set_refresh(self, hz: int) -> bool:
        self.rates.append(hz)
        self.changed.set()
        return self.works


async def _next_rate(display: Display) -> list[int]:
    await asyncio.wait_for(display.changed.wait(), 5.0)
    display.changed.clear()
    return display.rates


async def test_input_switches_up_and_the_end_of_the_hold_switches_back() -> None:
    display = Display()
    now = [0.0]
    refresh = DisplayRefresh(display.set_refresh, RefreshPolicy(30, 60, hold_s=0.05), name="t",
                             clock=lambda: now[0])
    refresh.note_input()
    assert await _next_rate(display) == [60]
    refresh.note_input()  # still within the hold: no second switch
    now[0] = 0.06  # the hold is over by the clock the task reads when its wait ends
    assert await _next_rate(display) == [60, 30]
    now[0] = 1.0
    refresh.note_input()
    assert await _next_rate(display) == [60, 30, 60]
    await refresh.aclose()
    refresh.note_input()  # after close: nothing more
    await asyncio.sleep(0)
    assert display.rates == [60, 30, 60]


async def test_a_display_that_cannot_switch_is_not_asked_again() -> None:
    display = Display(works=False)
    refresh = DisplayRefresh(display.set_refresh, RefreshPolicy(30, 60), name="t")
    refresh.note_input()
    assert await _next_rate(display) == [60]
    refresh.note_input()
    await asyncio.sleep(0.01)
    assert display.rates == [60]
    await refresh.aclose()


async def test_without_a_faster_rate_no_task_runs() -> None:
    display = Display()
    refresh = DisplayRefresh(display.set_refresh, RefreshPolicy(30, 0), name="t")
    refresh.note_input()
    await asyncio.sleep(0.01)
    assert display.rates == []
    await refresh.aclose()
