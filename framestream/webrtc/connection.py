"""The peer connections of one viewer connection, one per frame it watches over WebRTC (the glue's side).

The session (server/session.py) decides what is watched how; this creates a frame's peer when the glue starts
watching it, answers the offer, waits for trouble and closes the peer when the frame is unwatched or the socket
goes. aiortc is imported here, on the first offer, never by an idle service.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Protocol

from framestream.core.errors import ProtocolError
from framestream.core.wire import IceCandidate, webrtc_answer
from framestream.fanout.outbox import Outbox
from framestream.webrtc.registry import PeerRegistry
from framestream.webrtc.sdp import profile_level_id

if TYPE_CHECKING:
    from framestream.service.config import FrameSize, Settings
    from framestream.webrtc.peer import Peer

log = logging.getLogger(__name__)


class _Watching(Protocol):
    @property
    def outbox(self) -> Outbox: ...

    @property
    def light(self) -> bool: ...


class _Feed(Protocol):
    @property
    def viewers(self) -> Collection[_Watching]: ...


class PeerFrame(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def size(self) -> FrameSize: ...

    @property
    def feed(self) -> _Feed: ...

    def request_keyframe(self) -> None: ...

    def request_light_keyframe(self) -> None: ...


class ConnectionPeers:
    def __init__(self, settings: Settings, registry: PeerRegistry, conn: int) -> None:
        self._settings = settings
        self._registry = registry
        self._conn = conn
        self._peers: dict[str, Peer] = {}
        self._installed = False

    def create(self, frame: PeerFrame) -> Outbox:
        """A new peer for `frame` (replacing none: the session unwatched first); its outbox feeds the track."""
        from framestream.webrtc.ice import offer_only
        from framestream.webrtc.peer import Peer

        offer_only(self._settings.ice_hosts)
        outbox = Outbox()

        def keyframe_requested() -> None:
            # A PLI or FIR asks for a keyframe of the stream this viewer takes: the light stream's for a slow
            # one (a full-stream IDR would not reach it, and would cost every other viewer an IDR).
            if any(v.light for v in frame.feed.viewers if v.outbox is outbox):
                frame.request_light_keyframe()
            else:
                frame.request_keyframe()

        peer = Peer(frame.id, servers=self._settings.ice_servers, ice_timeout_s=self._settings.ice_timeout_s,
                    on_keyframe_request=keyframe_requested, outbox=outbox)
        self._peers[frame.id] = peer
        return peer.outbox

    async def run(self, frame: PeerFrame, codec: str | None, offer: str, send: Callable[[str], None],
                  ) -> ProtocolError | str | None:
        """Answer `offer` (`send` takes the answer) and watch the peer: how it ended, for the session's
        `peer_ended` (an error: refused; a reason: failed or stalled), or None when closed by `stop`."""
        from framestream.webrtc.peer import PeerError

        peer = self._peers.get(frame.id)
        if peer is None:
            return None
        self._registry.offers += 1
        if self._registry.full():
            self._registry.refuse("capacity")
            return ProtocolError("capacity", f"at most {self._registry.limit} WebRTC peer connections")
        mine = sum(p in self._registry.open for p in self._peers.values())
        if mine >= self._settings.max_peers_per_connection:
            self._registry.refuse("capacity")
            return ProtocolError("capacity", f"at most {self._settings.max_peers_per_connection} WebRTC peer "
                                 "connections a viewer connection (FRAMESTREAM_MAX_PEERS_PER_CONNECTION)")
        self._registry.add(peer)
        size = frame.size
        try:
            answer = await peer.answer(offer, profile_level_id(codec, size.width, size.height, self._settings.fps))
        except PeerError as exc:
            self._registry.refuse("bad-message")
            self._registry.open.discard(peer)
            return ProtocolError("bad-message", str(exc))
        send(webrtc_answer(frame.id, answer))
        log.info("webrtc peer answered", extra={"conn": self._conn, "frame": frame.id})
        trouble = await peer.wait_trouble()
        if trouble is not None:
            peer.trouble = trouble
            log.info("webrtc peer %s", trouble, extra={"conn": self._conn, "frame": frame.id})
        return trouble

    def current(self, frame_id: str) -> Peer | None:
        return self._peers.get(frame_id)

    async def add_candidate(self, frame_id: str, candidate: IceCandidate) -> ProtocolError | None:
        from framestream.webrtc.peer import PeerError

        peer = self._peers.get(frame_id)
        if peer is None:
            return None
        try:
            await peer.add_candidate(candidate)
        except PeerError as exc:
            return ProtocolError("bad-message", str(exc), frame=frame_id)
        return None

    async def stop(self, frame_id: str) -> None:
        peer = self._peers.pop(frame_id, None)
        if peer is None:
            return
        await peer.close()
        self._registry.discard(peer, peer.trouble or "closed")
