"""An aiortc viewer for the tests and benchmarks: signals over the service's WebSocket, receives the frame's
pictures over RTP on loopback, decodes them and can send a PLI.

Only 127.0.0.1 is offered as a host candidate, on both sides: run inside a network namespace that has only
`lo` (tests/netns), so no packet can leave the machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from typing import Any

import numpy as np
import websockets
from aiortc import RTCConfiguration, RTCPeerConnection, RTCSessionDescription
from aiortc.jitterbuffer import JitterBuffer, JitterFrame
from aiortc.mediastreams import MediaStreamError, MediaStreamTrack
from aiortc.rtp import RtpPacket

from framestream.webrtc.ice import offer_only


class MarkerJitterBuffer(JitterBuffer):
    """aiortc's jitter buffer hands a picture on only when the next one starts, so the last picture of a still
    page would never be decoded; a browser completes a picture at its marker bit, and so does this."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.on_frame: Any = None  # called with (RTP timestamp, wall µs) as each picture is complete

    def add(self, packet: RtpPacket) -> tuple[bool, JitterFrame | None]:
        pli, frame = super().add(packet)
        if frame is None and packet.marker:
            frame = self._complete(packet)
        if frame is not None and self.on_frame is not None:
            self.on_frame(frame.timestamp, time.time_ns() // 1000)
        return pli, frame

    def _complete(self, last: RtpPacket) -> JitterFrame | None:
        packets: list[RtpPacket] = []
        for count in range(self.capacity):
            packet = self._packets[(self._origin + count) % self.capacity]  # type: ignore[operator]
            if packet is None or packet.timestamp != last.timestamp:
                return None  # a gap, or an older picture still incomplete: leave it to aiortc
            packets.append(packet)
            if packet is last:
                break
        self.remove(len(packets))
        return JitterFrame(b"".join(p._data for p in packets), last.timestamp)  # type: ignore[attr-defined]


class RtcViewer:
    """One WebSocket connection watching one frame over WebRTC."""

    def __init__(self, ws_url: str, token: str, frame: str) -> None:
        self.ws_url, self.token, self.frame = ws_url, token, frame
        self.ws: Any = None
        self.pc: RTCPeerConnection | None = None
        self.messages: list[dict[str, Any]] = []
        self._message_added = asyncio.Event()
        self.pictures: asyncio.Queue[np.ndarray] = asyncio.Queue()
        self.decoded = 0
        self.keyframes_decoded = 0
        self._tasks: list[asyncio.Task[None]] = []
        self.answer_sdp = ""

    async def connect(self) -> None:
        self.ws = await websockets.connect(self.ws_url, max_size=None)
        await self.ws.send(json.dumps({"type": "hello", "token": self.token}))
        self._tasks.append(asyncio.create_task(self._read()))
        await self.wait_message(lambda m: m["type"] == "welcome")

    async def send(self, message: dict[str, Any]) -> None:
        await self.ws.send(json.dumps(message))

    async def _read(self) -> None:
        with contextlib.suppress(websockets.ConnectionClosed):
            async for raw in self.ws:
                if isinstance(raw, str):
                    self.messages.append(json.loads(raw))
                    self._message_added.set()

    async def wait_message(self, match: Any, timeout: float = 30.0) -> dict[str, Any]:
        async def find() -> dict[str, Any]:
            seen = 0
            while True:
                for message in self.messages[seen:]:
                    if match(message):
                        return message
                seen = len(self.messages)
                self._message_added.clear()
                await self._message_added.wait()
        return await asyncio.wait_for(find(), timeout)

    async def offer(self, sdp_filter: Any = None) -> str:
        """Offer a receive-only video section; the SDP sent (after `sdp_filter`, for tests that break it)."""
        offer_only(("127.0.0.1",))
        self.pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
        transceiver = self.pc.addTransceiver("video", direction="recvonly")
        self.jitter = MarkerJitterBuffer(capacity=512, is_video=True)
        transceiver.receiver._RTCRtpReceiver__jitter_buffer = self.jitter  # type: ignore[attr-defined]
        self.pc.on("track", self._on_track)
        await self.pc.setLocalDescription(await self.pc.createOffer())
        sdp = self.pc.localDescription.sdp
        sdp = sdp_filter(sdp) if sdp_filter else sdp
        await self.send({"type": "webrtc-offer", "frame": self.frame, "sdp": sdp})
        return sdp

    async def accept_answer(self) -> None:
        answer = await self.wait_message(lambda m: m["type"] == "webrtc-answer" and m["frame"] == self.frame)
        self.answer_sdp = answer["sdp"]
        assert self.pc is not None
        await self.pc.setRemoteDescription(RTCSessionDescription(sdp=answer["sdp"], type="answer"))

    def _on_track(self, track: MediaStreamTrack) -> None:
        self._tasks.append(asyncio.create_task(self._receive(track)))

    async def _receive(self, track: MediaStreamTrack) -> None:
        with contextlib.suppress(MediaStreamError):
            while True:
                frame = await track.recv()
                self.decoded += 1
                self.keyframes_decoded += bool(getattr(frame, "key_frame", False))
                await self.pictures.put(frame.to_ndarray(format="rgb24"))  # type: ignore[union-attr]

    async def next_picture(self, timeout: float = 30.0) -> np.ndarray:
        return await asyncio.wait_for(self.pictures.get(), timeout)

    async def send_pli(self) -> None:
        """A Picture Loss Indication from the receiver, as a browser sends when it cannot decode."""
        assert self.pc is not None
        receiver = self.pc.getTransceivers()[0].receiver
        ssrc = next(iter(receiver._RTCRtpReceiver__remote_streams))  # type: ignore[attr-defined]
        await receiver._send_rtcp_pli(ssrc)

    async def close(self) -> None:
        if self.pc is not None:
            await self.pc.close()
        if self.ws is not None:
            await self.ws.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
