"""Where a frame's time goes (issue 29): the real worker (media/pipeline.FramePipeline) on a real Xvfb and Chromium
showing a page, each stage of every picture timed.

    .venv/bin/python -m benchmarks.stages                       # moving box and scroll, 1280x800 at dpr 2 and 1
    .venv/bin/python -m benchmarks.stages --pages move --dpr 2 --patches
    .venv/bin/python -m benchmarks.stages --pages animated --dpr 1 --size 640x400
    .venv/bin/python -m benchmarks.stages --pages move --dpr 1 --moved-from 0   # copies below their 6000 blocks
    .venv/bin/python -m benchmarks.stages --floor          # x264 alone: its fixed work per picture

The stages, timed inside the worker thread by wrapping the functions the pipeline calls (the worker itself is
unchanged): the X grab (`DisplayCapture.grab`, XShm), the change check (`changed_boxes` over every band read),
the colour conversion (`H264Encoder.update`, OpenCV), x264 (`X264Encoder.encode`: wall time, it runs two slice
threads at 2560x1600), the patch images (`make_patches`) and the rest of the worker thread's CPU (the pacing
policy, the unchanged-macroblock map, Python). CPU is thread CPU (`time.thread_time`) per picture, except x264's,
whose slice threads are counted as the process CPU that no other thread took. Prints one table, each stage as wall
ms (CPU ms) a picture: a grab's wall is mostly the X server's copy, not ours; `--json` writes the figures beside it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import pages
from benchmarks.peers import PeerDisplay
from benchmarks.procstat import CLK_TCK, thread_ticks
from framestream.media import capture, changes, encoder, moved_pictures, pipeline, sender, x264
from framestream.media.encoder import EncoderSettings, H264Encoder
from framestream.media.picture import KIND_PATCH, PatchGate, Picture

PAGES = {"move": ("bench", "move_box.html"), "scroll": ("bench", "scroll_fast.html"),
         "spinner": ("bench", "patch_spinner.html"), "small": ("bench", "patch_box.html"),
         "animated": ("tests", "animated.html"), "rest": ("bench", "scroll_fast.html?rest"),
         "odd": ("bench", "scroll_fast.html?step=3.5"), "grey": ("bench", "scroll_fast.html?grey"),
         "grey-odd": ("bench", "scroll_fast.html?grey&step=3.5")}
STAGES = ("grab", "compare", "convert", "motion", "slices", "x264", "png")


@dataclass
class Stopwatch:
    """Per stage: calls, wall seconds and thread CPU seconds, added by the worker thread only."""

    worker: int | None = None
    calls: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    wall: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    cpu: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    depth: int = 0  # a stage inside another is counted only in the outer one

    def wrap(self, stage: str, func: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            if threading.get_ident() != self.worker or self.depth:
                return func(*args, **kwargs)
            self.depth += 1
            wall, cpu = time.perf_counter(), time.thread_time()
            try:
                return func(*args, **kwargs)
            finally:
                self.wall[stage] += time.perf_counter() - wall
                self.cpu[stage] += time.thread_time() - cpu
                self.calls[stage] += 1
                self.depth -= 1
        return timed

    def reset(self) -> None:
        self.calls.clear()
        self.wall.clear()
        self.cpu.clear()


@contextmanager
def timed_stages(watch: Stopwatch) -> Iterator[None]:
    """The pipeline's stage functions wrapped for the duration (benchmark only: nothing else runs here)."""
    targets = [
        (capture.DisplayCapture, "grab", "grab"),
        (changes, "changed_boxes", "compare"),
        (encoder.H264Encoder, "update", "convert"),
        (encoder, "moved_macroblocks", "motion"),
        (moved_pictures, "p_slice", "slices"),
        (x264.X264Encoder, "encode", "x264"),
        (sender, "make_patches", "png"),
    ]
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in targets]
    for owner, name, stage in targets:
        setattr(owner, name, watch.wrap(stage, getattr(owner, name)))
    try:
        yield
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)


def thread_cpu(tid: int) -> float:
    """CPU seconds of one thread of this process (benchmarks/procstat.py reads /proc)."""
    return thread_ticks(os.getpid()).get(tid, 0) / CLK_TCK


def process_cpu() -> float:
    times = os.times()
    return times.user + times.system


async def measure(url: str, css: tuple[int, int], dpr: int, *, patches: bool, warmup: float,
                  window: float, threads: int = 0, moved_from: int | None = None) -> dict[str, Any]:
    peer = await PeerDisplay.start(url, css[0], css[1], dpr)
    pictures: list[Picture] = []
    gate = PatchGate()
    gate.open = gate.copies = patches
    watch = Stopwatch()
    failed: list[Exception] = []
    worker = pipeline.FramePipeline(peer.display.name, peer.width, peer.height, on_picture=pictures.append,
                                    on_failure=failed.append, patch_gate=gate,
                                    settings=_settings(threads, moved_from), light_size=css)
    try:
        with timed_stages(watch):
            worker.start()
            thread = worker._thread  # the worker thread: its stages are timed, its CPU read from /proc
            assert thread is not None and thread.native_id is not None
            watch.worker = thread.ident
            await asyncio.sleep(warmup)
            watch.reset()
            count = len(pictures)
            started, cpu0, worker0 = time.perf_counter(), process_cpu(), thread_cpu(thread.native_id)
            await asyncio.sleep(window)
            seconds = time.perf_counter() - started
            cpu, worker_cpu = process_cpu() - cpu0, thread_cpu(thread.native_id) - worker0
            sent = pictures[count:]
            calls, wall, stage_cpu = dict(watch.calls), dict(watch.wall), dict(watch.cpu)
    finally:
        worker.stop()
        await peer.stop()
    if failed:
        raise RuntimeError(f"the worker failed: {failed[0]!r}")
    n = max(1, calls.get("grab", 0))
    per_picture = {stage: round(1000 * wall.get(stage, 0.0) / n, 2) for stage in STAGES}
    cpu_per_picture = {stage: round(1000 * stage_cpu.get(stage, 0.0) / n, 2) for stage in STAGES if stage != "x264"}
    in_stages = sum(stage_cpu.get(stage, 0.0) for stage in STAGES if stage != "x264")
    x264_cpu = max(0.0, cpu - (worker_cpu - stage_cpu.get("x264", 0.0)))  # the slice threads and the caller's part
    return {
        "size": f"{css[0]}x{css[1]}@{dpr}x ({peer.width}x{peer.height})", "patches": patches,
        "fps": round(len(sent) / seconds, 1), "grabs_per_s": round(n / seconds, 1),
        "patch_share": round(sum(p.kind == KIND_PATCH for p in sent) / max(1, len(sent)), 2),
        "vcpu": round(cpu / seconds, 3), "ms_per_grab": per_picture, "cpu_ms_per_grab": cpu_per_picture,
        "x264_cpu_ms": round(1000 * x264_cpu / n, 2),
        "other_ms": round(1000 * max(0.0, worker_cpu - stage_cpu.get("x264", 0.0) - in_stages) / n, 2),
        "kbit_s": round(8 * sum(len(p.data) for p in sent) / seconds / 1000, 1),
    }


def _settings(threads: int, moved_from: int | None) -> EncoderSettings:
    if moved_from is None:
        return EncoderSettings(threads=threads)
    return EncoderSettings(threads=threads, moved_pictures_from=moved_from)


def x264_floor(size: tuple[int, int], threads: int, pictures: int = 60) -> list[tuple[str, float, float]]:
    """x264 alone (H264Encoder, no capture) on one picture size: (what changed, wall ms, process CPU ms) per
    picture when nothing changed (every macroblock marked unchanged), when a 400x400 box changed, and when the
    whole picture may have. What is left when nothing changed is x264's fixed work per picture."""
    width, height = size
    encoder = H264Encoder(width, height, EncoderSettings(threads=threads))
    picture = np.full((height, width, 4), 255, np.uint8)
    picture[100:300, 100:900] = np.random.default_rng(1).integers(0, 255, (200, 800, 4), dtype=np.uint8)
    encoder.update(picture)
    encoder.encode(keyframe=True)
    box = (width // 3, height // 3, 400, 400)
    rows = []
    try:
        for label, changed in (("nothing", []), ("a 400x400 box", [box]), ("anything (no map)", None)):
            wall, cpu = time.perf_counter(), process_cpu()
            for i in range(pictures):
                if changed != []:
                    picture[box[1]:box[1] + box[3], box[0]:box[0] + box[2], :3] = (i * 7) % 255
                    encoder.update(picture, (box[1], box[1] + box[3]))
                encoder.encode(changed=changed)
            rows.append((label, 1000 * (time.perf_counter() - wall) / pictures,
                         1000 * (process_cpu() - cpu) / pictures))
    finally:
        encoder.close()
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    head = ("| page | size | patches | fps | vCPU | grab | compare | convert | motion | slices | x264 | png | other "
            "| kbit/s |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    lines = [head]
    for r in rows:
        ms, cpu = r["ms_per_grab"], {**r["cpu_ms_per_grab"], "x264": r["x264_cpu_ms"]}
        # Wall (CPU): a grab's wall time is mostly the X server's copy, which is not this process's CPU.
        stages = " | ".join(f"{ms[stage]:.2f} ({cpu[stage]:.2f})" for stage in STAGES)
        lines.append(f"| {r['page']} | {r['size']} | {'yes' if r['patches'] else 'no'} ({r['patch_share']:.0%}) | "
                     f"{r['fps']} | {r['vcpu']:.3f} | {stages} | {r['other_ms']:.2f} | {r['kbit_s']} |")
    return "\n".join(lines)


async def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    with pages() as (tests_base, bench_base):
        for dpr in (int(d) for d in args.dpr.split(",")):
            for name in args.pages.split(","):
                where, page = PAGES[name]
                url = f"{bench_base if where == 'bench' else tests_base}/{page}"
                for patches in (False, True) if args.patches else (False,):
                    css = tuple(int(v) for v in args.size.split("x"))
                    row = await measure(url, (css[0], css[1]), dpr, patches=patches, warmup=args.warmup,
                                        window=args.window, threads=args.threads,
                                        moved_from=args.moved_from)
                    rows.append({"page": name, **row})
                    print(table(rows[-1:]).splitlines()[-1], file=sys.stderr, flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", default="move,scroll", help=f"any of {', '.join(PAGES)}")
    parser.add_argument("--dpr", default="2,1", help="device pixel ratios, dpr 2 (the default) first")
    parser.add_argument("--size", default="1280x800", help="the page's CSS size, WxH")
    parser.add_argument("--patches", action="store_true", help="also with the patch gate open")
    parser.add_argument("--warmup", type=float, default=1.5)
    parser.add_argument("--window", type=float, default=6.0)
    parser.add_argument("--threads", type=int, default=0, help="x264's slice threads (0: the encoder's choice)")
    parser.add_argument("--json", help="write the rows here too")
    parser.add_argument("--moved-from", type=int, default=None,
                        help="pictures of copies from this many macroblocks (the encoder's default when not given)")
    parser.add_argument("--floor", action="store_true", help="only x264 alone, per size and slice threads")
    args = parser.parse_args(argv)
    if args.floor:
        print("| picture | slice threads | changed | x264 wall ms | CPU ms |\n|---|---|---|---|---|")
        for dpr in (int(d) for d in args.dpr.split(",")):
            for threads in (1, 2):
                for label, wall, cpu in x264_floor((1280 * dpr, 800 * dpr), threads):
                    print(f"| {1280 * dpr}x{800 * dpr} | {threads} | {label} | {wall:.2f} | {cpu:.2f} |")
        return 0
    rows = asyncio.run(run(args))
    print(table(rows))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
