"""Section webrtc (issue 13): one WebRTC viewer beside one WebSocket viewer of the same frame, on loopback only.

    .venv/bin/python -m benchmarks.run --only webrtc      # needs root (unshare -n), about 2 minutes

Everything (service, browser, viewers) runs inside `unshare -n` with only `lo` (benchmarks/webrtc_inside.py):
the service's CPU with a WebRTC viewer added to a WebSocket viewer (target: at most 1.2x, nothing is encoded
twice), beside what a second WebSocket viewer costs, and capture to decoded picture for both transports at once
(target: WebRTC within 10 ms of the WebSocket); then 1,000 offers answered and closed, with the service's
tasks, fds and peer connections before and after.

Then `slow_link` (issue 18): a headless Chromium viewer of the scroll page at 1280x800 dpr 2 over WebRTC, its
UDP unlimited and through a 1 Mbit/s token bucket (benchmarks/webrtc_slowlink_inside.py): capture to presented
p50/p95, pictures a second, the widths presented (the light stream is the CSS size) and its REMB estimate.
"""

from __future__ import annotations

import asyncio
from typing import Any

from benchmarks.common import Bench
from tests import netns

SIZES_FULL = [[1280, 800, 2], [1280, 800, 1]]
SIZES_QUICK = [[1280, 800, 2]]
SLOW_LINKS = ("unlimited", "1mbit")
SLOW_WARM_S = 20.0  # under the limit before measuring: the estimate settles, the viewer moves to the light stream
SLOW_WINDOW_S = 30.0  # long enough to hold tries of the full stream (the hold doubles from 3 s)


async def run(bench: Bench) -> dict[str, Any]:
    reason = netns.missing()
    if reason is not None:
        raise RuntimeError(f"webrtc needs a network namespace: {reason}")
    sizes = SIZES_QUICK if bench.quick else SIZES_FULL
    window = bench.timing.window
    bench.say(f"webrtc: {len(sizes)} size(s), {window:g} s windows, inside unshare -n")
    result = await asyncio.to_thread(netns.run, [], "benchmarks.webrtc_inside",
                                     {"sizes": sizes, "window": window, "warm": bench.timing.warm + 1.5,
                                      "offers": 100 if bench.quick else 300}, 900)
    for row in result["sizes"]:
        lat = row["latency_ms"]
        bench.say(f"webrtc {row['size']}: service CPU x{row['service_ratio_webrtc']} with a WebRTC viewer "
                  f"(x{row['service_ratio_second_websocket']} with a second WebSocket viewer); capture to decoded "
                  f"p50 {lat['websocket'] and lat['websocket']['p50']} ms WebSocket, "
                  f"{lat['webrtc'] and lat['webrtc']['p50']} ms WebRTC")
    offers = result["offers"]
    bench.say(f"webrtc: {offers['rounds']} offers and closes in {offers['seconds']} s; tasks "
              f"{offers['before']['framestream_tasks']:g} -> {offers['after']['framestream_tasks']:g}, fds "
              f"{offers['before']['process_open_fds']:g} -> {offers['after']['process_open_fds']:g}")
    result["slow_link"] = []
    for link in SLOW_LINKS:
        bench.say(f"webrtc: a Chromium viewer at 1280x800 dpr 2, its UDP {link}")
        row = await asyncio.to_thread(netns.run, [], "benchmarks.webrtc_slowlink_inside",
                                      {"size": [1280, 800, 2], "link": link, "warm": SLOW_WARM_S,
                                       "window": SLOW_WINDOW_S / 2 if bench.quick else SLOW_WINDOW_S}, 400)
        result["slow_link"].append(row)
        lat = row["capture_to_presented_ms"] or {}
        bench.say(f"webrtc {link}: {row['fps_presented']} fps presented, capture to presented p50 {lat.get('p50')} "
                  f"ms, p95 {lat.get('p95')} ms, widths {row['widths_presented']}")
    return result


def table(section: dict[str, Any]) -> str:
    """The section as docs/performance.md shows it (`python -m benchmarks.webrtc RESULTS.json`)."""

    def lat(row: dict[str, Any], key: str, what: str = "latency_ms") -> str:
        p = row.get(key) if not what else row.get(what, {}).get(key)
        return f"{p['p50']:.1f} / {p['p95']:.1f} ms" if p else "-"

    def per_picture(row: dict[str, Any], key: str) -> str:
        cpu = row[key]
        return f"{cpu['service']:.3f} ({cpu['service_ms_per_picture']:.1f} ms)"

    lines = ["| size | service vCPU (ms per picture): 1 WebSocket viewer | + 1 WebRTC viewer | ratio | "
             "2 WebSocket viewers | ratio |", "|---|---|---|---|---|---|"]
    for row in section["sizes"]:
        lines.append(f"| {row['size']} | {per_picture(row, 'cpu_websocket')} | "
                     f"{per_picture(row, 'cpu_websocket_and_webrtc')} | {row['service_ratio_webrtc']}x | "
                     f"{per_picture(row, 'cpu_two_websockets')} | {row['service_ratio_second_websocket']}x |")
    lines += ["", "| size | capture to received p50 / p95: WebSocket | WebRTC | capture to decoded: WebSocket | "
              "WebRTC |", "|---|---|---|---|---|"]
    for row in section["sizes"]:
        lines.append(f"| {row['size']} | {lat(row, 'websocket', 'receive_ms')} | {lat(row, 'webrtc', 'receive_ms')} "
                     f"| {lat(row, 'websocket')} | {lat(row, 'webrtc')} |")
    slow = section.get("slow_link")
    if slow:
        lines += ["", "| Chromium over WebRTC, scroll_fast.html | UDP link | fps presented (decoded) | capture to "
                  "presented p50 / p95 | capture to received p50 / p95 | widths presented | slow share | receiver "
                  "estimate p50 |", "|---|---|---|---|---|---|---|---|"]
        for row in slow:
            est = row.get("receiver_estimate_kbps") or {}
            widths = ", ".join(f"{w}: {n}" for w, n in sorted(row["widths_presented"].items()))
            lines.append(f"| {row['size']} | {row['link']} | {row['fps_presented']} ({row['fps_decoded']}) | "
                         f"{lat(row, 'capture_to_presented_ms', '')} | {lat(row, 'capture_to_received_ms', '')} | "
                         f"{widths} | {row['slow_share']} | {est.get('p50')} kbit/s |")
    offers = section.get("offers")
    if offers:
        b, a = offers["before"], offers["after"]
        lines.append("")
        lines.append(f"{offers['rounds']} offers answered and closed in {offers['seconds']} s: asyncio tasks "
                     f"{b['framestream_tasks']:g} -> {a['framestream_tasks']:g}, open fds {b['process_open_fds']:g} "
                     f"-> {a['process_open_fds']:g}, peer connections {b['framestream_webrtc_peers']:g} -> "
                     f"{a['framestream_webrtc_peers']:g}, resident memory "
                     f"{b['process_resident_memory_bytes'] / 2**20:.1f} -> "
                     f"{a['process_resident_memory_bytes'] / 2**20:.1f} MiB.")
    return "\n".join(lines)


if __name__ == "__main__":
    import json
    import sys
    from pathlib import Path

    print(table(json.loads(Path(sys.argv[1]).read_text())["webrtc"]))
