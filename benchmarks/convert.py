"""Colour conversion (BGRX -> yuv420p, limited range), the step before libx264: quality and cost of each swscale
interpolation flag (BT.709) and of OpenCV's BGRA -> I420 (BT.601, what the encoder uses: media/encoder.py), on a
real page picture (benchmarks/pages/text.html drawn by the kiosk Chromium).

Quality is the RGB PSNR/SSIM of convert -> convert back (no encoder involved), so it is the ceiling any encoder
setting can reach. Cost is the CPU time of one full-picture conversion with a reused VideoReformatter (median).

    .venv/bin/python -m benchmarks.convert     (also part of `make bench`, section "convert")
"""

from __future__ import annotations

import asyncio
import io
import statistics
import sys
import time
from typing import Any

import av
import cv2
import numpy as np
from av.video.reformatter import ColorRange, Colorspace, Interpolation, VideoReformatter

from benchmarks.common import BENCH_PAGES
from benchmarks.peers import PeerDisplay
from benchmarks.quality import psnr, ssim
from benchmarks.viewer import to_rgb
from tests.support import page_server

FLAGS = ("FAST_BILINEAR", "BILINEAR", "POINT", "AREA")
OPENCV = "OPENCV_601"  # the encoder's own conversion
cv2.setNumThreads(1)  # as the encoder runs it, and thread_time counts only this thread


async def page_picture(css_w: int, css_h: int, dpr: int) -> np.ndarray:
    """The text page as RGB, drawn by the kiosk Chromium at this size (its own screenshot of the page)."""
    import base64

    with page_server(BENCH_PAGES) as base:
        peer = await PeerDisplay.start(f"{base}/text.html", css_w, css_h, dpr)
        try:
            await asyncio.sleep(0.5)
            shot = await peer.browser.call("Page.captureScreenshot", {"format": "png"})
        finally:
            await peer.stop()
    with av.open(io.BytesIO(base64.b64decode(shot["data"])), mode="r", format="png_pipe") as container:
        rgb: np.ndarray = next(container.decode(video=0)).to_ndarray(format="rgb24")
    # The display's size: crop what lies beyond it, pad (edge pixels) what the page's viewport left short.
    width, height = css_w * dpr, css_h * dpr
    rgb = rgb[:height, :width]
    pad = ((0, height - rgb.shape[0]), (0, width - rgb.shape[1]), (0, 0))
    return np.ascontiguousarray(np.pad(rgb, pad, mode="edge"))


def convert(reformatter: VideoReformatter, bgrx: np.ndarray, flag: str) -> av.VideoFrame:
    if flag == OPENCV:
        frame = av.VideoFrame.from_numpy_buffer(cv2.cvtColor(bgrx, cv2.COLOR_BGRA2YUV_I420), format="yuv420p")
        frame.colorspace = 6  # SMPTE 170M, as the encoder signals it
        return frame
    src = av.VideoFrame.from_numpy_buffer(bgrx, format="bgra")
    frame = reformatter.reformat(src, format="yuv420p", src_colorspace=Colorspace.ITU709,
                                 dst_colorspace=Colorspace.ITU709, interpolation=getattr(Interpolation, flag),
                                 dst_color_range=ColorRange.MPEG, threads=1)
    frame.colorspace = 1  # BT.709: read back with the matrix it was made with
    return frame


def measure(rgb: np.ndarray, repeats: int) -> list[dict[str, Any]]:
    bgrx = np.zeros((*rgb.shape[:2], 4), np.uint8)
    bgrx[:, :, :3] = rgb[:, :, ::-1]
    kinds = (*FLAGS, OPENCV)
    reformatters = {flag: VideoReformatter() for flag in kinds}
    times: dict[str, list[float]] = {flag: [] for flag in kinds}
    for _ in range(repeats):  # interleaved, so load from elsewhere hits every flag alike
        for flag in kinds:
            t0 = time.thread_time()
            convert(reformatters[flag], bgrx, flag)
            times[flag].append(time.thread_time() - t0)
    out = []
    for flag in kinds:
        back = to_rgb(convert(VideoReformatter(), bgrx, flag))
        out.append({"flag": flag, "psnr_db": psnr(back, rgb), "ssim": ssim(back, rgb),
                    "cpu_ms": round(statistics.median(times[flag][2:]) * 1000, 2)})
    return out


async def run(quick: bool) -> list[dict[str, Any]]:
    sizes = [(1280, 800, 1)] if quick else [(1280, 800, 1), (1280, 800, 2)]
    out = []
    for css_w, css_h, dpr in sizes:
        rgb = await page_picture(css_w, css_h, dpr)
        out.append({"size": f"{rgb.shape[1]}x{rgb.shape[0]}",
                    "flags": await asyncio.to_thread(measure, rgb, 12 if quick else 30)})
    return out


def main() -> int:
    for entry in asyncio.run(run("--quick" in sys.argv)):
        for f in entry["flags"]:
            print(f"{entry['size']:>10}  {f['flag']:<14} PSNR {f['psnr_db']:6.2f} dB  SSIM {f['ssim']:.4f}  "
                  f"{f['cpu_ms']:6.2f} ms CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
