"""Which viewer connections may stay: the rule, without sockets (issue 32, #8).

Only welcomed connections count against `max_open` (FRAMESTREAM_MAX_CONNECTIONS): sockets that never send
`hello` must not lock viewers out. Connections still waiting for `hello` have a small cap of their own
(`max_pending`) and one per address (`max_pending_per_address`; IPv6 addresses count by their /64, which one
host usually holds whole). At either cap the OLDEST waiting connection makes room for the new one: a real viewer
says hello within a round trip, so it is never the oldest for long, while sockets that stay silent are the first
to go. Silence is also ended by the hello deadline (FRAMESTREAM_HELLO_TIMEOUT_S).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


def address_group(address: str | None) -> str:
    """What counts as one address for the per-address cap: the IPv4 address, an IPv6 address's /64."""
    if not address:
        return ""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((int(ip) >> 64 << 64, 64)))
    return str(ip)


class Admission(Generic[K]):
    """Connections waiting for hello (pending) and welcomed ones (open), by a key the caller chooses."""

    def __init__(self, max_open: int, max_pending: int, max_pending_per_address: int) -> None:
        self.max_open = max_open
        self.max_pending = max(1, max_pending)
        self.max_pending_per_address = max(1, max_pending_per_address)
        self._pending: dict[K, str] = {}  # in arrival order: the first is the oldest
        self._by_address: dict[str, dict[K, None]] = {}
        self._open: set[K] = set()

    @property
    def pending(self) -> int:
        return len(self._pending)

    @property
    def open(self) -> int:
        return len(self._open)

    def arrive(self, conn: K, address: str | None) -> list[K]:
        """A new connection waits for its hello; returns the waiting connections it displaces (oldest first),
        which the caller closes (4429) and then passes to `leave`."""
        group = address_group(address)
        same = self._by_address.get(group, {})
        evicted: list[K] = []
        if len(same) >= self.max_pending_per_address:
            evicted += list(same)[: len(same) - self.max_pending_per_address + 1]
        for old in evicted:
            self._forget_pending(old)
        overflow = len(self._pending) - self.max_pending + 1
        if overflow > 0:
            oldest = list(self._pending)[:overflow]
            for old in oldest:
                self._forget_pending(old)
            evicted += oldest
        self._pending[conn] = group
        self._by_address.setdefault(group, {})[conn] = None
        return evicted

    def welcome(self, conn: K) -> bool:
        """Its hello was accepted: True when there is room among the open connections (it is counted there
        from now), False when they are full (it stays pending until `leave`) or it was displaced already."""
        if conn in self._open:
            return True
        if conn not in self._pending or len(self._open) >= self.max_open:
            return False
        self._forget_pending(conn)
        self._open.add(conn)
        return True

    def leave(self, conn: K) -> None:
        """The connection ended (or was displaced); nothing happens for one already gone."""
        self._forget_pending(conn)
        self._open.discard(conn)

    def _forget_pending(self, conn: K) -> None:
        group = self._pending.pop(conn, None)
        if group is None:
            return
        same = self._by_address.get(group)
        if same is not None:
            same.pop(conn, None)
            if not same:
                del self._by_address[group]
