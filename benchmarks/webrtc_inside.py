"""The webrtc section's measurements, run inside a loopback-only network namespace (benchmarks/webrtc.py).

    python -m benchmarks.webrtc_inside '{"sizes": [[1280, 800, 2]], "window": 8, "warm": 3}'

A frame of tests/pages/animated.html (every captured picture differs), a service with FRAMESTREAM_ICE_HOSTS=
127.0.0.1, and in this process: a WebSocket viewer and an aiortc WebRTC viewer (tests/webrtc/rtc_client.py),
both decoding every picture with the same libavcodec decoder. Per size:

- cpu: the service's and its children's CPU over the window with one WebSocket viewer, then with a WebRTC viewer
  beside it, then with two WebSocket viewers (what a second viewer costs over either transport);
- latency: capture (the service's clock, in the video header) to received (the whole picture in: the message,
  or its last RTP packet) and to decoded picture in this process, for both viewers watching at once (the
  WebSocket viewer decodes on its event loop, aiortc's receiver in its decoder thread). The WebRTC viewer's
  pictures carry only RTP timestamps (capture time at 90 kHz plus a random origin): the origin is found from
  the WebSocket viewer's capture times of the same pictures.

Then `offers` offers answered and closed (`unwatch`) on one connection, and the service's asyncio tasks, open
fds and peer connections before and after (what a leak would grow).

Prints one JSON object as its last line.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import av
import websockets

from benchmarks.common import metric_delta, metrics, sample_cpu, service_pids
from benchmarks.procstat import CpuWindow
from benchmarks.viewer import percentiles
from tests.netns import only_loopback
from tests.support import Service, page_server
from tests.webrtc.rtc_client import RtcViewer

PAGES = Path(__file__).resolve().parents[1] / "tests" / "pages"
MASK32 = 0xFFFFFFFF


class SocketViewer:
    """A WebSocket viewer that decodes every picture: (capture_us, decoded at, wall µs) per picture."""

    def __init__(self, service: Service, frame: str) -> None:
        self.service, self.frame = service, frame
        self.decoded: list[tuple[int, int]] = []
        self.received: list[tuple[int, int]] = []
        self.codec = av.CodecContext.create("h264", "r")
        self.started = False
        self.task: asyncio.Task[None] | None = None
        self.ws: Any = None
        self.lost: int | None = None

    async def open(self) -> None:
        self.ws = await websockets.connect(self.service.ws_url, max_size=None)
        await self.ws.send(json.dumps({"type": "hello", "token": self.service.token("view")}))
        await self.ws.send(json.dumps({"type": "watch", "frame": self.frame}))
        self.task = asyncio.create_task(self._read())

    async def _read(self) -> None:
        with contextlib.suppress(websockets.ConnectionClosed):
            async for raw in self.ws:
                if not isinstance(raw, bytes) or raw[0] != 1:
                    continue
                keyframe, capture_us = bool(raw[1] & 1), int.from_bytes(raw[8:16])
                self.received.append((capture_us, time.time_ns() // 1000))
                if not (self.started or keyframe):
                    continue
                self.started = True
                for _frame in self.codec.decode(av.Packet(raw[16:])):
                    self.decoded.append((capture_us, time.time_ns() // 1000))
        self.lost = self.ws.close_code

    async def close(self) -> None:
        if self.task is not None and not self.task.done():
            self.task.cancel()
        await self.ws.close()
        if self.task is not None:
            await asyncio.gather(self.task, return_exceptions=True)


class TimedRtcViewer(RtcViewer):
    """An aiortc viewer that keeps (RTP timestamp, decoded at) per picture instead of the pictures."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.stamps: list[tuple[int, int]] = []
        self.arrivals: list[tuple[int, int]] = []

    async def offer(self, sdp_filter: Any = None) -> str:
        sdp = await super().offer(sdp_filter)
        self.jitter.on_frame = lambda rtp, at: self.arrivals.append((rtp, at))
        return sdp

    async def _receive(self, track: Any) -> None:
        with contextlib.suppress(Exception):
            while True:
                frame = await track.recv()
                self.stamps.append((int(frame.pts), time.time_ns() // 1000))
                self.decoded += 1


def rtp_latencies(stamps: list[tuple[int, int]], captures: set[int]) -> list[float]:
    """Capture-to-decoded (ms) of WebRTC pictures, their capture time found through the RTP clock's origin."""
    if not stamps or not captures:
        return []
    ticks = {(c * 9 // 100) & MASK32: c for c in captures}
    best: dict[int, int] = {}
    for rtp, _ in stamps[:5]:
        for tick in ticks:
            origin = (rtp - tick) & MASK32
            best[origin] = best.get(origin, 0) + 1
    origin = max(best, key=lambda o: best[o])
    out = []
    for rtp, decoded_us in stamps:
        capture = ticks.get((rtp - origin) & MASK32)
        if capture is not None:
            out.append((decoded_us - capture) / 1000)
    return out


async def cpu_of(service: Service, seconds: float) -> dict[str, float]:
    """vCPU of the service, its Chromium and Xvfb over `seconds`, and the service's CPU per encoded picture (ms):
    on a busy machine Chromium animates fewer frames, so the service's share is compared per picture."""
    kinds = service_pids(service)
    window = CpuWindow({"service": lambda: kinds["service"], "chromium": lambda: service_pids(service)["chromium"],
                        "xvfb": lambda: kinds["xvfb"]})
    m0 = await asyncio.to_thread(metrics, service)
    cpu, _t0, _t1 = await sample_cpu(service, window, seconds)
    m1 = await asyncio.to_thread(metrics, service)
    pictures = metric_delta(m0, m1, "framestream_pictures_total")
    out = {k: round(v, 3) for k, v in cpu.items() if k in ("service", "chromium", "xvfb")}
    out["pictures"] = pictures
    out["service_ms_per_picture"] = round(cpu["service"] * seconds / pictures * 1000, 2) if pictures else 0.0
    return out


async def measure(service: Service, base: str, size: list[int], warm: float, window: float) -> dict[str, Any]:
    css_w, css_h, dpr = size
    status, body = await asyncio.to_thread(service.request, "POST", "/frames",
                                           {"url": f"{base}/animated.html", "width": css_w, "height": css_h,
                                            "dpr": dpr})
    assert status == 201, body
    frame = str(body["id"])
    await service.wait_state_async(frame, "live", 60.0)
    out: dict[str, Any] = {"size": f"{css_w}x{css_h}@{dpr}x ({css_w * dpr}x{css_h * dpr})"}
    ws = SocketViewer(service, frame)
    rtc = TimedRtcViewer(service.ws_url, service.token("view"), frame)
    second = SocketViewer(service, frame)
    try:
        await ws.open()
        await asyncio.sleep(warm)
        out["cpu_websocket"] = await cpu_of(service, window)
        await rtc.connect()
        await rtc.offer()
        await rtc.accept_answer()
        await asyncio.sleep(warm)
        ws.decoded.clear()
        ws.received.clear()
        rtc.stamps.clear()
        rtc.arrivals.clear()
        pictures0 = (await asyncio.to_thread(metrics, service)).get("framestream_webrtc_pictures_total", 0.0)
        out["cpu_websocket_and_webrtc"] = await cpu_of(service, window)
        pictures1 = (await asyncio.to_thread(metrics, service)).get("framestream_webrtc_pictures_total", 0.0)
        ws_ms = [(d - c) / 1000 for c, d in ws.decoded]
        rtc_ms = rtp_latencies(rtc.stamps, {c for c, _ in ws.decoded})
        out["latency_ms"] = {"websocket": percentiles(ws_ms), "webrtc": percentiles(rtc_ms)}
        captures = {c for c, _ in ws.received}
        out["receive_ms"] = {"websocket": percentiles([(r - c) / 1000 for c, r in ws.received]),
                             "webrtc": percentiles(rtp_latencies(rtc.arrivals, captures))}
        out["pictures"] = {"websocket": len(ws.decoded), "webrtc_decoded": len(rtc.stamps),
                           "webrtc_matched": len(rtc_ms), "webrtc_sent": pictures1 - pictures0}
        await rtc.close()
        await second.open()
        await asyncio.sleep(warm)
        out["cpu_two_websockets"] = await cpu_of(service, window)
    finally:
        for viewer in (ws, second):
            with contextlib.suppress(Exception):
                await viewer.close()
        with contextlib.suppress(Exception):
            await rtc.close()
        await asyncio.to_thread(service.request, "DELETE", f"/frames/{frame}")
    one, both, two = (out[k]["service_ms_per_picture"]
                      for k in ("cpu_websocket", "cpu_websocket_and_webrtc", "cpu_two_websockets"))
    out["service_ratio_webrtc"] = round(both / one, 2) if one else None  # per picture, WebRTC viewer added
    out["service_ratio_second_websocket"] = round(two / one, 2) if one else None
    out["websocket_lost"] = ws.lost  # a close code if the service ended the viewer's connection before we did
    return out


async def offers_and_closes(service: Service, base: str, rounds: int) -> dict[str, Any]:
    status, body = await asyncio.to_thread(service.request, "POST", "/frames",
                                           {"url": f"{base}/box.html", "width": 320, "height": 200})
    assert status == 201, body
    frame = str(body["id"])
    await service.wait_state_async(frame, "live", 60.0)
    rtc = RtcViewer(service.ws_url, service.token("view"), frame)
    await rtc.connect()
    sdp = await rtc.offer()  # one offer, sent again and again: each makes a new peer connection in the service
    await rtc.wait_message(lambda m: m["type"] == "webrtc-answer")

    def gauges() -> dict[str, float]:
        m = metrics(service)
        return {k: m.get(k, 0.0) for k in ("framestream_tasks", "process_open_fds", "framestream_webrtc_peers",
                                          "process_resident_memory_bytes")}

    await rtc.send({"type": "unwatch", "frame": frame})
    before = await asyncio.to_thread(gauges)
    started = time.monotonic()
    for _ in range(rounds):
        rtc.messages.clear()
        await rtc.send({"type": "webrtc-offer", "frame": frame, "sdp": sdp})
        await rtc.wait_message(lambda m: m["type"] in ("webrtc-answer", "error"))
        await rtc.send({"type": "unwatch", "frame": frame})
        # Within the connection's limit on watch, unwatch and offers together (10 a second, docs/protocol.md):
        # past it the service refuses, then closes a client that keeps on.
        await asyncio.sleep(0.25)
    seconds = time.monotonic() - started
    after = await asyncio.to_thread(gauges)
    await rtc.close()
    await asyncio.to_thread(service.request, "DELETE", f"/frames/{frame}")
    return {"rounds": rounds, "seconds": round(seconds, 1), "before": before, "after": after}


async def main_async(args: dict[str, Any]) -> dict[str, Any]:
    assert only_loopback(), "run inside a loopback-only network namespace (benchmarks/webrtc.py does)"
    with page_server(PAGES) as base:
        service = Service(Path(tempfile.mkdtemp(prefix="fs-bench-webrtc-")),
                          env_extra={"FRAMESTREAM_ICE_HOSTS": "127.0.0.1"})
        await asyncio.to_thread(service.start, 30.0)
        try:
            out: dict[str, Any] = {"sizes": [await measure(service, base, size, args["warm"], args["window"])
                                             for size in args["sizes"]]}
            if args.get("offers"):
                out["offers"] = await offers_and_closes(service, base, int(args["offers"]))
            return out
        finally:
            await asyncio.to_thread(service.stop)
            service.kill_leftovers()


def main() -> None:
    result = asyncio.run(main_async(json.loads(sys.argv[1])))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
