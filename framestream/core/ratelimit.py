"""A token bucket: `rate` units a second, bursts up to `burst`; and the limits on a connection's messages.
Time is passed in."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from framestream.core.wire import ClientMessage, KeyframeRequest, Refresh, Unwatch, Watch, WebrtcIce, WebrtcOffer


class TokenBucket:
    def __init__(self, rate: float, burst: float) -> None:
        self.rate = rate
        self.burst = burst
        self._tokens = burst
        self._at: float | None = None

    def take(self, now: float, amount: float = 1.0) -> bool:
        if self._at is not None:
            self._tokens = min(self.burst, self._tokens + (now - self._at) * self.rate)
        self._at = now
        if amount > self._tokens:
            return False
        self._tokens -= amount
        return True


class MessageLimits:
    """How fast one connection's messages may come (issue 32, #5 and #7), every type counted.

    Every message takes from one bucket (`message_rate` a second, bursts of 2.5 times that), and the types that
    make the service work or fan out take from their own too: `watch` (with `unwatch` and `webrtc-offer`: each
    changes what the frame tells every viewer), `keyframe`, `refresh` and `webrtc-ice`. Input is limited by
    events, apart (`FRAMESTREAM_INPUT_RATE`). A message past a limit is refused with `rate-limited`; refusals
    themselves may come only so fast (`REFUSALS`): a client that keeps sending past the limit is closed (4429)
    instead of being answered without end.
    """

    KINDS: Final[Mapping[str, tuple[float, float]]] = {  # kind -> (per second, burst)
        "watch": (10.0, 40.0),
        "keyframe": (10.0, 20.0),
        "refresh": (1.0, 4.0),
        "webrtc-ice": (50.0, 100.0),
    }
    REFUSALS: Final = (10.0, 100.0)

    def __init__(self, message_rate: float) -> None:
        self.message_rate = message_rate
        self._all = TokenBucket(message_rate, message_rate * 2.5)
        self._kinds = {kind: TokenBucket(rate, burst) for kind, (rate, burst) in self.KINDS.items()}
        self._refusals = TokenBucket(*self.REFUSALS)

    def take(self, now: float, kind: str | None = None) -> bool:
        """One message (of `kind`, when it has a limit of its own; None: any message, even unreadable)."""
        bucket = self._kinds.get(kind) if kind is not None else self._all
        return bucket is None or bucket.take(now)

    def refused(self, now: float) -> bool:
        """A message was refused for its rate: True while refusals may still be answered, False when the
        client keeps sending past the limits and must be closed."""
        return self._refusals.take(now)


def limited_kind(message: ClientMessage) -> str | None:
    """Which of MessageLimits.KINDS a message takes from (None: only the limit on every message)."""
    if isinstance(message, Watch | Unwatch | WebrtcOffer):
        return "watch"
    if isinstance(message, KeyframeRequest):
        return "keyframe"
    if isinstance(message, Refresh):
        return "refresh"
    if isinstance(message, WebrtcIce):
        return "webrtc-ice"
    return None


class LatestEvery:
    """At most one message per key every `interval` seconds, the newest: the first goes at once, those that come
    sooner are held and only the last of them goes when the interval ends (`due`). A frame's `frame-state` to one
    viewer (issue 32, #7): a watch/unwatch flood from other connections changes the frame's viewer count as fast
    as they may send, and each viewer then gets the current state at most 1/interval times a second."""

    TOLERANCE_S: Final = 1e-3  # a timer may fire this much early

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self._sent_at: dict[str, float] = {}
        self._held: dict[str, str] = {}

    def offer(self, key: str, text: str, now: float) -> str | None:
        """The text to send now, or None: held (the newest held goes at `next_due`)."""
        last = self._sent_at.get(key)
        if key not in self._held and (last is None or now - last >= self.interval - self.TOLERANCE_S):
            self._sent_at[key] = now
            return text
        self._held[key] = text
        return None

    def next_due(self) -> float | None:
        """When the first held text may go (None: nothing held)."""
        return min((self._sent_at[key] + self.interval for key in self._held), default=None)

    def due(self, now: float) -> list[tuple[str, str]]:
        """The held texts whose interval ended by `now`, as (key, text), in the order they were first held."""
        out = [(key, text) for key, text in self._held.items()
               if now - self._sent_at[key] >= self.interval - self.TOLERANCE_S]
        for key, _ in out:
            del self._held[key]
            self._sent_at[key] = now
        return out

    def forget(self, key: str) -> None:
        self._held.pop(key, None)
        self._sent_at.pop(key, None)
