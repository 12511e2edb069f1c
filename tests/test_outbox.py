"""The outbox's time budget at the link's measured rate, text before video, and a slow viewer's keyframes."""

from __future__ import annotations

import pytest

from framestream.core.wire import FLAG_KEYFRAME, pack_video_header, unpack_video_header
from framestream.fanout.feed import FrameFeed, Viewer
from framestream.fanout.link import (
    BELOW_FOR_S,
    KEYFRAME_MIN_BYTES_PER_PIXEL,
    KEYFRAME_S,
    LIGHT_BACKOFF,
    LIGHT_MIN_SHARE,
    LIGHT_REGROW_PER_S,
    LINK_CHECK_S,
    LINK_WINDOW_S,
    LOSS_WINDOW_S,
    MAX_HOLD_S,
    MIN_RATE,
    PROBE_LEAD_S,
    PROBE_MIN_RATE,
    PROBE_S,
    RECOVER_MARGIN,
    REPORT_FRESH_S,
    SLOW_HOLD_S,
    STREAM_WINDOW_S,
    LinkMeter,
    StreamChoice,
)
from framestream.fanout.outbox import Outbox
from framestream.media.picture import Picture


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def video(slot: int, seq: int, size: int, key: bool = False) -> bytes:
    return pack_video_header(FLAG_KEYFRAME if key else 0, slot, seq, 1) + b"x" * size


def measured(outbox: Outbox, rate: float) -> None:
    """As if the writer had sent one message at `rate` bytes/s."""
    outbox.link.sent(int(rate), 1.0)


async def take(outbox: Outbox) -> list[str | bytes]:
    items: list[str | bytes] = []
    while len(outbox):
        item = await outbox.next()
        assert item is not None
        items.append(item)
        outbox.sent(len(item), 0.0)
    return items


def sequences(items: list[str | bytes]) -> list[tuple[int, int, bool]]:
    return [(h.slot, h.sequence, h.keyframe) for h in (unpack_video_header(i) for i in items if isinstance(i, bytes))]


async def test_text_goes_before_queued_video_and_a_config_stays_in_order_with_it() -> None:
    outbox = Outbox()
    outbox.push_config('{"type":"video-config"}')
    assert outbox.push_video(video(1, 1, 100, key=True))
    assert outbox.push_video(video(1, 2, 100))
    outbox.push_text('{"type":"input-ack"}')
    items = await take(outbox)
    assert items[0] == '{"type":"input-ack"}' and items[1] == '{"type":"video-config"}'
    assert sequences(items) == [(1, 1, True), (1, 2, False)]


async def test_deltas_wait_at_most_the_budget_at_the_measured_rate() -> None:
    clock = Clock()
    outbox = Outbox(budget_s=0.25, clock=clock)
    measured(outbox, 10_000)  # 10 kB/s: the budget holds 2500 bytes
    assert outbox.push_video(video(1, 1, 1000))
    assert outbox.push_video(video(1, 2, 1000))
    assert not outbox.push_video(video(1, 3, 1000)), "3000 bytes is 0.3 s at 10 kB/s"
    assert outbox.delay_s() == 2032 / 10_000


async def test_a_keyframe_ahead_is_allowed_on_the_full_stream_and_counted_for_a_slow_viewer() -> None:
    clock = Clock()
    outbox = Outbox(budget_s=0.25, clock=clock)
    measured(outbox, 10_000)
    assert outbox.push_video(video(1, 1, 20_000, key=True))  # 2 s of link: nothing else is ahead of it
    assert not outbox.push_video(video(1, 2, 500), strict=True), "slow: the keyframe ahead counts"
    assert outbox.push_video(video(1, 2, 500)), "full stream: what is behind the keyframe counts"


async def test_a_keyframe_over_the_budget_replaces_its_own_slots_queue_only() -> None:
    clock = Clock()
    outbox = Outbox(budget_s=0.25, clock=clock)
    measured(outbox, 100_000)
    assert outbox.push_video(video(2, 7, 400))  # another frame's picture on the same connection
    assert outbox.push_video(video(1, 1, 900))
    assert outbox.push_video(video(1, 2, 900))
    outbox.link.sent(0, 20.0)  # the link slowed down to about 5 kB/s: 2248 bytes queued is 0.47 s
    assert outbox.push_video(video(1, 5, 1000, key=True))
    assert sequences(await take(outbox)) == [(2, 7, False), (1, 5, True)]
    assert outbox.purged == 2


async def test_a_message_that_does_not_leave_counts_as_delay_so_a_stalled_link_skips() -> None:
    clock = Clock()
    outbox = Outbox(budget_s=0.25, clock=clock)
    measured(outbox, 1_000_000)  # a fast link, measured earlier
    assert outbox.push_video(video(1, 1, 1000))
    assert await outbox.next() is not None  # the writer took it and waits: nothing is acknowledged any more
    assert outbox.push_video(video(1, 2, 1000))
    clock.t += 1.0
    assert not outbox.push_video(video(1, 3, 1000)), "a second without a send is over any budget"


async def test_room_for_a_keyframe_is_reported_when_the_writer_drains() -> None:
    clock = Clock()
    outbox = Outbox(budget_s=0.25, clock=clock)
    measured(outbox, 10_000)
    assert outbox.push_video(video(1, 1, 2000))
    called: list[int] = []
    outbox.call_when_room(lambda: called.append(1))
    assert called == []
    item = await outbox.next()
    assert isinstance(item, bytes)
    clock.t += 0.2
    outbox.sent(len(item), 0.2)
    assert called == [1]


def test_the_link_rate_is_bytes_over_busy_time_in_a_recent_window() -> None:
    clock = Clock()
    meter = LinkMeter(clock)
    assert meter.rate is None
    meter.sent(50_000, 0.4)
    meter.sent(50_000, 0.4)
    assert meter.rate == 125_000
    clock.t += 5  # later, a faster link: the old samples fall out of the window
    meter.sent(100_000, 0.1)
    assert meter.rate == 1_000_000


def test_the_link_rate_keeps_to_its_window_over_many_sends() -> None:
    # The window keeps running sums (a send costs the same however many are in it): they must stay exact.
    clock = Clock()
    meter = LinkMeter(clock)
    sends = [(1_000 + 37 * (i % 11), 0.0013 + 0.0007 * (i % 5)) for i in range(3_000)]
    for size, busy in sends:
        clock.t += 1 / 30
        meter.sent(size, busy)
    recent = sends[-int(LINK_WINDOW_S * 30) - 1:]  # those within the window (its edge included)
    assert meter.rate == pytest.approx(sum(s for s, _ in recent) / sum(b for _, b in recent), rel=1e-9)


async def test_a_send_that_delivered_nothing_yet_is_no_measure_and_no_rate_reads_zero() -> None:
    # Seen under load: a new viewer's first picture still in the kernel's queue after a slow send (busy time,
    # no bytes acknowledged) made the rate 0, and the next picture's offer divided by it.
    clock = Clock()
    outbox = Outbox(budget_s=0.25, clock=clock)
    outbox.push_video(video(1, 1, 10_000, key=True))
    await outbox.next()
    outbox.sent(0, 0.005)
    assert outbox.link.rate is None
    assert outbox.push_video(video(1, 2, 1_000)) and outbox.delay_s() is None
    outbox.link.reported(0)  # a receiver's estimate of nothing: the slowest rate, not a zero
    assert outbox.link.rate == MIN_RATE
    assert outbox.delay_s() is not None


def test_a_slow_viewer_goes_back_to_the_full_stream_only_when_a_probe_shows_the_link_carries_it() -> None:
    clock = Clock()
    choice = StreamChoice(clock)
    for _ in range(30):
        choice.deltas.add(10_000)  # the frame's deltas: about 150 kB/s over the window
    choice.skipped()
    assert choice.update(1_000_000) and choice.slow_periods == 1 and choice.probe is None, "held after a skip"
    clock.t += SLOW_HOLD_S
    for _ in range(30):
        choice.deltas.add(10_000)
    assert choice.update(1_000_000, delivered=0) and choice.probe is not None, "a probe first, still slow"
    wanted = choice.probe.rate
    assert wanted == RECOVER_MARGIN * choice.deltas.rate()
    assert choice.probe.owed(clock.t) == int(wanted * PROBE_LEAD_S)
    clock.t += PROBE_S
    assert not choice.probe_ended(delivered=int(0.5 * wanted * PROBE_S)), "the link delivered half: still slow"
    assert choice.slow and choice.hold_s == 2 * SLOW_HOLD_S
    clock.t += choice.hold_s
    for _ in range(30):
        choice.deltas.add(10_000)
    assert choice.update(1_000_000, delivered=1_000) and choice.probe is not None
    clock.t += PROBE_S / 2
    assert not choice.probe_ended(delivered=10**9, aborted=True), "its queue passed the budget: failed"
    clock.t += choice.hold_s
    for _ in range(30):
        choice.deltas.add(10_000)
    assert choice.update(1_000_000, delivered=1_000) and choice.probe is not None
    wanted = choice.probe.rate
    clock.t += PROBE_S
    assert choice.probe_ended(delivered=1_000 + int(wanted * PROBE_S)) and not choice.slow


def test_the_probe_asks_for_the_full_streams_keyframe_within_half_a_second_too() -> None:
    clock = Clock()
    choice = StreamChoice(clock)
    choice.keyframe_bytes = 200_000  # a 200 KB keyframe does not cross a 1 Mbit/s link in half a second...
    choice.skipped()
    clock.t += SLOW_HOLD_S
    for _ in range(60):
        choice.deltas.add(1_000)  # ... though the page's 30 kB/s of deltas do, easily
    assert choice.update(125_000) and choice.probe is not None
    assert choice.probe.rate == 200_000 / KEYFRAME_S
    unseen = StreamChoice(clock)
    unseen.expect_keyframes(2560 * 1600)  # the last keyframe it saw was a blank page's: taken as at least...
    unseen.keyframe_bytes = 3_000
    unseen.skipped()
    clock.t += SLOW_HOLD_S
    for _ in range(60):
        unseen.deltas.add(1_000)
    assert unseen.update(125_000) and unseen.probe is not None
    assert unseen.probe.rate == int(2560 * 1600 * KEYFRAME_MIN_BYTES_PER_PIXEL) / KEYFRAME_S, "... 82 KB"
    still = StreamChoice(clock)
    still.keyframe_bytes = 200_000
    still.skipped()
    clock.t += SLOW_HOLD_S + STREAM_WINDOW_S
    assert not still.update(125_000), "a still page goes back at once: its keyframe only sharpens it"


def test_a_full_stream_light_only_for_a_moment_is_not_tried_untested() -> None:
    """A scroll through white as pictures of copies (200 bytes, 6 kB/s for a second amid 60 kB/s) looked like a
    still page, so a 1 Mbit/s viewer went back to the full stream untried; its 160 kB keyframe then held the
    viewer's pictures for 1.1-1.3 s (`benchmarks.run --only slowlink`, a third of the runs). A stream that stays
    light (a 16 px square that changes every picture, tests/web/slowlink) still goes back at once."""
    clock = Clock()
    scrolling, ticking = StreamChoice(clock), StreamChoice(clock)
    for choice in (scrolling, ticking):
        choice.keyframe_bytes = 160_000
        choice.skipped()
    for step in range(int(30 * (SLOW_HOLD_S + 0.1))):
        clock.t += 1 / 30
        scrolling.deltas.add(2_000 if step < 15 else 200)  # then through white: 6 kB/s
        ticking.deltas.add(200)
        assert scrolling.update(125_000) and ticking.update(125_000) is (clock.t - 100.0 < SLOW_HOLD_S)
    assert RECOVER_MARGIN * scrolling.deltas.rate() < PROBE_MIN_RATE, "light right now"
    assert scrolling.probe is not None and scrolling.probe.rate == 160_000 / KEYFRAME_S, "a probe first"
    assert not ticking.slow and ticking.probe is None, "light all along: back at once"


def test_a_receivers_estimate_is_the_rate_while_fresh() -> None:
    clock = Clock()
    meter = LinkMeter(clock)
    meter.sent(1_000_000, 0.01)  # UDP: gone at once, says nothing
    meter.reported(1_000_000)  # REMB, bits/s
    assert meter.reporting and meter.rate == 125_000
    clock.t += REPORT_FRESH_S + 1
    assert not meter.reporting and meter.rate == 100_000_000


def test_a_reported_link_below_the_stream_makes_the_viewer_slow_after_a_while() -> None:
    clock = Clock()
    choice = StreamChoice(clock)
    for _ in range(30):
        choice.deltas.add(10_000)  # about 150 kB/s
    assert not choice.update(100_000, reported=True), "not at the first report"
    clock.t += BELOW_FOR_S / 2
    assert not choice.update(400_000, reported=True), "a report above the stream resets it"
    assert not choice.update(100_000, reported=True)
    clock.t += BELOW_FOR_S
    assert choice.update(100_000, reported=True) and choice.slow_periods == 1
    ramping = StreamChoice(clock)
    for _ in range(30):
        ramping.deltas.add(10_000)
    for _ in range(20):
        clock.t += BELOW_FOR_S
        for _ in range(30):
            ramping.deltas.add(10_000)
        assert not ramping.update(100_000, reported=True, congested=False), "a ramping estimate is no slow link"
    measured = StreamChoice(clock)
    for _ in range(30):
        measured.deltas.add(10_000)
    clock.t += BELOW_FOR_S
    assert not measured.update(100_000) and not measured.update(100_000), "a measured rate never does: a skip does"


def test_a_failed_try_of_the_full_stream_doubles_the_hold() -> None:
    clock = Clock()
    choice = StreamChoice(clock)
    choice.skipped()
    holds = []
    for _ in range(7):
        holds.append(choice.hold_s)
        clock.t += choice.hold_s
        # A receiver's estimate only follows what it gets: after the hold the full stream is tried anyway...
        assert not choice.update(10_000, reported=True)
        clock.t += 1
        choice.skipped()  # ... and fails at once
    assert holds == [SLOW_HOLD_S * 2**i for i in range(5)] + [MAX_HOLD_S, MAX_HOLD_S]
    clock.t += choice.hold_s
    assert not choice.update(10_000, reported=True)
    clock.t += 60
    choice.skipped()  # slow again much later: a new trouble, not a failed try
    assert choice.hold_s == SLOW_HOLD_S


class Writer:
    """The connection's writer over a link of `rate` bytes/s, in ticks of 1/30 s: a message it took stays in
    flight until the link has carried it, then it reports it sent."""

    def __init__(self, outbox: Outbox, rate: float) -> None:
        self.outbox, self.rate = outbox, rate
        self.flight: tuple[str | bytes, float] | None = None  # (message, seconds it has been going)
        self.left = 0.0  # bytes of it the link still has to carry

    async def tick(self) -> list[tuple[int, int, bool]]:
        arrived: list[tuple[int, int, bool]] = []
        budget = self.rate / 30
        while budget > 0:
            if self.flight is None:
                if not len(self.outbox):
                    break
                item = await self.outbox.next()
                assert item is not None
                self.flight, self.left = (item, 0.0), float(len(item))
            item, busy = self.flight
            carried = min(budget, self.left)
            budget -= carried
            self.left -= carried
            self.flight = (item, busy + carried / self.rate)
            if self.left <= 0:
                self.outbox.sent(len(item), busy + carried / self.rate)
                arrived += sequences([item])
                self.flight = None
        return arrived


def picture(key: bool = False, size: int = 1000, light: bool = False) -> Picture:
    return Picture(data=b"p" * size, keyframe=key, refinement=False, capture_us=1, encoded_us=2, codec="avc1.42C020",
                   light=light)


class Frame:
    """The frame's side of a feed: a keyframe of either stream made when asked, before the next picture, and a
    light stream made while the feed asks for one (as media/pipeline.py does)."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.full_asked = False
        self.light_asked = False
        self.light_caps: list[int | None] = []
        self.feed = FrameFeed(request_keyframe=self._full, request_light_keyframe=self._light,
                              set_light=self.light_caps.append)

    def _full(self) -> None:
        self.full_asked = True

    def _light(self) -> None:
        self.light_asked = True

    def tick(self, size: int = 1000, key_size: int = 3000, light_size: int = 300) -> None:
        """One picture of the full stream and, while it is wanted, one of the light stream."""
        key, self.full_asked = self.full_asked, False
        self.feed.publish(picture(key=key, size=key_size if key else size))
        if self.feed.light_kbps is not None:
            light_key, self.light_asked = self.light_asked, False
            self.feed.publish_light(picture(key=light_key, size=light_size * (3 if light_key else 1), light=True))


async def test_a_slow_viewer_moves_to_the_light_stream_and_a_fast_one_gets_everything() -> None:
    clock = Clock()
    frame = Frame(clock)
    feed = frame.feed
    configs: list[bool] = []
    slow_box, fast_box = Outbox(clock=clock), Outbox(clock=clock)
    measured(slow_box, 15_000)  # 15 kB/s against a stream of 30 kB/s
    measured(fast_box, 10_000_000)
    slow = Viewer("f", 1, slow_box, send_config=lambda v: configs.append(v.light), on_event=lambda _: None,
                  choice=StreamChoice(clock))
    fast = Viewer("f", 2, fast_box, send_config=lambda _: None, on_event=lambda _: None, choice=StreamChoice(clock))
    feed.add(slow)
    feed.add(fast)
    frame.full_asked = True
    slow_got: list[tuple[int, int, bool]] = []
    fast_got: list[tuple[int, int, bool]] = []
    credit = 0.0  # bytes the slow link may still send (negative: still busy with a message)
    for _ in range(90):  # three seconds at 30 fps
        clock.t += 1 / 30
        frame.tick()
        fast_got += sequences(await take(fast_box))
        # The slow link drains 15 kB/s: take what it could have sent in this 1/30 s.
        credit = min(credit + 15_000 / 30, 15_000 / 30)
        while len(slow_box) and credit > 0:
            item = await slow_box.next()
            assert item is not None
            slow_got += sequences([item])
            credit -= len(item)
            slow_box.sent(len(item), len(item) / 15_000)
    assert [seq for _, seq, _ in fast_got] == list(range(1, 91)), "the fast viewer saw every picture"
    assert feed.skips >= 1 and slow.light and feed.slow_viewers == 1
    assert configs == [False, True], "a video-config of the light stream before its first picture"
    assert frame.light_caps and frame.light_caps[-1] == 150, "capped to its link (72 kbit/s) at the floor"
    start = next(i for i, (_, _, key) in enumerate(slow_got) if key and i > 0)  # the light stream's keyframe
    light = [seq for _, seq, _ in slow_got[start:]]
    assert light == list(range(light[0], light[0] + len(light))) and len(light) >= 30, "every light picture"
    feed.remove(slow)
    assert frame.light_caps[-1] is None, "no light stream once nobody takes it"


async def test_the_light_stream_stays_capped_to_its_link_while_its_pictures_leave_at_once() -> None:
    # Seen on a 1 Mbit/s token bucket (tests/integration/test_slow_links.py, 2 runs in 12): light pictures well
    # below the link passed within the bucket's burst, read the link as loopback and lifted the cap to 8000 kbit/s;
    # its next pictures then overran the link and skipped again.
    clock = Clock()
    frame = Frame(clock)
    box = Outbox(clock=clock)
    viewer = Viewer("f", 1, box, send_config=lambda _: None, on_event=lambda _: None, choice=StreamChoice(clock))
    frame.feed.add(viewer)
    frame.full_asked = True
    credit = 0.0
    for _ in range(30 * 5):
        clock.t += 1 / 30
        frame.tick(size=2_000)  # 60 kB/s of full stream over a link of 15 kB/s
        credit = min(credit + 15_000 / 30, 15_000 / 30)
        while len(box) and credit > 0:
            item = await box.next()
            assert item is not None
            credit -= len(item)
            if viewer.light:  # small pictures: on the link's side at once, as within a token bucket's burst
                box.sent(len(item), 0.0002)
            else:  # the full stream's: held back by the link
                box.sent(len(item), len(item) / 15_000, held=True)
    assert viewer.light and box.link.rate is not None and box.link.rate > 1_000_000, "at once reads as loopback"
    assert box.link.held_rate == 15_000
    assert frame.light_caps[-1] == 150, "still capped to the link (72 kbit/s) at the floor"


def test_the_held_rate_is_measured_only_over_sends_the_link_held_back_and_kept_until_a_newer_one() -> None:
    clock = Clock()
    meter = LinkMeter(clock)
    meter.sent(10_000, 0.002)
    assert meter.held_rate == meter.rate == 5_000_000, "nothing held back yet: the rate stands in"
    meter.sent(50_000, 0.4, held=True)
    assert meter.held_rate == 125_000
    clock.t += 10
    meter.sent(20_000, 0.002)
    assert meter.rate == 10_000_000 and meter.held_rate == 125_000, "sends that left at once do not change it"
    meter.sent(25_000, 0.5, held=True)
    assert meter.held_rate == 50_000, "a newer held-back send replaces it"
    meter.reported(800_000)
    assert meter.held_rate == meter.rate == 100_000, "a receiver's fresh estimate is the rate"


def test_the_held_rate_is_not_read_from_a_token_buckets_burst() -> None:
    """Sends from a real 1 Mbit/s token bucket with a 16 KB burst (tests/integration/test_slow_links.py): a send
    after the link idled passed within the refilled burst, and light pictures that fit the refill between them
    waited one poll. Each alone read the link as 10-16 Mbit/s and capped the light stream at 8 Mbit/s."""
    clock = Clock()
    meter = LinkMeter(clock)
    meter.sent(124_993, 0.8132, held=True)  # a keyframe: the link's own rate
    assert meter.held_rate == pytest.approx(153_700, rel=0.01)
    clock.t += 2 * LINK_WINDOW_S
    meter.sent(16_384, 0.0204, held=True)  # the refilled burst, alone in the window by wall time
    assert meter.held_rate is not None and meter.held_rate < 1.2 * 153_700, "over at least HELD_MIN_BUSY_S"
    before = meter.held_rate
    for _ in range(40):  # 5 KB light pictures, 50 ms apart: each within the burst refilled meanwhile
        clock.t += 0.05
        meter.sent(4_800, 0.0023, held=True)
    assert meter.held_rate == before, "sends held for less than HELD_MIN_S measure nothing"
    for _ in range(10):  # the link held a picture's pieces back for long: that measures it again
        clock.t += 0.2
        meter.sent(12_500, 0.1, held=True)
    assert meter.held_rate == pytest.approx(125_000, rel=0.01)


async def test_a_slow_viewer_whose_link_carries_the_stream_returns_to_it_after_the_hold() -> None:
    clock = Clock()
    frame = Frame(clock)
    feed = frame.feed
    box = Outbox(clock=clock)  # not measured yet: the picture count applies
    viewer = Viewer("f", 1, box, send_config=lambda _: None, on_event=lambda _: None, choice=StreamChoice(clock))
    feed.add(viewer)
    feed.publish(picture(key=True, size=100_000))
    for _ in range(20):  # the first keyframe is still going out: the count runs over, the viewer skips
        clock.t += 1 / 30
        feed.publish(picture())
    assert viewer.choice.slow and feed.skips == 1
    assert not viewer.light, "an unmeasured link stays on the full stream's keyframes"
    got: list[tuple[int, int, bool]] = []
    writer = Writer(box, 100_000)  # the link: 100 kB/s; the stream's deltas: 30 kB/s
    for n in range(int(30 * (SLOW_HOLD_S + 4))):
        clock.t += 1 / 30
        frame.tick(key_size=30_000)  # a keyframe crosses the link in 0.3 s
        sent = await writer.tick()
        got += sent if n >= 30 * (SLOW_HOLD_S + 3) else []
    assert not viewer.choice.slow and not viewer.light and feed.skips == 1, "back on the full stream, no new skip"
    assert [seq for _, seq, _ in got] == list(range(got[0][1], got[0][1] + len(got))), "every picture again"


async def test_a_viewer_that_skips_drops_its_queued_pictures_and_asks_for_a_keyframe_at_once() -> None:
    clock = Clock()
    frame = Frame(clock)
    feed = frame.feed
    box = Outbox(clock=clock)
    measured(box, 10_000)  # 10 kB/s: the budget holds 2500 bytes
    assert box.push_video(video(9, 1, 400))  # another frame's picture on the same connection
    viewer = Viewer("f", 1, box, send_config=lambda _: None, on_event=lambda _: None, choice=StreamChoice(clock))
    feed.add(viewer)
    feed.publish(picture(key=True, size=1000))
    frame.full_asked = False
    for _ in range(3):
        feed.publish(picture(size=900))
    assert feed.skips == 1 and frame.light_asked and not frame.full_asked, "it fell behind, asked the light stream"
    assert sequences(await take(box)) == [(9, 1, False)], "its own queued pictures went, the other frame's stayed"


def test_the_light_streams_share_of_the_link_is_cut_when_it_skips_and_grows_back_slowly() -> None:
    clock = Clock()
    choice = StreamChoice(clock)
    assert choice.share() == 1.0
    choice.light_skipped()
    assert choice.share() == LIGHT_BACKOFF
    for _ in range(10):
        choice.light_skipped()
    assert choice.share() == LIGHT_MIN_SHARE, "never below the floor"
    clock.t += 2
    assert choice.share() == LIGHT_MIN_SHARE + 2 * LIGHT_REGROW_PER_S
    clock.t += 100
    assert choice.share() == 1.0


def test_a_receivers_estimate_that_ramps_up_is_no_congestion_and_one_that_falls_is() -> None:
    clock = Clock()
    meter = LinkMeter(clock)
    for kbit in (300, 330, 360, 400, 440):  # Chromium's REMB starting below the stream and growing with it
        meter.reported(kbit * 1000)
        clock.t += 0.5
        assert not meter.falling
    meter.reported(300_000)  # the receiver saw its queue grow: it cut the estimate
    assert meter.falling
    clock.t += REPORT_FRESH_S + 1
    meter.reported(300_000)
    assert not meter.falling, "settled at the lower rate"


def test_a_receiver_losing_a_tenth_of_the_packets_for_a_second_makes_the_viewer_slow() -> None:
    clock = Clock()
    meter = LinkMeter(clock)
    meter.lost(0, 1_000)
    assert not meter.lossy, "one report: nothing to compare it with"
    clock.t += 0.1
    meter.lost(2, 1_100)
    assert not meter.lossy, "2 of 100 lost"
    clock.t += 0.1
    meter.lost(32, 1_200)
    assert meter.lossy, "32 of 200 lost over the window"
    clock.t += 1.5
    meter.lost(32, 1_300)
    assert not meter.lossy, "none of the last 100 lost: the older reports no longer count"
    clock.t += 2
    assert not meter.lossy, "an old report no longer counts"
    choice = StreamChoice(clock)
    for _ in range(30):
        choice.deltas.add(1_000)
    # The estimate is well above the deltas, but the keyframes do not get through.
    assert not choice.update(1_000_000, reported=True, congested=False, lossy=True)
    clock.t += BELOW_FOR_S
    assert choice.update(1_000_000, reported=True, congested=False, lossy=True)


def test_loss_is_counted_over_packets_not_averaged_over_reports() -> None:
    """While it asks for retransmissions, Chromium reports tens of times a second, mostly over intervals that
    lost nothing: a third of the packets lost reads as a few reports of 0.9 between many of 0.0."""
    clock = Clock()
    meter = LinkMeter(clock)
    lost, seq = 0, 0
    meter.lost(lost, seq)
    for step in range(40):  # one second: 40 reports, every tenth over 30 packets of which 27 were lost
        clock.t += 0.025
        seq += 30 if step % 10 == 0 else 3
        lost += 27 if step % 10 == 0 else 0
        meter.lost(lost, seq)
    assert meter.lossy, f"{lost} of {seq} lost"


# -- text bounds (issue 32, #5 and #7) -------------------------------------------------------------------------


async def test_only_the_newest_frame_state_of_a_frame_waits_in_its_place() -> None:
    outbox = Outbox()
    outbox.push_text("state f1 #1", key="frame-state:f1")
    outbox.push_text("ack 1")
    outbox.push_text("state f2 #1", key="frame-state:f2")
    for i in range(2, 1000):  # a watch flood's states: the queue does not grow
        outbox.push_text(f"state f1 #{i}", key="frame-state:f1")
    assert len(outbox) == 3
    assert await take(outbox) == ["state f1 #999", "ack 1", "state f2 #1"]
    outbox.push_text("state f1 #1000", key="frame-state:f1")  # once sent, the next one queues again
    assert await take(outbox) == ["state f1 #1000"]


async def test_a_client_that_does_not_read_is_given_up_past_the_text_bound() -> None:
    given_up: list[bool] = []
    outbox = Outbox(max_text_bytes=1000, max_texts=50, on_overflow=lambda: given_up.append(True))
    for _ in range(9):
        outbox.push_text("x" * 100)
    outbox.push_config("c" * 99)
    assert not given_up and len(outbox) == 10
    outbox.push_text("y" * 2)  # 1001 bytes
    assert given_up == [True] and outbox.overflowed and outbox.closed
    assert len(outbox) == 0 and await outbox.next() is None  # what it held is dropped
    outbox.push_text("more")
    assert given_up == [True] and len(outbox) == 0  # nothing more is taken, and it is told once
    counted = Outbox(max_texts=50, on_overflow=lambda: given_up.append(True))
    for _ in range(51):
        counted.push_text("a")
    assert given_up == [True, True] and counted.closed


async def test_text_taken_by_the_writer_makes_room_again() -> None:
    outbox = Outbox(max_text_bytes=1000)
    for _ in range(100):
        outbox.push_text("x" * 900)
        assert await take(outbox) == ["x" * 900]
    assert not outbox.overflowed


def test_a_slow_viewers_losses_cut_the_light_streams_share_once_a_second() -> None:
    """A receiver's estimate can stay above a link that drops rather than queues (a token bucket): the light stream
    capped by it kept losing packets, and no keyframe got through. Losses cut its share, at most once a second."""
    clock = Clock()
    choice = StreamChoice(clock)
    choice.skipped()  # slow: on the light stream
    clock.t += LOSS_WINDOW_S
    assert choice.update(100_000.0, True, lossy=True)
    assert choice.share() == LIGHT_BACKOFF
    clock.t += 0.5
    choice.update(100_000.0, True, lossy=True)
    assert choice.share() == LIGHT_BACKOFF + 0.5 * LIGHT_REGROW_PER_S, "not again within the loss window"
    clock.t += 0.5
    choice.update(100_000.0, True, lossy=True)
    assert choice.share() < LIGHT_BACKOFF, "cut again a window later"
    cut = choice.share()
    clock.t += 1.0
    choice.update(100_000.0, True, lossy=False)
    assert choice.share() == cut + LIGHT_REGROW_PER_S, "no loss: it grows back"


async def test_a_joiner_that_moves_to_the_light_stream_while_joining_gets_one_on_a_still_page() -> None:
    # Seen in CI (tests/web/test_viewer_scroll.py, a busy machine): a viewer's first sends read its loopback link as
    # 57 kbit/s, the kept chain of a still page did not fit, and it moved to the light stream while joining. No light
    # stream was made until the next picture, which a still page never sends: its canvas stayed empty for 30 s.
    clock = Clock()
    frame = Frame(clock)
    frame.feed.publish(picture(key=True, size=30_000))
    for _ in range(2):
        frame.feed.publish(Picture(data=b"r" * 15_000, keyframe=False, refinement=True, capture_us=1, encoded_us=2,
                                   codec="avc1.42C020", changed=False))  # sharpened: the page is still
    box = Outbox(clock=clock)
    measured(box, 7_000)  # 56 kbit/s
    configs: list[bool] = []
    joiner = Viewer("f", 1, box, send_config=lambda v: configs.append(v.light), on_event=lambda _: None,
                    choice=StreamChoice(clock))
    frame.feed.add(joiner)
    assert joiner.light and frame.feed.slow_viewers == 1, "the chain did not fit its link: it takes the light stream"
    assert frame.light_caps and frame.light_caps[-1] is not None, "so the light stream is made, with no new picture"
    assert frame.light_asked, "and its keyframe asked for"
    frame.feed.publish_light(picture(key=True, size=900, light=True))
    got = [unpack_video_header(m) for m in await take(box) if isinstance(m, bytes)]
    assert got[-1].keyframe and configs[-1] is True, "the light keyframe reaches it, after a light video-config"


async def test_a_light_viewer_of_a_page_that_went_still_goes_back_once_its_link_allows() -> None:
    # A light viewer looked at its link only when a picture was offered: once the page went still it kept the
    # light stream's CSS-size picture until the page changed again, however fast its link was by then. The frame
    # now calls `follow_links` every LINK_CHECK_S while the light stream is made (frames/pictures.py).
    clock = Clock()
    frame = Frame(clock)
    box = Outbox(clock=clock)
    measured(box, 15_000)  # 15 kB/s against a stream of 30 kB/s
    configs: list[bool] = []
    viewer = Viewer("f", 1, box, send_config=lambda v: configs.append(v.light), on_event=lambda _: None,
                    choice=StreamChoice(clock))
    frame.feed.add(viewer)
    frame.full_asked = True
    credit = 0.0
    for _ in range(60):
        clock.t += 1 / 30
        frame.tick()
        credit = min(credit + 15_000 / 30, 15_000 / 30)
        while len(box) and credit > 0:
            item = await box.next()
            assert item is not None
            credit -= len(item)
            box.sent(len(item), len(item) / 15_000, held=True)
    assert viewer.light and configs[-1] is True, "the link could not carry the stream: it takes the light one"
    await take(box)
    # The page is still from here on (no picture), and the link recovered: its messages leave at once.
    box.link.sent(1_000_000, 0.1)
    went_back_at = None
    for step in range(int(20 / LINK_CHECK_S)):
        clock.t += LINK_CHECK_S
        frame.feed.follow_links()
        for item in await take(box):  # padding of a probe, if one runs: the recovered link delivers it
            box.sent(len(item), 0.0)
        if not viewer.light:
            went_back_at = step * LINK_CHECK_S
            break
    assert went_back_at is not None, "it goes back to the full stream without a new picture"
    assert went_back_at >= SLOW_HOLD_S - 2, "not before its hold (from its last skip, 2 s before the still page)"
    assert frame.full_asked, "the full stream's keyframe is asked for it"
    assert frame.light_caps[-1] is None, "and the light stream, taken by nobody now, is no longer made"
    frame.tick()
    got = [unpack_video_header(m) for m in await take(box) if isinstance(m, bytes)]
    assert got and got[0].keyframe and configs[-1] is False, "a full video-config, then the full keyframe"
