"""frames.json: saved and loaded whole, bad entries skipped, and a save that fails retried until it lands."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import pytest

from framestream.core.lifecycle import FrameState
from framestream.frames.manager import FrameManager
from framestream.frames.registry import Registry, SavedFrame
from tests.frames.fakes import SIZE, Launches, manager


class Saves:
    """The registry's `spawn`: each background save becomes a task the test can wait for."""

    def __init__(self) -> None:
        self.tasks: asyncio.Queue[asyncio.Task[None]] = asyncio.Queue()

    def __call__(self, coro: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
        task = asyncio.create_task(coro, name=name)
        self.tasks.put_nowait(task)
        return task

    async def next(self) -> None:
        """Wait for the next background save to be started, and for it to end."""
        await asyncio.wait_for(await asyncio.wait_for(self.tasks.get(), 5.0), 5.0)


def saved(frame_id: str, viewed_ago: float = 0.0) -> SavedFrame:
    return SavedFrame(frame_id, f"http://pages.test/{frame_id}", SIZE, time.monotonic() - viewed_ago)


def test_frames_come_back_as_they_were_saved(state_dir: Path) -> None:
    frames = [saved("a", viewed_ago=30.0), saved("b")]
    path = state_dir / "frames.json"
    Registry(path, lambda: frames, Saves()).save()
    loaded = Registry(path, list, Saves()).load()
    assert [(f.id, f.url, f.size) for f in loaded] == [(f.id, f.url, f.size) for f in frames]
    for before, after in zip(frames, loaded, strict=True):
        assert after.last_viewed == pytest.approx(before.last_viewed, abs=1.0)


def test_entries_that_make_no_sense_are_skipped_and_a_torn_file_is_no_frames(state_dir: Path) -> None:
    path = state_dir / "frames.json"
    good = {"id": "ok", "url": "http://pages.test/", "width": 320, "height": 200, "dpr": 1}
    path.write_text(json.dumps({"version": 1, "frames": [
        good, {**good, "id": "file", "url": "file:///etc/passwd"}, {"id": "no-size", "url": "http://pages.test/"},
    ]}))
    (state_dir / "frames.json.x1y2.tmp").write_text("{")  # a save killed half-way
    assert [f.id for f in Registry(path, list, Saves()).load()] == ["ok"]
    assert not list(state_dir.glob("*.tmp"))
    path.write_text('{"version": 1, "frames": [')
    assert Registry(path, list, Saves()).load() == []


async def test_a_failed_save_is_reported_once_and_retried_until_it_lands(
        state_dir: Path, caplog: pytest.LogCaptureFixture) -> None:
    blocker = state_dir / "sub"
    blocker.write_text("a file where the registry's directory should be")
    saves = Saves()
    registry = Registry(blocker / "frames.json", lambda: [saved("a")], saves, retry_s=0.01)
    with caplog.at_level(logging.ERROR, logger="framestream.frames"):
        await registry.save_in_background()
        assert registry.write_error is not None and registry.write_errors == 1
        await saves.next()  # the retry, by itself; still failing
        assert registry.write_errors == 2
    assert len([r for r in caplog.records if r.levelno == logging.ERROR]) == 1, "once per outage"
    blocker.unlink()
    await saves.next()
    assert registry.write_error is None
    assert [f["id"] for f in json.loads((blocker / "frames.json").read_text())["frames"]] == ["a"]


async def test_a_restarted_manager_has_its_frames_back_closed(state_dir: Path, launches: Launches) -> None:
    first = manager(state_dir, launches)
    frame = await first.create("http://pages.test/a", SIZE)
    await frame.ensure_running()
    await first.shutdown()
    again: FrameManager = manager(state_dir, launches)
    again.load()
    back = again.get(frame.id)
    assert back is not None and back.state is FrameState.CLOSED and back.url == "http://pages.test/a"
    await again.shutdown()
