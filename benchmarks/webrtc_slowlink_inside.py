"""A Chromium WebRTC viewer over a limited link, run inside a loopback-only network namespace (benchmarks/webrtc.py).

    python -m benchmarks.webrtc_slowlink_inside '{"size": [1280, 800, 2], "warm": 20, "window": 20, "link": "1mbit"}'

A frame of benchmarks/pages/scroll_fast.html (text scrolling 3 px a frame, about 1.6 Mbit/s at dpr 2), the
service's web viewer with `#transport=webrtc` in a headless Chromium, and in it a `requestVideoFrameCallback` on
the viewer's own video element: per picture presented (the last one, when several were since the previous
callback), its RTP timestamp, when it was presented and when its last packet arrived. A WebSocket viewer beside
it supplies the capture times of the frame's pictures.

The RTP timestamp is the capture time at 90 kHz plus the sender's random origin. The origin is found while the
link is still unlimited, from the first pictures presented (full-stream pictures, whose capture times the
WebSocket viewer saw too); then `lo` is shaped from in here: only UDP (the peer connection's RTP and RTCP, both
ways) through a token bucket (`udp_tbf`), so the WebSocket viewer stays unlimited (`link` "unlimited": no limit,
the reference). Light-stream pictures need
not be among the full stream's: with the origin known, their capture time is read from the timestamp alone.
Chromium's clock (`performance.timeOrigin`) and ours are the same machine's.

After `warm` seconds under the limit (the receiver's estimate settles and a slow viewer moves to the light
stream), over `window` seconds: pictures presented and decoded a second, capture to received and to presented
p50/p95, the widths presented, the share of the window the frame counted the viewer slow, and the receiver's
estimate (`availableIncomingBitrate`, what its REMB says). Prints one JSON object as its last line.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import metrics
from benchmarks.viewer import percentiles
from benchmarks.webrtc_inside import MASK32, SocketViewer
from tests.netns import only_loopback
from tests.support import Service, page_server
from tests.web.browser import Browser
from tests.webrtc.chromium import LOOPBACK, inbound_video, open_webrtc_viewer, rtc

PAGES = Path(__file__).resolve().parent / "pages"
PAGE = "scroll_fast.html"


def udp_tbf(rate: str) -> list[str]:
    """Only UDP on lo through a token bucket (tc tbf as tests/netns `tbf`), under an htb class of its own."""
    return ["tc qdisc add dev lo root handle 1: htb default 10",
            "tc class add dev lo parent 1: classid 1:10 htb rate 10gbit",
            "tc class add dev lo parent 1: classid 1:20 htb rate 10gbit",
            f"tc qdisc add dev lo parent 1:20 handle 20: tbf rate {rate} burst 16kb latency 300ms",
            "tc filter add dev lo parent 1: protocol ip prio 1 u32 match ip protocol 17 0xff flowid 1:20"]


def rtp_origin(stamps: list[tuple[int, float]], captures: set[int]) -> int | None:
    """The sender's RTP timestamp origin: the one that puts most of `stamps` (RTP timestamp, ...) on a capture
    time in `captures` (µs)."""
    ticks = {(c * 9 // 100) & MASK32 for c in captures}
    votes: dict[int, int] = {}
    for rtp, *_ in stamps[:10]:
        for tick in ticks:
            origin = (rtp - tick) & MASK32
            votes[origin] = votes.get(origin, 0) + 1
    if not votes:
        return None
    origin = max(votes, key=lambda o: votes[o])
    return origin if votes[origin] >= 3 else None


def capture_us(rtp: int, origin: int, near_us: float) -> float:
    """The capture time (µs) of a picture stamped `rtp`, taking the 32-bit wrap nearest to `near_us`."""
    low = (rtp - origin) & MASK32
    near = int(near_us * 9 // 100)
    ticks = near - ((near - low) & MASK32)  # at or before `near` with those low bits
    if near - ticks > 1 << 31:
        ticks += 1 << 32
    return ticks * 100 / 9


def latencies_ms(stamps: list[tuple[int, float]], origin: int) -> list[float]:
    """(RTP timestamp, wall ms) to capture-to-that-moment in ms."""
    return [at - capture_us(rtp, origin, at * 1000) / 1000 for rtp, at in stamps]


COLLECT = """(() => {
  const video = %s.video;
  const stamps = window.__fsStamps = [];
  const each = (now, m) => {
    stamps.push([m.rtpTimestamp, performance.timeOrigin + m.presentationTime,
                 m.receiveTime === undefined ? null : performance.timeOrigin + m.receiveTime, m.width,
                 m.presentedFrames]);
    video.requestVideoFrameCallback(each);
  };
  video.requestVideoFrameCallback(each);
  return true;
})()"""

ESTIMATE = """(async () => {
  const pc = %s.pc;
  for (const s of (await pc.getStats()).values())
    if (s.type === 'candidate-pair' && s.nominated && s.availableIncomingBitrate !== undefined)
      return s.availableIncomingBitrate;
  return null;
})()"""


async def measure(service: Service, base: str, size: list[int], *, link: str, warm: float, window: float,
                  ) -> dict[str, Any]:
    css_w, css_h, dpr = size
    status, body = await asyncio.to_thread(service.request, "POST", "/frames",
                                           {"url": f"{base}/{PAGE}", "width": css_w, "height": css_h, "dpr": dpr})
    assert status == 201, body
    frame = str(body["id"])
    await service.wait_state_async(frame, "live", 60.0)
    reference = SocketViewer(service, frame)
    out: dict[str, Any] = {"size": f"{css_w}x{css_h}@{dpr}x ({css_w * dpr}x{css_h * dpr})", "page": PAGE}
    try:
        await reference.open()
        async with Browser(extra_args=LOOPBACK) as browser:
            page = await browser.page()
            await open_webrtc_viewer(page, service, frame)
            await page.wait_for(f"{rtc(frame)}?.state === 'connected' && !!{rtc(frame)}.video", within=60)
            await page.eval(COLLECT % rtc(frame))
            # The origin, from full-stream pictures on the unlimited link; then the limit.
            origin = None
            while origin is None:
                await asyncio.sleep(0.5)
                first = await page.eval("window.__fsStamps.slice(0, 10)")
                origin = rtp_origin([(int(x[0]), x[1]) for x in first if x[0] is not None],
                                    {c for c, _ in reference.received})
            key = f'framestream_slow_viewers{{frame="{frame}"}}'
            slow_before = (await asyncio.to_thread(metrics, service)).get(key, 0.0) >= 1
            for command in ([] if link == "unlimited" else udp_tbf(link)):
                await asyncio.to_thread(subprocess.run, command.split(), check=True, capture_output=True)
            started = time.monotonic()
            slow_at: float | None = None
            estimates: list[float] = []
            while time.monotonic() - started < warm:  # when it became slow, if it did
                m = await asyncio.to_thread(metrics, service)
                if slow_at is None and m.get(f'framestream_slow_viewers{{frame="{frame}"}}', 0.0) >= 1:
                    slow_at = round(time.monotonic() - started, 1)
                await asyncio.sleep(0.5)
            await page.eval("window.__fsStamps.length = 0")
            reference.received.clear()
            before = await inbound_video(page, frame)
            m0 = await asyncio.to_thread(metrics, service)
            t0 = time.monotonic()
            slow_samples = []
            while time.monotonic() - t0 < window:
                m = await asyncio.to_thread(metrics, service)
                slow_samples.append(m.get(f'framestream_slow_viewers{{frame="{frame}"}}', 0.0))
                estimate = await page.eval(ESTIMATE % rtc(frame))
                if estimate is not None:
                    estimates.append(float(estimate) / 1000)
                await asyncio.sleep(1.0)
            seconds = time.monotonic() - t0
            stamps = await page.eval("window.__fsStamps.slice()")
            after = await inbound_video(page, frame)
            m1 = await asyncio.to_thread(metrics, service)
    finally:
        with contextlib.suppress(Exception):
            await reference.close()
        await asyncio.to_thread(service.request, "DELETE", f"/frames/{frame}")
    presented = [(int(s[0]), float(s[1])) for s in stamps if s[0] is not None]
    arrived = [(int(s[0]), float(s[2])) for s in stamps if s[0] is not None and s[2] is not None]
    widths: dict[str, int] = {}
    for s in stamps:
        widths[str(s[3])] = widths.get(str(s[3]), 0) + 1
    out.update({
        "window_s": round(seconds, 1),
        "slow_before_limit": slow_before,  # already slow on the unlimited link, while the origin was found
        "became_slow_after_s": slow_at,
        "slow_share": round(sum(1 for s in slow_samples if s >= 1) / len(slow_samples), 2) if slow_samples else None,
        # A callback may stand for several pictures presented since the last one (presentedFrames counts all).
        "fps_presented": round((stamps[-1][4] - stamps[0][4] + 1) / seconds, 1) if stamps else 0.0,
        "callbacks": len(stamps),
        "fps_decoded": round((after.get("framesDecoded", 0) - before.get("framesDecoded", 0)) / seconds, 1),
        "capture_to_presented_ms": percentiles(latencies_ms(presented, origin)),
        "capture_to_received_ms": percentiles(latencies_ms(arrived, origin)),
        "widths_presented": widths,
        "receiver_estimate_kbps": percentiles(estimates),
        "kbps_received": round((after.get("bytesReceived", 0) - before.get("bytesReceived", 0)) * 8 / seconds / 1000),
        "packets_lost": after.get("packetsLost", 0) - before.get("packetsLost", 0),
        "plis": after.get("pliCount", 0) - before.get("pliCount", 0),
        "rembs_per_s": round((m1.get("framestream_webrtc_remb_total", 0.0)
                              - m0.get("framestream_webrtc_remb_total", 0.0)) / seconds, 1),
    })
    return out


async def main_async(args: dict[str, Any]) -> dict[str, Any]:
    assert only_loopback(), "run inside a loopback-only network namespace (benchmarks/webrtc.py does)"
    with page_server(PAGES) as base:
        service = Service(Path(tempfile.mkdtemp(prefix="fs-bench-webrtc-slow-")),
                          env_extra={"FRAMESTREAM_ICE_HOSTS": "127.0.0.1"})
        await asyncio.to_thread(service.start, 30.0)
        try:
            result = await measure(service, base, args["size"], link=str(args["link"]), warm=float(args["warm"]),
                                   window=float(args["window"]))
            result["link"] = args["link"]
            return result
        finally:
            await asyncio.to_thread(service.stop)
            service.kill_leftovers()


def main() -> None:
    result = asyncio.run(main_async(json.loads(sys.argv[1])))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
