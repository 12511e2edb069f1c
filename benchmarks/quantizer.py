"""x264's CRF against the quantizer policy (constant QP set per picture, framestream/core/quantizer.py), offline.

The same pictures go through libx264 twice, as the frame's encoder opens it (ultrafast, zerolatency, constrained
baseline, two slice threads at 2560x1600): once at CRF 27 (what the encoder ran before), once at a constant QP
that `QuantizerPolicy` chooses for each picture. Per sequence: bytes a picture, luma PSNR of the decoded
pictures, the mean QP, and the process CPU of the encodes (x264's threads included, conversion excluded; the
median of three interleaved runs, which still varies by about 10 % on this machine). Then refinement: the last
picture of the text scroll re-encoded twice, as the encoder sharpens a still picture, at CRF 14 and at QPs.

Sequences, 2560x1600 (1280x800 CSS at dpr 2): the text page (benchmarks/pages/text.html drawn by the kiosk
Chromium) scrolling 6 px a picture; a synthetic page of grey noise lines scrolling the same; a 1280x720 video
(smooth moving colours plus grain, upscaled from 320x180 like benchmarks/pages/patch_video.html) over white;
a 320 px box moving 20 px a picture over the text page, with the changed rectangles passed as the pipeline does.

    .venv/bin/python -m benchmarks.quantizer
"""

from __future__ import annotations

import asyncio
import resource
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import av
import cv2
import numpy as np

from benchmarks import saving
from benchmarks.convert import page_picture
from framestream.core.quantizer import QuantizerPolicy, QuantizerRange
from framestream.media.x264 import ConstantQuantizer, ConstantRateFactor, X264Encoder, unchanged_map

WIDTH, HEIGHT, PICTURES = 2560, 1600, 60
OPTIONS = {"fps": "30", "level": "5.1", "keyint": "infinite", "min-keyint": "1", "scenecut": "0",
           "repeat-headers": "1", "bframes": "0", "sliced-threads": "1", "threads": "2", "log": "1",
           "colormatrix": "smpte170m", "colorprim": "bt709", "transfer": "bt709", "fullrange": "off"}
Sequence = list[tuple[np.ndarray, list[tuple[int, int, int, int]] | None]]  # I420 pictures, changed rectangles


def i420(bgrx: np.ndarray) -> np.ndarray:
    return cv2.cvtColor(np.ascontiguousarray(bgrx), cv2.COLOR_BGRA2YUV_I420)


def sequences(text: np.ndarray) -> dict[str, Sequence]:
    rng = np.random.default_rng(7)
    noise = np.full((HEIGHT * 2, WIDTH, 4), 255, np.uint8)
    for y in range(20, HEIGHT * 2 - 40, 36):
        noise[y : y + 18, 80 : WIDTH - 80, :3] = rng.integers(0, 90, (18, WIDTH - 160, 1), dtype=np.uint8)
    yy, xx = np.mgrid[0:180, 0:320]
    video: Sequence = []
    box: Sequence = []
    for k in range(PICTURES):
        t, grain = k / 30, 24 * (rng.random((180, 320)) - 0.5)
        small = np.stack([128 + 100 * np.sin(xx / 40 + t) + grain, 128 + 100 * np.sin(yy / 30 - t * 1.3) + grain,
                          128 + 100 * np.sin((xx + yy) / 50 + t * 0.7) + grain], -1).clip(0, 255).astype(np.uint8)
        frame = np.full((HEIGHT, WIDTH, 4), 255, np.uint8)
        frame[80:800, 80:1360, :3] = cv2.resize(small, (1280, 720), interpolation=cv2.INTER_LINEAR)
        video.append((i420(frame), [(80, 80, 1280, 720)]))
        still = text[:HEIGHT].copy()
        x = 200 + 20 * k
        still[600:920, x : x + 320, :3] = (30, 90, 220)
        box.append((i420(still), [(x - 20, 600, 340, 320)]))
    return {
        "text scroll": [(i420(text[6 * k : 6 * k + HEIGHT]), None) for k in range(PICTURES)],
        "noise scroll": [(i420(noise[6 * k : 6 * k + HEIGHT]), None) for k in range(PICTURES)],
        "video 1280x720": video,
        "box 320 px": box,
    }


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(np.mean((a.astype(np.float32) - b.astype(np.float32)) ** 2))
    return 99.0 if mse == 0 else float(10 * np.log10(255**2 / mse))


def _mbs() -> tuple[int, int]:
    return -(-HEIGHT // 16), -(-WIDTH // 16)


def encode(pictures: Sequence, crf: bool) -> dict[str, float]:
    """Encode a sequence (first picture an IDR) and decode it; figures over the pictures after the first."""
    rows, columns = _mbs()
    policy = QuantizerPolicy(QuantizerRange(crf=27, refine_qp=12, lowest=8, highest=46), rows * columns)
    encoder = X264Encoder(WIDTH, HEIGHT, rate=ConstantRateFactor(27) if crf else ConstantQuantizer(8, 46),
                          options=OPTIONS, unchanged_maps=True)
    decoder = av.CodecContext.create("h264", "r")
    sizes, quality, qps, cpu = [], [], [], 0.0
    try:
        for k, (picture, changed) in enumerate(pictures):
            unchanged = unchanged_map(rows, columns, changed) if changed is not None and k else None
            qp = None if crf else policy.next(keyframe=k == 0, refinement=False)
            t0 = _cpu()
            data, _ = encoder.encode(picture, k, keyframe=k == 0, qp=qp, unchanged=unchanged)
            spent = _cpu() - t0
            if qp is not None:
                policy.encoded(qp=qp, size_bytes=len(data), keyframe=k == 0, refinement=False)
            decoded = decoder.decode(av.Packet(data))[-1].to_ndarray(format="yuv420p")
            if k:
                cpu += spent
                sizes.append(len(data))
                quality.append(psnr(decoded[:HEIGHT], picture[:HEIGHT]))
                if qp is not None:
                    qps.append(qp)
    finally:
        encoder.close()
    return {"bytes": statistics.mean(sizes), "psnr_y_db": statistics.mean(quality),
            "cpu_ms": cpu / len(sizes) * 1000, "mean_qp": statistics.mean(qps) if qps else float("nan")}


def refinement(pictures: Sequence, how: str, value: int) -> dict[str, Any]:
    """The text scroll's ten first pictures, then two refinements of the last, as the encoder does."""
    rows, columns = _mbs()
    crf = how == "crf"
    policy = QuantizerPolicy(QuantizerRange(crf=27, refine_qp=value, lowest=8, highest=46), rows * columns)
    encoder = X264Encoder(WIDTH, HEIGHT, rate=ConstantRateFactor(27) if crf else ConstantQuantizer(8, 46),
                          options=OPTIONS, unchanged_maps=True)
    decoder = av.CodecContext.create("h264", "r")
    sizes = []
    try:
        for k, (picture, _) in enumerate(pictures[:10]):
            qp = None if crf else policy.next(keyframe=k == 0, refinement=False)
            data, _ = encoder.encode(picture, k, keyframe=k == 0, qp=qp)
            if qp is not None:
                policy.encoded(qp=qp, size_bytes=len(data), keyframe=k == 0, refinement=False)
            decoder.decode(av.Packet(data))
        if crf:
            encoder.reconfigure(crf=value)
        last = pictures[9][0]
        for k in (10, 11):
            data, _ = encoder.encode(last, k, qp=None if crf else policy.next(keyframe=False, refinement=True))
            sizes.append(len(data))
            decoded = decoder.decode(av.Packet(data))[-1].to_ndarray(format="yuv420p")
    finally:
        encoder.close()
    return {"how": f"{how} {value}", "refinement_bytes": sizes, "psnr_y_db": psnr(decoded[:HEIGHT], last[:HEIGHT])}


def measure(text_rgb: np.ndarray, repeats: int = 3) -> dict[str, Any]:
    text = np.full((*text_rgb.shape[:2], 4), 255, np.uint8)
    text[:, :, :3] = text_rgb[:, :, ::-1]
    rows = []
    for name, pictures in sequences(text).items():
        runs: dict[str, list[dict[str, float]]] = {"crf": [], "policy": []}
        for _ in range(repeats):  # interleaved, so load from elsewhere hits both alike
            runs["crf"].append(encode(pictures, crf=True))
            runs["policy"].append(encode(pictures, crf=False))
        row: dict[str, Any] = {"sequence": name}
        for how, results in runs.items():
            first = results[0]  # bytes, PSNR and QPs are the same every run
            row[how] = {**first, "cpu_ms": statistics.median(r["cpu_ms"] for r in results)}
        rows.append(row)
    text_scroll = sequences(text)["text scroll"]
    refine = [refinement(text_scroll, "crf", 14)] + [refinement(text_scroll, "qp", qp) for qp in (14, 12, 10)]
    return {"size": f"{WIDTH}x{HEIGHT}", "rows": rows, "refinement": refine}


def markdown(result: dict[str, Any]) -> str:
    lines = ["| sequence (2560x1600) | CRF 27: bytes / PSNR Y dB / CPU ms | policy: bytes / PSNR Y dB / CPU ms | "
             "policy mean QP | policy CPU / CRF |", "|---|---|---|---|---|"]
    for row in result["rows"]:
        c, p = row["crf"], row["policy"]
        lines.append(f"| {row['sequence']} | {c['bytes']:.0f} / {c['psnr_y_db']:.2f} / {c['cpu_ms']:.1f} | "
                     f"{p['bytes']:.0f} / {p['psnr_y_db']:.2f} / {p['cpu_ms']:.1f} | {p['mean_qp']:.1f} | "
                     f"{p['cpu_ms'] / c['cpu_ms']:.2f}x |")
    lines += ["", "| refinement of the still text (two pictures) | bytes | PSNR Y dB |", "|---|---|---|"]
    for r in result["refinement"]:
        lines.append(f"| {r['how']} | {' + '.join(str(b) for b in r['refinement_bytes'])} | {r['psnr_y_db']:.2f} |")
    return "\n".join(lines)


def main(write: Callable[[str], Any] = print, record: bool = False) -> int:
    # The text page twice the display's height, to scroll through.
    text_rgb = asyncio.run(page_picture(WIDTH // 2, HEIGHT, 2))
    result = measure(text_rgb)
    result["started"] = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    path = saving.results_dir(record) / f"quantizer-{result['started']}.json"
    saving.write_json(path, result)
    write(markdown(result))
    write(f"written {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(record="--record" in sys.argv[1:]))  # into benchmarks/results/ (benchmarks/saving.py)
