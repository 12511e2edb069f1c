"""Inside a shaped namespace (tests/netns): the service, one frame and its viewers; prints what each received.

    python -m tests.netns.slowlink '{"page": "scroll_fast.html", "size": [640, 400, 1], "seconds": 8,
                                     "viewers": [{"name": "slow", "port": 40001}, {"name": "fast"}]}'

A viewer with a `port` connects from that local port (so `tc` can limit it alone). Each viewer reads everything
as it arrives and records, per video message, its sequence, keyframe flag, size, capture time (the service's wall
clock, the same machine's) and receive time, from its first keyframe on. The summary (JSON, last line of output)
has, per viewer, the pictures, keyframes, sequence gaps, capture-to-receive percentiles, the longest time
without a picture, and the frame's counters from /metrics (pictures encoded in the window, skips, slow viewers).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import websockets

from framestream.core.wire import KIND_PATCH, KIND_VIDEO, unpack_video_header
from tests.support import PAGES, Service, page_server

BENCH_PAGES = Path(__file__).resolve().parents[2] / "benchmarks" / "pages"


@dataclass
class Reader:
    name: str
    ws: Any
    # seq, key, size, capture µs, receive µs, light (of the light stream, after a `video-config` saying so)
    records: list[tuple[int, bool, int, int, int, bool]] = field(default_factory=list)
    texts: list[dict[str, Any]] = field(default_factory=list)
    keyed: asyncio.Event = field(default_factory=asyncio.Event)
    light: bool = False
    light_sizes: set[tuple[int, int]] = field(default_factory=set)
    decode: bool = False  # decode every picture in the read loop, as a plain client that shows them does
    _decoder: Any = None

    async def read(self) -> None:
        with contextlib.suppress(websockets.ConnectionClosed):
            async for raw in self.ws:
                if isinstance(raw, str):
                    message = json.loads(raw)
                    self.texts.append(message)
                    if message.get("type") == "video-config":
                        self.light = message.get("stream") == "light"
                        if self.light:
                            self.light_sizes.add((message["width"], message["height"]))
                    continue
                recv_us = time.time_ns() // 1000
                if raw[0] not in (KIND_VIDEO, KIND_PATCH):
                    continue  # a probe's padding (kind 3): what it tells is the link's, not the viewer's
                h = unpack_video_header(raw[:16])
                if h.keyframe:
                    self.keyed.set()
                if self.keyed.is_set():
                    self.records.append((h.sequence, h.keyframe, len(raw), h.capture_us, recv_us, self.light))
                    if self.decode and raw[0] == KIND_VIDEO:
                        self._decode(raw[16:], h.keyframe)

    def _decode(self, payload: bytes, keyframe: bool) -> None:
        import av

        if keyframe or self._decoder is None:  # (a switch of stream starts at a keyframe of another size)
            self._decoder = av.CodecContext.create("h264", "r")
        with contextlib.suppress(av.error.InvalidDataError):
            for frame in self._decoder.decode(av.Packet(payload)):
                frame.to_ndarray(format="rgb24")


def percentiles(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    ordered = sorted(values)
    return {"p50": round(statistics.median(ordered), 1), "p95": round(ordered[min(len(ordered) - 1,
            int(0.95 * len(ordered)))], 1), "max": round(ordered[-1], 1), "n": len(ordered)}


def summary(records: list[tuple[int, bool, int, int, int, bool]], t0_us: int, t1_us: int,
            link_kbit: float | None) -> dict[str, Any]:
    inside = [r for r in records if t0_us <= r[4] < t1_us]
    seconds = (t1_us - t0_us) / 1e6
    # A gap: pictures of one stream skipped (a move between the full and the light stream starts a new one).
    gaps = sum(1 for a, b in itertools.pairwise(inside) if a[5] == b[5] and (b[0] - a[0]) & 0xFFFFFFFF != 1)
    latency = [(r[4] - r[3]) / 1000 for r in inside]
    # The time a picture waited beyond its own transfer at the link's rate: what the queue added.
    waited = [(r[4] - r[3]) / 1000 - (r[2] * 8 / link_kbit if link_kbit else 0.0) for r in inside]
    times = [t0_us] + [r[4] for r in inside] + [t1_us]
    return {
        "pictures": len(inside), "fps": round(len(inside) / seconds, 2),
        "keyframes": sum(1 for r in inside if r[1]), "gaps": gaps,
        "light_pictures": sum(1 for r in inside if r[5]),
        "sequences": [r[0] for r in inside],
        "kbps": round(sum(r[2] for r in inside) * 8 / seconds / 1000, 1),
        "capture_to_recv_ms": percentiles(latency), "queue_wait_ms": percentiles(waited),
        "longest_without_picture_s": round(max(b - a for a, b in itertools.pairwise(times)) / 1e6, 2),
    }


def frame_metrics(service: Service, frame_id: str) -> dict[str, float]:
    import urllib.request

    with urllib.request.urlopen(f"{service.base}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    out: dict[str, float] = {}
    for line in text.splitlines():
        if f'frame="{frame_id}"' in line and not line.startswith("#"):
            name = line.split("{", 1)[0]
            out[name] = float(line.rsplit(" ", 1)[1])
    return out


async def open_reader(service: Service, name: str, port: int | None) -> Reader:
    kwargs: dict[str, Any] = {"max_size": None}
    if port is not None:
        kwargs["local_addr"] = ("127.0.0.1", port)
    ws = await websockets.connect(service.ws_url, **kwargs)
    await ws.send(json.dumps({"type": "hello", "token": service.token("view")}))
    welcome = json.loads(await ws.recv())
    assert welcome["type"] == "welcome", welcome
    return Reader(name, ws)


@dataclass
class ServedFrame:
    service: Service
    frame_id: str = ""
    log_tail: str = ""  # the end of the service's log, once it stopped


@contextlib.asynccontextmanager
async def served_frame(page_dir: Path, page: str, size: list[int]) -> AsyncIterator[ServedFrame]:
    """The service in a state directory of its own with one live frame of `page` (served from `page_dir`) at `size`
    (CSS width, height, dpr); stopped on exit, the end of its log kept in `log_tail`."""
    width, height, dpr = size
    with page_server(page_dir) as base, tempfile.TemporaryDirectory(prefix="fs-netns-") as state:
        served = ServedFrame(Service(state_dir=Path(state)))
        service = served.service
        await asyncio.to_thread(service.start, 30.0)
        try:
            status, body = await asyncio.to_thread(service.request, "POST", "/frames", {
                "url": f"{base}/{page}", "width": width, "height": height, "dpr": dpr})
            assert status == 201, body
            served.frame_id = str(body["id"])
            await service.wait_state_async(served.frame_id, "live", 60.0)
            yield served
        finally:
            await asyncio.to_thread(service.stop)
            service.kill_leftovers()
            served.log_tail = service.log()[-6000:]


async def scenario(args: dict[str, Any]) -> dict[str, Any]:
    page_dir = BENCH_PAGES if (BENCH_PAGES / args["page"]).exists() else PAGES
    async with served_frame(page_dir, args["page"], args.get("size", [640, 400, 1])) as served:
        service, frame_id = served.service, served.frame_id
        readers: list[Reader] = []
        tasks: list[asyncio.Task[None]] = []
        try:
            for spec in args["viewers"]:
                reader = await open_reader(service, spec["name"], spec.get("port"))
                reader.decode = bool(spec.get("decode"))
                readers.append(reader)
                tasks.append(asyncio.create_task(reader.read()))
                await reader.ws.send(json.dumps({"type": "watch", "frame": frame_id}))
            for reader in readers:
                await asyncio.wait_for(reader.keyed.wait(), 60.0)
            await asyncio.sleep(float(args.get("warm", 2.0)))  # past the first keyframe's own transfer
            before = await asyncio.to_thread(frame_metrics, service, frame_id)
            t0 = time.time_ns() // 1000
            await asyncio.sleep(float(args["seconds"]))
            t1 = time.time_ns() // 1000
            after = await asyncio.to_thread(frame_metrics, service, frame_id)
        finally:
            for reader in readers:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(reader.ws.close(), 5.0)
            for task in tasks:
                task.cancel()
    log_tail = served.log_tail
    links = {spec["name"]: spec.get("link_kbit") for spec in args["viewers"]}
    stalled = after.get("framestream_pictures_total", 0) == before.get("framestream_pictures_total", 0)
    return {
        **({"service_log_tail": log_tail} if stalled else {}),  # a frame that made nothing: why, for the report
        "viewers": {r.name: summary(r.records, t0, t1, links[r.name]) | {"light_sizes": sorted(r.light_sizes)}
                    for r in readers},
        "frame": {"pictures": after.get("framestream_pictures_total", 0) - before.get("framestream_pictures_total", 0),
                  "skips": after.get("framestream_viewer_skips_total", 0),
                  "skips_in_window": after.get("framestream_viewer_skips_total", 0)
                  - before.get("framestream_viewer_skips_total", 0),
                  "slow_viewers": after.get("framestream_slow_viewers", 0),
                  "light_pictures": after.get("framestream_light_pictures_total", 0)
                  - before.get("framestream_light_pictures_total", 0),
                  "light_kbps": after.get("framestream_light_kbps", 0)},
    }


def main() -> None:
    args = json.loads(sys.argv[1])
    print(json.dumps(asyncio.run(scenario(args))), flush=True)


if __name__ == "__main__":
    main()
