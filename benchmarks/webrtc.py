"""Section webrtc (issue 13): one WebRTC viewer beside one WebSocket viewer of the same frame, on loopback only.

    .venv/bin/python -m benchmarks.run --only webrtc      # needs root (unshare -n), about 2 minutes

Everything (service, browser, viewers) runs inside `unshare -n` with only `lo` (benchmarks/webrtc_inside.py):
the service's CPU with a WebRTC viewer added to a WebSocket viewer (target: at most 1.2x, nothing is encoded
twice), beside what a second WebSocket viewer costs, and capture to decoded picture for both transports at once
(target: WebRTC within 10 ms of the WebSocket).
"""

from __future__ import annotations

import asyncio
from typing import Any

from benchmarks.common import Bench
from tests import netns

SIZES_FULL = [[1280, 800, 2], [1280, 800, 1]]
SIZES_QUICK = [[1280, 800, 2]]


async def run(bench: Bench) -> dict[str, Any]:
    reason = netns.missing()
    if reason is not None:
        raise RuntimeError(f"webrtc needs a network namespace: {reason}")
    sizes = SIZES_QUICK if bench.quick else SIZES_FULL
    window = bench.timing.window
    bench.say(f"webrtc: {len(sizes)} size(s), {window:g} s windows, inside unshare -n")
    result = await asyncio.to_thread(netns.run, [], "benchmarks.webrtc_inside",
                                     {"sizes": sizes, "window": window, "warm": bench.timing.warm + 1.5}, 600)
    for row in result["sizes"]:
        lat = row["latency_ms"]
        bench.say(f"webrtc {row['size']}: service CPU x{row['service_ratio_webrtc']} with a WebRTC viewer "
                  f"(x{row['service_ratio_second_websocket']} with a second WebSocket viewer); capture to decoded "
                  f"p50 {lat['websocket'] and lat['websocket']['p50']} ms WebSocket, "
                  f"{lat['webrtc'] and lat['webrtc']['p50']} ms WebRTC")
    return result
