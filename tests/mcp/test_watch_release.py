"""The MCP tools let go of a frame they looked at once the agent stops, so the frame can pause (pure: a fake client)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from framestream.mcp import tools
from framestream.mcp.tools import ComputerTools


class FakeClient:
    def __init__(self) -> None:
        self.unwatched: list[str] = []
        self.done = asyncio.Event()

    async def unwatch(self, frame: str) -> None:
        self.unwatched.append(frame)
        self.done.set()

    async def close(self) -> None:
        pass


async def test_a_frame_is_unwatched_after_the_grace_and_each_look_starts_it_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tools, "WATCH_GRACE_S", 0.2)
    computer = ComputerTools("http://127.0.0.1:1", key=None)  # type: ignore[arg-type]
    fake = FakeClient()
    computer._client = fake  # type: ignore[assignment]
    computer._release_later("f1")
    computer._release_later("f1")  # a second look restarts the grace: one unwatch, not two
    await asyncio.wait_for(fake.done.wait(), 10)
    await asyncio.sleep(0.3)  # the first timer was cancelled: nothing else comes
    assert fake.unwatched == ["f1"]
    await computer.close()


async def test_close_cancels_pending_releases() -> None:
    computer = ComputerTools("http://127.0.0.1:1", key=None)  # type: ignore[arg-type]
    fake: Any = FakeClient()
    computer._client = fake
    computer._release_later("f1")
    await computer.close()
    assert not computer._release and fake.unwatched == []
