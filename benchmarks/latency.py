"""Section 3: input to picture, and capture to receive.

A page whose button turns green or red on each click (tests/pages/clicker.html), watched and driven through
`framestream.client` (the library agents use): it decodes every picture as it arrives, from the first keyframe
on. Each click is one WebSocket `input` message (mouse down + up) under a person's drive grant; the latency is
from just before the send to the moment the first picture showing the new colour at the button has been
received AND decoded (`view.picture_after`, which checks every decoded picture). Between clicks the client keeps
reading and decoding for a short random pause, so clicks never queue behind each other; a row at dpr 2 pauses
3.5 s before each click, as a person reading does, so the display has gone back to the stream's 30 Hz; and one
where the client takes patches, as the web viewer does (the button's new colour is then a patch).

The breakdown uses the header's capture time (the service's wall clock, the same machine's):
send -> capture of the first changed picture (page reaction + damage + grab),
capture -> receive (convert, encode, fan-out, WebSocket), receive -> decoded (the client's decoder).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from typing import Any

from benchmarks.common import Bench, create_frame, delete_frame
from benchmarks.viewer import percentiles
from framestream.client import Client, ClientError, FrameView, Picture
from framestream.core.refresh import INPUT_HOLD_S
from tests.support import Service

RED = (220, 30, 30)
GREEN = (30, 180, 60)
PROBE_CSS = (60, 60)  # inside the button (40..240, 40..160), away from its label
PAUSED_CLICKS = 12


def near(pixel: tuple[int, int, int], rgb: tuple[int, int, int], tol: int = 40) -> bool:
    return all(abs(a - b) <= tol for a, b in zip(pixel, rgb, strict=True))


def showing(rgb: tuple[int, int, int], dpr: int) -> Callable[[Picture], bool]:
    return lambda picture: near(picture.pixel(*PROBE_CSS, dpr=dpr), rgb)


async def colour_now(view: FrameView, dpr: int) -> tuple[int, int, int]:
    """The button's colour once the page is painted and still."""
    await view.picture_after(0, where=lambda p: showing(RED, dpr)(p) or showing(GREEN, dpr)(p), timeout=20)
    picture = await view.settle(quiet=0.5, timeout=20)
    return GREEN if showing(GREEN, dpr)(picture) else RED


async def run_one(bench: Bench, service: Service, size: tuple[int, int, int], clicks: int, *,
                  pause: float | None = None, patches: bool = False) -> dict[str, Any]:
    """`clicks` clicks, each after a short random pause, or after `pause` seconds without input (a person's click
    after reading: the display has gone back to the stream's rate, core/refresh.py). H.264 only, as every run
    before, unless `patches`: the click's answer (a 200x120 CSS button) is then a patch, as the viewer gets it."""
    css_w, css_h, dpr = size
    frame_id = await create_frame(service, bench.page("clicker.html"), css_w, css_h, dpr)
    client = await Client.connect(service.base, token=service.token("view"), grants=service.token("drive", ttl=120),
                                  reconnect=False, patches=patches)
    totals, to_capture, capture_to_recv, recv_to_decoded, acks = [], [], [], [], []
    misses = 0
    x, y = PROBE_CSS
    try:
        view = await client.watch(frame_id)
        state = await colour_now(view, dpr)
        for _ in range(clicks):
            target = RED if state == GREEN else GREEN
            sent_wall_us = time.time_ns() // 1000
            seen = asyncio.ensure_future(view.picture_after(sent_wall_us, where=showing(target, dpr), timeout=3))
            await asyncio.sleep(0)  # the waiter is registered before the click goes out: no picture is missed
            sent = time.monotonic()
            try:
                await client.click(frame_id, x, y)
            except BaseException:
                seen.cancel()
                raise
            acks.append((time.monotonic() - sent) * 1000)
            try:
                picture = await seen
            except ClientError:
                misses += 1
                state = await colour_now(view, dpr)
                continue
            state = target
            totals.append((picture.decoded_at - sent) * 1000)
            to_capture.append((picture.capture_us - sent_wall_us) / 1000)
            capture_to_recv.append((picture.received_us - picture.capture_us) / 1000)
            recv_to_decoded.append((picture.decoded_at - picture.received_at) * 1000)
            await asyncio.sleep(random.uniform(0.12, 0.25) if pause is None else pause)
    finally:
        await client.close()
        await delete_frame(service, frame_id)
    return {
        "size": f"{css_w}x{css_h}@{dpr}x" + ("" if pause is None else f", after {pause:g} s")
                + (", patches" if patches else ""), "pause_s": pause, "patches": patches,
        "clicks": clicks, "missed": misses,
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
    if not bench.quick:
        # A person's click mostly comes after a pause longer than the display's input hold (2 s) and its switch
        # back (1 s more): measured apart, on fewer clicks.
        pause = INPUT_HOLD_S + 1.5
        bench.say(f"latency: {PAUSED_CLICKS} clicks at 1280x800 dpr 2, each after {pause:g} s without input")
        out.append(await run_one(bench, service, (1280, 800, 2), PAUSED_CLICKS, pause=pause))
        bench.say(f"latency: {bench.timing.clicks} clicks at 1280x800 dpr 2, the client taking patches")
        out.append(await run_one(bench, service, (1280, 800, 2), bench.timing.clicks, patches=True))
    return out
