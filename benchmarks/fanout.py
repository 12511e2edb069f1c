"""Sections 5 and 6: fan-out (1, 10, 50 viewers of one animated frame) and scale (six animated frames).

Viewers are separate WebSocket connections from this process, each reading everything without decoding.
The benchmark's own CPU (reading 50 streams in Python) is reported beside the service's, since it shares the
machine's two cores.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from benchmarks.common import (
    Bench,
    close_viewers,
    cpu_window,
    create_frame,
    delete_frame,
    open_watchers,
    ratio,
    sample_cpu,
)
from benchmarks.viewer import Viewer, window_stats
from tests.support import Service

SIZE = (1280, 800, 1)


async def _sample(bench: Bench, service: Service, viewers: list[Viewer]) -> dict[str, Any]:
    await asyncio.sleep(bench.timing.warm)
    cpu, t0, t1 = await sample_cpu(service, cpu_window(service), bench.timing.window)
    per = [window_stats(v.recs, t0, t1) for v in viewers]
    fps = [p["fps"] for p in per]
    drop_free = [p["drop_free"] for p in per if p["drop_free"] is not None]
    return {"cpu": cpu, "fps_min": min(fps), "fps_mean": round(sum(fps) / len(fps), 2),
            "drop_free_min": min(drop_free) if drop_free else None, "kbps_each": per[0]["kbps"],
            "capture_to_recv_ms": per[-1]["capture_to_recv_ms"]}


async def fanout(bench: Bench, service: Service) -> dict[str, Any]:
    css_w, css_h, dpr = SIZE
    frame_id = await create_frame(service, bench.page("animated.html"), css_w, css_h, dpr)
    viewers: list[Viewer] = []
    levels: list[dict[str, Any]] = []
    try:
        for count in bench.timing.fanout:
            viewers += await open_watchers(service, frame_id, count - len(viewers))
            bench.say(f"fan-out: {count} viewers")
            level = await _sample(bench, service, viewers)
            level["viewers"] = count
            levels.append(level)
    finally:
        await close_viewers(viewers)
        await delete_frame(service, frame_id)
    base = levels[0]["cpu"]["service"]
    for level in levels:
        level["vs_one_viewer"] = ratio(level["cpu"]["service"], base)
    return {"size": f"{css_w}x{css_h}@{dpr}x", "levels": levels}


async def scale(bench: Bench, service: Service) -> dict[str, Any]:
    css_w, css_h, dpr = SIZE
    count = bench.timing.scale_frames
    frames: list[str] = []
    viewers: list[Viewer] = []
    try:
        for _ in range(count):
            frames.append(await create_frame(service, bench.page("animated.html"), css_w, css_h, dpr))
        for frame_id in frames:
            viewers += await open_watchers(service, frame_id, 1)
        bench.say(f"scale: {count} animated frames, one viewer each")
        await asyncio.sleep(bench.timing.warm)
        window = cpu_window(service)
        t0 = time.time_ns() // 1000
        window.start()
        await asyncio.sleep(bench.timing.window)
        cpu = window.stop()
        t1 = time.time_ns() // 1000
        per = [window_stats(v.recs, t0, t1) for v in viewers]
    finally:
        await close_viewers(viewers)
        for frame_id in frames:
            await delete_frame(service, frame_id)
    fps = [p["fps"] for p in per]
    c2r = [p["capture_to_recv_ms"]["p50"] for p in per if p["capture_to_recv_ms"]]
    return {
        "size": f"{css_w}x{css_h}@{dpr}x", "frames": count, "cpu": cpu,
        "total_vcpu": round(cpu["service"] + cpu["chromium"] + cpu["xvfb"], 3),
        "fps_each": fps, "fps_min": min(fps), "fps_mean": round(sum(fps) / len(fps), 2),
        "drop_free_each": [p["drop_free"] for p in per],
        "capture_to_recv_p50_ms_each": c2r,
    }
