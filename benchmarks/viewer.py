"""A benchmark viewer: `tests.support.StreamClient` that keeps a light record of every picture it reads.

It records, per video message, (sequence, flags, capture_us, size, receive wall time in µs) and keeps payloads
only when asked (`keep=True`), so fifty viewers reading for ten seconds stay small. `pump()` reads everything
until stopped. Decoding goes through PyAV like the tests; `to_rgb` converts with the matrix and range the stream
declares (BT.709, limited range).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import statistics
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import av
import numpy as np
import websockets
from av.video.reformatter import ColorRange

from framestream.client.pictures import signalled_matrix
from framestream.core.wire import VideoFlags, unpack_video_header
from tests.support import Service, StreamClient, VideoMessage


@dataclass(frozen=True, slots=True)
class Rec(VideoFlags):
    seq: int
    flags: int
    slot: int
    capture_us: int
    size: int
    recv_us: int


class Viewer(StreamClient):
    keep: bool = False

    def __init__(self, ws: Any) -> None:
        super().__init__(ws)
        self.recs: list[Rec] = []
        self._pump: asyncio.Task[None] | None = None
        self._decoder: Decoder | None = None
        self._decoded = 0  # index in `videos` of the next message to decode
        self._seen_key = False

    @classmethod
    async def open(cls, service: Service, *, keep: bool = False, token: str | None = None) -> Viewer:
        client = await cls.connect(service, token=token, max_queue=None)
        assert isinstance(client, Viewer)
        client.keep = keep
        return client

    async def receive(self, timeout: float) -> dict[str, Any] | VideoMessage | None:
        try:
            raw = await asyncio.wait_for(self.ws.recv(), timeout)
        except TimeoutError:
            return None
        return self._handle(raw)

    def _handle(self, raw: str | bytes) -> dict[str, Any] | VideoMessage:
        if isinstance(raw, str):
            msg: dict[str, Any] = json.loads(raw)
            self.texts.append(msg)
            return msg
        recv_us = time.time_ns() // 1000
        h = unpack_video_header(raw)
        self.recs.append(Rec(h.sequence, h.flags, h.slot, h.capture_us, len(raw), recv_us))
        video = VideoMessage(h.flags, h.slot, h.sequence, h.capture_us, raw[16:] if self.keep else b"",
                             time.monotonic())
        if self.keep:
            self.videos.append(video)
        return video

    def start_pump(self) -> None:
        """Read everything in the background (no decoding) until `stop_pump` or the connection ends."""

        async def pump() -> None:
            with contextlib.suppress(websockets.ConnectionClosed):
                while True:
                    self._handle(await self.ws.recv())

        self._pump = asyncio.create_task(pump())

    async def stop_pump(self) -> None:
        if self._pump is not None:
            await settle(self._pump)
            self._pump = None

    async def wait_keyframe(self, timeout: float = 30.0, *, since: int = 0) -> Rec:
        """The first keyframe among the records from index `since` on (by default, any received so far)."""
        deadline = time.monotonic() + timeout
        start = since
        while True:
            for rec in self.recs[start:]:
                if rec.keyframe:
                    return rec
            start = max(start, len(self.recs))
            if time.monotonic() >= deadline:
                raise TimeoutError(f"no keyframe within {timeout} s")
            if self._pump is None:
                await self.receive(min(0.5, max(0.01, deadline - time.monotonic())))
            else:
                await asyncio.sleep(0.01)

    def decoded(self) -> Iterator[tuple[VideoMessage, np.ndarray | None]]:
        """Every kept video message not decoded yet, in order from the first keyframe on, with its picture (None
        when the decoder gave none for it)."""
        if self._decoder is None:
            self._decoder = Decoder()
        while self._decoded < len(self.videos):
            video = self.videos[self._decoded]
            self._decoded += 1
            self._seen_key = self._seen_key or video.keyframe
            if self._seen_key:
                yield video, self._decoder.decode(video.payload)

    def forget_decoded(self) -> None:
        """Drop the decoded messages (keeps memory flat over a long run)."""
        del self.videos[: self._decoded]
        self._decoded = 0

    async def close(self) -> None:
        await self.stop_pump()
        await settle(asyncio.ensure_future(self.ws.close()), cancel=False, timeout=5.0)


async def settle(task: asyncio.Future[Any], *, cancel: bool = True, timeout: float = 3.0) -> None:
    """End a background task without ever waiting on it forever (and without hiding our own cancellation:
    `asyncio.wait` never raises the task's exception or swallows a cancel aimed at the caller)."""
    if cancel:
        task.cancel()
    await asyncio.wait({task}, timeout=timeout)
    if task.done() and not task.cancelled():
        task.exception()  # retrieved, so asyncio does not log it as never retrieved


def to_rgb(frame: av.VideoFrame) -> np.ndarray:
    """A decoded picture as RGB, converted back with the limited-range matrix the stream signals."""
    return frame.to_ndarray(format="rgb24", src_colorspace=signalled_matrix(frame), src_color_range=ColorRange.MPEG,
                            dst_color_range=ColorRange.JPEG)


class Decoder:
    def __init__(self) -> None:
        self.ctx = av.CodecContext.create("h264", "r")

    def decode(self, payload: bytes) -> np.ndarray | None:
        frames = self.ctx.decode(av.Packet(payload))
        return to_rgb(frames[-1]) if frames else None


def window_stats(recs: list[Rec], t0_us: int, t1_us: int) -> dict[str, Any]:
    """Delivered fps, drop-free rate, kbit/s and capture-to-receive of the pictures received in [t0, t1)."""
    inside = [r for r in recs if t0_us <= r.recv_us < t1_us]
    seconds = max(1e-6, (t1_us - t0_us) / 1e6)
    pairs = list(itertools.pairwise(inside))
    gaps = sum(1 for a, b in pairs if (b.seq - a.seq) & 0xFFFFFFFF != 1)
    latency_ms = sorted((r.recv_us - r.capture_us) / 1000 for r in inside if not r.refinement)
    return {
        "pictures": len(inside),
        "fps": round(len(inside) / seconds, 2),
        "drop_free": round(1 - gaps / len(pairs), 4) if pairs else None,
        "kbps": round(sum(r.size for r in inside) * 8 / seconds / 1000, 1),
        "keyframes": sum(1 for r in inside if r.keyframe),
        "capture_to_recv_ms": percentiles(latency_ms),
    }


def percentiles(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    ordered = sorted(values)

    def pick(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)

    return {"p50": round(statistics.median(ordered), 2), "p95": pick(0.95), "max": round(ordered[-1], 2),
            "n": len(ordered)}
