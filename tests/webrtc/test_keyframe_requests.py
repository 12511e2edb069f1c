"""A receiver's PLI or FIR asks for a keyframe of the stream its viewer takes: the light stream's while it is
slow (a full-stream IDR would not reach it, and would cost every other viewer of the frame an IDR)."""

from __future__ import annotations

from dataclasses import dataclass, field

from framestream.fanout.outbox import Outbox
from framestream.service.config import FrameSize, load_settings
from framestream.webrtc.connection import ConnectionPeers
from framestream.webrtc.registry import PeerRegistry


@dataclass(eq=False)
class Watching:
    outbox: Outbox
    light: bool = False


@dataclass
class Feed:
    viewers: set[Watching] = field(default_factory=set)


@dataclass
class Frame:
    id: str = "f1"
    size: FrameSize = field(default_factory=lambda: FrameSize(640, 400, 2))
    feed: Feed = field(default_factory=Feed)
    asked: list[str] = field(default_factory=list)

    def request_keyframe(self) -> None:
        self.asked.append("full")

    def request_light_keyframe(self) -> None:
        self.asked.append("light")


async def test_a_pli_asks_the_keyframe_of_the_stream_its_viewer_takes() -> None:
    settings = load_settings({"TERMINAL_AUTH_SECRET": "s" * 32, "FRAMESTREAM_ICE_HOSTS": "127.0.0.1"})
    peers = ConnectionPeers(settings, PeerRegistry(), 1)
    frame = Frame()
    other = Watching(Outbox(), light=True)  # another connection's slow viewer of the same frame
    frame.feed.viewers.add(other)
    viewer = Watching(peers.create(frame))
    frame.feed.viewers.add(viewer)
    peer = peers.current(frame.id)
    assert peer is not None and peer.outbox is viewer.outbox
    peer._keyframe_requested()  # what aiortc's sender calls on a PLI or FIR
    viewer.light = True
    peer._keyframe_requested()
    assert frame.asked == ["full", "light"] and peer.keyframe_requests == 2
    await peers.stop(frame.id)
