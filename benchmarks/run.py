"""`make bench`: framestream's CPU, fps, latency, quality, fan-out, scale and lifecycle, beside its peers.

    .venv/bin/python -m benchmarks.run            # everything, about 10 minutes on a 2-core machine
    .venv/bin/python -m benchmarks.run --quick    # a ~2-minute subset (1280x800 only, shorter windows)
    .venv/bin/python -m benchmarks.run --only cpu,latency   # some sections (cpu latency quality fanout scale
                                                            # lifecycle)

Prints the tables and writes benchmarks/results/<UTC timestamp>.json and benchmarks/results/latest.json.
Every figure is measured in this run on this machine; peers run on a display of their own showing the same
page at the same size, one after another, never at the same time as framestream. docs/performance.md says how
to read the figures; benchmarks/chart.py draws docs/performance-cpu.png from a results file.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import platform
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from benchmarks import chart, convert, cpu, fanout, latency, lifecycle, quality, report
from benchmarks.common import Bench, Timing, pages, scratch, start_service, stop_all, stop_service
from benchmarks.peers import selkies_available
from benchmarks.procstat import loadavg

RESULTS = Path(__file__).resolve().parent / "results"
SECTIONS = ("lifecycle", "cpu", "latency", "quality", "convert", "fanout", "scale")


def machine() -> dict[str, Any]:
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "")
    except OSError:
        pass
    mem_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30

    def version(argv: list[str]) -> str:
        try:
            return subprocess.run(argv, capture_output=True, text=True, timeout=20).stdout.strip().splitlines()[0]
        except (OSError, subprocess.SubprocessError, IndexError):
            return "unavailable"

    import av

    return {
        "cpu": model, "cores": os.cpu_count(), "memory_gb": round(mem_gb, 1), "kernel": platform.release(),
        "python": platform.python_version(), "pyav": av.__version__,
        "chromium": version([os.environ.get("CHROME_PATH", "/usr/bin/chromium"), "--version"]),
        "ffmpeg": version(["ffmpeg", "-version"]), "xvfb": "Xvfb (Debian xvfb)",
    }


def git_commit() -> str:
    """HEAD, with `+dirty` when framestream/ has uncommitted changes (the figures are of the working tree)."""
    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              timeout=10, cwd=root).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "framestream"], capture_output=True,
                               text=True, timeout=10, cwd=root).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""
    return head + ("+dirty" if dirty else "")


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    timing = Timing()
    if args.quick:
        timing = Timing(warm=1.5, window=4.0, idle_window=3.0, clicks=20, resume_cycles=2, reopen_cycles=1,
                        fanout=(1, 10), scale_frames=6)
    if args.window:
        timing.window = args.window
    only = set(args.only.split(",")) if args.only else set(SECTIONS)
    if args.quick and not args.only:
        only.discard("scale")
    results: dict[str, Any] = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "quick": args.quick,
        "commit": git_commit(), "machine": machine(), "loadavg_start": loadavg(), "timing": vars(timing),
        "sections": sorted(only), "errors": {},
    }
    started = time.monotonic()
    with pages() as (tests_base, bench_base), scratch() as work:
        bench = Bench(quick=args.quick, timing=timing, tests_base=tests_base, bench_base=bench_base, work=work,
                      results=results, retries=args.retries if args.retries is not None else (0 if args.quick else 1))
        if "cpu" in only:
            if args.no_selkies:
                bench.selkies = (False, "--no-selkies")
            else:
                bench.say("selkies: checking its venv (benchmarks/.selkies-venv; installs on first use)")
                bench.selkies = await asyncio.to_thread(selkies_available)
            results["selkies"] = {"available": bench.selkies[0], "detail": bench.selkies[1]}
        if "lifecycle" in only:
            await _section(bench, "lifecycle", lifecycle.run(bench))
        service_sections = [s for s in ("cpu", "latency", "quality", "fanout", "scale") if s in only]
        if service_sections:
            service = await start_service(work, "main")
            try:
                await asyncio.sleep(1.0)
                if "cpu" in only:
                    await _section(bench, "cpu", cpu.run(bench, service))
                if "latency" in only:
                    await _section(bench, "latency", latency.run(bench, service))
                if "quality" in only:
                    await _section(bench, "quality", quality.run(bench, service))
                if "convert" in only:
                    bench.say("convert: BGRX -> yuv420p quality and cost per swscale flag")
                    await _section(bench, "convert", convert.run(bench.quick))
                if "fanout" in only:
                    await _section(bench, "fanout", fanout.fanout(bench, service))
                if "scale" in only:
                    await _section(bench, "scale", fanout.scale(bench, service))
            finally:
                await stop_service(service)
    results["loadavg_end"] = loadavg()
    results["duration_s"] = round(time.monotonic() - started, 1)
    results["targets"] = report.targets(results)
    if not results["errors"]:
        del results["errors"]
    return results


# Generous bounds per section (seconds): a stuck section is cancelled (its cleanup runs) and reported.
SECTION_LIMIT = {"lifecycle": 240, "cpu": 900, "latency": 240, "quality": 240, "convert": 120, "fanout": 240,
                 "scale": 300}


async def _section(bench: Bench, name: str, coro: Any) -> None:
    t0 = time.monotonic()
    try:
        bench.results[name] = await asyncio.wait_for(coro, SECTION_LIMIT[name])
    except Exception as exc:  # one section failing must not lose the others' figures
        bench.say(f"{name}: FAILED: {exc}")
        bench.results["errors"][name] = "".join(traceback.format_exception(exc))[-3000:]
    bench.results.setdefault("section_seconds", {})[name] = round(time.monotonic() - t0, 1)


def render(results: dict[str, Any]) -> str:
    out = []
    m = results["machine"]
    out.append(f"framestream bench {'(quick) ' if results['quick'] else ''}{results['started']}  "
               f"commit {results['commit']}  {m['cores']} x {m['cpu']}, {m['memory_gb']} GB")
    out.append(f"load average at start {results['loadavg_start']}, at end {results['loadavg_end']}; "
               f"took {results['duration_s']} s")
    if "cpu" in results:
        out.append("\n1. CPU per watched frame (vCPU = CPU seconds / wall seconds; one viewer; 'others' = the most "
                   "vCPU other processes took during the row's windows: above ~0.3 the row is noisy)")
        out.append(report.cpu_table(results["cpu"]))
        sk = results.get("selkies", {})
        if not sk.get("available", False):
            out.append(f"selkies: skipped ({sk.get('detail', 'not run')})")
        out.append("\n1b. Animated page: CPU per delivered picture (a system that fell behind 30 fps does less work; "
                   "compare per picture too)")
        out.append(report.per_picture_table(results["cpu"]))
        out.append("\n2. Delivered stream, animated page (one viewer)")
        out.append(report.stream_table(results["cpu"]))
    if "latency" in results:
        out.append("\n3. Input to picture (ms; WebSocket input -> first received and decoded picture with the "
                   "change)")
        out.append(report.latency_table(results["latency"]))
    if "quality" in results:
        out.append("\n4. Quality and bandwidth (decoded vs raw capture from /frames/{id}/screenshot)")
        out.append(report.quality_table(results["quality"]))
    if "convert" in results:
        out.append("\n4b. Colour conversion before the encoder (BGRX -> yuv420p and back, no encoder: the quality "
                   "ceiling), per swscale flag")
        out.append(report.table(["size", "flag", "PSNR dB", "SSIM", "CPU ms"],
                                [[c["size"], f["flag"], f["psnr_db"], f["ssim"], f["cpu_ms"]]
                                 for c in results["convert"] for f in c["flags"]]))
    if "fanout" in results:
        out.append(f"\n5. Fan-out, one animated frame at {results['fanout']['size']}")
        out.append(report.fanout_table(results["fanout"]))
    if "scale" in results:
        s = results["scale"]
        out.append(f"\n6. Scale: {s['frames']} animated frames at {s['size']}, one viewer each")
        out.append(f"fps each {s['fps_each']} (min {s['fps_min']}); vCPU service {s['cpu']['service']}, "
                   f"Chromium {s['cpu']['chromium']}, Xvfb {s['cpu']['xvfb']}, total {s['total_vcpu']}; "
                   f"machine busy {s['cpu']['machine']} of {m['cores']} (others {s['cpu'].get('others')})")
    if "lifecycle" in results:
        out.append(f"\n7. Lifecycle ({results['lifecycle']['size']}, MAX_BROWSERS=1, FRAME_IDLE_PAUSE_S=1)")
        out.append(report.lifecycle_table(results["lifecycle"]))
    out.append("\nTargets (issue 6; capture->recv from issue 2)")
    out.append(report.targets_table(results["targets"]))
    for name, err in results.get("errors", {}).items():
        out.append(f"\n{name}: FAILED\n{err.strip().splitlines()[-1]}")
    return "\n".join(out)


def save(results: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    path = RESULTS / f"{stamp}{'-quick' if results['quick'] else ''}.json"
    text = json.dumps(results, indent=1, sort_keys=False) + "\n"
    for target in (path, RESULTS / "latest.json"):
        tmp = target.with_suffix(".json.tmp")
        tmp.write_text(text)
        os.replace(tmp, target)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a ~2-minute subset")
    parser.add_argument("--only", help=f"comma-separated sections: {','.join(SECTIONS)}")
    parser.add_argument("--no-selkies", action="store_true", help="skip the Selkies peer")
    parser.add_argument("--retries", type=int, default=None,
                        help="measure a CPU row again up to N times while other processes keep the machine busy "
                             "(default 1, quick 0)")
    parser.add_argument("--window", type=float, help="CPU sampling window in seconds (default 6, quick 4)")
    parser.add_argument("--no-save", action="store_true", help="print only; write no results file")
    parser.add_argument("--chart", action="store_true", help="also draw docs/performance-cpu.png from this run")
    args = parser.parse_args(argv)

    def on_term(signum: int, frame: object) -> None:
        raise KeyboardInterrupt  # so the services this run started are stopped (peers die with us anyway)

    signal.signal(signal.SIGTERM, on_term)
    # The peers' Chromium is launched with framestream's own classes, which log (e.g. the sandbox warning).
    logging.getLogger("framestream").setLevel(logging.ERROR)
    try:
        results = asyncio.run(main_async(args))
    finally:
        stop_all()
    path = None if args.no_save else save(results)  # saved first: a figure is never lost to a printing bug
    print(render(results))
    if path is not None:
        print(f"\nresults: {path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path}")
    if args.chart and results.get("cpu"):
        out = Path(__file__).resolve().parent.parent / "docs" / "performance-cpu.png"
        chart.render_png(chart.svg(results), out)
        print(f"chart: {out}")
    return 1 if results.get("errors") else 0


if __name__ == "__main__":
    sys.exit(main())
