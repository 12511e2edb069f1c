"""The frame's own access units as a WebRTC video track: aiortc packetizes them (`H264Encoder.pack`).

The track reads a private `Outbox` that a `Viewer` fills, so a WebRTC viewer is just another consumer of the
frame's `FrameFeed`: it starts at a keyframe, and its link's rate chooses between the frame's full and light
streams as for a WebSocket viewer. Here that rate is the receiver's own estimate (REMB, peer.py): aiortc hands
each access unit's packets to a UDP socket at once, so how long that took (what the track reports as the
message's send, `Outbox.sent`) is aiortc's pace, not the link's. It is still reported, and not only before the
first REMB: it is what tells the outbox the message has left (without it the outbox would count the message as
still draining at the estimated rate and drop every picture after), and it only stands for the link while no
fresh estimate does (`LinkMeter.rate` prefers the estimate), where it reads as a fast link: the full stream.
"""

from __future__ import annotations

import fractions
import time
from typing import Any

import av
from aiortc.mediastreams import MediaStreamError, MediaStreamTrack

from framestream.core.wire import KIND_VIDEO, VIDEO_HEADER, unpack_video_header
from framestream.fanout.outbox import Outbox

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
            # aiortc asks for the next one once the last went out as RTP: it has left (see the module's doc).
            size, since = self._handed
            self.outbox.sent(size, time.monotonic() - since)
        while True:
            item = await self.outbox.next()
            if not isinstance(item, bytes):  # closed (None); the outbox holds nothing but video and padding
                raise MediaStreamError
            header = unpack_video_header(item[:VIDEO_HEADER.size])
            if header.kind == KIND_VIDEO:
                break
            # A probe's padding (link.py): it tests a WebSocket's link. It may be queued here only when the
            # receiver's estimate went stale while slow; it is not RTP's to carry, so it counts as gone at once.
            self.outbox.sent(len(item), 0.0)
        packet = av.Packet(item[VIDEO_HEADER.size:])
        packet.pts = header.capture_us
        packet.time_base = MICROSECONDS
        self.packets += 1
        self._handed = (len(item), time.monotonic())
        return packet

    def stop(self) -> None:
        self.outbox.close()
        super().stop()
