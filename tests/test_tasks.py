"""Ending a task we own (framestream/tasks.py): neither its cancellation nor the caller's is lost."""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path

import pytest

import framestream
from framestream.tasks import ended, stop_task


async def _slow_to_end(cleaning: asyncio.Event, cleaned: asyncio.Event) -> None:
    """Runs until cancelled, then takes its time to clean up (a browser closing, a socket flushing)."""
    try:
        await asyncio.Event().wait()
    finally:
        cleaning.set()
        await cleaned.wait()


async def test_a_caller_cancelled_while_its_task_ends_is_cancelled_too() -> None:
    """`task.cancel()` then `suppress(CancelledError): await task` swallowed this: the caller's cancel went into the
    task, ended its clean-up, and the caller carried on (a shutdown past its bound)."""
    cleaning, cleaned = asyncio.Event(), asyncio.Event()
    task = asyncio.create_task(_slow_to_end(cleaning, cleaned))
    await asyncio.sleep(0)  # the task runs up to its wait
    caller = asyncio.create_task(stop_task(task))
    await cleaning.wait()
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert not task.done()  # its clean-up was not cut short by the caller's cancellation
    cleaned.set()
    await ended(task)
    assert task.cancelled()


async def test_stop_task_waits_for_the_end_raises_its_error_and_not_its_cancellation() -> None:
    cleaning, cleaned = asyncio.Event(), asyncio.Event()
    task = asyncio.create_task(_slow_to_end(cleaning, cleaned))
    await asyncio.sleep(0)
    stopping = asyncio.create_task(stop_task(task))
    await cleaning.wait()
    assert not stopping.done()
    cleaned.set()
    await stopping  # no CancelledError: the task's own cancellation is what was asked
    assert task.cancelled()

    async def fails_when_cancelled() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            raise RuntimeError("clean-up failed")

    failing = asyncio.create_task(fails_when_cancelled())
    await asyncio.sleep(0)
    with pytest.raises(RuntimeError, match="clean-up failed"):
        await stop_task(failing)


async def test_ended_does_not_cancel_and_gives_the_result_s_error() -> None:
    go = asyncio.Event()

    async def finishes() -> int:
        await go.wait()
        return 7

    task = asyncio.create_task(finishes())
    waiting = asyncio.create_task(ended(task))
    await asyncio.sleep(0)
    go.set()
    await waiting
    assert task.result() == 7

    async def fails() -> None:
        raise ValueError("bad")

    with pytest.raises(ValueError, match="bad"):
        await ended(asyncio.create_task(fails()))


def _is_asyncio(node: ast.expr, name: str) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "asyncio" \
        and node.attr == name


def test_the_library_waits_with_asyncio_timeout_and_ends_tasks_with_stop_task() -> None:
    """Neither pattern that lost a cancellation comes back: `asyncio.wait_for`, `suppress(asyncio.CancelledError)`."""
    root = Path(framestream.__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if _is_asyncio(node, "wait_for") if isinstance(node, ast.Attribute) else (
                    isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "suppress"
                    and any(_is_asyncio(arg, "CancelledError") for arg in node.args)):
                found.append(f"{path.relative_to(root)}:{getattr(node, 'lineno', 0)}")
    assert found == []
