"""libx264 called directly: per-picture quantizers, unchanged-macroblock maps, options, checked by decoding."""

from __future__ import annotations

from fractions import Fraction

import av
import numpy as np
import pytest

from framestream.media.x264 import ConstantQuantizer, ConstantRateFactor, X264Encoder, X264Error, unchanged_map

OPTIONS = {"fps": "30", "keyint": "infinite", "scenecut": "0", "repeat-headers": "1", "bframes": "0", "log": "1"}


def picture(width: int, height: int, seed: int = 5) -> np.ndarray:
    """I420 of fine grey noise: detail every quantizer step shows."""
    return np.random.default_rng(seed).integers(0, 256, (height * 3 // 2, width), dtype=np.uint8)


def decode_luma(ctx: av.VideoCodecContext, data: bytes, height: int) -> np.ndarray:
    frames = ctx.decode(av.Packet(data))
    assert frames
    luma: np.ndarray = frames[-1].to_ndarray(format="yuv420p")[:height]
    return luma


def decoder() -> av.VideoCodecContext:
    ctx = av.CodecContext.create("h264", "r")
    assert isinstance(ctx, av.VideoCodecContext)
    return ctx


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return 99.0 if mse == 0 else float(10 * np.log10(255**2 / mse))


def test_each_picture_is_encoded_at_the_quantizer_it_is_given() -> None:
    enc = X264Encoder(320, 192, rate=ConstantQuantizer(10, 40), options=OPTIONS)
    ctx = decoder()
    img = picture(320, 192)
    data, key = enc.encode(img, 0, keyframe=True, qp=36)
    assert key
    coarse = psnr(decode_luma(ctx, data, 192), img[:192])
    fine_data, key = enc.encode(img, 1, qp=12)  # the same picture again, much finer: a refinement
    assert not key
    fine = psnr(decode_luma(ctx, fine_data, 192), img[:192])
    assert fine > coarse + 10 and len(fine_data) > len(data)
    again, _ = enc.encode(img, 2, qp=36)  # coarser than what the decoder has: nothing worth sending
    assert len(again) < 100
    enc.close()


def test_a_constant_quantizer_encoder_needs_a_quantizer_in_its_range() -> None:
    enc = X264Encoder(64, 64, rate=ConstantQuantizer(10, 40), options=OPTIONS)
    with pytest.raises(ValueError, match="qp must be within 10-40"):
        enc.encode(picture(64, 64), 0, qp=None)
    with pytest.raises(ValueError, match="qp must be within"):
        enc.encode(picture(64, 64), 0, qp=41)
    with pytest.raises(ValueError, match="I420"):
        enc.encode(np.zeros((10, 10), np.uint8), 0, qp=20)
    enc.close()
    with pytest.raises(X264Error, match="closed"):
        enc.encode(picture(64, 64), 0, qp=20)
    with pytest.raises(ValueError, match="span"):
        ConstantQuantizer(1, 51)


def test_unchanged_macroblocks_are_skipped_and_changed_ones_sent() -> None:
    enc = X264Encoder(128, 64, rate=ConstantQuantizer(10, 40), options=OPTIONS, unchanged_maps=True)
    ctx = decoder()
    img = np.full((96, 128), 128, np.uint8)
    decode_luma(ctx, enc.encode(img, 0, keyframe=True, qp=20)[0], 64)
    img[0:16, 0:16] = 235  # macroblock (0, 0)
    img[32:48, 96:112] = 16  # macroblock (2, 6): said to be unchanged, so x264 must not look at it
    out = decode_luma(ctx, enc.encode(img, 1, qp=20, unchanged=unchanged_map(4, 8, [(0, 0, 16, 16)]))[0], 64)
    assert abs(int(out[8, 8]) - 235) <= 3
    assert abs(int(out[40, 104]) - 128) <= 3  # still the old picture: the map was honoured
    out = decode_luma(ctx, enc.encode(img, 2, qp=20)[0], 64)  # no map: everything analysed
    assert abs(int(out[40, 104]) - 16) <= 3


def test_the_unchanged_map_covers_every_macroblock_a_rectangle_touches() -> None:
    keep = unchanged_map(4, 8, [(15, 15, 2, 2), (-40, 60, 50, 100), (120, 0, 500, 1)])
    assert not keep[0, 0] and not keep[0, 1] and not keep[1, 0] and not keep[1, 1]
    assert not keep[3, 0] and not keep[0, 7]
    assert keep.sum() == 32 - 6


def test_a_crf_encoder_changes_its_quality_while_it_runs() -> None:
    enc = X264Encoder(320, 192, rate=ConstantRateFactor(40, max_kbps=20_000, buffer_kbit=5_000), options=OPTIONS)
    ctx = decoder()
    img = picture(320, 192)
    rough = psnr(decode_luma(ctx, enc.encode(img, 0, keyframe=True)[0], 192), img[:192])
    assert enc.reconfigure(crf=10)
    fine = psnr(decode_luma(ctx, enc.encode(img, 1)[0], 192), img[:192])
    assert fine > rough + 10
    assert enc.reconfigure(max_kbps=500, buffer_kbit=125)
    assert not X264Encoder(64, 64, rate=ConstantQuantizer(), options=OPTIONS).reconfigure(crf=20)


def test_bad_options_are_refused_by_name() -> None:
    with pytest.raises(X264Error, match="no-such-option=1: unknown name"):
        X264Encoder(64, 64, rate=ConstantQuantizer(), options={"no-such-option": "1"})
    with pytest.raises(X264Error, match="fps=fast: bad value"):
        X264Encoder(64, 64, rate=ConstantQuantizer(), options={"fps": "fast"})
    with pytest.raises(X264Error, match="refused to open"):
        X264Encoder(65, 64, rate=ConstantQuantizer(), options=OPTIONS)  # I420 needs an even width


def test_crf_through_this_binding_makes_the_stream_ffmpeg_makes() -> None:
    """The binding sets what FFmpeg's wrapper sets: with the same options, the same bytes (x264 even writes its
    options into the first picture, so any field laid out wrong would show)."""
    width, height = 320, 192
    pictures = [picture(width, height, seed) for seed in range(4)]
    ffmpeg = av.CodecContext.create("libx264", "w")
    assert isinstance(ffmpeg, av.VideoCodecContext)
    ffmpeg.width, ffmpeg.height, ffmpeg.pix_fmt = width, height, "yuv420p"
    ffmpeg.time_base = Fraction(1, 30)
    ffmpeg.framerate = Fraction(30, 1)
    ffmpeg.options = {"preset": "ultrafast", "tune": "zerolatency", "profile": "baseline", "crf": "23",
                      "x264-params": "keyint=infinite:scenecut=0:repeat-headers=1:bframes=0:threads=1"}
    theirs = []
    for pts, img in enumerate(pictures):
        frame = av.VideoFrame.from_numpy_buffer(img, format="yuv420p")
        frame.pts = pts
        theirs.append(b"".join(bytes(p) for p in ffmpeg.encode(frame)))
    ours_encoder = X264Encoder(width, height, rate=ConstantRateFactor(23),
                               options={"fps": "30", "keyint": "infinite", "scenecut": "0", "repeat-headers": "1",
                                        "bframes": "0", "threads": "1"})
    ours = [ours_encoder.encode(img, pts, keyframe=pts == 0)[0] for pts, img in enumerate(pictures)]
    assert ours == theirs
