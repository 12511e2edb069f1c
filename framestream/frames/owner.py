"""What a frame asks of whoever owns it: frames/manager.py `FrameManager` implements it, and the manager imports
frames, so a frame names only this and never imports the manager."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from framestream.recording.store import RecordingStore
from framestream.service.config import FrameSize, Settings

if TYPE_CHECKING:
    from framestream.frames.runtime import Runtime, RuntimeHooks


class BrowserSeeker(Protocol):
    """A frame as the owner reserves it a browser under the cap (`make_room_for`)."""

    id: str

    @property
    def browser_running(self) -> bool: ...

    def reserve_launch(self) -> None: ...


class FrameOwner(Protocol):
    """What a frame asks of whoever owns it (frames/manager.py `FrameManager` implements it): a launch slot under
    the cap, a runtime, a save, task spawning, a restart count. The manager imports frames, so a frame names only
    this and never imports the manager."""

    settings: Settings
    recordings: RecordingStore
    closing: bool

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any] | None: ...

    def files_dir(self, frame_id: str) -> Path: ...

    def new_runtime(self, frame_id: str, size: FrameSize, hooks: RuntimeHooks) -> Runtime: ...

    def note_restart(self) -> None: ...

    def save_soon(self) -> None: ...

    async def make_room_for(self, frame: BrowserSeeker) -> None: ...


__all__ = ["BrowserSeeker", "FrameOwner"]
