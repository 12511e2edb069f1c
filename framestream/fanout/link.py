"""How fast one connection's bytes leave, and whether one viewer takes the frame's whole stream.

`LinkMeter` is fed by the connection's writer: each message's size and how long the writer was busy with it
(from handing it to the socket to the moment nothing of it was left unsent). Busy time only: an idle link says
nothing about its capacity. The rate is bytes over busy seconds in a recent window, so it follows a link that
gets slower or recovers within a couple of seconds. A message that left at once (small enough to stay within
what may be in the network, or passed within a token bucket's burst) reads the link as fast as loopback: enough
to know a link is not slow, far too much to plan a stream by. So the sends the link *held back* (the writer
waited on their tail for `HELD_MIN_S` or more) also make a `held_rate`, over at least `HELD_MIN_BUSY_S` of them,
which caps the light stream.

A WebRTC viewer's bytes leave through UDP at once, so the writer's clock says nothing there: the receiver's own
estimate (REMB, `reported`) stands in for the measure while it is fresh.

`StreamChoice` is one viewer's side of issue 18: a viewer that had to skip (or whose receiver reports a link
slower than the frame's stream) is *slow* and takes the frame's light stream (framestream/media/light.py: the
picture at CSS size, its rate capped to what the slow viewers' links carry) instead. It goes back to the full
stream after a hold that keeps it from flapping, once its link is shown to carry `RECOVER_MARGIN` times the
frame's delta rate. A link that carries the light stream easily says little of more: its pictures pass within a
token bucket's burst and time as instant. So the viewer *probes* (`Probe`): for `PROBE_S` its connection is sent
padding (kind 3, which clients ignore) at that rate beside its pictures; when the link delivered it, the viewer
goes back, otherwise the padding is dropped, the queue never held more than the time budget, and the next hold
doubles. A receiver's estimate (WebRTC) only follows what it receives, so there the full stream itself is tried
after the hold, with the same doubling after each failed try.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable

LINK_WINDOW_S = 2.0  # samples older than this (wall time) no longer count, unless nothing newer was measured
MIN_BUSY_S = 0.002  # below this much busy time the link is too fast to tell: no estimate yet
# The held-back sends measure over at least this much of their busy time, however old: a send after the link
# idled first passes within a token bucket's refilled burst (16 KB in 8 ms read a 1 Mbit/s link as 16 Mbit/s,
# alone in its window, and capped a light stream at 8 Mbit/s). Over 0.5 s such a burst adds at most a third.
HELD_MIN_BUSY_S = 0.5
# A send held back for less than this passed within a burst too: between two light pictures (50 ms) a 1 Mbit/s
# token bucket refills 6 KB, and the next 5 KB picture waited one 2 ms poll (14 Mbit/s). Above 8 Mbit/s, where
# held sends take less, the light stream's cap is at its most anyway (media/light_policy.py).
HELD_MIN_S = 0.01
MAX_RATE = 125_000_000.0  # bytes/s (1 Gbit/s): what "too fast to tell" reads as
MIN_RATE = 1_000.0  # bytes/s (8 kbit/s): the least a rate reads as (a receiver's estimate of 0 included)
STREAM_WINDOW_S = 2.0
SLOW_HOLD_S = 3.0  # a slow viewer stays on the light stream at least this long after its last skip
MAX_HOLD_S = 60.0  # the longest hold after failed probes
RECOVER_MARGIN = 1.5  # link rate over the frame's delta rate needed to go back to the full stream
REPORT_FRESH_S = 5.0  # a receiver's estimate older than this no longer counts
LOSS_WINDOW_S = 1.0
LOSSY = 0.1  # a receiver reporting this fraction of packets lost is congested (as WebRTC's loss-based control)
REPORT_FALL = 0.85  # an estimate this far below the highest of the last REPORT_FRESH_S: the receiver saw congestion
BELOW_FOR_S = 1.0  # a reported link below the stream's rate for this long, falling, makes the viewer slow
PROBE_WINDOW_S = 5.0  # slow again this soon after going back: the try failed, the next hold doubles
PROBE_S = 1.0  # how long a probe pads the link (long beside a token bucket's burst, which it must not count)
PROBE_LEAD_S = 0.1  # padding queued ahead of the probe's schedule, so the link never idles during it
# How often a light viewer's choice is looked at between pictures (FrameFeed.follow_links): well within the lead, so
# a probe on a still page keeps its link busy too.
LINK_CHECK_S = PROBE_LEAD_S / 2
PROBE_PASS = 0.9  # of the padding's schedule the link must have delivered
PROBE_MIN_RATE = 16_000.0  # bytes/s: a full stream lighter than this for `LIGHT_FOR_S` is simply tried
# A full stream light only for a moment is not a light one: a scroll through white (pictures of copies of 200 bytes,
# 6 kB/s for a second between 60 kB/s) was tried simply, and its keyframe (160 kB at 1280x800 dpr 2) held a
# 1 Mbit/s viewer's pictures for 1.1-1.3 s, in a third of the slow-link runs.
LIGHT_FOR_S = 3.0
KEYFRAME_S = 0.5  # the full stream's keyframe must cross the link within this: a dpr 2 IDR is 150-400 KB
# The least a moving page's keyframe is taken to be, in bytes a pixel (150 KB at 2560x1600, the small end of a
# dpr 2 IDR of a text page): a light viewer sees no full keyframe for as long as the page moves, and the last one
# it saw may be of a blank page.
KEYFRAME_MIN_BYTES_PER_PIXEL = 0.037
# The light stream's share of the measured link, cut when even it had to skip and grown back slowly: a measure
# taken over small pictures that pass within a token bucket's burst reads high.
LIGHT_BACKOFF = 0.7
LIGHT_REGROW_PER_S = 0.05
LIGHT_MIN_SHARE = 0.2


class LinkMeter:
    """Bytes per second one connection's socket drains, measured over the writer's busy time."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._samples = _Window(LINK_WINDOW_S, keep_newest=True)
        self._rate: float | None = None
        self._reported: tuple[float, float] | None = None  # (at, bytes/s) from the receiver
        self._reports: collections.deque[tuple[float, float]] = collections.deque()  # recent ones, for `falling`
        self._losses: collections.deque[tuple[float, int, int]] = collections.deque()  # (at, lost, highest seq)
        self._held = _Window(LINK_WINDOW_S, keep_newest=True, min_busy=HELD_MIN_BUSY_S)  # the held-back sends
        self._held_rate: float | None = None
        self.delivered = 0  # bytes reported sent, ever (a probe reads what arrived over its time)

    def reported(self, bits_per_s: float) -> None:
        """The receiver's own estimate of the link (WebRTC's REMB), in bits per second."""
        now = self._clock()
        self._reported = (now, max(MIN_RATE, bits_per_s / 8))
        self._reports.append(self._reported)
        while self._reports and self._reports[0][0] < now - REPORT_FRESH_S:
            self._reports.popleft()

    def lost(self, packets_lost: int, highest_sequence: int) -> None:
        """A receiver's report on our stream (RTCP RR or SR): the packets it lost in all and the highest sequence
        number it received (extended: it only grows)."""
        now = self._clock()
        self._losses.append((now, packets_lost, highest_sequence))
        # The newest report from before the window stays: it is where the window's counts start.
        while len(self._losses) > 1 and self._losses[1][0] < now - LOSS_WINDOW_S:
            self._losses.popleft()

    @property
    def lossy(self) -> bool:
        """Whether the receiver lost `LOSSY` or more of our packets over the last `LOSS_WINDOW_S`, from its
        cumulative counters across the window. Not from the reports' own fractions: Chromium reports tens of
        times a second while it asks for retransmissions, each report over its own short interval, so their
        average read a link losing a third of a full stream's packets as a clean one (mostly 0.0 between a
        few 0.9s) and kept the viewer on a stream its link could not carry."""
        losses = self._losses
        if len(losses) < 2 or losses[-1][0] < self._clock() - LOSS_WINDOW_S:
            return False
        (_, lost_then, seq_then), (_, lost_now, seq_now) = losses[0], losses[-1]
        expected = seq_now - seq_then
        return expected > 0 and (lost_now - lost_then) / expected >= LOSSY

    @property
    def falling(self) -> bool:
        """Whether the receiver lowered its estimate lately: it saw congestion. A receiver's estimate starts low
        and ramps up with what arrives (Chromium's REMB from about 300 kbit/s), which says nothing of the link."""
        if self._reported is None or not self.reporting:
            return False
        return self._reported[1] < REPORT_FALL * max(rate for _, rate in self._reports)

    @property
    def reporting(self) -> bool:
        """Whether a receiver's estimate is fresh: it then is the rate."""
        return self._reported is not None and self._clock() - self._reported[0] <= REPORT_FRESH_S

    def sent(self, size: int, busy_s: float, *, held: bool = False) -> None:
        """`size` bytes reached the viewer's side over `busy_s` seconds of the writer's; `held`: the link held the
        message back (the writer waited on its tail), so the link, not the sender, set the pace."""
        now = self._clock()
        self.delivered += size
        busy_s = max(0.0, busy_s)
        rate = _window_rate(self._samples, now, size, busy_s)
        if rate is not None:
            self._rate = rate
        if held and busy_s >= HELD_MIN_S:
            rate = _window_rate(self._held, now, size, busy_s)
            if rate is not None and rate < MAX_RATE:
                self._held_rate = rate

    @property
    def rate(self) -> float | None:
        """Bytes per second, or None before anything was measured."""
        if self._reported is not None and self.reporting:
            return self._reported[1]
        return self._rate

    @property
    def held_rate(self) -> float | None:
        """The rate to cap a stream by: the receiver's estimate while fresh, else the last measure over sends the
        link held back (kept until a newer one: a stream capped below its link is never held back, and says
        nothing new), else `rate`."""
        if self._reported is not None and self.reporting:
            return self._reported[1]
        return self._held_rate if self._held_rate is not None else self._rate


class _Window:
    """Samples (at, bytes, busy seconds) of the last `span` seconds and their running sums: adding one costs the
    same however many there are (a writer adds one a message, 1,500 a second for 50 viewers at 30 fps; summing
    the window each time was most of the fan-out's Python)."""

    def __init__(self, span: float, *, keep_newest: bool, min_busy: float = 0.0) -> None:
        self._span = span
        self._keep = 1 if keep_newest else 0  # keep the newest sample however old: the last measure stands
        self._min_busy = min_busy  # old samples stay while the newer ones sum to less busy time than this
        self._samples: collections.deque[tuple[float, int, float]] = collections.deque()
        self.bytes = 0
        self.busy = 0.0

    def add(self, at: float, size: int, busy: float) -> None:
        self._samples.append((at, size, busy))
        self.bytes += size
        self.busy += busy
        self.expire(at)

    def expire(self, now: float) -> None:
        samples = self._samples
        while (len(samples) > self._keep and samples[0][0] < now - self._span
               and self.busy - samples[0][2] >= self._min_busy):
            _, size, busy = samples.popleft()
            self.bytes -= size
            self.busy -= busy
        if len(samples) <= 1:  # exact again, so the running float sum never drifts
            self.bytes = sum(s[1] for s in samples)
            self.busy = sum(s[2] for s in samples)


def _window_rate(window: _Window, now: float, size: int, busy_s: float) -> float | None:
    """Add a send to `window` and return its bytes over busy seconds; None when it measures nothing."""
    window.add(now, size, busy_s)
    total, busy = window.bytes, window.busy
    if total <= 0:
        # Nothing has left the socket yet (a first message still in the kernel's queue while a busy event loop
        # took its time): no measure. A stalled link shows as the delay of what does not leave.
        return None
    if busy >= MIN_BUSY_S:
        return max(MIN_RATE, min(MAX_RATE, total / busy))
    if total >= 64 * 1024:  # a lot went out in no time: a fast link
        return MAX_RATE
    return None


class RateWindow:
    """Bytes per second of what was offered over the last `STREAM_WINDOW_S` (wall time)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._window = _Window(STREAM_WINDOW_S, keep_newest=False)
        self._started = clock()

    def add(self, size: int) -> None:
        self._window.add(self._clock(), size, 0.0)

    def rate(self) -> float:
        now = self._clock()
        self._window.expire(now)
        span = max(0.2, min(STREAM_WINDOW_S, now - self._started))
        return self._window.bytes / span


class Probe:
    """A test of whether a link carries `rate` bytes/s: padding at that rate for `PROBE_S`."""

    def __init__(self, started: float, rate: float, delivered: int) -> None:
        self.started = started
        self.rate = rate
        self.padded = 0  # bytes of padding queued so far
        self._delivered_before = delivered

    def owed(self, now: float) -> int:
        """Padding to queue now to keep to the schedule (with `PROBE_LEAD_S` ahead)."""
        return max(0, int(self.rate * (min(now - self.started, PROBE_S) + PROBE_LEAD_S)) - self.padded)

    def done(self, now: float) -> bool:
        return now - self.started >= PROBE_S

    def passed(self, now: float, delivered: int) -> bool:
        """Whether the link delivered (bytes reported sent since the start, pictures included) what the schedule
        asked of it."""
        return delivered - self._delivered_before >= PROBE_PASS * self.rate * (now - self.started)


class StreamChoice:
    """Whether one viewer takes the frame's full stream or its light stream."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.deltas = RateWindow(clock)  # the frame's delta rate, as offered to this viewer
        self.keyframe_bytes = 0  # the full stream's last keyframe, as offered to this viewer
        self.keyframe_floor = 0  # the least it is taken to be (`expect_keyframes`)
        self.slow = False
        self.slow_periods = 0
        self.hold_s = SLOW_HOLD_S
        self._last_skip = -1e9
        self._back_at = -1e9  # when it last went back to the full stream
        self._below_since: float | None = None
        self._lossy_since: float | None = None  # the receiver has been losing packets since
        self.probe: Probe | None = None  # testing the link before going back to the full stream
        self.probes = 0
        self._share, self._share_at = 1.0, clock()  # of the measured link the light stream may take
        self._heavy_at = clock()  # when the full stream last needed a probe to go back to

    def skipped(self) -> None:
        now = self._clock()
        self._last_skip = now
        if not self.slow:
            self.slow = True
            self.slow_periods += 1
            # Slow again right after going back: that try failed, wait twice as long before the next.
            failed = now - self._back_at < PROBE_WINDOW_S
            self.hold_s = min(MAX_HOLD_S, self.hold_s * 2) if failed else SLOW_HOLD_S

    def update(self, link_rate: float | None, reported: bool = False, delivered: int = 0,
               congested: bool = True, lossy: bool = False) -> bool:
        """Slow or back to the full stream, from the link's rate; True while slow.

        `reported`: the rate is the receiver's estimate (no queue of ours builds up to skip on, and it only follows
        what it receives). `delivered`: the link's bytes sent so far (`LinkMeter.delivered`), for a probe.
        `congested`: the receiver cut its estimate (`LinkMeter.falling`); one below the stream that is only
        ramping up (Chromium's REMB starts at what arrived and rises a few % a second) is no sign of a slow link.
        `lossy`: the receiver has been losing packets (`LinkMeter.lossy`); for 1 s, that alone makes it slow (a
        link whose keyframes never get through may still estimate the deltas well), and once slow it cuts the
        light stream's share of the link (`light_skipped`) at most once a `LOSS_WINDOW_S`: a receiver's estimate
        is delay-based and a link that drops instead of queueing (a token bucket) can leave it above what the
        link carries, so the light stream capped by it lost a fifth of its packets and no keyframe got through
        again (the sender does the loss-based part, as WebRTC's own congestion control). After the hold a
        measured link gets a `probe`: its owner pads the connection and calls `probe_ended`."""
        now = self._clock()
        if self.slow and lossy and now - self._share_at >= LOSS_WINDOW_S:
            self.light_skipped()
        if not self.slow:
            below = reported and link_rate is not None and link_rate < self.deltas.rate()
            self._below_since = (self._below_since or now) if below else None
            self._lossy_since = (self._lossy_since or now) if lossy else None
            below_s = 0.0 if self._below_since is None else now - self._below_since
            lossy_s = 0.0 if self._lossy_since is None else now - self._lossy_since
            if (congested and below_s >= BELOW_FOR_S) or lossy_s >= BELOW_FOR_S:
                self._below_since = self._lossy_since = None
                self.skipped()
            return self.slow
        wanted = RECOVER_MARGIN * self.deltas.rate()
        if wanted >= PROBE_MIN_RATE:
            self._heavy_at = now
        if self.probe is not None or now - self._last_skip < self.hold_s:
            return True
        # Back only to a stream the link carries with its keyframes, which come on every join, resume and skip:
        # a link that carries the deltas but takes seconds for a keyframe would show pictures seconds old while
        # the page moves. A still page (or a light stream, for `LIGHT_FOR_S`) goes back at once: the one keyframe
        # only sharpens what is on screen.
        if now - self._heavy_at < LIGHT_FOR_S:
            wanted = max(wanted, max(self.keyframe_bytes, self.keyframe_floor) / KEYFRAME_S)
        if reported or link_rate is None or wanted < PROBE_MIN_RATE:
            self._go_back(now)
        else:
            self.probe = Probe(now, wanted, delivered)
            self.probes += 1
        return self.slow

    def clock(self) -> float:
        return self._clock()

    def expect_keyframes(self, pixels: int) -> None:
        """The full stream's pictures have `pixels` pixels: its keyframes are taken to be at least so big."""
        self.keyframe_floor = int(pixels * KEYFRAME_MIN_BYTES_PER_PIXEL)

    def light_skipped(self) -> None:
        """Even the light stream did not fit the time budget: ask it of less of the link."""
        self._share, self._share_at = max(LIGHT_MIN_SHARE, self.share() * LIGHT_BACKOFF), self._clock()

    def share(self) -> float:
        """Of the measured link, what the light stream may take for this viewer (1: all it is allowed)."""
        return min(1.0, self._share + LIGHT_REGROW_PER_S * (self._clock() - self._share_at))

    def probe_ended(self, delivered: int, *, aborted: bool = False) -> bool:
        """The probe is over (`aborted`: the queue passed its time budget); True when the link delivered it and
        the viewer goes back to the full stream."""
        probe, self.probe = self.probe, None
        if probe is None:
            return False
        now = self._clock()
        if not aborted and probe.passed(now, delivered):
            self._go_back(now)
            return True
        self._last_skip = now
        self.hold_s = min(MAX_HOLD_S, self.hold_s * 2)
        return False

    def _go_back(self, now: float) -> None:
        self.slow = False
        self._back_at = now
