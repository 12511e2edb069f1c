"""Patches as images and the sender that keeps the encoder behind them (real libx264, no display)."""

from __future__ import annotations

import io
import zlib
from typing import Any

import av
import numpy as np

from framestream.core.pacing import PatchRule
from framestream.core.wire import FORMAT_PNG, unpack_patch_payload
from framestream.media.diff import changed_boxes
from framestream.media.encoder import H264Encoder
from framestream.media.patches import PngCache, encode_png, make_patches, merge_boxes
from framestream.media.picture import KIND_PATCH, KIND_VIDEO, PatchGate
from framestream.media.rects import DamageRect
from framestream.media.sender import ChangeSender, Outgoing


def rgb_of_png(data: bytes) -> np.ndarray:
    with av.open(io.BytesIO(data)) as container:
        return np.asarray(next(container.decode(video=0)).to_ndarray(format="rgb24"))


def test_png_is_exact() -> None:
    bgrx = np.random.default_rng(3).integers(0, 256, (37, 53, 4), np.uint8)
    assert np.array_equal(rgb_of_png(encode_png(bgrx)), bgrx[:, :, 2::-1])
    strided = np.random.default_rng(4).integers(0, 256, (40, 80, 4), np.uint8)[5:20, 7:30]
    assert np.array_equal(rgb_of_png(encode_png(strided)), strided[:, :, 2::-1])


def test_a_small_rgb_region_takes_the_sub_filter_when_smaller_and_stays_exact() -> None:
    # Smooth colour along rows (a gradient, antialiased coloured text): Sub leaves small numbers that compress.
    ramp = (np.arange(600)[None, :, None] * np.array([1, 3, 7, 0]) + np.arange(6)[:, None, None]) % 256
    bgrx = ramp.astype(np.uint8)
    data = encode_png(bgrx)
    raw = zlib.decompress(data[data.index(b"IDAT") + 4 : data.index(b"IEND") - 8])
    assert raw[0] == 1, "filter type Sub"
    assert np.array_equal(rgb_of_png(data), bgrx[:, :, 2::-1])
    noise = np.random.default_rng(9).integers(0, 256, (6, 600, 4), np.uint8)  # Sub cannot help: left as it is
    data = encode_png(noise)
    assert zlib.decompress(data[data.index(b"IDAT") + 4 : data.index(b"IEND") - 8])[0] == 0
    assert np.array_equal(rgb_of_png(data), noise[:, :, 2::-1])


def test_few_colours_make_an_exact_palette_png() -> None:
    rng = np.random.default_rng(6)
    colours = rng.integers(0, 256, (40, 4), np.uint8)
    bgrx = colours[rng.integers(0, 40, (30, 70))]
    data = encode_png(bgrx)
    assert b"PLTE" in data[:64]
    assert np.array_equal(rgb_of_png(data), bgrx[:, :, 2::-1])
    many = rng.integers(0, 256, (30, 70, 4), np.uint8)
    assert b"PLTE" not in encode_png(many)[:64]


def test_palette_of_runs_is_exact() -> None:
    # UI content: long runs of one colour (counted once a run), a few antialiased pixels, a run across rows.
    bgrx = np.zeros((20, 50, 4), np.uint8)
    bgrx[:, :] = (220, 90, 30, 0)
    bgrx[3:9, 10:40] = (255, 255, 255, 0)
    bgrx[5, 11:14] = [(1, 2, 3, 0), (4, 5, 6, 0), (1, 2, 3, 0)]
    bgrx[19, 49] = (9, 9, 9, 7)  # the padding byte is not a colour
    data = encode_png(bgrx)
    assert b"PLTE" in data[:64]
    assert np.array_equal(rgb_of_png(data), bgrx[:, :, 2::-1])


def test_png_cache_answers_equal_pixels_only() -> None:
    rng = np.random.default_rng(8)
    picture = rng.integers(0, 4, (80, 120, 4), np.uint8)
    cache = PngCache(max_entries=2)
    first = cache.png(picture[10:40, 20:60])
    assert (cache.hits, cache.misses) == (0, 1)
    moved = picture.copy()
    moved[50:80, 70:110] = picture[10:40, 20:60]  # the same pixels elsewhere: a hit
    assert cache.png(moved[50:80, 70:110]) == first
    assert cache.hits == 1
    picture[10, 20, 0] ^= 1  # one pixel differs: encoded again, and exact
    again = cache.png(picture[10:40, 20:60])
    assert cache.misses == 2 and np.array_equal(rgb_of_png(again), picture[10:40, 20:60, 2::-1])
    before = picture[10:40, 20:60].copy()
    picture[10:40, 20:60] = 0  # the cache kept its own copy of the pixels, not a view of the picture
    assert cache.png(before) == again
    cache.png(picture[0:5, 0:5])
    cache.png(picture[0:6, 0:6])
    assert len(cache._entries) == 2  # the oldest went


def test_make_patches_cuts_the_boxes_in_order() -> None:
    picture = np.random.default_rng(5).integers(0, 256, (60, 90, 4), np.uint8)
    rects = make_patches(picture, [(10, 20, 30, 25), (0, 0, 1, 1)])
    assert [(r.x, r.y, r.width, r.height, r.format) for r in rects] == [(10, 20, 20, 5, FORMAT_PNG),
                                                                         (0, 0, 1, 1, FORMAT_PNG)]
    assert np.array_equal(rgb_of_png(rects[0].data), picture[20:25, 10:30, 2::-1])


def test_merge_boxes_joins_near_ones_only() -> None:
    assert merge_boxes([(0, 0, 10, 10), (15, 0, 20, 10)], gap=8) == [(0, 0, 20, 10)]
    assert merge_boxes([(0, 0, 10, 10), (30, 0, 40, 10)], gap=8) == [(0, 0, 10, 10), (30, 0, 40, 10)]
    # A grown box can reach one it had passed.
    assert merge_boxes([(0, 30, 10, 40), (5, 0, 15, 10), (8, 12, 12, 28)], gap=8) == [(0, 0, 15, 40)]


def test_changed_boxes_are_tight() -> None:
    a = np.zeros((64, 96, 4), np.uint8)
    b = a.copy()
    b[10:12, 30:33] = 255
    b[50, 90] = 1
    assert changed_boxes(a, b, [DamageRect(0, 0, 48, 64), DamageRect(48, 0, 48, 64)]) == [
        (30, 10, 33, 12), (90, 50, 91, 51)
    ]
    assert changed_boxes(a, b, [DamageRect(0, 0, 96, 64)], tight_area=0) == [(0, 10, 96, 51)]
    assert changed_boxes(a, a.copy(), None) == []
    # Two changes far apart inside one damaged rectangle stay two boxes.
    c = a.copy()
    c[5:8, 2:4] = 9
    c[40:50, 80:90] = 9
    assert changed_boxes(a, c, [DamageRect(0, 0, 96, 64)]) == [(2, 5, 4, 8), (80, 40, 90, 50)]
    tall = np.zeros((200, 40, 4), np.uint8)
    tall2 = tall.copy()
    tall2[10:150, 5:9] = 1
    assert changed_boxes(tall, tall2, [DamageRect(0, 0, 40, 200)]) == [(5, 10, 9, 150)]
    # A letter and a caret far below it in the same columns: two boxes, each tight.
    tall2[190:195, 20:22] = 1
    assert changed_boxes(tall, tall2, [DamageRect(0, 0, 40, 200)]) == [(5, 10, 9, 150), (20, 190, 22, 195)]


def _decode(decoder: av.VideoCodecContext, data: bytes) -> np.ndarray:
    frames = decoder.decode(av.Packet(data))
    assert frames
    return np.asarray(frames[-1].to_ndarray(format="rgb24"))


def test_the_encoder_never_sees_patches_and_its_next_picture_covers_them() -> None:
    width, height = 320, 192
    kept = np.full((height, width, 4), 255, np.uint8)
    encoder = H264Encoder(width, height)
    gate = PatchGate()
    sender = ChangeSender(encoder, gate)
    decoder = av.CodecContext.create("h264", "r")
    first = sender.send(kept, now=0.0, keyframe=True, refinement=False, rows=(0, height),
                        boxes=[(0, 0, width, height)], hint=None)
    assert first is not None and first.kind == KIND_VIDEO and first.keyframe
    _decode(decoder, first.data)

    kept[40:60, 40:80] = (0, 0, 200, 0)  # red (BGRX)
    closed = sender.send(kept, now=0.1, keyframe=False, refinement=False, rows=(40, 60),
                         boxes=[(40, 40, 80, 60)], hint=[(40, 40, 40, 20)])
    assert closed is not None and closed.kind == KIND_VIDEO  # the gate is closed: today's stream
    _decode(decoder, closed.data)

    gate.open = True
    kept[100:120, 200:240] = (200, 0, 0, 0)  # blue
    patch = sender.send(kept, now=0.2, keyframe=False, refinement=False, rows=(100, 120),
                        boxes=[(200, 100, 240, 120)], hint=[(200, 100, 40, 20)])
    assert patch is not None and patch.kind == KIND_PATCH and not patch.keyframe
    (rect,) = unpack_patch_payload(patch.data)
    assert (rect.x, rect.y, rect.width, rect.height) == (200, 100, 40, 20)
    assert np.array_equal(rgb_of_png(rect.data), kept[100:120, 200:240, 2::-1])
    assert sender.pending

    # Something else changes as video (a plain viewer joined): that picture brings the patched box along.
    gate.open = False
    kept[150:160, 10:20] = (0, 200, 0, 0)
    video = sender.send(kept, now=0.3, keyframe=False, refinement=False, rows=(150, 160),
                        boxes=[(10, 150, 20, 160)], hint=[(10, 150, 10, 10)])
    assert video is not None and video.kind == KIND_VIDEO and not sender.pending
    picture = _decode(decoder, video.data)
    assert np.abs(picture[110, 220].astype(int) - (0, 0, 200)).max() < 24, picture[110, 220]
    assert np.abs(picture[155, 15].astype(int) - (0, 200, 0)).max() < 24, picture[155, 15]
    encoder.close()


def test_a_keyframe_is_always_video() -> None:
    kept = np.zeros((64, 64, 4), np.uint8)
    gate = PatchGate()
    gate.open = True
    sender = ChangeSender(H264Encoder(64, 64), gate)
    out = sender.send(kept, now=0.0, keyframe=True, refinement=False, rows=(0, 4), boxes=[(0, 0, 4, 4)],
                      hint=[(0, 0, 4, 4)])
    assert out is not None and out.kind == KIND_VIDEO and out.keyframe


def _animation_sender(width: int, height: int) -> tuple[np.ndarray, PatchGate, ChangeSender, Any]:
    """A white picture, an open patch gate, a sender that paces animations at once, and a decoder."""
    gate = PatchGate()
    gate.open = True
    sender = ChangeSender(H264Encoder(width, height), gate, PatchRule(animation_fps=15, animation_after=0.0))
    return np.full((height, width, 4), 255, np.uint8), gate, sender, av.CodecContext.create("h264", "r")


def test_an_animation_picture_that_waits_goes_out_with_the_next_patch_or_video() -> None:
    width, height = 160, 96
    kept, _, sender, decoder = _animation_sender(width, height)
    first = sender.send(kept, now=0.0, keyframe=True, refinement=False, rows=(0, height),
                        boxes=[(0, 0, width, height)], hint=None)
    assert first is not None
    _decode(decoder, first.data)

    def change(now: float, x: int) -> Outgoing | None:
        kept[10:20, x : x + 4] = (0, 0, 200, 0)
        return sender.send(kept, now=now, keyframe=False, refinement=False, rows=(10, 20),
                           boxes=[(x, 10, x + 4, 20)], hint=[(x, 10, 4, 10)])

    sent = change(1.0, 10)
    assert sent is not None and sent.kind == KIND_PATCH
    assert change(1.0 + 1 / 30, 14) is None  # waits for the animation's next slot
    both = change(1.0 + 2 / 30, 18)
    assert both is not None and both.kind == KIND_PATCH
    (rect,) = unpack_patch_payload(both.data)
    assert (rect.x, rect.width) == (14, 8)  # the waiting box went along
    assert change(1.0 + 3 / 30, 22) is None
    # The animation stops: the policy's refinement (H.264) shows what waited.
    video = sender.send(kept, now=1.5, keyframe=False, refinement=True, rows=None, boxes=[], hint=None)
    assert video is not None and video.kind == KIND_VIDEO
    picture = _decode(decoder, video.data)
    assert np.abs(picture[15, 23].astype(int) - (200, 0, 0)).max() < 24, picture[15, 23]


def test_sharpening_after_patches_alone_sends_no_h264() -> None:
    width, height = 160, 96
    kept, gate, sender, decoder = _animation_sender(width, height)
    first = sender.send(kept, now=0.0, keyframe=True, refinement=True, rows=(0, height),
                        boxes=[(0, 0, width, height)], hint=None)  # a still keyframe: sharp at once
    assert first is not None
    _decode(decoder, first.data)
    kept[10:20, 10:14] = (0, 0, 200, 0)
    patch = sender.send(kept, now=1.0, keyframe=False, refinement=False, rows=(10, 20), boxes=[(10, 10, 14, 20)],
                        hint=[(10, 10, 4, 10)])
    assert patch is not None and patch.kind == KIND_PATCH
    # A pause in the animation: the policy's sharpening finds nothing lossy to sharpen and nothing waiting.
    assert sender.send(kept, now=1.2, keyframe=False, refinement=True, rows=None, boxes=[], hint=None) is None
    kept[10:20, 14:18] = (0, 0, 200, 0)
    assert sender.send(kept, now=1.2 + 1 / 30, keyframe=False, refinement=False, rows=(10, 20),
                       boxes=[(14, 10, 18, 20)], hint=[(14, 10, 4, 10)]) is not None
    kept[10:20, 18:22] = (0, 0, 200, 0)
    assert sender.send(kept, now=1.2 + 2 / 30, keyframe=False, refinement=False, rows=(10, 20),
                       boxes=[(18, 10, 22, 20)], hint=[(18, 10, 4, 10)]) is None  # waits
    # It stops: what waited goes out as a patch, exact, not as an H.264 picture.
    flushed = sender.send(kept, now=1.5, keyframe=False, refinement=True, rows=None, boxes=[], hint=None)
    assert flushed is not None and flushed.kind == KIND_PATCH
    (rect,) = unpack_patch_payload(flushed.data)
    assert (rect.x, rect.width) == (18, 4)
    assert np.array_equal(rgb_of_png(rect.data), kept[10:20, 18:22, 2::-1])
    # After a lossy H.264 picture, the sharpening is H.264 as before (twice), patches or not in between.
    gate.open = False
    kept[50:60, 50:60] = (0, 200, 0, 0)
    video = sender.send(kept, now=2.0, keyframe=False, refinement=False, rows=(50, 60), boxes=[(50, 50, 60, 60)],
                        hint=[(50, 50, 10, 10)])
    assert video is not None and video.kind == KIND_VIDEO
    gate.open = True
    kept[10:20, 30:34] = 0
    assert sender.send(kept, now=3.0, keyframe=False, refinement=False, rows=(10, 20), boxes=[(30, 10, 34, 20)],
                       hint=[(30, 10, 4, 10)]) is not None
    for t in (3.2, 3.3):
        sharp = sender.send(kept, now=t, keyframe=False, refinement=True, rows=None, boxes=[], hint=None)
        assert sharp is not None and sharp.kind == KIND_VIDEO and sharp.refinement


def test_every_h264_picture_carries_the_whole_current_picture_whatever_went_as_patches() -> None:
    """A property over random runs: boxes change (found by the same change check as the worker), each change goes
    as patches or as H.264 as the gate says, and after every H.264 picture the encoder's picture is byte for byte
    the whole current picture converted, though only the changed boxes (and the patched ones pending) were."""
    rng = np.random.default_rng(290)
    width, height = 320, 192
    kept = np.full((height, width, 4), 255, np.uint8)
    gate = PatchGate()
    encoder = H264Encoder(width, height)
    sender = ChangeSender(encoder, gate, PatchRule(animation_fps=None))
    reference = H264Encoder(width, height)
    assert sender.send(kept, now=0.0, keyframe=True, refinement=False, rows=(0, height),
                       boxes=[(0, 0, width, height)], hint=None) is not None
    videos = patches = 0
    for step in range(1, 120):
        before = kept.copy()
        for _ in range(int(rng.integers(1, 4))):
            x0, y0 = int(rng.integers(0, width - 8)), int(rng.integers(0, height - 8))
            x1, y1 = x0 + int(rng.integers(1, 80)), y0 + int(rng.integers(1, 60))
            kept[y0:y1, x0:x1, :3] = rng.integers(0, 256, 3, dtype=np.uint8)
        boxes = changed_boxes(before, kept)
        if not boxes:
            continue
        gate.open = bool(rng.integers(0, 2))
        out = sender.send(kept, now=step / 30, keyframe=False, refinement=False,
                          rows=(min(b[1] for b in boxes), max(b[3] for b in boxes)), boxes=boxes,
                          hint=[(x0, y0, x1 - x0, y1 - y0) for x0, y0, x1, y1 in boxes])
        assert out is not None
        if out.kind == KIND_PATCH:
            patches += 1
            continue
        videos += 1
        reference.update(kept)
        for plane, whole in zip(encoder._planes, reference._planes, strict=True):
            assert np.array_equal(plane, whole), f"step {step}: the encoder's picture is not the page"
    assert videos >= 20 and patches >= 20, (videos, patches)
    encoder.close()
    reference.close()
