"""The encoder with real libx264, checked by decoding every access unit with FFmpeg's decoder."""

from __future__ import annotations

import av
import numpy as np

from framestream.core.h264 import NAL_IDR, NAL_PPS, NAL_SPS, nal_type, split_annexb
from framestream.media.encoder import EncoderSettings, H264Encoder


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return 99.0 if mse == 0 else 10 * np.log10(255**2 / mse)


class Decoder:
    def __init__(self) -> None:
        self.ctx = av.CodecContext.create("h264", "r")

    def __call__(self, data: bytes) -> np.ndarray:
        frames = self.ctx.decode(av.Packet(data))
        assert frames, "every access unit decodes to a picture (zerolatency, no B-frames)"
        return frames[-1].to_ndarray(format="bgr24")


def page(width: int, height: int) -> np.ndarray:
    """White with dark text-like stripes: the kind of picture refinement is for."""
    img = np.full((height, width, 4), 255, np.uint8)
    rng = np.random.default_rng(7)
    for y in range(60, height - 40, 18):
        img[y : y + 9, 40 : width - 40, :3] = rng.integers(0, 90, (9, width - 80, 1), dtype=np.uint8)
    return img


def test_keyframe_carries_sps_pps_and_the_codec_string_matches_the_level() -> None:
    enc = H264Encoder(1280, 800)
    enc.update(page(1280, 800))
    key = enc.encode(keyframe=True)
    types = [nal_type(u) for u in split_annexb(key.data)]
    assert types[:2] == [NAL_SPS, NAL_PPS] and NAL_IDR in types
    assert key.keyframe
    assert enc.codec_string == "avc1.42C020"  # constrained baseline, level 3.2 for 1280x800 at 30 fps
    delta = enc.encode()
    assert not delta.keyframe and NAL_SPS not in [nal_type(u) for u in split_annexb(delta.data)]
    again = enc.encode(keyframe=True)
    assert again.keyframe


def test_hinted_changes_decode_exactly_where_they_happened() -> None:
    enc = H264Encoder(640, 400)
    decode = Decoder()
    img = page(640, 400)
    img[100:180, :, :3] = 255  # the box moves over white
    enc.update(img)
    decode(enc.encode(keyframe=True).data)
    for i in range(12):
        x = 20 + i * 30
        img[100:180, :, :3] = 255
        img[100:180, x : x + 80, :3] = (30, 90, 220)
        enc.update(img, (100, 180))
        # The box moved from x-30 to x: the union of both places changed.
        out = decode(enc.encode(changed=[(x - 30, 100, 110, 80)]).data)
        assert np.abs(out[140, x + 40].astype(int) - (30, 90, 220)).max() <= 16, (i, out[140, x + 40])
        assert np.abs(out[140, x - 20].astype(int) - 255).max() <= 16 if x >= 50 else True
        assert psnr(out[100:180], img[100:180, :, :3]) > 30


def test_refinement_makes_a_still_picture_sharp() -> None:
    enc = H264Encoder(640, 400, EncoderSettings(crf=32, refine_crf=14))
    decode = Decoder()
    img = page(640, 400)
    enc.update(img)
    rough = decode(enc.encode(keyframe=True).data)
    fine = decode(enc.encode(refinement=True).data)
    finer = decode(enc.encode(refinement=True).data)
    assert psnr(fine, img[:, :, :3]) > psnr(rough, img[:, :, :3]) + 5
    assert psnr(finer, img[:, :, :3]) >= 38  # random grey noise is the worst case for text-like content


def test_band_updates_equal_a_full_conversion() -> None:
    banded, full = H264Encoder(640, 400), H264Encoder(640, 400)
    img = page(640, 400)
    banded.update(img)
    img[200:260, 100:300, :3] = (10, 200, 30)
    banded.update(img, (200, 260))
    full.update(img)
    for plane_a, plane_b in zip(banded._planes, full._planes, strict=True):
        assert np.abs(plane_a.astype(int) - plane_b.astype(int)).max() <= 1


def test_updates_of_boxes_equal_a_full_conversion_exactly() -> None:
    """Any run of changed boxes, each converted alone (its rows and columns, widened to 32-pixel bands), leaves
    the encoder's picture byte for byte what converting the whole picture gives: chroma comes from the same 2x2
    blocks. Odd edges and boxes at the picture's borders included."""
    rng = np.random.default_rng(29)
    width, height = 646, 402  # not multiples of 32: the last bands are clipped
    boxed, full = H264Encoder(width, height), H264Encoder(width, height)
    img = page(width, height)
    boxed.update(img)
    for _ in range(40):
        x0, y0 = int(rng.integers(0, width - 1)), int(rng.integers(0, height - 1))
        x1, y1 = int(rng.integers(x0 + 1, width + 1)), int(rng.integers(y0 + 1, height + 1))
        img[y0:y1, x0:x1, :3] = rng.integers(0, 256, (y1 - y0, x1 - x0, 3), dtype=np.uint8)
        boxed.update(img, (y0, y1), (x0, x1))
    full.update(img)
    for plane_a, plane_b in zip(boxed._planes, full._planes, strict=True):
        assert np.array_equal(plane_a, plane_b)


def test_hints_off_the_picture_are_clipped_not_trusted() -> None:
    enc = H264Encoder(320, 200)
    decode = Decoder()
    img = page(320, 200)
    enc.update(img)
    decode(enc.encode(keyframe=True).data)
    img[150:200, 280:320, :3] = (200, 30, 30)
    enc.update(img, (150, 200))
    out = decode(enc.encode(changed=[(-50, -50, 10, 10), (280, 150, 4000, 4000), (10**6, 5, 8, 8)]).data)
    assert np.abs(out[180, 300].astype(int) - (200, 30, 30)).max() <= 16  # BGR, as drawn
