"""`make bench`: framestream's CPU, fps, latency, quality, fan-out, scale, lifecycle and load, beside its peers.

    .venv/bin/python -m benchmarks.run            # everything but the soak, about 12 minutes on 2 cores
    .venv/bin/python -m benchmarks.run --quick    # a ~2-minute subset (1280x800 only, shorter windows)
    .venv/bin/python -m benchmarks.run --only cpu,latency   # some sections (cpu latency quality fanout scale
                                                            # lifecycle memory load faults soak)
    .venv/bin/python -m benchmarks.run --only memory        # memory alone: 1 and 6 paused frames, 6 live, WebGL
    .venv/bin/python -m benchmarks.run --only soak --soak-seconds 120   # the soak, shorter (default 600 s)

The soak runs only when asked (`--only soak` or `--soak`); `--quick` skips scale and load unless named.

Prints the tables and writes benchmarks/results/local/<UTC timestamp>.json (ignored by git) and
benchmarks/results/local/latest.json; `--record` (`make bench RECORD=1`) writes the run into benchmarks/results/.
Every figure is measured in this run on this machine; peers run on a display of their own showing the same
page at the same size, one after another, never at the same time as framestream. docs/performance.md says how
to read the figures; benchmarks/chart.py draws docs/performance-cpu.png from a results file.
"""

from __future__ import annotations

import argparse
import asyncio
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

from benchmarks import (
    agent,
    chart,
    convert,
    cpu,
    fanout,
    faults,
    latency,
    lifecycle,
    load,
    memory,
    patches,
    quality,
    report,
    saving,
    webgl,
)
from benchmarks.common import Bench, Timing, pages, scratch, start_service, stop_all, stop_service
from benchmarks.peers import selkies_available
from benchmarks.procstat import loadavg

SECTIONS: tuple[str, ...] = ("lifecycle", "memory", "webgl", "cpu", "patches", "latency", "agent", "quality",
                             "convert", "fanout", "scale", "load", "faults")  # the default run
SECTIONS = (*SECTIONS, "webrtc")  # issue 13: in a loopback-only network namespace of its own (needs root)
SECTIONS = (*SECTIONS, "slowlink")  # issue 18: each case in a network namespace of its own (needs root)
OPTIONAL = ("soak",)  # ten minutes: only when asked


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
        only -= {"scale", "load", "faults"}
    if args.soak:
        only.add("soak")
    unknown = only - set(SECTIONS) - set(OPTIONAL)
    if unknown:
        raise SystemExit(f"unknown sections: {','.join(sorted(unknown))}")
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
        if "memory" in only:
            await _section(bench, "memory", memory.run(bench))
        if "webgl" in only:
            await _section(bench, "webgl", webgl.run(bench))
        if "agent" in only:
            await _section(bench, "agent", agent.run(bench))
        service_sections = [s for s in ("cpu", "patches", "latency", "quality", "fanout", "scale") if s in only]
        if service_sections:
            service = await start_service(work, "main")
            try:
                await asyncio.sleep(1.0)
                if "cpu" in only:
                    await _section(bench, "cpu", cpu.run(bench, service))
                if "patches" in only:  # issue 11: each page as today's stream, with patches, and Selkies (dpr 2)
                    await _section(bench, "patches", patches.run(bench, service, list(patches.PAGES), 2))
                    # issue 29: a typed key's picture, with and without patches (dpr 2)
                    await _section(bench, "typing", patches.run_typing(bench, service, 2, 40))
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
        if "load" in only:
            await _load_sections(bench, work)
        if "faults" in only:
            service = await start_service(work, "faults")
            try:
                await _section(bench, "faults", faults.run(bench, service, repeats=2 if args.quick else 3))
            finally:
                await stop_service(service)
        if "webrtc" in only:
            from benchmarks import webrtc  # (its own service, in a namespace)

            await _section(bench, "webrtc", webrtc.run(bench))
        if "slowlink" in only:
            from benchmarks import slowlink  # (its own services, in namespaces)

            await _section(bench, "slowlink", slowlink.run(bench))
        if "soak" in only:
            service = await start_service(work, "soak", load.SOAK_ENV)
            try:
                await _section(bench, "soak", load.soak(bench, service, args.soak_seconds),
                               limit=args.soak_seconds + SOAK_MARGIN)
            finally:
                await stop_service(service)
    results["loadavg_end"] = loadavg()
    results["duration_s"] = round(time.monotonic() - started, 1)
    results["targets"] = report.targets(results)
    if not results["errors"]:
        del results["errors"]
    return results


# Generous bounds per section (seconds): a stuck section is cancelled (its cleanup runs) and reported.
# The load section's parts are bounded one by one; the soak by its length plus SOAK_MARGIN.
SOAK_MARGIN = 300
SECTION_LIMIT = {"lifecycle": 240, "memory": 300, "cpu": 900, "latency": 240, "quality": 240,
                 "convert": 120, "fanout": 240, "scale": 300,
                 "load.viewers_100": 300, "load.six_by_ten": 300, "load.storm": 300,
                 "faults": 300, "soak": 600 + SOAK_MARGIN, "agent": 400, "slowlink": 900}
SECTION_LIMIT["webrtc"] = 900  # issue 13
SECTION_LIMIT.update({"webgl": 600, "patches": 900, "typing": 300})


async def _load_sections(bench: Bench, work: Path) -> None:
    """100 viewers, six frames by ten viewers, and the storm, on a service of their own (fresh counts)."""
    service = await start_service(work, "load", load.SERVICE_ENV)
    try:
        await asyncio.sleep(1.0)
        await _section(bench, "load.viewers_100", load.viewers_100(bench, service))
        await _section(bench, "load.six_by_ten", load.six_by_ten(bench, service))
        await _section(bench, "load.storm", load.storm(bench, service))
    finally:
        await stop_service(service)


async def _section(bench: Bench, name: str, coro: Any, limit: float | None = None) -> None:
    """Run one section (`name`), or one part of one (`section.part`, kept as results[section][part])."""
    t0 = time.monotonic()
    section, _, part = name.partition(".")
    try:
        value = await asyncio.wait_for(coro, limit or SECTION_LIMIT[name])
        if part:
            bench.results.setdefault(section, {})[part] = value
        else:
            bench.results[name] = value
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
    if "agent" in results:
        out.append(agent.render(results["agent"]))
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
    if "load" in results:
        out.append("\n8. Load: many viewers (each viewer counts pictures from the 16-byte video header, no decoding; "
                   "'bench' = this process and its /healthz probe, on the same 2 cores)")
        out.append(report.load_table(results["load"]))
        sixes = results["load"].get("six_by_ten")
        if sixes:
            out.append("- per frame, delivered fps min / median / max: " + "; ".join(
                report.spread_text(f) for f in sixes["fps_per_frame"]))
        out.extend(report.slowest_lines(results["load"]))
        if "storm" in results["load"]:
            out.append("\n8b. Connection storm (half say hello, watch until the first picture and close; half never "
                       "say hello: close at once, wait 0.1-1.5 s, or wait for 4408)")
            out.append(report.storm_table(results["load"]["storm"]))
            out.extend(report.storm_lines(results["load"]["storm"]))
            out.append(report.checks_table(results["load"]["storm"]["checks"]))
    if "soak" in results:
        s = results["soak"]
        out.append(f"\n9. Soak: {s['seconds']:g} s of viewers joining and leaving, {s['frames']} animated frames at "
                   f"{s['size']} ({s['anchors']} watched throughout); /metrics every 2 s")
        out.append(report.soak_table(s))
        out.extend(report.soak_lines(s))
        out.append(report.checks_table(s["checks"]))
    if "faults" in results:
        out.append(f"\n10. Faults: SIGKILL one process of a frame ({results['faults']['size']}), time until the "
                   "watcher is told (launching), the frame is live, and a decoded picture shows the page again; "
                   "meanwhile another frame's viewer")
        out.append(report.faults_table(results["faults"]))
    if "webrtc" in results:
        from benchmarks import webrtc

        out.append("\nWebRTC: a WebSocket viewer, then also an aiortc WebRTC viewer, then instead a second WebSocket "
                   "viewer; Chromium over WebRTC on a limited UDP link")
        out.append(webrtc.table(results["webrtc"]))
    if "slowlink" in results:
        from benchmarks import slowlink

        out.append(f"\nSlow links (issue 18): {results['slowlink']['page']} at {results['slowlink']['size']}, "
                   f"{results['slowlink']['window_s']:g} s per case, each in a network namespace of its own")
        out.append(slowlink.render(results["slowlink"]))
    if "webgl" in results:
        out.append("\nWebGL (SwiftShader in Chromium's GPU process) on and off: CPU of one watched frame")
        out.extend(webgl.table(results["webgl"]))
    if "patches" in results:
        out.append("\nSmall changes as patches (issue 11), beside today's H.264-only stream and Selkies")
        out.append(patches.markdown(results["patches"], results.get("typing")))
    if "memory" in results:
        mem = results["memory"]
        out.append(f"\n11. Memory, counted whole ({mem['size']}, {mem['page']}): every process of the frames "
                   "(crashpad included) and the service; MB")
        out.append(report.memory_table(mem))
        out.append(report.memory_kinds_table(mem))
    out.append("\nTargets (issue 6; capture->recv from issue 2; load and soak from issue 7)")
    out.append(report.targets_table(results["targets"]))
    for name, err in results.get("errors", {}).items():
        out.append(f"\n{name}: FAILED\n{err.strip().splitlines()[-1]}")
    return "\n".join(out)


def save(results: dict[str, Any], record: bool = False) -> Path:
    path = saving.results_dir(record) / f"{saving.stamp()}{'-quick' if results['quick'] else ''}.json"
    # latest.json stays local even for a recorded run: the committed folder holds only the runs the docs quote.
    for target in (path, saving.results_dir(False) / "latest.json"):
        saving.write_json(target, results)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a ~2-minute subset")
    parser.add_argument("--only", help=f"comma-separated sections: {','.join(SECTIONS + OPTIONAL)}")
    parser.add_argument("--soak", action="store_true", help="also run the soak (viewers joining and leaving)")
    parser.add_argument("--soak-seconds", type=float, default=600.0, help="length of the soak (default 600)")
    parser.add_argument("--no-selkies", action="store_true", help="skip the Selkies peer")
    parser.add_argument("--retries", type=int, default=None,
                        help="measure a CPU row again up to N times while other processes keep the machine busy "
                             "(default 1, quick 0)")
    parser.add_argument("--window", type=float, help="CPU sampling window in seconds (default 6, quick 4)")
    parser.add_argument("--no-save", action="store_true", help="print only; write no results file")
    saving.add_record_flag(parser)
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
    path = None if args.no_save else save(results, args.record)  # saved first: a figure is never lost to a printing bug
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
