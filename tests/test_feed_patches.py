"""Patches in the fan-out without a browser: one numbering with video, the gate, skipping and joining."""

from __future__ import annotations

import itertools

from framestream.core.wire import KIND_PATCH, KIND_VIDEO, unpack_video_header
from framestream.fanout.feed import FrameFeed, Outbox, Viewer
from framestream.media.picture import KIND_PATCH as PICTURE_PATCH
from framestream.media.picture import Picture


def video(key: bool = False, size: int = 100) -> Picture:
    return Picture(data=b"v" * size, keyframe=key, refinement=False, capture_us=1, encoded_us=2, codec="avc1.42C020")


def patch(size: int = 50) -> Picture:
    return Picture(data=b"p" * size, keyframe=False, refinement=False, capture_us=1, encoded_us=2, codec=None,
                   kind=PICTURE_PATCH)


def viewer(outbox: Outbox, slot: int, patches: bool) -> Viewer:
    return Viewer("f", slot, outbox, send_config=lambda v: None, on_event=lambda _: None, patches=patches)


async def received(outbox: Outbox) -> list[tuple[int, int, bool]]:
    """(kind, sequence, keyframe) of every binary message queued."""
    got = []
    while len(outbox):
        item = await outbox.next()
        if isinstance(item, bytes):
            h = unpack_video_header(item)
            got.append((h.kind, h.sequence, h.keyframe))
    return got


async def test_the_gate_is_open_only_while_every_viewer_takes_patches() -> None:
    feed = FrameFeed(request_keyframe=lambda: None)
    assert not feed.patch_gate.open
    a = viewer(Outbox(), 1, True)
    feed.add(a)
    assert feed.patch_gate.open
    b = viewer(Outbox(), 2, False)
    feed.add(b)
    assert not feed.patch_gate.open
    feed.remove(b)
    assert feed.patch_gate.open
    feed.remove_all()
    assert not feed.patch_gate.open


async def test_patches_and_pictures_share_one_numbering_in_order() -> None:
    feed = FrameFeed(request_keyframe=lambda: None)
    box = Outbox()
    feed.add(viewer(box, 1, True))
    for picture in (video(key=True), patch(), patch(), video(), patch()):
        feed.publish(picture)
    assert await received(box) == [
        (KIND_VIDEO, 1, True), (KIND_PATCH, 2, False), (KIND_PATCH, 3, False), (KIND_VIDEO, 4, False),
        (KIND_PATCH, 5, False),
    ]


async def test_a_viewer_without_patches_skips_to_a_keyframe_instead_of_seeing_one() -> None:
    asked: list[int] = []
    feed = FrameFeed(request_keyframe=lambda: asked.append(1))
    box = Outbox()
    feed.add(viewer(box, 1, False))
    feed.publish(video(key=True))
    feed.publish(patch())  # made before the worker saw the gate close
    feed.publish(video())  # would miss the patch's change: skipped too
    feed.publish(video(key=True))
    assert await received(box) == [(KIND_VIDEO, 1, True), (KIND_VIDEO, 4, True)]
    assert asked


async def test_a_slow_viewer_drops_patches_with_the_pictures_and_resumes_at_a_keyframe() -> None:
    feed = FrameFeed(request_keyframe=lambda: None)
    slow, fast = Outbox(max_pictures=3), Outbox(max_pictures=1000)
    feed.add(viewer(slow, 1, True))
    feed.add(viewer(fast, 2, True))
    feed.publish(video(key=True))
    for _ in range(6):
        feed.publish(patch())
    feed.publish(video())
    feed.publish(patch())
    feed.publish(video(key=True))
    feed.publish(patch())
    got = await received(slow)
    # Whatever it skipped, it resumed at a keyframe: never a patch right after a gap (over an older picture).
    for (_, before, _), (kind, sequence, key) in itertools.pairwise(got):
        assert sequence == before + 1 or (key and kind == KIND_VIDEO), got
    assert got[-2:] == [(KIND_VIDEO, 10, True), (KIND_PATCH, 11, False)]
    assert [s for _, s, _ in await received(fast)] == list(range(1, 12))


async def test_after_patches_a_joiner_asks_for_a_fresh_keyframe_whatever_it_takes() -> None:
    asked: list[int] = []
    feed = FrameFeed(request_keyframe=lambda: asked.append(1))
    feed.add(viewer(Outbox(), 1, True))
    feed.publish(video(key=True))
    feed.publish(patch())  # the page changed after the keyframe: the keyframe alone is older than the page
    joiner, plain = Outbox(), Outbox()
    asked.clear()
    feed.add(viewer(joiner, 2, True))
    feed.add(viewer(plain, 3, False))
    assert await received(joiner) == [] and await received(plain) == []
    assert asked == [1, 1]
    feed.publish(video(key=True))
    assert await received(joiner) == [(KIND_VIDEO, 3, True)] and await received(plain) == [(KIND_VIDEO, 3, True)]
