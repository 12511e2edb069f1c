"""Fan-out: one frame's pictures to every viewer, without the producer ever waiting.

`FrameFeed.publish` runs on the event loop once per encoded picture: it numbers the picture (the sequence is
the frame's, shared by every viewer) and offers it to each `Viewer`. A viewer whose connection is behind (its
`Outbox` is over budget) drops the picture and every delta after it, asks the frame for a keyframe and
resumes only at one, so a stalled viewer costs the others nothing.

A new watcher starts from the frame's last keyframe and the pictures since, when they fit in one outbox's
budget (a still or slowly changing page): it sees the picture at once, without waiting for a fresh keyframe
(at most one a second per frame) and without making every other viewer receive one. Past that budget (motion),
it asks for a keyframe as before.

Below both the frames and the server: a frame owns its feed, a connection owns its outbox and its viewers.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from framestream.core.wire import FLAG_KEYFRAME, FLAG_REFINEMENT, pack_video_header
from framestream.media.picture import Picture

if TYPE_CHECKING:
    from framestream.frames.events import FrameEvent

# A viewer may fall this far behind before it skips to the next keyframe: about half a second of motion.
OUTBOX_MAX_BYTES = 2 * 1024 * 1024
OUTBOX_MAX_PICTURES = 15


class Outbox:
    """One connection's outgoing messages. Text (JSON) always queues; video queues within a budget."""

    def __init__(self, max_bytes: int = OUTBOX_MAX_BYTES, max_pictures: int = OUTBOX_MAX_PICTURES) -> None:
        self._items: collections.deque[str | bytes] = collections.deque()
        self._video_bytes = 0
        self._video_count = 0
        self._max_bytes = max_bytes
        self._max_pictures = max_pictures
        self._ready = asyncio.Event()
        self.closed = False
        self.bytes_sent = 0
        self.pictures_sent = 0

    def push_text(self, text: str) -> None:
        if self.closed:
            return
        self._items.append(text)
        self._ready.set()

    def push_video(self, message: bytes) -> bool:
        """Queue one video message; False (and nothing queued) when the connection is over budget."""
        if self.closed:
            return False
        over = self._video_count >= self._max_pictures or self._video_bytes + len(message) > self._max_bytes
        # An oversized keyframe still goes through when nothing else is queued, or it never would.
        if over and self._video_count > 0:
            return False
        self._items.append(message)
        self._video_bytes += len(message)
        self._video_count += 1
        self._ready.set()
        return True

    async def next(self) -> str | bytes | None:
        """The next message to send, or None once closed and drained."""
        while not self._items:
            if self.closed:
                return None
            self._ready.clear()
            await self._ready.wait()
        item = self._items.popleft()
        if isinstance(item, bytes):
            self._video_bytes -= len(item)
            self._video_count -= 1
            self.bytes_sent += len(item)
            self.pictures_sent += 1
        return item

    def close(self) -> None:
        self.closed = True
        self._ready.set()


@dataclass(eq=False)
class Viewer:
    """One connection watching one frame, under its connection-local `slot`.

    Pictures go straight to its `outbox`; what happens to the frame (state, control) reaches it as events
    through `on_event`, which its connection turns into wire messages."""

    frame_id: str
    slot: int
    outbox: Outbox
    send_config: Callable[[Viewer], None]
    on_event: Callable[[FrameEvent], None]
    waiting_keyframe: bool = True
    configured: bool = False
    skipped: int = 0

    def offer(self, picture: Picture, sequence: int, request_keyframe: Callable[[], None]) -> bool:
        """Queue the picture for this viewer; False when it was dropped (skipping to a keyframe)."""
        if self.waiting_keyframe and not picture.keyframe:
            return False
        if picture.keyframe and not self.configured:
            self.send_config(self)
            self.configured = True
        flags = (FLAG_KEYFRAME if picture.keyframe else 0) | (FLAG_REFINEMENT if picture.refinement else 0)
        message = pack_video_header(flags, self.slot, sequence, picture.capture_us) + picture.data
        if self.outbox.push_video(message):
            self.waiting_keyframe = False
            return True
        self.waiting_keyframe = True
        self.skipped += 1
        request_keyframe()
        return False


@dataclass(eq=False)
class FrameFeed:
    """Numbers one frame's pictures and hands them to its viewers."""

    request_keyframe: Callable[[], None]
    sequence: int = 0
    codec: str | None = None
    last_picture_us: int = 0
    pictures: int = 0
    keyframes: int = 0
    bytes_encoded: int = 0
    dropped: int = 0  # pictures not delivered to a viewer that was behind
    viewers: set[Viewer] = field(default_factory=set)
    # The last keyframe and every picture after it, with their sequence numbers, while they fit one outbox.
    _since_keyframe: list[tuple[Picture, int]] = field(default_factory=list)
    _since_keyframe_bytes: int = 0
    _change_waiters: list[tuple[int, asyncio.Future[int]]] = field(default_factory=list)

    def add(self, viewer: Viewer) -> None:
        self.viewers.add(viewer)
        viewer.waiting_keyframe = True
        if not self._since_keyframe:
            self.request_keyframe()
            return
        for picture, sequence in self._since_keyframe:
            if not viewer.offer(picture, sequence, self.request_keyframe):
                return  # its outbox is full: it waits for the keyframe the offer asked for

    def remove(self, viewer: Viewer) -> None:
        self.viewers.discard(viewer)

    def remove_all(self) -> None:
        self.viewers.clear()

    def restarted(self) -> None:
        """A new encoder starts: every viewer waits for its first keyframe and gets a fresh video-config."""
        for viewer in self.viewers:
            viewer.waiting_keyframe = True
            viewer.configured = False
        self.forget()

    def forget(self) -> None:
        """The encoder stopped: its pictures no longer show the page as it is, so no joiner gets them."""
        self._keep_since_keyframe(None)

    def publish(self, picture: Picture) -> None:
        self.sequence = (self.sequence + 1) & 0xFFFFFFFF
        if picture.codec is not None:
            self.codec = picture.codec
        self.last_picture_us = picture.capture_us
        self.pictures += 1
        self.keyframes += picture.keyframe
        self.bytes_encoded += len(picture.data)
        self._keep_since_keyframe(picture)
        for viewer in list(self.viewers):
            if not viewer.offer(picture, self.sequence, self.request_keyframe):
                self.dropped += 1
        if self._change_waiters and picture.changed:
            keep = []
            for after_us, future in self._change_waiters:
                if future.done():
                    continue
                if picture.capture_us > after_us:
                    future.set_result(picture.capture_us)
                else:
                    keep.append((after_us, future))
            self._change_waiters = keep

    def _keep_since_keyframe(self, picture: Picture | None) -> None:
        """Remember `picture` for joiners (None: forget them all)."""
        if picture is None or picture.keyframe:
            self._since_keyframe, self._since_keyframe_bytes = [], 0
        if picture is None or not (picture.keyframe or self._since_keyframe):
            return
        self._since_keyframe_bytes += len(picture.data)
        self._since_keyframe.append((picture, self.sequence))
        if len(self._since_keyframe) > OUTBOX_MAX_PICTURES or self._since_keyframe_bytes > OUTBOX_MAX_BYTES:
            self._since_keyframe, self._since_keyframe_bytes = [], 0  # motion: joiners ask for a keyframe

    async def wait_change(self, after_us: int, timeout: float) -> int | None:
        """The capture time of the first changed picture captured after `after_us`, or None after `timeout`."""
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._change_waiters.append((after_us, future))
        try:
            return await asyncio.wait_for(future, timeout)
        except TimeoutError:
            return None
