"""What every request handler shares: settings, the signing key, frames, and the replay guard."""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Any

from framestream.core.admission import Admission
from framestream.core.control import ReplayGuard
from framestream.core.errors import ProtocolError, TokenError
from framestream.core.tokens import Claims, derive_key, verify
from framestream.frames.manager import FrameManager
from framestream.service.config import Settings
from framestream.webrtc.registry import PeerRegistry


@dataclass(eq=False)
class ServiceContext:
    settings: Settings
    manager: FrameManager
    key: bytes = b""
    replay: ReplayGuard = field(default_factory=ReplayGuard)
    connections: set[Any] = field(default_factory=set)  # every viewer socket, welcomed or not
    admission: Admission[Any] = field(init=False)  # which of them count, and which must make room
    started_at: float = field(default_factory=time.time)
    bytes_sent_closed: int = 0  # by connections that have ended; live ones are summed when scraped
    inputs_applied: int = 0
    inputs_refused: dict[str, int] = field(default_factory=dict)
    connection_numbers: itertools.count[int] = field(default_factory=lambda: itertools.count(1))  # for logs
    peers: PeerRegistry = field(default_factory=PeerRegistry)  # WebRTC peer connections

    def __post_init__(self) -> None:
        self.key = derive_key(self.settings.secret, self.settings.sandbox_id)
        self.peers.limit = self.settings.max_peer_connections
        s = self.settings
        self.admission = Admission(s.max_connections, s.max_pending_connections, s.max_pending_per_address)

    def verify_drive(self, grant: str, frame_id: str) -> Claims:
        """Claims of a grant that may drive `frame_id`; ProtocolError (`unauthorized`, `expired`, `forbidden`)."""
        try:
            claims = self.verify(grant)
        except TokenError as exc:
            raise ProtocolError(exc.code, exc.message, frame=frame_id) from exc
        if not claims.allows("drive", frame_id):
            raise ProtocolError("forbidden", "this grant may not drive this frame", frame=frame_id)
        return claims

    def verify(self, token: str) -> Claims:
        """Claims of a valid token for this sandbox; raises TokenError (`unauthorized` or `expired`)."""
        return verify(self.key, token, sandbox=self.settings.sandbox_id, now=time.time())
