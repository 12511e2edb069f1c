"""Patches beside H.264 (issue 11): each page's cost with today's stream (a viewer without the `patches`
feature), with patches, and Selkies damage-only on the same page, one after another on the same machine.

    .venv/bin/python -m benchmarks.patches                   # 1280x800 at dpr 2 (2560x1600), every page
    .venv/bin/python -m benchmarks.patches --dpr 1 --pages spinner,scroll --no-selkies

Pages (benchmarks/pages): spinner, caret (blinking), typing (8 characters a second, typed by the page itself so
every peer sees the same), typing in code (the same into a screen of dense monospace text), small animation (a 160
px box and a counter), moving box (issue 29: a 200 px box across the whole page and a counter), scroll (text, 3 px a
frame) and video (a 640x360 CSS canvas of camera-like content). Per row: the service's vCPU, messages a second
(pictures and patches), the share of patches, kbit/s on the wire, gaps, and capture-to-receive p50 for patches and
pictures.

Then input to picture while typing (`--keys`, 0 to skip): a driver types into a focused text field
(tests/pages/typing.html) over the WebSocket, a letter then Backspace, one key at a time, with and without the
`patches` feature. Each key is timed from just before its `input` message is sent to the moment the client has
composed (decoded H.264 or PNG, drawn in sequence order: tests/patch_client.py) the first message captured after
the send whose text field differs from before the key, with a breakdown: send -> capture, capture -> receive,
receive -> composed.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import random
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import websockets

from benchmarks import saving
from benchmarks.common import (
    Bench,
    Timing,
    bench_pid,
    create_frame,
    delete_frame,
    pages,
    ratio,
    sample_cpu,
    scratch,
    service_pids,
    start_service,
    stop_all,
    stop_service,
)
from benchmarks.cpu import measure_selkies
from benchmarks.peers import PeerDisplay, selkies_available
from benchmarks.procstat import CpuWindow
from benchmarks.viewer import percentiles
from framestream.core.wire import KIND_PATCH, unpack_video_header
from tests.patch_client import PatchClient
from tests.support import Service

PAGES = {
    "spinner": "patch_spinner.html",
    "caret": "patch_caret.html",
    "typing": "patch_typing.html",
    "typing in code": "patch_code.html",
    "small animation": "patch_box.html",
    "moving box": "move_box.html",
    "scroll": "scroll_fast.html",
    "video": "patch_video.html",
}


@dataclass
class Rec:
    kind: int
    sequence: int
    capture_us: int
    size: int
    recv_us: int


@dataclass
class PatchViewer:
    """Reads everything a watch sends (no decoding), recording kind, sequence, size and times."""

    ws: Any
    recs: list[Rec] = field(default_factory=list)
    task: asyncio.Task[None] | None = None

    @classmethod
    async def open(cls, service: Service, patches: bool) -> PatchViewer:
        ws = await websockets.connect(service.ws_url, max_size=None, max_queue=None)
        hello: dict[str, Any] = {"type": "hello", "token": service.token("view")}
        if patches:
            hello["features"] = ["patches", "copies"]
        await ws.send(json.dumps(hello))
        welcome = json.loads(await ws.recv())
        assert welcome["type"] == "welcome", welcome
        return cls(ws)

    async def watch(self, frame_id: str) -> None:
        await self.ws.send(json.dumps({"type": "watch", "frame": frame_id}))
        self.task = asyncio.create_task(self._pump())
        deadline = time.monotonic() + 30
        while not self.recs:
            if time.monotonic() > deadline:
                raise RuntimeError("no picture within 30 s")
            await asyncio.sleep(0.05)

    async def _pump(self) -> None:
        async for raw in self.ws:
            if isinstance(raw, bytes):
                h = unpack_video_header(raw)
                self.recs.append(Rec(h.kind, h.sequence, h.capture_us, len(raw), time.time_ns() // 1000))

    async def close(self) -> None:
        if self.task is not None:
            self.task.cancel()
        await self.ws.close()


def p50(values: list[float]) -> float | None:
    return round(statistics.median(values), 1) if values else None


def stream_stats(recs: list[Rec], t0: int, t1: int) -> dict[str, Any]:
    inside = [r for r in recs if t0 <= r.recv_us < t1]
    seconds = (t1 - t0) / 1e6
    patches = [r for r in inside if r.kind == KIND_PATCH]
    video = [r for r in inside if r.kind != KIND_PATCH]
    gaps = sum(1 for a, b in itertools.pairwise(inside) if (b.sequence - a.sequence) & 0xFFFFFFFF != 1)
    return {
        "per_s": round(len(inside) / seconds, 1),
        "patches_per_s": round(len(patches) / seconds, 1),
        "video_per_s": round(len(video) / seconds, 1),
        "kbps": round(sum(r.size for r in inside) * 8 / seconds / 1000, 1),
        "gaps": gaps,
        "patch_capture_to_recv_ms_p50": p50([(r.recv_us - r.capture_us) / 1000 for r in patches]),
        "video_capture_to_recv_ms_p50": p50([(r.recv_us - r.capture_us) / 1000 for r in video]),
    }


async def measure(bench: Bench, service: Service, url: str, dpr: int, patches: bool) -> dict[str, Any]:
    frame_id = await create_frame(service, url, 1280, 800, dpr)
    viewer = await PatchViewer.open(service, patches)
    try:
        await viewer.watch(frame_id)
        await asyncio.sleep(bench.timing.warm)
        kinds = service_pids(service)
        window = CpuWindow({"service": lambda: kinds["service"], "chromium": lambda: service_pids(service)["chromium"],
                            "xvfb": lambda: kinds["xvfb"], "bench": bench_pid})
        cpu, t0, t1 = await sample_cpu(service, window, bench.timing.window)
        return {"cpu": cpu, "stream": stream_stats(viewer.recs, t0, t1)}
    finally:
        await viewer.close()
        await delete_frame(service, frame_id)


async def run(bench: Bench, service: Service, names: list[str], dpr: int) -> list[dict[str, Any]]:
    rows = []
    for name in names:
        url = bench.page(PAGES[name])
        row: dict[str, Any] = {"page": name, "size": f"1280x800 dpr {dpr}", "encoded": [1280 * dpr, 800 * dpr]}
        for label, patches in (("h264", False), ("patches", True)):
            bench.say(f"patches: {name} dpr {dpr}, {label}")
            row[label] = await measure(bench, service, url, dpr, patches)
        ok, why = bench.selkies
        if ok:
            peer = await PeerDisplay.start(url, 1280, 800, dpr)
            try:
                await asyncio.sleep(1.0)
                bench.say(f"patches: {name} dpr {dpr}, selkies")
                row["selkies"] = await measure_selkies(bench, peer)
            except (OSError, RuntimeError) as exc:
                row["selkies"] = {"skipped": str(exc)}
            finally:
                await peer.stop()
        else:
            row["selkies"] = {"skipped": why}
        after, before = row["patches"]["cpu"]["service"], row["h264"]["cpu"]["service"]
        row["vs_h264"] = ratio(after, before)
        row["vs_selkies"] = ratio(after, row["selkies"].get("cpu", {}).get("selkies"))
        row["bytes_vs_h264"] = ratio(row["patches"]["stream"]["kbps"], row["h264"]["stream"]["kbps"])
        rows.append(row)
    return rows


# tests/pages/typing.html: a 400x60 CSS textarea at (20, 20) with a 2 px border, focused, its caret hidden.
FIELD_CSS = (26, 26, 418, 84)  # x0, y0, x1, y1 inside the border


def _key(action: str, key: str) -> dict[str, Any]:
    code = "Backspace" if key == "Backspace" else f"Key{key.upper()}"
    return {"kind": "key", "action": action, "key": key, "code": code}


def _field_changed(before: np.ndarray, after: np.ndarray, dpr: int) -> bool:
    """Whether a glyph appeared or went: enough pixels of the field differ clearly (H.264's noise does not)."""
    x0, y0, x1, y1 = (v * dpr for v in FIELD_CSS)
    delta = np.abs(after[y0:y1, x0:x1].astype(np.int16) - before[y0:y1, x0:x1].astype(np.int16)).max(axis=2)
    return int((delta > 60).sum()) >= 10 * dpr * dpr


async def measure_typing(bench: Bench, service: Service, dpr: int, keys: int, patches: bool) -> dict[str, Any]:
    frame_id = await create_frame(service, f"{bench.tests_base}/typing.html", 1280, 800, dpr)
    token = service.token("drive", frame=frame_id, subject="typist")
    client = await PatchClient.connect(service, token, features=["patches"] if patches else [])
    totals: list[float] = []
    to_capture: list[float] = []
    capture_to_recv: list[float] = []
    recv_to_composed: list[float] = []
    kinds: list[int] = []
    misses = 0
    try:
        await client.watch(frame_id)
        while not (await client.next_message(30)).keyframe:
            pass
        await _quiet(client, 0.5)
        for seq in range(1, keys + 1):
            assert client.canvas is not None
            before = client.canvas.copy()
            key = "Backspace" if seq % 2 == 0 else "abcdefghijklmnopqrstuvwxyz"[(seq // 2) % 26]
            sent_wall_us = time.time_ns() // 1000
            sent = time.monotonic()
            await client.send({"type": "input", "frame": frame_id, "grant": token, "seq": seq,
                               "events": [_key("down", key), _key("up", key)]})
            deadline = sent + 3.0
            while True:
                left = deadline - time.monotonic()
                msg = await client.receive(left) if left > 0 else None
                if msg is None:
                    misses += 1
                    break
                if not isinstance(msg, dict) and msg.capture_us >= sent_wall_us and client.canvas is not None \
                        and _field_changed(before, client.canvas, dpr):
                    composed = msg.composed_at  # drawn, before this benchmark's own check of the field
                    totals.append((composed - sent) * 1000)
                    to_capture.append((msg.capture_us - sent_wall_us) / 1000)
                    received_wall_us = sent_wall_us + (msg.received_at - sent) * 1e6  # one clock pair
                    capture_to_recv.append((received_wall_us - msg.capture_us) / 1000)
                    recv_to_composed.append((composed - msg.received_at) * 1000)
                    kinds.append(msg.kind)
                    break
            await _quiet(client, random.uniform(0.15, 0.3))  # keys never queue behind each other
    finally:
        await client.close()
        await delete_frame(service, frame_id)
    return {
        "keys": keys, "missed": misses, "shown_by_patch": sum(1 for k in kinds if k == KIND_PATCH),
        "input_to_picture_ms": percentiles(totals),
        "send_to_capture_ms": percentiles(to_capture),
        "capture_to_recv_ms": percentiles(capture_to_recv),
        "recv_to_composed_ms": percentiles(recv_to_composed),
    }


async def _quiet(client: PatchClient, seconds: float) -> None:
    """Keep reading (and composing) for `seconds`."""
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        await client.receive(left)


async def run_typing(bench: Bench, service: Service, dpr: int, keys: int) -> dict[str, Any]:
    row: dict[str, Any] = {"page": "typing (keys over the WebSocket)", "size": f"1280x800 dpr {dpr}"}
    for label, patches in (("h264", False), ("patches", True)):
        bench.say(f"patches: input to picture, {keys} keys at dpr {dpr}, {label}")
        row[label] = await measure_typing(bench, service, dpr, keys, patches)
    return row


def markdown(rows: list[dict[str, Any]], latency: dict[str, Any] | None = None) -> str:
    lines = [
        "| page | size | svc vCPU H.264 only | svc vCPU patches | Selkies | patches/H.264 | patches/Selkies "
        "| msgs/s (patches) | kbit/s H.264 / patches / Selkies | gaps | capture->recv p50 patch / video ms "
        "| chrome vCPU | others |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        h, p, s = r["h264"], r["patches"], r["selkies"]
        sk_cpu = s.get("cpu", {}).get("selkies")
        lines.append(
            f"| {r['page']} | {r['size']} | {h['cpu']['service']:.3f} | {p['cpu']['service']:.3f} | "
            f"{'-' if sk_cpu is None else f'{sk_cpu:.3f}'} | {r['vs_h264']} | {r['vs_selkies']} | "
            f"{p['stream']['per_s']} ({p['stream']['patches_per_s']}) | "
            f"{h['stream']['kbps']} / {p['stream']['kbps']} / {s.get('kbps', '-')} | {p['stream']['gaps']} | "
            f"{p['stream']['patch_capture_to_recv_ms_p50']} / {p['stream']['video_capture_to_recv_ms_p50']} | "
            f"{p['cpu'].get('chromium', 0):.3f} | {max(h['cpu'].get('others', 0), p['cpu'].get('others', 0)):.2f} |")
    for r in [latency] if latency else []:
        lines += ["", "| input to picture (typing) | size | keys | p50 / p95 ms | send->capture p50 "
                  "| capture->recv p50 | recv->composed p50 | shown by a patch | missed |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for label in ("h264", "patches"):
            t = r[label]
            p50 = {k: (t[k] or {}).get("p50") for k in ("send_to_capture_ms", "capture_to_recv_ms",
                                                         "recv_to_composed_ms")}
            total = t["input_to_picture_ms"] or {}
            lines.append(
                f"| {label} | {r['size']} | {t['keys']} | {total.get('p50')} / {total.get('p95')} | "
                f"{p50['send_to_capture_ms']} | {p50['capture_to_recv_ms']} | {p50['recv_to_composed_ms']} | "
                f"{t['shown_by_patch']} | {t['missed']} |")
    return "\n".join(lines)


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    names = [] if args.pages == "none" else args.pages.split(",") if args.pages else list(PAGES)
    results: dict[str, Any] = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "dpr": args.dpr,
                               "window": args.window}
    with pages() as (tests_base, bench_base), scratch() as work:
        bench = Bench(quick=False, timing=Timing(window=args.window), tests_base=tests_base, bench_base=bench_base,
                      work=work, results=results)
        bench.selkies = (False, "--no-selkies") if args.no_selkies else await asyncio.to_thread(selkies_available)
        service = await start_service(work, "patches")
        try:
            results["rows"] = await run(bench, service, names, args.dpr) if names else []
            if args.keys:
                results["typing"] = await run_typing(bench, service, args.dpr, args.keys)
        finally:
            await stop_service(service)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dpr", type=int, default=2)
    parser.add_argument("--pages", default="", help=f"comma-separated, of {', '.join(PAGES)}; none: no page rows")
    parser.add_argument("--keys", type=int, default=40, help="keys typed for input to picture (0: skip)")
    parser.add_argument("--window", type=float, default=6.0)
    parser.add_argument("--no-selkies", action="store_true")
    saving.add_record_flag(parser)
    args = parser.parse_args()
    try:
        results = asyncio.run(main_async(args))
    finally:
        stop_all()
    path = saving.results_dir(args.record) / f"patches-{saving.stamp()}.json"
    saving.write_json(path, results)
    print(markdown(results["rows"], results.get("typing")))
    print(f"written {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
