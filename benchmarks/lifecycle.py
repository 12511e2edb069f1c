"""Section 7: lifecycle. A service of its own with MAX_BROWSERS=1 and FRAME_IDLE_PAUSE_S=1.

- idle: the fresh service with no frame at all (RSS, CPU over a window), and again at the end after its
  frames were deleted (what a long-running service costs between uses);
- resume: watch a frame, unwatch, wait until GET /frames/{id} says `paused`, watch again: time from sending
  `watch` to receiving the first keyframe;
- a paused frame: PSS (sum of Pss from /proc/<pid>/smaps_rollup) of its Chromium and Xvfb processes, and
  their CPU (and the service's) over a window, beside the same frame's PSS while live;
- resize: the watched frame given a new size (`PATCH /frames/{id}`): time from sending it to the first keyframe
  after the `video-config` of the new size, in place (1280x800 <-> 1024x640 at dpr 2) and by a relaunch
  (1280x800 at dpr 1 and back at dpr 2: another dpr each time);
- reopen: with a second frame made live, the first is closed (the cap is one browser); watching the first
  reopens it (closing the second): time from `watch` to the first keyframe.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Callable
from typing import Any

from benchmarks.common import (
    Bench,
    create_frame,
    delete_frame,
    frame_state,
    service_pids,
    start_service,
    stop_service,
)
from benchmarks.procstat import CpuWindow, exe_name, pss_kb, rss_kb, uss_kb
from benchmarks.viewer import Viewer, settle
from framestream.browser.proctable import list_processes
from tests.support import Service, VideoMessage

CSS = (1280, 800, 2)  # the product's default size: 2560x1600 encoded
RESIZES_IN_PLACE = ((1024, 640, 2), CSS)  # the same dpr
RESIZES_RELAUNCHED = ((1280, 800, 1), CSS)  # another dpr each time


def process_kind(pid: int) -> str:
    """`chromium browser`, `chromium renderer`, `chromium gpu-process`, ... or the program's name."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            text = f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return "gone"
    program = text.split(" ", 1)[0].rsplit("/", 1)[-1]
    kind = next((part.split("=", 1)[1] for part in text.split() if part.startswith("--type=")), None)
    if program == "chromium":
        return f"chromium {kind or 'browser'}"
    return program


def _fixed(pids: list[int]) -> Callable[[], list[int]]:
    return lambda: pids


async def wait_state(service: Service, frame_id: str, state: str, timeout: float = 30.0) -> float:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if await frame_state(service, frame_id) == state:
            return time.monotonic() - t0
        await asyncio.sleep(0.05)
    raise RuntimeError(f"frame {frame_id} never became {state}")


async def watch_to_keyframe(viewer: Viewer, frame_id: str, timeout: float = 30.0) -> float:
    """Milliseconds from sending `watch` to the first keyframe of that frame's slot."""
    start, texts = len(viewer.recs), len(viewer.texts)
    t0 = time.perf_counter()
    await viewer.send({"type": "watch", "frame": frame_id})
    config = None
    while time.perf_counter() - t0 < timeout:
        if config is None:
            config = next((m for m in viewer.texts[texts:]
                           if m.get("type") == "video-config" and m.get("frame") == frame_id), None)
        if config is not None:
            for rec in viewer.recs[start:]:
                if rec.keyframe and rec.slot == config["slot"]:
                    return round((time.perf_counter() - t0) * 1000, 1)
        await asyncio.sleep(0.002)
    raise RuntimeError(f"no keyframe from {frame_id} within {timeout} s")


async def resize_to_keyframe(service: Service, viewer: Viewer, frame_id: str, css: tuple[int, int, int],
                             timeout: float = 30.0) -> float:
    """Milliseconds from sending `PATCH /frames/{id}` to the first keyframe after the `video-config` of the new
    size (the viewer's pump stopped: messages are read here, in order)."""
    width, height, dpr = css
    t0 = time.perf_counter()
    patch = asyncio.ensure_future(asyncio.to_thread(service.request, "PATCH", f"/frames/{frame_id}",
                                                    {"width": width, "height": height, "dpr": dpr}))
    configured, took = False, None
    try:
        while took is None and time.perf_counter() - t0 < timeout:
            msg = await viewer.receive(0.5)
            if isinstance(msg, dict) and msg.get("type") == "video-config" and msg.get("frame") == frame_id:
                configured = (msg["width"], msg["height"]) == (width * dpr, height * dpr)
            elif configured and isinstance(msg, VideoMessage) and msg.keyframe:
                took = round((time.perf_counter() - t0) * 1000, 1)
        status, body = await patch
    finally:
        await settle(patch, cancel=False, timeout=timeout)
    if status != 200 or took is None:
        raise RuntimeError(f"resizing {frame_id} to {css}: {status} {body}, keyframe after {took} ms")
    return took


def frame_pss_mb(service: Service) -> dict[str, Any]:
    """PSS of the frame's processes, and their USS (private memory, which no other process's sharing changes).
    PSS divides shared pages among every process mapping them, so it reads lower while other Chromiums run on
    the machine (other engineers' tests): `other_chromium_processes` says how many there were."""
    kinds = service_pids(service)
    ours = kinds["chromium"] + kinds["xvfb"]
    chromium = sum(pss_kb(p) for p in kinds["chromium"]) / 1024
    xvfb = sum(pss_kb(p) for p in kinds["xvfb"]) / 1024
    others = [p for p in list_processes() if p.pid not in ours and exe_name(p) == "chromium"]
    return {"chromium_mb": round(chromium, 1), "xvfb_mb": round(xvfb, 1), "total_mb": round(chromium + xvfb, 1),
            "uss_mb": round(sum(uss_kb(p) for p in ours) / 1024, 1), "processes": len(ours),
            "other_chromium_processes": len(others)}


async def idle(bench: Bench, service: Service) -> dict[str, Any]:
    assert service.proc is not None
    pid = service.proc.pid
    window = CpuWindow({"service": lambda: [pid]})
    window.start()
    await asyncio.sleep(bench.timing.idle_window)
    cpu = window.stop()
    return {"rss_mb": round(rss_kb(pid) / 1024, 1), "pss_mb": round(pss_kb(pid) / 1024, 1),
            "vcpu": cpu["service"], "machine": cpu["machine"], "window_s": cpu["wall_s"],
            "children": sum(len(v) for k, v in service_pids(service).items() if k != "service")}


async def run(bench: Bench) -> dict[str, Any]:
    service = await start_service(bench.work, "lifecycle", {"MAX_BROWSERS": "1", "FRAME_IDLE_PAUSE_S": "1"})
    out: dict[str, Any] = {"settings": {"MAX_BROWSERS": 1, "FRAME_IDLE_PAUSE_S": 1},
                           "size": f"{CSS[0]}x{CSS[1]}@{CSS[2]}x"}
    viewer: Viewer | None = None
    frames: list[str] = []
    try:
        await asyncio.sleep(1.0)
        bench.say("lifecycle: idle service, no frame")
        out["idle_fresh"] = await idle(bench, service)

        a = await create_frame(service, bench.page("animated.html"), *CSS)
        frames.append(a)
        viewer = await Viewer.open(service)
        viewer.start_pump()
        out["first_watch_ms"] = await watch_to_keyframe(viewer, a)
        await asyncio.sleep(2.0)
        out["live_pss"] = frame_pss_mb(service)

        resumes, pause_waits = [], []
        for cycle in range(bench.timing.resume_cycles):
            await viewer.send({"type": "unwatch", "frame": a})
            pause_waits.append(round(await wait_state(service, a, "paused"), 2))
            if cycle == 0:
                await asyncio.sleep(1.0)  # the pressure signal's cleanup settles
                bench.say("lifecycle: paused frame PSS and CPU")
                kinds = service_pids(service)
                window = CpuWindow({name: _fixed(kinds[name]) for name in ("chromium", "xvfb", "service")})
                per_process = CpuWindow({f"{pid} {process_kind(pid)}": _fixed([pid])
                                         for name in ("chromium", "xvfb") for pid in kinds[name]})
                window.start()
                per_process.start()
                await asyncio.sleep(min(bench.timing.window, 6.0))
                cpu = window.stop()
                busy = {k: v for k, v in per_process.stop().items() if " " in k and v > 0}
                out["paused"] = {**frame_pss_mb(service), "vcpu_frame": round(cpu["chromium"] + cpu["xvfb"], 4),
                                 "vcpu_service": cpu["service"], "machine": cpu["machine"],
                                 "busy_processes": dict(sorted(busy.items(), key=lambda kv: -kv[1]))}
            resumes.append(await watch_to_keyframe(viewer, a))
            await asyncio.sleep(0.5)
        out["resume_ms"] = {"each": resumes, "median": statistics.median(resumes), "max": max(resumes)}
        out["unwatch_to_paused_s"] = pause_waits

        bench.say("lifecycle: resize in place and by a relaunch")
        await viewer.stop_pump()  # resize_to_keyframe reads the messages itself, in order
        in_place, relaunched = [], []
        for _ in range(bench.timing.reopen_cycles):
            for size in RESIZES_IN_PLACE:
                in_place.append(await resize_to_keyframe(service, viewer, a, size))
                await asyncio.sleep(0.3)
        for size in RESIZES_RELAUNCHED:
            relaunched.append(await resize_to_keyframe(service, viewer, a, size))
            await asyncio.sleep(0.3)
        viewer.start_pump()
        out["resize_in_place_ms"] = {"each": in_place, "median": statistics.median(in_place), "max": max(in_place)}
        out["resize_relaunch_ms"] = {"each": relaunched, "median": statistics.median(relaunched),
                                     "max": max(relaunched)}

        bench.say("lifecycle: reopen of a closed frame")
        await viewer.send({"type": "unwatch", "frame": a})
        b = await create_frame(service, bench.page("box.html"), *CSS)  # the cap closes `a`
        frames.append(b)
        out["closed_state_after_second"] = await frame_state(service, a)
        reopens = []
        target, other = a, b
        for _ in range(bench.timing.reopen_cycles):
            if await frame_state(service, target) != "closed":
                await wait_state(service, target, "closed", 10)
            reopens.append(await watch_to_keyframe(viewer, target))
            await asyncio.sleep(0.3)
            await viewer.send({"type": "unwatch", "frame": target})
            target, other = other, target
        out["reopen_ms"] = {"each": reopens, "median": statistics.median(reopens), "max": max(reopens)}

        await viewer.close()
        viewer = None
        for frame_id in frames:
            await delete_frame(service, frame_id)
        frames = []
        await asyncio.sleep(1.5)
        bench.say("lifecycle: idle service after its frames were deleted")
        out["idle_after"] = await idle(bench, service)
    finally:
        if viewer is not None:
            await viewer.close()
        for frame_id in frames:
            await delete_frame(service, frame_id)
        await stop_service(service)
    return out
