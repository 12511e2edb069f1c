"""How fast one connection's bytes leave, and whether one viewer takes the frame's whole stream.

`LinkMeter` is fed by the connection's writer: each message's size and how long the writer was busy with it
(from handing it to the socket to the moment nothing of it was left unsent). Busy time only: an idle link says
nothing about its capacity. The rate is bytes over busy seconds in a recent window, so it follows a link that
gets slower or recovers within a couple of seconds.

`StreamChoice` is one viewer's side of issue 18: a viewer that had to skip is *slow* and takes keyframes only,
each queued only when it fits the outbox's time budget, and asked for only once its queue has drained (so the
frame makes them at the rate that viewer's link carries them, not once a second for everybody). It goes back to
the full stream once its link carries at least `RECOVER_MARGIN` times the frame's delta rate, after a hold that
keeps it from flapping.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable

LINK_WINDOW_S = 2.0  # samples older than this (wall time) no longer count, unless nothing newer was measured
MIN_BUSY_S = 0.002  # below this much busy time the link is too fast to tell: no estimate yet
MAX_RATE = 125_000_000.0  # bytes/s (1 Gbit/s): what "too fast to tell" reads as
STREAM_WINDOW_S = 2.0
SLOW_HOLD_S = 3.0  # a slow viewer stays on keyframes at least this long after its last skip
RECOVER_MARGIN = 1.5  # link rate over the frame's delta rate needed to go back to the full stream


class LinkMeter:
    """Bytes per second one connection's socket drains, measured over the writer's busy time."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._samples: collections.deque[tuple[float, int, float]] = collections.deque()  # (at, bytes, busy s)
        self._rate: float | None = None

    def sent(self, size: int, busy_s: float) -> None:
        now = self._clock()
        self._samples.append((now, size, max(0.0, busy_s)))
        while len(self._samples) > 1 and self._samples[0][0] < now - LINK_WINDOW_S:
            self._samples.popleft()
        busy = sum(s[2] for s in self._samples)
        total = sum(s[1] for s in self._samples)
        if busy >= MIN_BUSY_S:
            self._rate = min(MAX_RATE, total / busy)
        elif total >= 64 * 1024:  # a lot went out in no time: a fast link
            self._rate = MAX_RATE

    @property
    def rate(self) -> float | None:
        """Bytes per second, or None before anything was measured."""
        return self._rate


class RateWindow:
    """Bytes per second of what was offered over the last `STREAM_WINDOW_S` (wall time)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._samples: collections.deque[tuple[float, int]] = collections.deque()
        self._started = clock()

    def add(self, size: int) -> None:
        now = self._clock()
        self._samples.append((now, size))
        while self._samples and self._samples[0][0] < now - STREAM_WINDOW_S:
            self._samples.popleft()

    def rate(self) -> float:
        now = self._clock()
        while self._samples and self._samples[0][0] < now - STREAM_WINDOW_S:
            self._samples.popleft()
        span = max(0.2, min(STREAM_WINDOW_S, now - self._started))
        return sum(s[1] for s in self._samples) / span


class StreamChoice:
    """Whether one viewer takes the frame's full stream or keyframes only at its link's rate."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.deltas = RateWindow(clock)  # the frame's delta rate, as offered to this viewer
        self.slow = False
        self.slow_periods = 0
        self._last_skip = -1e9

    def skipped(self) -> None:
        self._last_skip = self._clock()
        if not self.slow:
            self.slow = True
            self.slow_periods += 1

    def update(self, link_rate: float | None) -> bool:
        """Back to the full stream when the link has recovered; True while slow."""
        held = self._clock() - self._last_skip >= SLOW_HOLD_S
        if self.slow and held and (link_rate is None or link_rate >= RECOVER_MARGIN * self.deltas.rate()):
            self.slow = False
        return self.slow
