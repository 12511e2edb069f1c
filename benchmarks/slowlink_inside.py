"""Inside a shaped namespace (tests/netns): a driver's input to picture on a limited link (benchmarks/slowlink.py).

    python -m benchmarks.slowlink_inside '{"size": [1280, 800, 2], "clicks": 30}'

The page is tests/pages/clicker.html (its button changes colour on each click and is still otherwise), so the
first picture captured after a click is the click's. Each click is one WebSocket `input` (mouse down + up) under
a drive grant; the time is from just before the send to the receipt of that picture (not decoded: the link is
what is measured here; section 3 has the decoder's share). Between clicks the viewer reads for a random pause.
Prints one JSON object.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
import time
from typing import Any

import websockets

from framestream.core.wire import FLAG_REFINEMENT, unpack_video_header
from tests.netns.slowlink import percentiles, served_frame
from tests.support import PAGES


async def clicks(args: dict[str, Any]) -> dict[str, Any]:
    width, height, dpr = args["size"]
    async with served_frame(PAGES, "clicker.html", args["size"]) as served:
        service, frame_id = served.service, served.frame_id
        async with websockets.connect(service.ws_url, max_size=None) as ws:
            await ws.send(json.dumps({"type": "hello", "token": service.token("view")}))
            await ws.send(json.dumps({"type": "watch", "frame": frame_id}))
            await read_for(ws, 3.0)  # the first keyframe, at the link's pace
            grant = service.token("drive", ttl=600)
            times, acks, missed = [], [], 0
            for seq in range(int(args["clicks"])):
                sent_wall_us = time.time_ns() // 1000
                sent = time.perf_counter()
                await ws.send(json.dumps({"type": "input", "frame": frame_id, "grant": grant, "seq": seq,
                                          "events": [{"kind": "mouse", "action": "down", "x": 60, "y": 60},
                                                     {"kind": "mouse", "action": "up", "x": 60, "y": 60}]}))
                got = await first_picture_after(ws, sent_wall_us, sent, seq, acks, timeout=3.0)
                if got is None:
                    missed += 1
                else:
                    times.append(got)
                await read_for(ws, random.uniform(0.12, 0.25))
    return {"size": f"{width}x{height}@{dpr}x", "clicks": int(args["clicks"]), "missed": missed,
            "input_to_picture_ms": percentiles(times), "input_ack_ms": percentiles(acks)}


async def first_picture_after(ws: Any, after_us: int, sent: float, seq: int, acks: list[float], *,
                              timeout: float) -> float | None:
    """Milliseconds from `sent` to the first non-refinement picture captured after `after_us`."""
    deadline = sent + timeout
    while (left := deadline - time.perf_counter()) > 0:
        try:
            raw = await asyncio.wait_for(ws.recv(), left)
        except TimeoutError:
            return None
        if isinstance(raw, str):
            msg = json.loads(raw)
            if msg.get("type") == "input-ack" and msg.get("seq") == seq:
                acks.append((time.perf_counter() - sent) * 1000)
            continue
        header = unpack_video_header(raw[:16])
        if header.capture_us > after_us and not header.flags & FLAG_REFINEMENT:
            return (time.perf_counter() - sent) * 1000
    return None


async def read_for(ws: Any, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        try:
            await asyncio.wait_for(ws.recv(), left)
        except TimeoutError:
            return


def main() -> None:
    print(json.dumps(asyncio.run(clicks(json.loads(sys.argv[1])))), flush=True)


if __name__ == "__main__":
    main()
