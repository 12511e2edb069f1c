"""The outbox's time budget at the link's measured rate, text before video, and a slow viewer's keyframes."""

from __future__ import annotations

from framestream.core.wire import FLAG_KEYFRAME, pack_video_header, unpack_video_header
from framestream.feed import FrameFeed, Viewer
from framestream.link import SLOW_HOLD_S, LinkMeter, StreamChoice
from framestream.media.picture import Picture
from framestream.outbox import Outbox


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


def test_a_slow_viewer_returns_to_the_full_stream_only_after_its_link_recovers() -> None:
    clock = Clock()
    choice = StreamChoice(clock)
    for _ in range(30):
        choice.deltas.add(10_000)  # the frame's deltas: about 150 kB/s over the window
    choice.skipped()
    assert choice.update(1_000_000) and choice.slow_periods == 1, "held after a skip"
    clock.t += SLOW_HOLD_S
    for _ in range(30):
        choice.deltas.add(10_000)
    assert choice.update(100_000), "a link slower than the stream stays on keyframes"
    assert not choice.update(1_000_000)


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


def picture(key: bool = False, size: int = 1000) -> Picture:
    return Picture(data=b"p" * size, keyframe=key, refinement=False, capture_us=1, encoded_us=2, codec="avc1.42C020")


async def test_a_slow_viewer_gets_keyframes_at_its_links_rate_and_a_fast_one_everything() -> None:
    clock = Clock()
    asked: list[float] = []
    feed = FrameFeed(request_keyframe=lambda: asked.append(clock.t))
    slow_box, fast_box = Outbox(clock=clock), Outbox(clock=clock)
    measured(slow_box, 10_000)  # 10 kB/s against a stream of 30 kB/s
    measured(fast_box, 10_000_000)
    slow = Viewer("f", 1, slow_box, send_config=lambda _: None, on_event=lambda _: None, choice=StreamChoice(clock))
    fast = Viewer("f", 2, fast_box, send_config=lambda _: None, on_event=lambda _: None, choice=StreamChoice(clock))
    feed.add(slow)
    feed.add(fast)
    asked.clear()
    slow_got: list[tuple[int, int, bool]] = []
    fast_got: list[tuple[int, int, bool]] = []
    credit = 0.0  # bytes the slow link may still send (negative: still busy with a message)
    for n in range(90):  # three seconds at 30 fps; a keyframe whenever one was asked for
        clock.t += 1 / 30
        key = n == 0 or bool(asked)  # the frame makes the keyframe asked for before this picture
        asked.clear()
        feed.publish(picture(key=key, size=3000 if key else 1000))
        fast_got += sequences(await take(fast_box))
        # The slow link drains 10 kB/s: take what it could have sent in this 1/30 s.
        credit = min(credit + 10_000 / 30, 10_000 / 30)
        while len(slow_box) and credit > 0:
            item = await slow_box.next()
            assert item is not None
            slow_got += sequences([item])
            credit -= len(item)
            slow_box.sent(len(item), len(item) / 10_000)
    assert [seq for _, seq, _ in fast_got] == list(range(1, 91)), "the fast viewer saw every picture"
    assert feed.skips >= 1 and slow.choice.slow and feed.slow_viewers == 1
    keys = [seq for _, seq, key in slow_got if key]
    assert len(keys) >= 3, "the slow viewer keeps getting pictures"
    assert len(keys) <= 12, "keyframes were asked for at the slow link's rate, not at every picture"


async def test_a_slow_viewer_whose_link_carries_the_stream_returns_to_it_after_the_hold() -> None:
    clock = Clock()
    asked: list[float] = []
    feed = FrameFeed(request_keyframe=lambda: asked.append(clock.t))
    box = Outbox(clock=clock)  # not measured yet: the picture count applies
    viewer = Viewer("f", 1, box, send_config=lambda _: None, on_event=lambda _: None, choice=StreamChoice(clock))
    feed.add(viewer)
    asked.clear()
    feed.publish(picture(key=True, size=100_000))
    for _ in range(20):  # the first keyframe is still going out: the count runs over, the viewer skips
        clock.t += 1 / 30
        feed.publish(picture())
    assert viewer.choice.slow and feed.skips == 1
    got: list[tuple[int, int, bool]] = []
    writer = Writer(box, 100_000)  # the link: 100 kB/s; the stream's deltas: 30 kB/s
    for n in range(int(30 * (SLOW_HOLD_S + 4))):
        clock.t += 1 / 30
        key = bool(asked)
        asked.clear()
        feed.publish(picture(key=key, size=100_000 if key else 1000))
        sent = await writer.tick()
        got += sent if n >= 30 * (SLOW_HOLD_S + 3) else []
    assert not viewer.choice.slow and feed.skips == 1, "back on the full stream, without a new skip"
    assert [seq for _, seq, _ in got] == list(range(got[0][1], got[0][1] + len(got))), "every picture again"


async def test_a_viewer_that_skips_drops_its_queued_pictures_and_asks_for_a_keyframe_at_once() -> None:
    clock = Clock()
    asked: list[float] = []
    feed = FrameFeed(request_keyframe=lambda: asked.append(clock.t))
    box = Outbox(clock=clock)
    measured(box, 10_000)  # 10 kB/s: the budget holds 2500 bytes
    assert box.push_video(video(9, 1, 400))  # another frame's picture on the same connection
    viewer = Viewer("f", 1, box, send_config=lambda _: None, on_event=lambda _: None, choice=StreamChoice(clock))
    feed.add(viewer)
    feed.publish(picture(key=True, size=1000))
    asked.clear()
    for _ in range(3):
        feed.publish(picture(size=900))
    assert feed.skips == 1 and len(asked) == 1, "it fell behind and asked for a keyframe"
    assert sequences(await take(box)) == [(9, 1, False)], "its own queued pictures went, the other frame's stayed"
