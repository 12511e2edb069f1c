"""Section 11: memory, counted whole. A service of its own (MAX_BROWSERS=6, FRAME_IDLE_PAUSE_S=1), frames at the
product's default size (1280x800 CSS at dpr 2) on an app-like page (benchmarks/pages/app.html: text, canvas
images, a table, about 2 MB of JavaScript objects).

- one paused frame, six paused frames, six live frames: PSS and USS of every process, by kind: the service
  itself, each frame's Xvfb, every Chromium process (browser, renderers, GPU, utilities, zygotes) and crashpad's
  handlers, which leave the process tree (found by the frame's profile path in their command line);
- per frame: the total (service included) divided by the frames, and /metrics' own per-frame figure beside it;
Paused states are measured once the pipelines have given their buffers back (RELEASE_AFTER_S after pausing).

- resume: each of the six paused frames watched again, `watch` to the first keyframe (the frame's last one, kept
  by the feed while it was paused) and to the first keyframe captured after it (the resumed pipeline's own);
- WebGL on against off (`FRAMESTREAM_WEBGL=off`, a second service): one live and one paused frame on the app
  page and on tests/pages/webgl.html, the cost of the GPU process that draws WebGL through SwiftShader.

PSS divides shared pages (Chromium's code, fonts) among every process mapping them, so it reads lower while
other Chromiums run on the machine: `other_chromium` says how many did. USS (private pages) does not depend on
them.
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import time
from collections.abc import AsyncIterator
from typing import Any

from benchmarks.common import Bench, create_frame, delete_frame, metrics, start_service, stop_service
from benchmarks.lifecycle import wait_state, watch_to_keyframe
from benchmarks.procstat import exe_name, pss_kb, uss_kb
from benchmarks.viewer import Viewer
from framestream.browser.proctable import ProcessInfo, list_processes
from framestream.media.pipeline import RELEASE_AFTER_S
from tests.support import Service

CSS = (1280, 800, 2)
PAGE = "app.html"
WEBGL_PAGE = "webgl.html"  # tests/pages: one WebGL triangle (without WebGL the page turns red)
FRAMES = 6
# After the last pause: the pipeline gives its buffers back RELEASE_AFTER_S after pausing, and the pressure
# signal's cleanup settles.
SETTLE_S = RELEASE_AFTER_S + 2.0
ENV = {"MAX_BROWSERS": str(FRAMES), "FRAME_IDLE_PAUSE_S": "1"}


def kind(info: ProcessInfo) -> str:
    """browser, renderer, webui renderer, gpu, network, storage, utility, zygote, crashpad, xvfb, or the program."""
    text = info.cmdline.replace(b"\0", b" ").decode(errors="replace")
    program = exe_name(info)
    if program == "Xvfb":
        return "xvfb"
    if "crashpad" in program:
        return "crashpad"
    args = text.split()
    value = next((a.split("=", 1)[1] for a in args if a.startswith("--type=")), None)
    if value is None:
        return "browser" if "chrom" in program else program
    if value == "renderer":
        return "webui renderer" if "--top-chrome-webui" in args else "renderer"
    if value == "gpu-process":
        return "gpu"
    if value == "utility":
        sub = next((a.split("=", 1)[1] for a in args if a.startswith("--utility-sub-type=")), "")
        return {"network.mojom.NetworkService": "network", "storage.mojom.StorageService": "storage"}.get(
            sub, "utility")
    return value


def frame_processes(service: Service) -> list[ProcessInfo]:
    """Every process the service's frames own: its descendants, and crashpad's handlers, which detach from the
    tree (they carry a profile path in their command line)."""
    assert service.proc is not None
    marker = str(service.state_dir / "profiles").encode()
    table = list(list_processes())
    children: dict[int, list[ProcessInfo]] = {}
    for info in table:
        children.setdefault(info.ppid, []).append(info)
    found: dict[int, ProcessInfo] = {}
    stack = [service.proc.pid]
    while stack:
        for child in children.get(stack.pop(), []):
            found[child.pid] = child
            stack.append(child.pid)
    for info in table:
        if marker in info.cmdline:
            found[info.pid] = info
    return [info for info in found.values() if not info.zombie and info.cmdline]


def measure(service: Service, frames: int) -> dict[str, Any]:
    """PSS and USS (MB) by process kind, the frames' total, the service's, and per frame with the service."""
    assert service.proc is not None
    by_kind: dict[str, dict[str, float]] = {}
    ours = frame_processes(service)
    for info in ours:
        row = by_kind.setdefault(kind(info), {"n": 0, "pss_mb": 0.0, "uss_mb": 0.0})
        row["n"] += 1
        row["pss_mb"] += pss_kb(info.pid) / 1024
        row["uss_mb"] += uss_kb(info.pid) / 1024
    for row in by_kind.values():
        row["pss_mb"], row["uss_mb"] = round(row["pss_mb"], 1), round(row["uss_mb"], 1)
    pid = service.proc.pid
    svc = {"pss_mb": round(pss_kb(pid) / 1024, 1), "uss_mb": round(uss_kb(pid) / 1024, 1)}
    frames_pss = round(sum(r["pss_mb"] for r in by_kind.values()), 1)
    frames_uss = round(sum(r["uss_mb"] for r in by_kind.values()), 1)
    own = {p.pid for p in ours}
    others = sum(1 for p in list_processes() if p.pid not in own and exe_name(p) == "chromium")
    reported = metrics(service)
    metric_pss = sum(v for k, v in reported.items() if k.startswith("framestream_frame_memory_bytes")
                     and 'kind="pss"' in k) / 2**20
    return {
        "frames": frames, "processes": len(ours), "by_kind": dict(sorted(by_kind.items())), "service": svc,
        "frames_pss_mb": frames_pss, "frames_uss_mb": frames_uss,
        "total_pss_mb": round(frames_pss + svc["pss_mb"], 1), "total_uss_mb": round(frames_uss + svc["uss_mb"], 1),
        "per_frame_pss_mb": round((frames_pss + svc["pss_mb"]) / frames, 1),
        "per_frame_uss_mb": round((frames_uss + svc["uss_mb"]) / frames, 1),
        "metrics_frames_pss_mb": round(metric_pss, 1) if metric_pss else None,
        "other_chromium": others,
    }


async def resume_times(viewer: Viewer, frame_id: str, timeout: float = 30.0) -> tuple[float, float]:
    """Milliseconds from sending `watch` to the first keyframe (a joiner may get the one the frame sent before it
    paused: the same screen) and to the first keyframe captured after the watch (the resumed pipeline's own)."""
    start, texts = len(viewer.recs), len(viewer.texts)
    t0, wall0 = time.perf_counter(), time.time_ns() // 1000
    await viewer.send({"type": "watch", "frame": frame_id})
    slot, first = None, None
    while time.perf_counter() - t0 < timeout:
        if slot is None:
            slot = next((m["slot"] for m in viewer.texts[texts:]
                         if m.get("type") == "video-config" and m.get("frame") == frame_id), None)
        if slot is not None:
            keys = [r for r in viewer.recs[start:] if r.keyframe and r.slot == slot]
            if keys and first is None:
                first = round((time.perf_counter() - t0) * 1000, 1)
            if first is not None and any(r.capture_us >= wall0 for r in keys):
                return first, round((time.perf_counter() - t0) * 1000, 1)
        await asyncio.sleep(0.002)
    raise RuntimeError(f"no fresh keyframe from {frame_id} within {timeout} s")


def _spread(values: list[float]) -> dict[str, Any]:
    return {"each": values, "median": statistics.median(values), "max": max(values)}


async def _pause(service: Service, viewer: Viewer, frame_ids: list[str]) -> None:
    for frame_id in frame_ids:
        await viewer.send({"type": "unwatch", "frame": frame_id})
    for frame_id in frame_ids:
        await wait_state(service, frame_id, "paused")
    await asyncio.sleep(SETTLE_S)


async def _new_watched_frame(bench: Bench, service: Service, viewer: Viewer, page: str = PAGE) -> str:
    frame_id = await create_frame(service, bench.page(page), *CSS)
    await watch_to_keyframe(viewer, frame_id)
    await asyncio.sleep(1.0)  # the page is drawn and refined
    return frame_id


async def _one(bench: Bench, service: Service, viewer: Viewer, frames: list[str], page: str = PAGE
               ) -> dict[str, Any]:
    """One frame live, then paused: measured alone."""
    frames.append(await _new_watched_frame(bench, service, viewer, page))
    out = {"live": measure(service, 1)}
    await _pause(service, viewer, frames[-1:])
    out["paused"] = measure(service, 1)
    return out


@contextlib.asynccontextmanager
async def _running(bench: Bench, name: str, env: dict[str, str]
                   ) -> AsyncIterator[tuple[Service, Viewer, list[str], dict[str, Any]]]:
    """A service, its idle size (measured before any viewer), a pumping viewer and the frames made on it: the
    frames deleted, the viewer closed and the service stopped on the way out, however it ends."""
    service = await start_service(bench.work, name, env)
    frames: list[str] = []
    viewer: Viewer | None = None
    try:
        await asyncio.sleep(1.0)
        idle = measure(service, 1)["service"]
        viewer = await Viewer.open(service)
        viewer.start_pump()
        yield service, viewer, frames, idle
    finally:
        if viewer is not None:
            await viewer.close()
        for frame_id in frames:
            await delete_frame(service, frame_id)
        await stop_service(service)


async def _delete_all(service: Service, frames: list[str]) -> None:
    for frame_id in frames:
        await delete_frame(service, frame_id)
    frames.clear()


async def run(bench: Bench) -> dict[str, Any]:
    out: dict[str, Any] = {"size": f"{CSS[0]}x{CSS[1]}@{CSS[2]}x", "page": PAGE, "settings": ENV}
    async with _running(bench, "memory", ENV) as (service, viewer, frames, idle):
        out["idle_service"] = idle
        bench.say("memory: one frame, live then paused")
        out["one"] = await _one(bench, service, viewer, frames)
        bench.say(f"memory: {FRAMES} paused frames")
        for _ in range(FRAMES - 1):
            frames.append(await _new_watched_frame(bench, service, viewer))
        await _pause(service, viewer, frames[1:])
        out["six_paused"] = measure(service, FRAMES)
        bench.say(f"memory: {FRAMES} frames resumed (watch -> first keyframe), live")
        resumes = [await resume_times(viewer, f) for f in frames]
        out["resume_ms"] = _spread([first for first, _ in resumes])
        out["resume_fresh_ms"] = _spread([fresh for _, fresh in resumes])
        await asyncio.sleep(2.0)
        out["six_live"] = measure(service, FRAMES)
        await _delete_all(service, frames)
        bench.say(f"memory: one frame on {WEBGL_PAGE} (a WebGL context in the GPU process), live then paused")
        out["webgl_page"] = await _one(bench, service, viewer, frames, WEBGL_PAGE)
    bench.say("memory: WebGL off (FRAMESTREAM_WEBGL=off), one frame live then paused")
    async with _running(bench, "memory-nowebgl", {**ENV, "FRAMESTREAM_WEBGL": "off"}) as (service, viewer, frames, _):
        out["webgl_off"] = await _one(bench, service, viewer, frames)
        await _delete_all(service, frames)
        out["webgl_off_webgl_page"] = await _one(bench, service, viewer, frames, WEBGL_PAGE)
    return out
