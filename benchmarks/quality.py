"""Section 4: quality (PSNR, SSIM) of decoded pictures against the raw captured ones, and bandwidth.

Still: a text-heavy page (benchmarks/pages/text.html). The viewer decodes everything until the refinement has
arrived and the stream has been quiet for a second; the last decoded picture is compared with
GET /frames/{id}/screenshot, the PNG of the raw capture (BGRX straight from X shared memory).

Animated: tests/pages/animated.html (flat boxes moving), and benchmarks/pages/scroll.html (the text page
scrolling one pixel a frame: every picture changes almost everywhere, the hard case for motion quality).
While the viewer decodes every picture, the benchmark asks for screenshots; each carries its capture time
(X-Capture-Time-Us), which is also the capture time in the video header of the picture encoded from exactly
that capture, so the two are compared picture for picture.

PSNR is over RGB (all three channels, 8 bits), so it includes 4:2:0 chroma subsampling. SSIM is on luma
(BT.709), 8x8 windows, computed with integral images.
"""

from __future__ import annotations

import asyncio
import collections
import io
import time
import urllib.request
from typing import Any

import av
import numpy as np

from benchmarks.common import Bench, create_frame, delete_frame
from benchmarks.viewer import Decoder, Viewer
from tests.support import Service


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return 99.0 if mse == 0 else round(float(10 * np.log10(255.0**2 / mse)), 2)


def _luma(rgb: np.ndarray) -> np.ndarray:
    r, g, b = (rgb[..., i].astype(np.float64) for i in range(3))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def _box(x: np.ndarray, k: int) -> np.ndarray:
    s = np.pad(x, ((1, 0), (1, 0))).cumsum(0).cumsum(1)
    out: np.ndarray = (s[k:, k:] - s[:-k, k:] - s[k:, :-k] + s[:-k, :-k]) / (k * k)
    return out


def ssim(a: np.ndarray, b: np.ndarray, k: int = 8) -> float:
    x, y = _luma(a), _luma(b)
    c1, c2 = (0.01 * 255) ** 2, (0.03 * 255) ** 2
    mx, my = _box(x, k), _box(y, k)
    vx = _box(x * x, k) - mx * mx
    vy = _box(y * y, k) - my * my
    cxy = _box(x * y, k) - mx * my
    s = ((2 * mx * my + c1) * (2 * cxy + c2)) / ((mx * mx + my * my + c1) * (vx + vy + c2))
    return round(float(s.mean()), 4)


def screenshot(service: Service, frame_id: str) -> tuple[np.ndarray, int]:
    """The raw capture as RGB and its capture time (µs)."""
    req = urllib.request.Request(f"{service.base}/frames/{frame_id}/screenshot",
                                 headers={"Authorization": "Bearer " + service.token("view")})
    with urllib.request.urlopen(req, timeout=30) as resp:
        data = resp.read()
        capture_us = int(resp.headers.get("X-Capture-Time-Us", "0"))
    with av.open(io.BytesIO(data), mode="r", format="png_pipe") as container:
        frame = next(container.decode(video=0))
        rgb: np.ndarray = frame.to_ndarray(format="rgb24")
        return rgb, capture_us


async def still(bench: Bench, service: Service, css_w: int, css_h: int, dpr: int) -> dict[str, Any]:
    frame_id = await create_frame(service, bench.page("text.html"), css_w, css_h, dpr)
    await asyncio.sleep(1.0)  # fonts loaded, first paint done: the page is still from here on
    viewer = await Viewer.open(service, keep=True)
    decoder = Decoder()
    try:
        await viewer.send({"type": "watch", "frame": frame_id})
        picture = None
        first = None
        refined = False
        quiet_since = time.monotonic()
        deadline = time.monotonic() + 20
        done = 0
        while time.monotonic() < deadline:
            msg = await viewer.receive(0.1)
            while done < len(viewer.videos):
                video = viewer.videos[done]
                done += 1
                out = decoder.decode(video.payload)
                if out is not None:
                    picture = out
                    first = out if first is None else first
                refined = refined or video.refinement
                quiet_since = time.monotonic()
            if msg is None and refined and time.monotonic() - quiet_since >= 1.0:
                break
        if picture is None or first is None:
            raise RuntimeError("no picture from the still page")
        # Bandwidth while still: whatever arrives over a further window (a still page should send nothing).
        bytes_before = sum(r.size for r in viewer.recs)
        t0 = time.monotonic()
        await viewer.collect(min(3.0, bench.timing.window))
        idle_kbps = (sum(r.size for r in viewer.recs) - bytes_before) * 8 / (time.monotonic() - t0) / 1000
        raw, _ = await asyncio.to_thread(screenshot, service, frame_id)
        if raw.shape != picture.shape:
            raise RuntimeError(f"decoded {picture.shape} but the screenshot is {raw.shape}")
        recs = viewer.recs
        return {
            "size": f"{css_w}x{css_h}@{dpr}x", "page": "text.html",
            "psnr_db": psnr(picture, raw), "ssim": ssim(picture, raw),
            "first_picture_psnr_db": psnr(first, raw),
            "pictures": len(recs), "refinements": sum(1 for r in recs if r.refinement),
            "burst_bytes": bytes_before,
            "keyframe_bytes": next((r.size for r in recs if r.keyframe), 0),
            "still_kbps": round(idle_kbps, 2),
        }
    finally:
        await viewer.close()
        await delete_frame(service, frame_id)


async def animated(bench: Bench, service: Service, size: tuple[int, int, int], shots: int,
                   page: str = "animated.html") -> dict[str, Any]:
    css_w, css_h, dpr = size
    frame_id = await create_frame(service, bench.page(page), css_w, css_h, dpr)
    viewer = await Viewer.open(service, keep=True)
    ring: collections.OrderedDict[int, np.ndarray] = collections.OrderedDict()
    pending: dict[int, np.ndarray] = {}
    scores: list[tuple[float, float]] = []
    stop = asyncio.Event()

    async def decode_loop() -> None:
        while not stop.is_set():
            await viewer.receive(0.1)
            for video, out in viewer.decoded():
                if out is not None and not video.refinement:
                    ring[video.capture_us] = out
                    while len(ring) > 24:
                        ring.popitem(last=False)
            match()
            if len(viewer.videos) > 200:  # keep memory flat
                viewer.forget_decoded()

    def match() -> None:
        for capture_us in list(pending):
            if capture_us in ring:
                raw = pending.pop(capture_us)
                scores.append((psnr(ring[capture_us], raw), ssim(ring[capture_us], raw)))

    try:
        await viewer.send({"type": "watch", "frame": frame_id})
        task = asyncio.create_task(decode_loop())
        await asyncio.sleep(bench.timing.warm)
        t0 = time.monotonic()
        b0 = sum(r.size for r in viewer.recs)
        n0 = len(viewer.recs)
        asked = 0
        for _ in range(shots):
            raw, capture_us = await asyncio.to_thread(screenshot, service, frame_id)
            asked += 1
            pending[capture_us] = raw
            await asyncio.sleep(0.3)
        await asyncio.sleep(0.5)
        seconds = time.monotonic() - t0
        kbps = (sum(r.size for r in viewer.recs) - b0) * 8 / seconds / 1000
        fps = (len(viewer.recs) - n0) / seconds
        stop.set()
        await task
    finally:
        await viewer.close()
        await delete_frame(service, frame_id)
    values = [s[0] for s in scores]
    return {
        "size": f"{css_w}x{css_h}@{dpr}x", "page": page, "screenshots": asked,
        "matched": len(scores),
        "psnr_db": round(float(np.mean(values)), 2) if values else None,
        "psnr_min_db": round(min(values), 2) if values else None,
        "ssim": round(float(np.mean([s[1] for s in scores])), 4) if scores else None,
        "kbps": round(kbps, 1), "fps_while_decoding": round(fps, 1),
    }


async def run(bench: Bench, service: Service) -> dict[str, Any]:
    sizes = [(1280, 800, 1)] if bench.quick else [(1280, 800, 1), (1280, 800, 2)]
    out: dict[str, Any] = {"still": [], "animated": []}
    for css_w, css_h, dpr in sizes:
        bench.say(f"quality: still text page {css_w}x{css_h} dpr {dpr}")
        out["still"].append(await still(bench, service, css_w, css_h, dpr))
        bench.say(f"quality: animated page {css_w}x{css_h} dpr {dpr}")
        out["animated"].append(await animated(bench, service, (css_w, css_h, dpr), 6 if bench.quick else 10))
    bench.say("quality: scrolling text page 1280x800 dpr 1")
    out["animated"].append(await animated(bench, service, (1280, 800, 1), 6 if bench.quick else 10, "scroll.html"))
    return out
