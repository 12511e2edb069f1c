"""The memory part of `GET /metrics`: every process of each frame (Xvfb, Chromium with its zygotes, GPU process and
crashpad), and the service process itself, as PSS and USS (see browser/memory.py).

Read off the event loop (`asyncio.to_thread`): one pass over /proc and one smaps_rollup per process, a few ms for
six frames.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from framestream.browser.memory import Memory, process_memory, total_memory
from framestream.browser.proctable import list_processes
from framestream.frames.frame import Frame


@dataclass(frozen=True, slots=True)
class MemoryReport:
    frames: dict[str, Memory]  # by frame id, frames with running processes only
    service: Memory


def read_memory(frames: Sequence[Frame]) -> MemoryReport:
    table = list(list_processes())
    per_frame = {}
    for frame in frames:
        pids = frame.process_ids(table)
        if pids:
            per_frame[frame.id] = total_memory(pids)
    return MemoryReport(per_frame, process_memory(os.getpid()))


Family = Callable[[str, str, str, list[str]], None]
Line = Callable[[str, float, dict[str, str]], str]


def memory_families(report: MemoryReport, family: Family, line: Line) -> None:
    family("framestream_frame_memory_bytes", "gauge",
           "Memory of every process of a running frame (Xvfb, Chromium, crashpad): kind pss (shared pages divided "
           "among their users; adds up across frames) or uss (private: what closing the frame gives back).",
           [line("framestream_frame_memory_bytes", getattr(m, kind), {"frame": frame_id, "kind": kind})
            for frame_id, m in sorted(report.frames.items()) for kind in ("pss", "uss")])
    family("framestream_service_memory_bytes", "gauge",
           "Memory of the service process itself (its pipelines: capture, encoder), pss or uss.",
           [line("framestream_service_memory_bytes", getattr(report.service, kind), {"kind": kind})
            for kind in ("pss", "uss")])


__all__ = ["MemoryReport", "memory_families", "read_memory"]
