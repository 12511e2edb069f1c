"""The client's patches (docs/protocol.md, "Binary patch messages"): drawn on the picture before, in order, only
when they directly follow it. The H.264 here is real libx264 (media/encoder.py); the service is not involved."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from framestream.client.view import FrameView
from framestream.core.wire import FORMAT_COPY, FORMAT_PNG, PatchRect, pack_patch_payload
from framestream.media.encoder import EncoderSettings, H264Encoder

W, H = 64, 48


def png(rgb: np.ndarray) -> bytes:
    ok, data = cv2.imencode(".png", np.ascontiguousarray(rgb[:, :, ::-1]))
    assert ok
    return bytes(data)


def patch(x: int, y: int, rgb: np.ndarray) -> bytes:
    return pack_patch_payload([PatchRect(x, y, rgb.shape[1], rgb.shape[0], FORMAT_PNG, png(rgb))])


def solid(width: int, height: int, colour: tuple[int, int, int]) -> np.ndarray:
    return np.tile(np.array(colour, np.uint8), (height, width, 1))


@pytest.fixture
def stream() -> list[bytes]:
    """Two access units of a grey picture: a keyframe, then a delta with a blue square."""
    encoder = H264Encoder(W, H, EncoderSettings())
    bgrx = np.full((H, W, 4), 128, np.uint8)
    try:
        encoder.update(bgrx)
        units = [encoder.encode(keyframe=True).data]
        bgrx[8:24, 8:24, :3] = (200, 60, 20)
        encoder.update(bgrx)
        units.append(encoder.encode().data)
    finally:
        encoder.close()
    return units


def view() -> tuple[FrameView, list[str]]:
    asked: list[str] = []
    return FrameView("f1", on_keyframe_needed=asked.append), asked


def test_a_patch_draws_its_rectangles_in_order_on_a_copy(stream: list[bytes]) -> None:
    v, asked = view()
    v.on_video(1, 10, 1000, stream[0])
    base = v.latest
    assert base is not None and not base.patched
    red, green = solid(8, 8, (220, 20, 20)), solid(4, 4, (20, 200, 20))
    payload = pack_patch_payload([PatchRect(40, 30, 8, 8, FORMAT_PNG, png(red)),
                                  PatchRect(44, 34, 4, 4, FORMAT_PNG, png(green))])
    v.on_patch(11, 2000, payload)
    patched = v.latest
    assert patched is not None and patched is not base and patched.patched
    assert patched.sequence == 11 and patched.capture_us == 2000 and not asked
    assert patched.pixel(41, 31) == (220, 20, 20) and patched.pixel(45, 35) == (20, 200, 20), "drawn in order"
    assert base.pixel(45, 35) != (20, 200, 20), "the picture before is left as it was"
    assert patched.png() and len(patched.png(32, 24)) > 0  # scaled from the patched pixels, not the frame's


def test_a_copy_moves_the_picture_before_then_its_images_are_drawn(stream: list[bytes]) -> None:
    v, asked = view()
    v.on_video(1, 10, 1000, stream[0])
    base = v.latest
    assert base is not None
    before = base.rgb.copy()
    strip = solid(W, 6, (250, 10, 10))
    # The content moved up 6 rows (overlapping source and destination), the strip at the bottom came into view.
    v.on_patch(11, 2000, pack_patch_payload([PatchRect.copy((0, 0, W, H - 6), (0, 6)),
                                             PatchRect(0, H - 6, W, 6, FORMAT_PNG, png(strip))]))
    moved = v.latest
    assert moved is not None and moved.patched and not asked
    assert np.array_equal(moved.rgb[: H - 6], before[6:]) and np.array_equal(moved.rgb[H - 6 :], strip)
    assert np.array_equal(base.rgb, before), "the picture before is left as it was"
    for wrong in (
        PatchRect(0, 0, W, H, FORMAT_COPY, (0).to_bytes(2, "big") + (1).to_bytes(2, "big")),  # source past the end
        PatchRect(0, 1, W, H, FORMAT_COPY, bytes(4)),  # destination past the end
    ):
        with pytest.raises(ValueError, match="fit"):
            moved.with_patch(pack_patch_payload([wrong]), sequence=12, capture_us=0, received_us=0, received_at=0.0)


def test_video_after_patches_replaces_them_and_a_gap_waits_for_a_keyframe(stream: list[bytes]) -> None:
    v, asked = view()
    v.on_video(1, 10, 1000, stream[0])
    v.on_patch(11, 2000, patch(0, 0, solid(4, 4, (250, 250, 250))))
    v.on_video(0, 12, 3000, stream[1])  # the delta decodes against the decoder's own picture: patches unseen
    after = v.latest
    assert after is not None and not after.patched and after.sequence == 12
    assert all(abs(a - b) <= 12 for a, b in zip(after.pixel(16, 16), (20, 60, 200), strict=True))
    v.on_patch(14, 4000, patch(0, 0, solid(4, 4, (250, 250, 250))))  # 13 went missing
    assert v.latest is after and asked == ["f1"], "a patch after a gap is not drawn on an older picture"


def test_a_broken_patch_is_not_drawn_and_asks_for_a_keyframe(stream: list[bytes]) -> None:
    v, asked = view()
    v.on_video(1, 10, 1000, stream[0])
    base = v.latest
    v.on_patch(11, 2000, patch(60, 40, solid(8, 8, (1, 2, 3))))  # reaches past the 64x48 picture
    assert v.latest is base and asked == ["f1"]
    assert base is not None
    with pytest.raises(ValueError, match="not a PNG"):
        base.with_patch(pack_patch_payload([PatchRect(0, 0, 2, 2, FORMAT_PNG, b"\x89PNG broken")]), sequence=11,
                        capture_us=0, received_us=0, received_at=0.0)


def test_a_patch_before_any_picture_waits_for_a_keyframe() -> None:
    v, asked = view()
    v.on_patch(5, 1000, patch(0, 0, solid(2, 2, (9, 9, 9))))
    assert v.latest is None and asked == ["f1"]
