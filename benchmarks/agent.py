"""Section "agent": an agent's round trip, from a step sent to the first decoded picture that shows its effect.

The clicker page (tests/pages/clicker.html: a button that turns green or red on each click). Two ways in:
- the client: `framestream.client` mints a one-step grant, sends the click, and its own decoder reports the first
  picture whose button has the new colour (`view.picture_after`): time from before minting to that picture
  decoded;
- MCP: `framestream mcp` over stdio (the official SDK's client), a `click` tool call without a picture; a client
  watching the frame times the first decoded picture with the new colour, from just before the call. Also the
  whole agent step with the picture returned (`click` with `screenshot`: step, settle, PNG at CSS size), which
  includes the settle quiet time (--settle-ms) by design.
Sizes: 1280x800 at dpr 2 (the default) and dpr 1.

Handing over (docs/protocol.md, "Handing over"), at 1280x800 dpr 2, the handoff issue's 100 ms: while the agent
drives, a person takes the frame and hands it back, each time until the agent and a view-only watcher have both
heard `control` of it. Two ways: the person's client sending `take-over` and `release` with a fresh grant of its
own; and the web viewer in a headless Chromium (the CDP client of tests/web), its Take over and Hand back
buttons pressed, from the button going down (the viewer's token function answers its fresh grant first).
"""

from __future__ import annotations

import asyncio
import os
import random
import sys
import time
import traceback
from collections.abc import Callable, Coroutine
from typing import Any

from mcp import ClientSession, StdioServerParameters, stdio_client

from benchmarks.common import Bench, create_frame, delete_frame, start_service, stop_service
from benchmarks.viewer import percentiles
from framestream.client import Client, FrameView, Picture, SandboxKey
from framestream.core.tokens import derive_key, mint
from tests.support import TEST_SECRET, Service
from tests.web.browser import Browser, Page, open_viewer
from tests.web.handoff_view import centre_of, in_view, token_endpoint

RED = (220, 30, 30)
GREEN = (30, 180, 60)
PROBE = (60, 60)  # CSS, inside the button
SETTLE_MS = 300


def _near(picture: Picture, rgb: tuple[int, int, int], dpr: int) -> bool:
    return all(abs(a - b) <= 40 for a, b in zip(picture.pixel(*PROBE, dpr=dpr), rgb, strict=True))


def _shows(rgb: tuple[int, int, int], dpr: int) -> Callable[[Picture], bool]:
    return lambda picture: _near(picture, rgb, dpr)


async def _colour_now(view: FrameView, dpr: int) -> tuple[int, int, int]:
    picture = await view.picture_after(0, where=lambda p: _near(p, RED, dpr) or _near(p, GREEN, dpr), timeout=30)
    picture = await view.settle(quiet=0.3, timeout=30)
    return GREEN if _near(picture, GREEN, dpr) else RED


async def _pause(view: FrameView) -> None:
    await asyncio.sleep(random.uniform(0.12, 0.25))  # clicks never queue behind each other


async def via_client(client: Client, frame: str, dpr: int, clicks: int) -> dict[str, Any]:
    view = await client.watch(frame)
    state = await _colour_now(view, dpr)
    totals, acks, misses = [], [], 0
    for _ in range(clicks):
        target = RED if state == GREEN else GREEN
        t0 = time.monotonic()
        step = await client.click(frame, *PROBE)  # mints a one-step grant, sends, waits for input-ack
        acks.append((time.monotonic() - t0) * 1000)
        try:
            picture = await view.picture_after(step.sent_us, where=_shows(target, dpr), timeout=3)
        except Exception:
            misses += 1
            state = await _colour_now(view, dpr)
            continue
        totals.append((picture.decoded_at - t0) * 1000)
        state = target
        await _pause(view)
    return {"step_to_picture_ms": percentiles(totals), "step_ack_ms": percentiles(acks), "missed": misses}


async def via_mcp(service: Service, watcher: Client, frame: str, dpr: int, clicks: int, *, with_picture: int
                  ) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k not in ("TERMINAL_AUTH_SECRET", "SANDBOX_ID")}
    env.update({"TERMINAL_AUTH_SECRET": TEST_SECRET, "SANDBOX_ID": "test"})
    params = StdioServerParameters(command=sys.executable, env=env, args=[
        "-m", "framestream", "mcp", "--url", service.base, "--settle-ms", str(SETTLE_MS)])
    view = await watcher.watch(frame)
    state = await _colour_now(view, dpr)
    totals, calls, full, misses = [], [], [], 0
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.call_tool("list_frames", {})  # the server connects on its first call
        for _ in range(clicks):
            target = RED if state == GREEN else GREEN
            after_us = time.time_ns() // 1000
            seen = asyncio.ensure_future(view.picture_after(after_us, where=_shows(target, dpr),
                                                            timeout=3))
            t0 = time.monotonic()
            result = await session.call_tool("click", {"x": PROBE[0], "y": PROBE[1], "frame": frame,
                                                       "screenshot": False})
            calls.append((time.monotonic() - t0) * 1000)
            try:
                if result.is_error:
                    raise RuntimeError(str(result.content))
                picture = await seen
            except Exception:
                seen.cancel()
                misses += 1
                state = await _colour_now(view, dpr)
                continue
            totals.append((picture.decoded_at - t0) * 1000)
            state = target
            await _pause(view)
        for _ in range(with_picture):
            t0 = time.monotonic()
            result = await session.call_tool("click", {"x": PROBE[0], "y": PROBE[1], "frame": frame})
            if not result.is_error:
                full.append((time.monotonic() - t0) * 1000)
            await _pause(view)
    return {"step_to_picture_ms": percentiles(totals), "tool_call_ms": percentiles(calls),
            "step_with_picture_ms": percentiles(full), "settle_ms": SETTLE_MS, "missed": misses}


class _Arrivals:
    """When each `control` message reached one client (perf_counter, taken in its read loop)."""

    def __init__(self, client: Client) -> None:
        self.heard: list[tuple[float, dict[str, Any]]] = []
        self._changed = asyncio.Event()
        self.stop = client.listen(self._heard)

    def _heard(self, message: dict[str, Any]) -> None:
        if message.get("type") == "control":
            self.heard.append((time.perf_counter(), message))
            self._changed.set()

    async def first(self, driver: str | None, after: float, within: float = 10.0) -> float:
        async with asyncio.timeout(within):
            while True:
                for at, message in self.heard:
                    if at >= after and message.get("driver") == driver:
                        return at
                self._changed.clear()
                await self._changed.wait()


Act = Callable[[], Coroutine[Any, Any, float]]  # does it; returns when it began (perf_counter)


async def _handoffs(service: Service, agent: Client, frame: str, rounds: int, *, take: Act, hand_back: Act
                    ) -> dict[str, Any]:
    """`rounds` times: the agent steps (it drives), `take()`, `hand_back()`; each timed from when it began until
    the agent and a view-only watcher have both heard `control` of it."""
    taken: list[float] = []
    handed_back: list[float] = []
    async with await Client.connect(service.base, token=service.token("view", frame=frame, subject="watcher"),
                                    reconnect=False) as watcher:
        await watcher.watch(frame)
        await agent.watch(frame)  # (`control` goes to a frame's watchers)
        ears = [_Arrivals(agent), _Arrivals(watcher)]
        for i in range(rounds):
            started = time.perf_counter()
            await agent.move(frame, 20 + i, 20)
            await ears[1].first("agent", started)
            for act, driver, times in ((take, "alice", taken), (hand_back, None, handed_back)):
                t0 = await act()
                times.append((max([await ear.first(driver, t0) for ear in ears]) - t0) * 1000)
            await asyncio.sleep(random.uniform(0.05, 0.1))
        for ear in ears:
            ear.stop()
    return {"take_over_ms": percentiles(taken), "hand_back_ms": percentiles(handed_back), "rounds": rounds}


def _person_token(frame: str) -> str:
    """A drive grant for the person (alice), minted now: newer than the agent's last step grant, so it takes over."""
    return mint(derive_key(TEST_SECRET.encode(), "test"), sandbox="test", role="drive", now=time.time(), frame=frame,
                subject="alice", ttl=600)


async def via_handoff(service: Service, agent: Client, frame: str, rounds: int) -> dict[str, Any]:
    async with await Client.connect(service.base, token=service.token("drive", frame=frame, subject="alice"),
                                    grants=_person_token, reconnect=False) as person:
        async def take() -> float:
            began = time.perf_counter()
            await person.take_over(frame)
            return began

        async def hand_back() -> float:
            began = time.perf_counter()
            await person.release(frame, "over to you")
            return began

        return await _handoffs(service, agent, frame, rounds, take=take, hand_back=hand_back)


async def via_viewer(service: Service, agent: Client, frame: str, rounds: int) -> dict[str, Any]:
    async def press(page: Page, selector: str) -> float:  # the pointer on it first, as a person's is
        x, y = await centre_of(page, in_view(frame, selector))
        await page.mouse("mouseMoved", x, y)
        began = time.perf_counter()
        await page.mouse("mousePressed", x, y, button="left", click_count=1, buttons=1)
        await page.mouse("mouseReleased", x, y, button="left", click_count=1, buttons=0)
        return began

    async with Browser() as browser:
        page = await browser.page()
        async with token_endpoint(page, lambda: _person_token(frame)):
            await open_viewer(page, service.base, _person_token(frame), [frame])
            return await _handoffs(service, agent, frame, rounds, take=lambda: press(page, ".fs-take-over"),
                                   hand_back=lambda: press(page, ".fs-hand-back-button"))


async def run(bench: Bench) -> list[dict[str, Any]]:
    clicks = 15 if bench.quick else 40
    service = await start_service(bench.work, "agent")
    key = SandboxKey(TEST_SECRET, "test", subject="agent")
    out = []
    try:
        await asyncio.sleep(1.0)
        for dpr in (2, 1):
            bench.say(f"agent: {clicks} clicks via the client and via MCP at 1280x800 dpr {dpr}")
            frame = await create_frame(service, bench.page("clicker.html"), 1280, 800, dpr)
            try:
                async with await Client.connect(service.base, key=key) as client:
                    row: dict[str, Any] = {"size": f"1280x800@{dpr}x", "clicks": clicks}
                    if dpr == 2:  # first, on the new frame, where nobody drives yet
                        row["handoff"] = await _part(bench, "handoff", via_handoff(service, client, frame, clicks))
                        row["handoff_viewer"] = await _part(bench, "handoff in the viewer",
                                                            via_viewer(service, client, frame, clicks))
                    row["client"] = await _part(bench, "client", via_client(client, frame, dpr, clicks))
                    row["mcp"] = await _part(bench, "mcp", via_mcp(service, client, frame, dpr, clicks,
                                                                    with_picture=max(5, clicks // 4)))
                out.append(row)
            finally:
                await delete_frame(service, frame)
    finally:
        await stop_service(service)
    return out


async def _part(bench: Bench, name: str, coro: Coroutine[Any, Any, dict[str, Any]]) -> dict[str, Any]:
    """One way in; a failure is kept with its traceback and the other way still runs."""
    try:
        return await coro
    except Exception as exc:
        bench.say(f"agent: {name} FAILED: {exc!r}")
        return {"error": "".join(traceback.format_exception(exc))[-2000:], "missed": 0}


def render(rows: list[dict[str, Any]]) -> str:
    """The section's table for the printed report."""

    def p(stats: dict[str, Any] | None) -> str:
        return "-" if not stats else f"{stats['p50']} / {stats['p95']}"

    lines = ["\nAgent round trip (ms, p50 / p95): step sent -> first decoded picture showing its effect",
             f"{'size':<14}{'client':>16}{'MCP':>16}{'MCP tool call':>16}{'MCP step+picture':>20}{'missed':>8}"]
    for row in rows:
        c, m = row["client"], row["mcp"]
        if "error" in c or "error" in m:
            lines.append(f"{row['size']:<14}FAILED: {(c.get('error') or m.get('error', '')).splitlines()[-1]}")
            continue
        lines.append(f"{row['size']:<14}{p(c['step_to_picture_ms']):>16}{p(m['step_to_picture_ms']):>16}"
                     f"{p(m['tool_call_ms']):>16}{p(m['step_with_picture_ms']):>20}"
                     f"{c['missed'] + m['missed']:>8}")
    lines.append(f"(MCP step+picture includes the {SETTLE_MS} ms settle quiet time before the picture is taken)")
    for row in rows:
        ways = [(way, row[name]) for way, name in (("client", "handoff"), ("viewer", "handoff_viewer")) if name in row]
        if not ways:
            continue
        lines.append(f"Handing over at {row['size']} (ms, p50 / p95; bound 100): the person's send (client) or button"
                     " press (viewer) -> the agent and a watcher heard `control`")
        lines.append("  " + "; ".join(f"{way} FAILED: {h['error'].splitlines()[-1]}" if "error" in h else
                                      f"{way}: take over {p(h['take_over_ms'])}, hand back {p(h['hand_back_ms'])}"
                                      for way, h in ways) + f" ({ways[0][1].get('rounds', '-')} rounds)")
    return "\n".join(lines)
