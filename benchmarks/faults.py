"""Recovery from faults (issue 7's target: back within 3 s), measured as a viewer sees it.

For each victim (the frame's browser, its Xvfb display, the page's renderer), on a frame of its own (a frame gives
up after three relaunches a minute), a few times: SIGKILL it and time
until the watcher is told (`frame-state` launching), until the frame is `live` again, and until the first
decoded picture shows the page again (its box colour at its place). Meanwhile a second frame's viewer counts
the pictures it receives, so "other frames are untouched" is a figure too.
"""

from __future__ import annotations

import asyncio
import os
import signal
import statistics
import time
from typing import Any

from benchmarks.common import Bench, create_frame, delete_frame
from benchmarks.viewer import Viewer
from tests.support import Service, VideoMessage, browser_pid, colour_near, display_pid, page_renderer_pids

BOX_AT, BOX_RGB = (200, 400), (200, 40, 40)  # box.html's box at CSS 320x200, dpr 2
VICTIMS = ("browser", "display", "renderer")


def victims(service: Service, frame_id: str, victim: str) -> list[int]:
    if victim == "browser":
        return [browser_pid(service, frame_id)]
    if victim == "display":
        return [display_pid(service, frame_id)]
    return page_renderer_pids(service, frame_id)


async def one_kill(service: Service, frame_id: str, victim: str, other: Viewer) -> dict[str, Any]:
    viewer = await Viewer.open(service, keep=True)
    try:
        await viewer.watch(frame_id)
        await viewer.wait_for_colour(frame_id, BOX_AT, BOX_RGB, timeout=30)
        pids = victims(service, frame_id, victim)  # found before the clock starts: it scans /proc
        other_before = len(other.recs)
        killed_at = time.monotonic()
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        told = live = pictured = None
        while pictured is None and time.monotonic() - killed_at < 30:
            msg = await viewer.receive(1.0)
            if isinstance(msg, dict) and msg.get("type") == "frame-state":
                if msg["state"] == "launching" and told is None:
                    told = time.monotonic()
                elif msg["state"] == "live" and told is not None and live is None:
                    live = time.monotonic()
            elif isinstance(msg, VideoMessage):
                picture = viewer.decode(msg)  # every picture, so the decoder never misses a reference
                # Only a picture sent after `live` counts: one captured before the kill may still be in flight.
                if live is not None and picture is not None and colour_near(picture[BOX_AT], BOX_RGB):
                    pictured = time.monotonic()
        if told is None or live is None or pictured is None:
            raise RuntimeError(f"{victim}: the frame did not come back within 30 s")
        window = pictured - killed_at
        return {"told_ms": round((told - killed_at) * 1000), "live_ms": round((live - killed_at) * 1000),
                "picture_ms": round(window * 1000),
                "other_fps": round((len(other.recs) - other_before) / window, 1)}
    finally:
        await viewer.close()


async def run(bench: Bench, service: Service, repeats: int = 3) -> dict[str, Any]:
    """Each victim on a box frame of its own: a frame gives up after three relaunches a minute, by design."""
    # 640x400: the page's mover and bar stay in view, so this frame changes every picture (at 320x200 it goes
    # still at times, and its fps would say nothing about the fault).
    animated = await create_frame(service, f"{bench.tests_base}/animated.html", 640, 400, 1)
    other = await Viewer.open(service)
    try:
        await other.watch(animated)
        other.start_pump()
        rows = []
        for victim in VICTIMS:
            box = await create_frame(service, f"{bench.tests_base}/box.html", 320, 200, 2)
            try:
                runs = []
                for _ in range(repeats):
                    bench.say(f"faults: SIGKILL the {victim}")
                    runs.append(await one_kill(service, box, victim, other))
                    await asyncio.sleep(1.0)
            finally:
                await delete_frame(service, box)
            pictures = [r["picture_ms"] for r in runs]
            rows.append({"victim": victim, "runs": runs, "picture_ms_median": statistics.median(pictures),
                         "picture_ms_max": max(pictures),
                         "other_fps_min": min(r["other_fps"] for r in runs)})
        return {"size": "320x200 dpr 2 (the other frame 640x400 dpr 1)", "repeats": repeats, "target_ms": 3000,
                "rows": rows}
    finally:
        await other.close()
        await delete_frame(service, animated)
