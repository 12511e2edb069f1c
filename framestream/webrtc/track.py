"""The frame's own access units as a WebRTC video track: aiortc packetizes them (`H264Encoder.pack`).

The track reads a private `Outbox` that a `Viewer` fills, so a WebRTC viewer is just another consumer of the
frame's `FrameFeed`: it starts at a keyframe, and when RTP falls behind (its outbox over budget) it drops
pictures until the next keyframe, which the feed asks for, as a slow WebSocket viewer does.
"""

from __future__ import annotations

import fractions
import time
from typing import Any

import av
from aiortc.mediastreams import MediaStreamError, MediaStreamTrack

from framestream.core.wire import VIDEO_HEADER, unpack_video_header
from framestream.outbox import Outbox

MICROSECONDS = fractions.Fraction(1, 1_000_000)


class EncodedTrack(MediaStreamTrack):
    """A video track whose `recv()` returns an Annex B `av.Packet` per access unit, stamped with its capture
    time (aiortc turns it into the 90 kHz RTP clock)."""

    kind = "video"

    def __init__(self, outbox: Outbox) -> None:
        super().__init__()
        self.outbox = outbox
        self.packets = 0
        self._handed: tuple[int, float] | None = None  # size of the last access unit handed to aiortc, and when

    async def recv(self) -> av.Packet[Any]:  # pre-encoded: a Packet, not a Frame (aiortc accepts both)
        if self._handed is not None:
            # aiortc asks for the next one once the last went out as RTP: that time is the link's measure.
            size, since = self._handed
            self.outbox.sent(size, time.monotonic() - since)
        item = await self.outbox.next()
        if not isinstance(item, bytes):  # closed (None); the outbox holds nothing but video
            raise MediaStreamError
        header = unpack_video_header(item[:VIDEO_HEADER.size])
        packet = av.Packet(item[VIDEO_HEADER.size:])
        packet.pts = header.capture_us
        packet.time_base = MICROSECONDS
        self.packets += 1
        self._handed = (len(item), time.monotonic())
        return packet

    def stop(self) -> None:
        self.outbox.close()
        super().stop()
