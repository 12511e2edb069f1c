"""Section 3: input to picture, and capture to receive.

A page whose button turns green or red on each click (tests/pages/clicker.html). The viewer decodes every
picture it gets (from the first keyframe on). Each click is one WebSocket `input` message (mouse down + up)
under a drive grant; the latency is from just before the send to the moment the first picture showing the
new colour at the button has been received AND decoded. Between clicks the viewer keeps reading and
decoding for a short random pause, so clicks never queue behind each other.

The breakdown uses the header's capture time (the service's wall clock, the same machine's):
send -> capture of the first changed picture (page reaction + damage + grab),
capture -> receive (convert, encode, fan-out, WebSocket), receive -> decoded (the client's decoder).
"""

from __future__ import annotations

import random
import time
from typing import Any

import numpy as np

from benchmarks.common import Bench, create_frame, delete_frame
from benchmarks.viewer import Viewer, percentiles
from tests.support import Service

RED = (220, 30, 30)
GREEN = (30, 180, 60)
PROBE_CSS = (60, 60)  # inside the button (40..240, 40..160), away from its label


def near(pixel: np.ndarray, rgb: tuple[int, int, int], tol: int = 40) -> bool:
    return bool(np.all(np.abs(pixel.astype(int) - np.array(rgb)) <= tol))


async def run_one(bench: Bench, service: Service, size: tuple[int, int, int], clicks: int) -> dict[str, Any]:
    css_w, css_h, dpr = size
    frame_id = await create_frame(service, bench.page("clicker.html"), css_w, css_h, dpr)
    viewer = await Viewer.open(service, keep=True)
    px, py = PROBE_CSS[0] * dpr, PROBE_CSS[1] * dpr

    def decode_pending() -> np.ndarray | None:
        """Decode every video message not decoded yet, in order; the newest picture (or None)."""
        picture = None
        for _, out in viewer.decoded():
            if out is not None:
                picture = out
        return picture

    async def read_for(seconds: float) -> np.ndarray | None:
        last = None
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            await viewer.receive(left)
            pic = decode_pending()
            if pic is not None:
                last = pic
        return last

    try:
        await viewer.send({"type": "watch", "frame": frame_id})
        current = None
        deadline = time.monotonic() + 20
        while current is None and time.monotonic() < deadline:
            await viewer.receive(1.0)
            pic = decode_pending()
            if pic is not None:
                current = pic
        if current is None:
            raise RuntimeError("no picture from the clicker page")
        last = await read_for(0.5)
        if last is not None:
            current = last
        state = GREEN if near(current[py, px], GREEN) else RED
        grant = service.token("drive", ttl=120)
        totals, to_capture, capture_to_recv, recv_to_decoded, acks = [], [], [], [], []
        misses = 0
        x, y = PROBE_CSS
        for seq in range(clicks):
            target = RED if state == GREEN else GREEN
            message = {"type": "input", "frame": frame_id, "grant": grant, "seq": seq, "events": [
                {"kind": "mouse", "action": "down", "x": x, "y": y},
                {"kind": "mouse", "action": "up", "x": x, "y": y}]}
            sent_wall_us = time.time_ns() // 1000
            sent = time.perf_counter()
            await viewer.send(message)
            found = False
            limit = sent + 3.0
            while not found and time.perf_counter() < limit:
                msg = await viewer.receive(max(0.001, limit - time.perf_counter()))
                if isinstance(msg, dict) and msg.get("type") == "input-ack" and msg.get("seq") == seq:
                    acks.append((time.perf_counter() - sent) * 1000)
                for video, pic in viewer.decoded():
                    if pic is not None and near(pic[py, px], target) and not found:
                        decoded_at = time.perf_counter()
                        recv_at = video.received_at
                        found = True
                        totals.append((decoded_at - sent) * 1000)
                        to_capture.append((video.capture_us - sent_wall_us) / 1000)
                        rec = next(r for r in reversed(viewer.recs) if r.seq == video.sequence)
                        capture_to_recv.append((rec.recv_us - video.capture_us) / 1000)
                        recv_to_decoded.append((decoded_at - recv_at) * 1000)
            if found:
                state = target
            else:
                misses += 1
                last = await read_for(0.5)
                if last is not None:
                    state = GREEN if near(last[py, px], GREEN) else RED
            await read_for(random.uniform(0.12, 0.25))
            viewer.forget_decoded()  # keep memory flat
    finally:
        await viewer.close()
        await delete_frame(service, frame_id)
    return {
        "size": f"{css_w}x{css_h}@{dpr}x", "clicks": clicks, "missed": misses,
        "input_to_picture_ms": percentiles(totals),
        "send_to_capture_ms": percentiles(to_capture),
        "capture_to_recv_ms": percentiles(capture_to_recv),
        "recv_to_decoded_ms": percentiles(recv_to_decoded),
        "input_ack_ms": percentiles(acks),
    }


async def run(bench: Bench, service: Service) -> list[dict[str, Any]]:
    sizes = [(1280, 800, 1)] if bench.quick else [(1280, 800, 1), (1280, 800, 2)]
    out = []
    for css_w, css_h, dpr in sizes:
        bench.say(f"latency: {bench.timing.clicks} clicks at {css_w}x{css_h} dpr {dpr}")
        out.append(await run_one(bench, service, (css_w, css_h, dpr), bench.timing.clicks))
    return out
