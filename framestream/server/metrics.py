"""`GET /metrics` in the Prometheus text format (version 0.0.4): what an operator graphs and alerts on.

Frame ids label per-frame series; URLs and tokens never appear.
"""

from __future__ import annotations

import asyncio
import os
import resource

from aiohttp import web

from framestream.core.lifecycle import FrameState
from framestream.server.context import ServiceContext
from framestream.server.memory_metrics import MemoryReport, memory_families, read_memory
from framestream.server.tab_metrics import tab_families
from framestream.webrtc.metrics import webrtc_families


def _line(name: str, value: float, labels: dict[str, str] | None = None) -> str:
    if labels:
        inner = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
        return f"{name}{{{inner}}} {value:g}"
    return f"{name} {value:g}"


def render(ctx: ServiceContext, memory: MemoryReport | None = None) -> str:
    frames = list(ctx.manager.frames.values())
    out: list[str] = []

    def family(name: str, kind: str, help_text: str, samples: list[str]) -> None:
        out.append(f"# HELP {name} {help_text}")
        out.append(f"# TYPE {name} {kind}")
        out.extend(samples)

    family("framestream_frames", "gauge", "Frames by state.",
           [_line("framestream_frames", sum(f.state is s for f in frames), {"state": s.value}) for s in FrameState])
    family("framestream_frame_released", "gauge",
           "1 for a paused frame that gave back its capture, encoder and kept picture (a resume makes them again).",
           [_line("framestream_frame_released", int(f.released), {"frame": f.id}) for f in frames])
    family("framestream_viewers", "gauge", "Viewers watching each frame.",
           [_line("framestream_viewers", f.viewers, {"frame": f.id}) for f in frames])
    family("framestream_hidden_watchers", "gauge",
           "Connections watching each frame without its pictures (hidden, or out of sight): not counted as viewers.",
           [_line("framestream_hidden_watchers", len(f.feed.listeners), {"frame": f.id}) for f in frames])
    family("framestream_connections", "gauge", "Open viewer WebSocket connections.",
           [_line("framestream_connections", len(ctx.connections))])
    family("framestream_waiting_connections", "gauge",
           "Viewer WebSocket connections still waiting for their hello (not counted against max connections).",
           [_line("framestream_waiting_connections", ctx.admission.pending)])
    family("framestream_pictures_total", "counter", "Pictures encoded per frame (rate() gives fps).",
           [_line("framestream_pictures_total", f.feed.pictures, {"frame": f.id}) for f in frames])
    family("framestream_keyframes_total", "counter", "IDR pictures encoded per frame.",
           [_line("framestream_keyframes_total", f.feed.keyframes, {"frame": f.id}) for f in frames])
    family("framestream_encoded_bytes_total", "counter", "H.264 bytes produced per frame.",
           [_line("framestream_encoded_bytes_total", f.feed.bytes_encoded, {"frame": f.id}) for f in frames])
    family("framestream_dropped_pictures_total", "counter",
           "Pictures not delivered to a viewer that was behind (it skipped to a keyframe).",
           [_line("framestream_dropped_pictures_total", f.feed.dropped, {"frame": f.id}) for f in frames])
    family("framestream_viewer_skips_total", "counter",
           "Times a viewer fell behind its time budget and skipped to a keyframe.",
           [_line("framestream_viewer_skips_total", f.feed.skips, {"frame": f.id}) for f in frames])
    family("framestream_slow_viewers", "gauge",
           "Viewers on the light stream because their link cannot carry the frame's stream.",
           [_line("framestream_slow_viewers", f.feed.slow_viewers, {"frame": f.id}) for f in frames])
    family("framestream_light_pictures_total", "counter", "Pictures of the frame's light stream (slow viewers).",
           [_line("framestream_light_pictures_total", f.feed.light_pictures, {"frame": f.id}) for f in frames])
    family("framestream_light_kbps", "gauge", "The light stream's rate cap in kbit/s (0: not made).",
           [_line("framestream_light_kbps", f.feed.light_kbps or 0, {"frame": f.id}) for f in frames])
    family("framestream_encode_seconds_total", "counter", "Time spent converting and encoding per frame.",
           [_line("framestream_encode_seconds_total", f.encode_seconds, {"frame": f.id}) for f in frames])
    sent = ctx.bytes_sent_closed + sum(c.outbox.bytes_sent for c in ctx.connections)
    family("framestream_sent_bytes_total", "counter", "Video bytes written to viewers.",
           [_line("framestream_sent_bytes_total", sent)])
    family("framestream_input_applied_total", "counter", "Input steps applied.",
           [_line("framestream_input_applied_total", ctx.inputs_applied)])
    family("framestream_input_refused_total", "counter", "Input steps refused, by error code.",
           [_line("framestream_input_refused_total", n, {"code": code})
            for code, n in sorted(ctx.inputs_refused.items())])
    family("framestream_driver_changes_total", "counter",
           "Changes of who drives each frame, by the new driver's kind (none: handed back).",
           [_line("framestream_driver_changes_total", n, {"frame": f.id, "kind": kind})
            for f in frames for kind, n in sorted(f.driving.changes.items())])
    family("framestream_help_requests", "counter",
           "Agents' requests for a person's help, by outcome (open: a gauge of those still open).",
           [_line("framestream_help_requests", n, {"frame": f.id, "outcome": outcome})
            for f in frames for outcome, n in sorted(f.driving.help_outcomes.items())])
    family("framestream_browser_restarts_total", "counter", "Browsers relaunched after a crash or hang.",
           [_line("framestream_browser_restarts_total", ctx.manager.restarts)])
    family("framestream_state_write_errors_total", "counter",
           "Failed writes of the frame registry (state dir full or read-only); frames keep streaming.",
           [_line("framestream_state_write_errors_total", ctx.manager.registry.write_errors)])
    family("framestream_state_writable", "gauge", "1 when the last write of the frame registry succeeded.",
           [_line("framestream_state_writable", int(ctx.manager.registry.write_error is None))])
    tab_families(frames, family, _line)
    if memory is not None:
        memory_families(memory, family, _line)
    webrtc_families(ctx.peers, family, _line)
    family("framestream_tasks", "gauge", "asyncio tasks alive in the service (bounded; a leak grows it).",
           [_line("framestream_tasks", len(asyncio.all_tasks()))])
    family("process_open_fds", "gauge", "Open file descriptors of the service process.",
           [_line("process_open_fds", _open_fds())])
    family("process_resident_memory_bytes", "gauge", "Resident memory of the service process.",
           [_line("process_resident_memory_bytes", _resident_bytes())])
    return "\n".join(out) + "\n"


def _open_fds() -> int:
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return -1


def _resident_bytes() -> int:
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * resource.getpagesize()
    except (OSError, ValueError, IndexError):
        return -1


async def metrics(request: web.Request) -> web.Response:
    ctx: ServiceContext = request.app["ctx"]
    memory = await asyncio.to_thread(read_memory, list(ctx.manager.frames.values()))
    return web.Response(text=render(ctx, memory), content_type="text/plain", charset="utf-8",
                        headers={"X-Content-Type-Options": "nosniff"})
