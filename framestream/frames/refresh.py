"""Switches a frame's display to the faster refresh rate while someone gives input (core/refresh.py says when).

One task per running frame, started by its first input and ended by `aclose` before the display stops. The input
never waits for the switch: the mode changes beside it, so the first input after a quiet spell may still be drawn
at the slower rate, and everything after it at the faster one.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable

from framestream.core.refresh import RefreshPolicy
from framestream.tasks import stop_task


class DisplayRefresh:
    def __init__(self, set_refresh: Callable[[int], Awaitable[bool]], policy: RefreshPolicy, *, name: str,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._set_refresh = set_refresh  # XvfbDisplay.set_refresh: False when the display cannot change
        self._policy = policy
        self._name = name
        self._clock = clock
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._gave_up = not policy.switches

    def note_input(self) -> None:
        if self._gave_up:
            return
        self._policy.note_input(self._clock())
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"refresh-{self._name}")
        self._wake.set()

    async def aclose(self) -> None:
        self._gave_up = True
        task, self._task = self._task, None
        if task is not None:
            await stop_task(task)

    async def _run(self) -> None:
        policy, current = self._policy, self._policy.idle_hz
        while True:
            self._wake.clear()  # before reading the policy: input noted from here on wakes the wait below
            wanted = policy.wanted(self._clock())
            if wanted != current:
                if not await self._set_refresh(wanted):
                    self._gave_up = True  # no xrandr, or the display refused: it logged why, once
                    return
                current = wanted
            delay = policy.next_change(self._clock())
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await self._wake.wait()
