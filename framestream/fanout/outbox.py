"""One connection's outgoing messages, with the queue delay bounded by time at the link's measured rate.

Two queues: text that never waits behind video (acks, errors, frame state: a driver's input stays responsive on
a slow link) and the stream (video, patches and the `video-config` that must stay in order with them). The
stream is bounded by a time budget (`BUDGET_S` at the rate `LinkMeter` measured from the writer), by bytes as
a backstop and, before anything was measured, by pictures.

Text is bounded too (issue 32, #5): a client that never reads must not grow the service's memory. Only the newest
`frame-state` of a frame waits (a newer one takes the queued one's place), and past `max_text_bytes` or
`max_texts` queued the outbox gives up: it drops what it holds, takes nothing more and calls `on_overflow` (the
connection then closes with 4429).

Keyframes are the one thing allowed past the budget: an IDR at dpr 2 is 150-400 KB (1.2-3.2 s at 1 Mbit/s),
and skipping to a newer keyframe would not make it smaller. For a viewer on the full stream the queue may
therefore hold the budget plus one keyframe's transfer (the least a skip would cost); for a slow one (`strict`)
the budget alone, so it gets keyframes only (a picture that fits behind one is sent too), each when the
previous one has gone.
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import Callable
from dataclasses import dataclass

from framestream.fanout.link import LinkMeter

# Before a connection's link is measured, a viewer may fall this far behind (about half a second of motion)
# before it skips to the next keyframe; the bytes stay a backstop after.
OUTBOX_MAX_BYTES = 2 * 1024 * 1024
OUTBOX_MAX_PICTURES = 15
OUTBOX_MAX_TEXT_BYTES = 1024 * 1024  # text (and configs) queued for a client that does not read, at most...
OUTBOX_MAX_TEXTS = 8192  # ...and as many messages
BUDGET_S = 0.25  # the most a picture waits in a connection's queue at its link's rate (issue 18)

_KIND_VIDEO, _KIND_PATCH = 1, 2  # the first byte of a binary message (docs/protocol.md)
_FLAG_KEYFRAME = 1

# A connection's way to write a message at once (server/send_at_once.py), asked only while nothing is queued or in
# flight: the bytes the link acknowledged meanwhile (the message is sent and needs no wait), or None: queue it.
SendAtOnce = Callable[[str | bytes], int | None]


@dataclass(slots=True)
class _Queued:
    payload: str | bytes
    size: int
    video: bool  # video or patch: counted in the pictures budget
    keyframe: bool
    slot: int | None  # the slot of a video or patch message, for skipping one viewer's pictures
    padding: bool = False  # a probe's padding (link.py): dropped first, whenever anything else needs the room


@dataclass(slots=True, eq=False)
class _Text:
    text: str
    key: str | None  # what a newer text replaces it for (a frame's `frame-state`), or None


def _describe(message: bytes) -> tuple[bool, int | None]:
    """(keyframe, slot) of a binary message: keyframes and slots are only read from video and patch headers."""
    if len(message) >= 4 and message[0] in (_KIND_VIDEO, _KIND_PATCH):
        return message[0] == _KIND_VIDEO and bool(message[1] & _FLAG_KEYFRAME), int.from_bytes(message[2:4])
    return False, None


class Outbox:
    """One connection's outgoing messages. Text always queues; video and patches within a time budget."""

    def __init__(self, max_bytes: int = OUTBOX_MAX_BYTES, max_pictures: int = OUTBOX_MAX_PICTURES,
                 budget_s: float = BUDGET_S, clock: Callable[[], float] = time.monotonic, *,
                 max_text_bytes: int = OUTBOX_MAX_TEXT_BYTES, max_texts: int = OUTBOX_MAX_TEXTS,
                 on_overflow: Callable[[], None] = lambda: None) -> None:
        self._urgent: collections.deque[_Text] = collections.deque()
        self._latest: dict[str, _Text] = {}  # the text queued for each key (the others were replaced)
        self._texts = 0  # live texts queued, with configs
        self._text_bytes = 0
        self._max_text_bytes = max_text_bytes
        self._max_texts = max_texts
        self._on_overflow = on_overflow
        self.overflowed = False  # gave up on a client that did not read
        self._stream: collections.deque[_Queued] = collections.deque()
        self._video_bytes = 0
        self._video_count = 0
        self._keyframe_bytes = 0  # the last keyframe queued: what a skip would cost at least
        self._padding = 0  # bytes of probe padding queued
        self._max_bytes = max_bytes
        self._max_pictures = max_pictures
        self.budget_s = budget_s
        self._clock = clock
        self.link = LinkMeter(clock)
        self._in_flight: _Queued | None = None  # taken by the writer, not reported sent yet
        self._in_flight_since = 0.0
        self._ready = asyncio.Event()
        self.closed = False
        self.bytes_sent = 0
        self.pictures_sent = 0
        self.purged = 0  # pictures dropped from the queue when their viewer skipped to a newer keyframe
        self._when_room: list[Callable[[], None]] = []
        self.send_at_once: SendAtOnce | None = None

    def __len__(self) -> int:
        """Messages waiting to be taken by `next`."""
        return len(self._urgent) + len(self._stream)

    def push_text(self, text: str, key: str | None = None) -> None:
        """A text message that goes before any queued video. One with a `key` (a frame's `frame-state`)
        takes the place of the one with the same key still queued: only the newest state waits."""
        if self.closed:
            return
        if key is not None and (old := self._latest.get(key)) is not None:
            self._text_bytes += len(text) - len(old.text)
            old.text = text
            self._check_text_bounds()
            return
        if self._sent_at_once(text):
            return
        item = _Text(text, key)
        if key is not None:
            self._latest[key] = item
        self._urgent.append(item)
        self._count_text(len(text))
        self._ready.set()

    def push_config(self, text: str) -> None:
        """A text message that stays in order with the video (a `video-config` before its keyframe)."""
        if self.closed or self._sent_at_once(text):
            return
        self._stream.append(_Queued(text, len(text), video=False, keyframe=False, slot=None))
        self._count_text(len(text))
        self._ready.set()

    def _sent_at_once(self, payload: str | bytes) -> bool:
        """Whether `payload` went out at once (`send_at_once`): only when nothing is queued or in flight, so it
        stays in order. It is then counted as sent, as the writer would count it."""
        if self.send_at_once is None or self._in_flight is not None or self._urgent or self._stream:
            return False
        delivered = self.send_at_once(payload)
        if delivered is None:
            return False
        if isinstance(payload, bytes):
            self.bytes_sent += len(payload)
            self.pictures_sent += 1
        self.sent(delivered, 0.0)
        return True

    def _count_text(self, size: int) -> None:
        """Count a text in (size > 0) or out."""
        self._texts += 1 if size > 0 else -1
        self._text_bytes += size
        if size > 0:
            self._check_text_bounds()

    def _check_text_bounds(self) -> None:
        """Past the bounds, give up on this client: drop everything and tell the connection."""
        if self._text_bytes > self._max_text_bytes or self._texts > self._max_texts:
            self.overflowed = True
            self._urgent.clear()
            self._latest.clear()
            self._stream.clear()
            self._texts = self._text_bytes = self._video_bytes = self._video_count = self._padding = 0
            self.close()
            self._on_overflow()

    def push_video(self, message: bytes, *, strict: bool = False) -> bool:
        """Queue one video or patch message; False (and nothing queued) when it would wait past the budget.

        A keyframe first drops what its own slot still has queued when that is over the budget (its viewer
        skips to this newer picture). `strict` (a slow viewer): the budget alone, without the allowance of one
        keyframe's transfer that the full stream has."""
        if self.closed:
            return False
        keyframe, slot = _describe(message)
        size = len(message)
        if self._padding and not self._fits(size, strict, keyframe):
            self.drop_padding()  # a probe never costs a picture its place
        if keyframe and slot is not None and not self._fits(size, strict, keyframe):
            self._purge(slot)
        if not self._fits(size, strict, keyframe):
            return False
        if keyframe:
            self._keyframe_bytes = size
        if self._sent_at_once(message):
            return True
        self._stream.append(_Queued(message, size, video=True, keyframe=keyframe, slot=slot))
        self._video_bytes += size
        self._video_count += 1
        self._ready.set()
        return True

    def push_padding(self, message: bytes) -> None:
        """Queue a probe's padding (kind 3): it waits behind everything and goes first when room is needed."""
        if self.closed:
            return
        self._stream.append(_Queued(message, len(message), video=False, keyframe=False, slot=None, padding=True))
        self._padding += len(message)
        self._ready.set()

    def drop_padding(self) -> None:
        """Forget the padding not taken yet (a probe ended, or a picture needs the room)."""
        if self._padding:
            self._stream = collections.deque(item for item in self._stream if not item.padding)
            self._padding = 0

    def _fits(self, size: int, strict: bool, keyframe: bool) -> bool:
        if self._video_count == 0 and self._in_flight is None:
            return True  # an oversized keyframe still goes through when nothing is ahead of it, or it never would
        rate = self.link.rate
        counted = rate is None and self._video_count >= self._max_pictures  # the count only until measured
        if counted or self._video_bytes + size > self._max_bytes:
            return self._video_count == 0
        ahead = self.delay_s()
        if ahead is None or rate is None:
            return True
        # On the full stream the queue may also hold one keyframe's transfer: a skip could only wait for
        # another keyframe as big, so what is queued is still the quickest way to a current picture.
        allowed = self.budget_s + (0.0 if strict else self._keyframe_bytes / rate)
        if keyframe:
            return ahead <= allowed  # its own transfer is what resuming costs anyway
        return ahead + size / rate <= allowed

    def delay_s(self) -> float | None:
        """Seconds to send what is ahead in the stream at the measured rate (None before any measure)."""
        rate = self.link.rate
        if rate is None:
            return None
        ahead = float(sum(q.size for q in self._stream))
        overrun = 0.0
        flight = self._in_flight
        if flight is not None:
            elapsed = self._clock() - self._in_flight_since
            ahead += max(0.0, flight.size - rate * elapsed)
            # Still not gone past its time at the measured rate: the link got slower (or stalled) since.
            overrun = max(0.0, elapsed - flight.size / rate)
        return ahead / rate + overrun

    def room_for_keyframe(self) -> bool:
        """Whether a keyframe asked for now would wait at most half the budget (always, before any measure)."""
        delay = self.delay_s()
        return delay is None or delay <= self.budget_s / 2

    def call_when_room(self, callback: Callable[[], None]) -> None:
        """Call `callback` once `room_for_keyframe` holds: now, or when the writer reports a send."""
        if self.room_for_keyframe():
            callback()
        else:
            self._when_room.append(callback)

    def skip_queued(self, slot: int) -> None:
        """Drop what `slot` still has queued once the link is measured (its viewer skips to a keyframe: waiting
        behind pictures it is going to replace would only delay that keyframe). Before any measure the
        picture count bounds the queue and it goes out as it is."""
        if self.link.rate is not None:
            self._purge(slot)

    def _purge(self, slot: int) -> None:
        keep: collections.deque[_Queued] = collections.deque()
        for item in self._stream:
            if item.video and item.slot == slot:
                self._video_bytes -= item.size
                self._video_count -= 1
                self.purged += 1
            else:
                keep.append(item)
        self._stream = keep

    async def next(self) -> str | bytes | None:
        """The next message to send (text first), or None once closed and drained."""
        while not self._urgent and not self._stream:
            if self.closed:
                return None
            self._ready.clear()
            await self._ready.wait()
        if self._urgent:
            entry = self._urgent.popleft()
            if entry.key is not None:
                del self._latest[entry.key]
            self._count_text(-len(entry.text))
            text = entry.text
            self._in_flight, self._in_flight_since = _Queued(text, len(text), False, False, None), self._clock()
            return text
        item = self._stream.popleft()
        if isinstance(item.payload, str):
            self._count_text(-item.size)
        if item.padding:
            self._padding -= item.size
        if item.video:
            self._video_bytes -= item.size
            self._video_count -= 1
        if isinstance(item.payload, bytes):
            self.bytes_sent += item.size
            self.pictures_sent += not item.padding
        self._in_flight, self._in_flight_since = item, self._clock()
        return item.payload

    def sent(self, size: int, busy_s: float, *, held: bool = False) -> None:
        """The writer's report on the last message taken: `size` bytes reached the viewer's side over the
        `busy_s` seconds the writer spent on it (`held`: the link held it back; see `LinkMeter`)."""
        self.link.sent(size, busy_s, held=held)
        self._in_flight = None
        if self._when_room and self.room_for_keyframe():
            waiting, self._when_room = self._when_room, []
            for callback in waiting:
                callback()

    def close(self) -> None:
        self.closed = True
        self._when_room.clear()
        self._ready.set()
