"""Fan-out without a browser: pictures numbered once, a stalled viewer skips to a keyframe alone."""

from __future__ import annotations

import random

from framestream.core.wire import VIDEO_HEADER, unpack_video_header
from framestream.fanout.feed import FrameFeed, Outbox, Viewer
from framestream.media.picture import Picture


def picture(key: bool = False, size: int = 100) -> Picture:
    return Picture(data=b"x" * size, keyframe=key, refinement=False, capture_us=1, encoded_us=2, codec="avc1.42C020")


def viewer(outbox: Outbox, slot: int, configs: list[int]) -> Viewer:
    return Viewer("f", slot, outbox, send_config=lambda v: configs.append(v.slot), on_event=lambda _: None)


async def drain(outbox: Outbox) -> list[str | bytes]:
    items: list[str | bytes] = []
    while len(outbox):
        item = await outbox.next()
        assert item is not None
        items.append(item)
    return items


async def test_viewers_start_at_a_keyframe_with_a_config_and_share_sequence_numbers() -> None:
    asked: list[int] = []
    feed = FrameFeed(request_keyframe=lambda: asked.append(1))
    configs: list[int] = []
    a, b = Outbox(), Outbox()
    feed.add(viewer(a, 3, configs))
    feed.publish(picture())  # a delta before any keyframe is skipped
    feed.add(viewer(b, 9, configs))
    feed.publish(picture(key=True))
    feed.publish(picture())
    assert configs == [3, 9] or sorted(configs) == [3, 9]
    assert len(asked) == 2
    got_a = [unpack_video_header(m) for m in await drain(a) if isinstance(m, bytes)]
    got_b = [unpack_video_header(m) for m in await drain(b) if isinstance(m, bytes)]
    assert [(h.slot, h.sequence, h.keyframe) for h in got_a] == [(3, 2, True), (3, 3, False)]
    assert [(h.slot, h.sequence, h.keyframe) for h in got_b] == [(9, 2, True), (9, 3, False)]


async def test_a_stalled_viewer_skips_to_the_next_keyframe_and_the_other_gets_everything() -> None:
    asked: list[int] = []
    feed = FrameFeed(request_keyframe=lambda: asked.append(1))
    stalled, healthy = Outbox(max_pictures=3), Outbox(max_pictures=1000)
    feed.add(viewer(stalled, 1, []))
    feed.add(viewer(healthy, 2, []))
    feed.publish(picture(key=True))
    for _ in range(10):
        feed.publish(picture())
    assert feed.dropped >= 8
    requests_before = len(asked)
    feed.publish(picture())
    assert len(asked) == requests_before  # already waiting for a keyframe: deltas are just skipped
    stalled_got = [unpack_video_header(m).sequence for m in await drain(stalled) if isinstance(m, bytes)]
    assert stalled_got == [1, 2, 3]
    feed.publish(picture(key=True))
    resumed = [unpack_video_header(m) for m in await drain(stalled) if isinstance(m, bytes)]
    assert [(h.sequence, h.keyframe) for h in resumed] == [(13, True)]
    healthy_got = [unpack_video_header(m).sequence for m in await drain(healthy) if isinstance(m, bytes)]
    assert healthy_got == list(range(1, 14))


def refinement() -> Picture:
    return Picture(data=b"r" * 100, keyframe=False, refinement=True, capture_us=1, encoded_us=2,
                   codec="avc1.42C020", changed=False)


async def test_a_joiner_starts_from_the_last_keyframe_without_asking_for_a_new_one() -> None:
    asked: list[int] = []
    feed = FrameFeed(request_keyframe=lambda: asked.append(1))
    feed.add(viewer(Outbox(), 1, []))
    feed.publish(picture(key=True))
    feed.publish(refinement())  # the same picture made sharp: the keyframe still shows the page
    feed.publish(refinement())
    asked.clear()
    configs: list[int] = []
    late = Outbox()
    feed.add(viewer(late, 2, configs))
    feed.publish(picture())
    got = [unpack_video_header(m) for m in await drain(late) if isinstance(m, bytes)]
    assert [(h.sequence, h.keyframe) for h in got] == [(1, True), (2, False), (3, False), (4, False)]
    assert configs == [2] and asked == [], "served from what was sent, no new keyframe for everyone"


async def test_after_a_change_the_kept_keyframe_is_older_than_the_page_and_a_joiner_asks_for_a_fresh_one() -> None:
    asked: list[int] = []
    feed = FrameFeed(request_keyframe=lambda: asked.append(1))
    feed.publish(picture(key=True))  # a blank window before the page painted
    feed.publish(picture())  # the page's paint, as a delta
    asked.clear()
    late = Outbox()
    feed.add(viewer(late, 2, []))
    assert asked == [1] and await drain(late) == [], "never the stale keyframe first"
    feed.publish(picture(key=True))
    assert [unpack_video_header(m).sequence for m in await drain(late) if isinstance(m, bytes)] == [3]


async def test_a_joiner_is_never_sent_first_a_picture_older_than_the_page() -> None:
    """The invariant as a property of the fan-out: over random runs of keyframes, deltas, patches and
    refinements, joins (replayed or not), leaves and forgets, the first picture any joiner is given is a keyframe
    of the newest content published when it is given (each changed picture is new content; a refinement, or a
    keyframe of a still page, is not)."""
    rng = random.Random(26)
    served = {"kept": 0, "fresh": 0}
    for _run in range(400):
        feed = FrameFeed(request_keyframe=lambda: None)
        content = 0
        waiting: dict[int, Outbox] = {}  # joiners not given a picture yet, by slot
        for step in range(rng.randint(1, 40)):
            roll = rng.random()
            joined = roll < 0.15
            if joined:
                slot = step + 1
                joiner = viewer(Outbox(max_pictures=rng.choice([1, 3, 1000])), slot, [])
                joiner.patches = rng.random() < 0.5
                waiting[slot] = joiner.outbox
                feed.add(joiner, replay=rng.random() < 0.8)
            elif roll < 0.2 and feed.viewers:
                gone = rng.choice(sorted(feed.viewers, key=lambda v: v.slot))
                feed.remove(gone)
                waiting.pop(gone.slot, None)
            elif roll < 0.25:
                feed.forget()
            else:
                key, refine = rng.random() < 0.25, rng.random() < 0.3
                changed = not refine and rng.random() < 0.9
                content += changed
                kind = 2 if changed and not key and rng.random() < 0.3 else 1
                feed.publish(Picture(data=content.to_bytes(4, "big") + bytes(20), keyframe=key, refinement=refine,
                                     capture_us=step, encoded_us=step, codec="avc1", changed=changed, kind=kind))
            for slot, outbox in list(waiting.items()):
                videos = [m for m in await drain(outbox) if isinstance(m, bytes)]
                if videos:
                    first = videos[0]
                    assert unpack_video_header(first).keyframe, "a joiner starts at a keyframe"
                    shown = int.from_bytes(first[VIDEO_HEADER.size:VIDEO_HEADER.size + 4], "big")
                    assert shown == content, f"run {_run} step {step}: shown {shown}, the page is at {content}"
                    del waiting[slot]
                    served["kept" if joined and slot == step + 1 else "fresh"] += 1
    # Worth its name only if joiners were served both ways: from the kept keyframe at once, and fresh ones.
    assert served["kept"] >= 20 and served["fresh"] >= 20, served


async def test_past_one_outbox_of_motion_a_joiner_asks_for_a_keyframe() -> None:
    asked: list[int] = []
    feed = FrameFeed(request_keyframe=lambda: asked.append(1))
    feed.publish(picture(key=True))
    for _ in range(20):  # more than an outbox holds (15 pictures)
        feed.publish(picture())
    late = Outbox()
    feed.add(viewer(late, 2, []))
    assert asked == [1] and await drain(late) == []
    feed.publish(picture(key=True))
    assert [unpack_video_header(m).keyframe for m in await drain(late) if isinstance(m, bytes)] == [True]


async def test_a_new_encoder_forgets_the_old_pictures() -> None:
    asked: list[int] = []
    feed = FrameFeed(request_keyframe=lambda: asked.append(1))
    feed.publish(picture(key=True))
    feed.restarted()
    late = Outbox()
    feed.add(viewer(late, 2, []))
    assert asked == [1] and await drain(late) == []


async def test_an_oversized_keyframe_still_goes_to_an_empty_outbox() -> None:
    outbox = Outbox(max_bytes=1000)
    assert outbox.push_video(b"k" * 5000)
    assert not outbox.push_video(b"d" * 10)
    outbox.close()
    assert await outbox.next() == b"k" * 5000
    assert await outbox.next() is None


async def test_wait_change_sees_only_later_pictures() -> None:
    feed = FrameFeed(request_keyframe=lambda: None)
    feed.publish(Picture(b"a", True, False, capture_us=100, encoded_us=101, codec=None))
    assert await feed.wait_change(100, 0.01) is None
    import asyncio

    waiter = asyncio.ensure_future(feed.wait_change(100, 1.0))
    await asyncio.sleep(0)
    feed.publish(Picture(b"b", False, False, capture_us=150, encoded_us=151, codec=None))
    assert await waiter == 150


async def test_a_joiner_that_cannot_take_the_kept_pictures_counts_as_a_skip() -> None:
    feed = FrameFeed(request_keyframe=lambda: None)
    feed.add(viewer(Outbox(max_pictures=1000), 1, []))
    feed.publish(picture(key=True))
    for _ in range(5):
        feed.publish(refinement())  # the joining chain: a keyframe and five refinements of it
    joiner = viewer(Outbox(max_pictures=2), 2, [])
    feed.add(joiner)  # its queue takes two of the six
    assert joiner.skipped == 1
    assert feed.skips == 1  # what /metrics' framestream_viewer_skips_total shows
