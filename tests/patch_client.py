"""A patch-aware viewer for tests: asks for `patches` (and `copies`) in hello and composes H.264 pictures, PNG
patches and copies into one RGB picture, in sequence order, the way a viewer's canvas does."""

from __future__ import annotations

import time
import urllib.request
from dataclasses import dataclass
from typing import Any

import av
import cv2
import numpy as np
import websockets

from framestream.core.wire import (
    FORMAT_COPY,
    FORMAT_PNG,
    KIND_PATCH,
    KIND_VIDEO,
    PatchRect,
    VideoFlags,
    unpack_patch_payload,
    unpack_video_header,
)
from tests.support import Service, StreamClient


@dataclass
class Message(VideoFlags):
    kind: int
    flags: int
    slot: int
    sequence: int
    capture_us: int
    payload: bytes
    received_at: float
    composed_at: float = 0.0  # when it was drawn into `canvas` (0: not drawn)

    @property
    def patch(self) -> bool:
        return self.kind == KIND_PATCH


def png_rgb(png: bytes) -> np.ndarray:
    # OpenCV's libpng: the same pixels as PyAV's decoder, ten times faster on a patch (0.04 against 0.4-0.7 ms),
    # which the latency benchmark would otherwise count as the viewer's.
    bgr = cv2.imdecode(np.frombuffer(png, np.uint8), cv2.IMREAD_COLOR)
    if bgr is None:
        raise ValueError(f"not a PNG OpenCV decodes ({len(png)} bytes)")
    return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)


class PatchClient(StreamClient):
    """One connection asking for patches (`connect(..., features=["patches"])`); `canvas` is the composed picture
    (None until the first keyframe). Closed by the tests' `close_stream_clients` fixture like any StreamClient."""

    def __init__(self, ws: websockets.ClientConnection) -> None:
        super().__init__(ws)
        self.messages: list[Message] = []
        self.canvas: np.ndarray | None = None
        self.patched: np.ndarray | None = None  # where patches drew since the last video picture
        self._decoder = av.CodecContext.create("h264", "r")
        self._last_sequence: int | None = None
        self.gaps = 0
        self.copies = 0  # copy rectangles drawn (a scroll)

    def _binary(self, raw: bytes) -> Message:
        h = unpack_video_header(raw)
        msg = Message(h.kind, h.flags, h.slot, h.sequence, h.capture_us, bytes(raw[16:]), time.monotonic())
        self.messages.append(msg)
        self._apply(msg)
        return msg

    def _apply(self, msg: Message) -> None:
        """Compose like a viewer: video from a keyframe on; a patch only right after the picture before it."""
        follows = self._last_sequence is not None and msg.sequence == (self._last_sequence + 1) & 0xFFFFFFFF
        if not msg.keyframe and not follows:
            if self._last_sequence is not None:
                self.gaps += 1
            self._last_sequence = None  # wait for a keyframe
            return
        self._last_sequence = msg.sequence
        if msg.kind == KIND_VIDEO:
            frames = self._decoder.decode(av.Packet(msg.payload))
            if frames:
                self.canvas = np.asarray(frames[-1].to_ndarray(format="rgb24")).copy()
                self.patched = np.zeros(self.canvas.shape[:2], bool)
                msg.composed_at = time.monotonic()
            return
        assert msg.kind == KIND_PATCH, msg.kind
        assert self.canvas is not None and self.patched is not None
        for rect in unpack_patch_payload(msg.payload):
            self.draw(rect)
        msg.composed_at = time.monotonic()

    def draw(self, rect: PatchRect) -> None:
        assert self.canvas is not None and self.patched is not None
        if rect.format == FORMAT_COPY:  # (the message's first rectangle: the canvas is still the picture before)
            (sx, sy), w, h = rect.source, rect.width, rect.height
            self.copies += 1
            for plane in (self.canvas, self.patched):  # exact where its source was
                plane[rect.y : rect.y + h, rect.x : rect.x + w] = plane[sy : sy + h, sx : sx + w]
            return
        assert rect.format == FORMAT_PNG
        image = png_rgb(rect.data)
        assert image.shape == (rect.height, rect.width, 3), (image.shape, rect)
        self.canvas[rect.y : rect.y + rect.height, rect.x : rect.x + rect.width] = image
        self.patched[rect.y : rect.y + rect.height, rect.x : rect.x + rect.width] = True

    async def next_message(self, timeout: float = 15.0) -> Message:
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            msg = await self.receive(left)
            if isinstance(msg, Message):
                return msg
        raise AssertionError(f"no binary message within {timeout} s; texts {self.texts[-5:]}")

    async def watch(self, frame_id: str) -> dict[str, Any]:
        await self.send({"type": "watch", "frame": frame_id})
        return await self.next_text("video-config", timeout=30.0)


def screenshot_rgb(service: Service, frame_id: str) -> tuple[np.ndarray, int]:
    """GET /frames/{id}/screenshot as RGB, with its capture time."""
    req = urllib.request.Request(f"{service.base}/frames/{frame_id}/screenshot",
                                 headers={"Authorization": f"Bearer {service.token('view')}"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return png_rgb(resp.read()), int(resp.headers["X-Capture-Time-Us"])
