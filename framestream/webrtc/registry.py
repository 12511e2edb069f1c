"""Every peer connection of the service: the cap, and what /metrics counts (no aiortc import)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, Protocol

CLOSE_REASONS: Final = ("closed", "failed", "stalled")  # closed: by the viewer (unwatch, socket) or shutdown


class CountedPeer(Protocol):
    @property
    def packets(self) -> int: ...

    @property
    def rembs(self) -> int: ...


@dataclass(eq=False)
class PeerRegistry:
    limit: int = 32
    open: set[CountedPeer] = field(default_factory=set)
    offers: int = 0  # answered, refused or not
    refused: dict[str, int] = field(default_factory=dict)  # offers refused, by error code
    closed: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CLOSE_REASONS, 0))
    packets: int = 0  # access units handed to aiortc by closed peers (open ones are summed when scraped)
    rembs: int = 0  # REMB estimates received by closed peers

    def full(self) -> bool:
        return len(self.open) >= self.limit

    def refuse(self, code: str) -> None:
        self.refused[code] = self.refused.get(code, 0) + 1

    def add(self, peer: CountedPeer) -> None:
        self.open.add(peer)

    def discard(self, peer: CountedPeer, reason: str) -> None:
        if peer in self.open:
            self.open.discard(peer)
            self.closed[reason] += 1
            self.packets += peer.packets
            self.rembs += peer.rembs
