"""Stand-ins for a frame's processes: the frame's logic runs for real, nothing is launched."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from framestream.core.lifecycle import FrameState
from framestream.core.wire import InputEvent
from framestream.fanout.feed import Outbox, Viewer
from framestream.frames.events import FrameEvent, StateChanged
from framestream.frames.frame import Frame
from framestream.frames.manager import FrameManager
from framestream.frames.runtime import RuntimeHooks
from framestream.media.picture import Picture
from framestream.service.config import FrameSize, Settings
from framestream.service.statefile import write_json_atomically

SIZE = FrameSize(320, 200, 1)
URL = "http://pages.test/a"


class FakeRuntime:
    """One launch: `start` makes a fresh pipeline identity (as FrameRuntime makes a FramePipeline)."""

    def __init__(self, frame_id: str, hooks: RuntimeHooks, *, start_error: Exception | None = None,
                 load_error: str | None = None, size: FrameSize = SIZE) -> None:
        self.frame_id = frame_id
        self.launched_size = size
        self.sizes: list[FrameSize] = []  # each size it took in place
        self.resize_error: Exception | None = None
        self.resize_gate: asyncio.Event | None = None  # when set, resize waits for it (a resize under way)
        self.hooks = hooks
        self.start_error = start_error
        self.load_error = load_error
        self.pipeline: object | None = None
        self.encode_seconds = 0.0
        self.started = self.stopped = self.frozen = False
        self.froze = asyncio.Event()  # set by every freeze (a pause)
        self.stop_gate: asyncio.Event | None = None  # when set: `stop` ends once it is (a browser's slow close)
        self.stop_error: Exception | None = None  # raised by `stop`, after the gate (a close that failed)
        self.dispatched: list[InputEvent] = []
        self.dispatch_error: Exception | None = None
        self.dispatch_gate: asyncio.Event | None = None  # when set, dispatch waits for it
        self.freeze_gate: asyncio.Event | None = None  # when set, freeze waits for it (a pause under way)
        self.frozen_at_dispatch: list[bool] = []  # whether the page was frozen as each dispatch reached it
        self.keyframe_requests: list[int] = []
        self.fresh_keyframe_requests = 0
        self.painted_relaid: list[bool] = []  # each painted() wait: after a new layout (a resize) or not
        self.light_kbps: int | None = None
        self.light_keyframe_requests = 0
        self.released = False
        self.tabs = None  # no browser pages: what Browsing does with real ones is proven by integration tests

    async def start(self, url: str) -> str | None:
        self.started = True
        if self.start_error is not None:
            raise self.start_error
        self.pipeline = object()
        return self.load_error

    async def stop(self, *, keep_storage: bool = True) -> None:
        if self.stop_gate is not None:
            await self.stop_gate.wait()
        if self.stop_error is not None:
            raise self.stop_error
        # Like a FramePipeline whose join timed out, the worker may still be alive: the identity stays.
        self.stopped = True

    async def reload(self, url: str) -> str | None:
        return None

    async def resize(self, size: FrameSize) -> bool:
        """In place at the dpr it was launched with (FrameRuntime's display holds any size)."""
        if size.dpr != self.launched_size.dpr:
            return False
        if self.resize_gate is not None:
            await self.resize_gate.wait()
        if self.resize_error is not None:
            raise self.resize_error
        self.pipeline = object()  # a pipeline of the new size
        self.sizes.append(size)
        return True

    async def freeze(self) -> None:
        if self.freeze_gate is not None:
            await self.freeze_gate.wait()
        self.frozen = True
        self.froze.set()

    def thaw(self) -> None:
        self.frozen = False

    async def dispatch(self, events: Sequence[InputEvent]) -> None:
        freezing = self.freeze_gate is not None and not self.freeze_gate.is_set()
        self.frozen_at_dispatch.append(self.frozen or freezing)
        if self.dispatch_gate is not None:
            await self.dispatch_gate.wait()
        if self.dispatch_error is not None:
            raise self.dispatch_error
        self.dispatched.extend(events)

    def request_keyframe(self, published: int) -> None:
        self.keyframe_requests.append(published)

    def request_fresh_keyframe(self) -> None:
        self.fresh_keyframe_requests += 1

    async def painted(self, *, relaid: bool = False) -> None:
        self.painted_relaid.append(relaid)

    def set_light(self, kbps: int | None) -> None:
        self.light_kbps = kbps

    def request_light_keyframe(self) -> None:
        self.light_keyframe_requests += 1

    def snapshot(self) -> tuple[Any, int, int] | None:
        return None

    def post(self, picture: Picture) -> None:
        """What the worker thread's picture becomes on the loop: tagged with the pipeline that made it."""
        self.hooks.on_picture(self.pipeline, picture)


class Launches:
    """The runtime factory: every launch, in order; `next_*` shape the next one."""

    def __init__(self) -> None:
        self.runtimes: list[FakeRuntime] = []
        self.next_start_error: Exception | None = None
        self.next_load_error: str | None = None

    def __call__(self, frame_id: str, size: FrameSize, hooks: RuntimeHooks) -> FakeRuntime:
        runtime = FakeRuntime(frame_id, hooks, start_error=self.next_start_error, load_error=self.next_load_error,
                              size=size)
        self.next_start_error, self.next_load_error = None, None
        self.runtimes.append(runtime)
        return runtime

    @property
    def last(self) -> FakeRuntime:
        return self.runtimes[-1]


def settings(state_dir: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {"secret": b"s" * 32, "insecure_dev": False, "sandbox_id": "test",
                              "state_dir": state_dir, "idle_pause_s": 3600.0, "max_browsers": 2}
    return Settings(**{**values, **overrides})


class Watcher:
    """A viewer as a connection makes one: what the frame emits queues here."""

    def __init__(self, frame: Frame, slot: int = 1) -> None:
        self.events: asyncio.Queue[FrameEvent] = asyncio.Queue()
        self.configs: list[FrameSize] = []  # the frame's size at each video-config it was sent
        self.viewer = Viewer(frame.id, slot, Outbox(), send_config=lambda _: self.configs.append(frame.size),
                             on_event=self.events.put_nowait)

    def drain(self) -> list[FrameEvent]:
        out = []
        while not self.events.empty():
            out.append(self.events.get_nowait())
        return out

    async def until_state(self, state: FrameState, timeout: float = 5.0) -> StateChanged:
        """The first StateChanged in `state` from now on (earlier ones are consumed)."""
        async with asyncio.timeout(timeout):
            while True:
                event = await self.events.get()
                if isinstance(event, StateChanged) and event.state is state:
                    return event


def states(watcher: Watcher) -> list[tuple[FrameState, str | None]]:
    """The states (and messages) `watcher` heard since it was last drained."""
    return [(e.state, e.message) for e in watcher.drain() if isinstance(e, StateChanged)]


def picture(keyframe: bool = True) -> Picture:
    """A picture captured now (a frame drops those captured before its last fresh keyframe request)."""
    now_us = time.time_ns() // 1000
    return Picture(data=b"x" * 10, keyframe=keyframe, refinement=False, capture_us=now_us, encoded_us=now_us,
                   codec="avc1")


def manager(state_dir: Path, launches: Launches, **overrides: Any) -> FrameManager:
    return FrameManager(settings(state_dir, **overrides), new_runtime=launches)


@contextlib.asynccontextmanager
async def managed(state_dir: Path, launches: Launches, **overrides: Any) -> AsyncIterator[FrameManager]:
    """`manager(...)`, shut down when the block ends (a test with its own settings)."""
    frames = manager(state_dir, launches, **overrides)
    try:
        yield frames
    finally:
        await frames.shutdown()


async def live_frame(frames: FrameManager, url: str = URL) -> tuple[Frame, Watcher]:
    """A new frame, live and watched; what its watcher heard so far is consumed."""
    frame = await frames.create(url, SIZE)
    watcher = Watcher(frame)
    frame.add_viewer(watcher.viewer)
    await frame.ensure_running()
    watcher.drain()
    return frame, watcher


def restored(frames: FrameManager, *urls: str) -> list[Frame]:
    """Frames as a restart brings them back from frames.json: `closed`, no browser, nothing launching."""
    ids = [f"f{n}" for n in range(len(urls))]
    entries = [{"id": frame_id, "url": url, "width": SIZE.css_width, "height": SIZE.css_height, "dpr": SIZE.dpr}
               for frame_id, url in zip(ids, urls, strict=True)]
    write_json_atomically(frames.registry.path, {"version": 1, "frames": entries})
    frames.load()
    return [frames.frames[frame_id] for frame_id in ids]


__all__ = ["SIZE", "URL", "FakeRuntime", "Launches", "Watcher", "live_frame", "manager", "picture",
           "restored", "settings", "states"]
