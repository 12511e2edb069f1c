"""Recording (issue 28): what recording adds to a frame's cost and how its bytes on disk compare with the stream.

    .venv/bin/python -m benchmarks.recording                 # 1280x800 at dpr 2 (2560x1600), every page
    .venv/bin/python -m benchmarks.recording --dpr 1 --pages caret,scroll

For each page of the patches bench (benchmarks/patches.py) and a still page (benchmarks/pages/text.html): the
same page and viewer (with `patches`) on a service that does not record and on one that records every frame
(FRAMESTREAM_RECORD=on), one after the other. Per row: the service's vCPU without and with recording, their
difference, the stream's kbit/s to the viewer, the recording's kbit/s on disk over the same window (the samples
captured in the window, read from the MP4 itself), and their ratio. The still page's row also gives the bytes a
recording gained over the window after its first picture (an hour of it is that rate times 3600).
"""

from __future__ import annotations

import argparse
import asyncio
import struct
import sys
import time
from typing import Any

from benchmarks import saving
from benchmarks.common import (
    Bench,
    Timing,
    bench_pid,
    create_frame,
    delete_frame,
    pages,
    sample_cpu,
    scratch,
    service_pids,
    start_service,
    stop_all,
    stop_service,
)
from benchmarks.patches import PAGES, PatchViewer, stream_stats
from benchmarks.procstat import CpuWindow
from framestream.recording import mp4
from tests.support import Service

ALL = {**PAGES, "still": "text.html"}


def _recorded_bytes(service: Service, frame_id: str, t0: int, t1: int) -> int:
    """Bytes of the frame's recordings that hold pictures captured in [t0, t1) (µs): their samples, and each
    fragment's boxes counted with its first sample (the file's share of that window, wherever fragments end)."""
    status, body = service.get(f"/frames/{frame_id}/recordings")
    if status != 200:
        return 0
    total = 0
    for rec in body["recordings"]:
        status, data = service.get(rec["video"], token=None)
        if status == 200:
            total += _window_bytes(bytes(data), int(rec["start_us"]), t0, t1)
    return total


def _window_bytes(data: bytes, start_us: int, t0: int, t1: int) -> int:
    total, at = 0, 0
    while at + 8 <= len(data):
        size, kind = struct.unpack(">I4s", data[at:at + 8])
        if size < 8:
            break
        if kind == b"moof":
            moof = data[at:at + size]
            base = struct.unpack(">Q", moof[moof.index(b"tfdt") + 8:moof.index(b"tfdt") + 16])[0]
            trun = moof.index(b"trun") + 4
            count = struct.unpack(">I", moof[trun + 4:trun + 8])[0]
            dts = base
            for i in range(count):
                duration, sample = struct.unpack(">II", moof[trun + 12 + 12 * i:trun + 20 + 12 * i])
                when = start_us + mp4.microseconds(dts)
                if t0 <= when < t1:
                    total += sample + (size + 8 if i == 0 else 0)  # (moof and mdat header with the first)
                dts += duration
        at += size
    return total


async def measure(bench: Bench, service: Service, url: str, dpr: int, recorded: bool) -> dict[str, Any]:
    frame_id = await create_frame(service, url, 1280, 800, dpr)
    viewer = await PatchViewer.open(service, patches=True)
    try:
        await viewer.watch(frame_id)
        await asyncio.sleep(bench.timing.warm)
        kinds = service_pids(service)
        window = CpuWindow({"service": lambda: kinds["service"], "bench": bench_pid})
        cpu, t0, t1 = await sample_cpu(service, window, bench.timing.window)
        await asyncio.sleep(1.2)  # (what was captured in the window reaches the file within its fragment's 1 s)
        stream = stream_stats(viewer.recs, t0, t1)
        on_disk = await asyncio.to_thread(_recorded_bytes, service, frame_id, t0, t1) if recorded else 0
        listed = (await asyncio.to_thread(service.get, f"/frames/{frame_id}/recordings"))[1] if recorded else {}
        seconds = (t1 - t0) / 1e6
        return {"cpu": cpu, "stream": stream, "recorded_kbps": round(on_disk * 8 / seconds / 1000, 1),
                "recorded_bytes": on_disk, "seconds": round(seconds, 2),
                "recording_bytes": sum(int(r["bytes"]) for r in listed.get("recordings", []))}
    finally:
        await viewer.close()
        await delete_frame(service, frame_id)


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    names = args.pages.split(",") if args.pages else list(ALL)
    results: dict[str, Any] = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "dpr": args.dpr,
                               "window": args.window, "rows": []}
    with pages() as (tests_base, bench_base), scratch() as work:
        bench = Bench(quick=False, timing=Timing(window=args.window), tests_base=tests_base, bench_base=bench_base,
                      work=work, results=results)
        plain = await start_service(work, "plain")
        recording = await start_service(work, "recording", {"FRAMESTREAM_RECORD": "on"})
        try:
            for name in names:
                url = bench.page(ALL[name])
                row: dict[str, Any] = {"page": name, "size": f"1280x800 dpr {args.dpr}"}
                for label, service, on in (("off", plain, False), ("on", recording, True)):
                    bench.say(f"recording: {name} dpr {args.dpr}, recording {label}")
                    row[label] = await measure(bench, service, url, args.dpr, on)
                row["added_vcpu"] = round(row["on"]["cpu"]["service"] - row["off"]["cpu"]["service"], 4)
                stream = row["on"]["stream"]["kbps"]
                row["disk_vs_stream"] = round(row["on"]["recorded_kbps"] / stream, 2) if stream else None
                results["rows"].append(row)
        finally:
            await stop_service(plain)
            await stop_service(recording)
    return results


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = ["| page | size | svc vCPU off | svc vCPU recording | added | stream kbit/s | on disk kbit/s "
             "| disk/stream |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['page']} | {r['size']} | {r['off']['cpu']['service']:.3f} | "
                     f"{r['on']['cpu']['service']:.3f} | {r['added_vcpu']:+.3f} | {r['on']['stream']['kbps']} | "
                     f"{r['on']['recorded_kbps']} | {r['disk_vs_stream']} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dpr", type=int, default=2)
    parser.add_argument("--pages", default="", help=f"comma-separated, of {', '.join(ALL)}")
    parser.add_argument("--window", type=float, default=6.0)
    saving.add_record_flag(parser)
    args = parser.parse_args()
    try:
        results = asyncio.run(main_async(args))
    finally:
        stop_all()
    out = saving.results_dir(args.record) / f"recording-{saving.stamp()}.json"
    saving.write_json(out, results)
    sys.stdout.write(markdown(results["rows"]) + f"\n\n{out}\n")


if __name__ == "__main__":
    main()
