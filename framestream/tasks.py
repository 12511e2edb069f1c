"""Ending a task we own, without losing a cancellation either way: the standard library only.

On Python 3.11, `contextlib.suppress(asyncio.CancelledError): await task` after `task.cancel()` cannot tell the
task's cancellation from the caller's own: a caller cancelled meanwhile carries on as if nothing happened (a
shutdown's bound, a handler the server gave up on). And `asyncio.wait_for` returns the result when a cancellation
comes as the awaited thing completes (fixed in 3.12), so a loop that waits with it can outlive the `cancel()`
meant to end it: a frame's delete then waited for its DevTools heartbeat until the service stopped (seen once in
a loaded test run; tests/test_tasks.py and tests/browser/test_cdp.py show both). So the library waits with
`asyncio.timeout`, which does not lose a cancellation, and ends tasks with `stop_task`.
"""

from __future__ import annotations

import asyncio
from typing import Any


async def ended(task: asyncio.Future[Any]) -> None:
    """Wait until `task` has ended, without cancelling it. An error it ended with is raised here, its cancellation
    is not; the caller's own cancellation goes on (and leaves the task running)."""
    await asyncio.wait([task])
    if not task.cancelled():
        task.result()


async def stop_task(task: asyncio.Future[Any]) -> None:
    """Cancel `task` and wait until it has ended, as `ended` does."""
    task.cancel()
    await ended(task)


__all__ = ["ended", "stop_task"]
