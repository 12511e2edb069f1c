"""A message written to a viewer's socket as soon as it is made, when nothing waits ahead of it and the link takes it.

Each connection's writer task (server/ws.py) takes messages from its outbox, sends each and waits on its tail
(server/drain.py). For a picture that the link takes at once, that costs a wake of the task, the outbox's hand-over
and two coroutines, for every viewer of every picture (docs/architecture.md has the figures). So when the outbox is
idle (nothing queued or in flight) and the message fits in what may stay in the network (`in_network_allowance`,
counting what is still unacknowledged ahead of it), `AtOnce` writes it from the caller, as one WebSocket frame, and
reports what the link acknowledged: what the writer would have found, without waiting. Anything larger (a large
keyframe), or a link still holding what was sent before, goes through the writer as ever.

aiohttp writes a frame synchronously too, but only from a coroutine; this writes the same bytes (RFC 6455 §5.2: a
server's frames are unmasked, and the connection takes no compression, `compress=False`) and, like aiohttp, as
one `transport.write`, so no frame can be split by another.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from framestream.server.drain import SendQueue, in_network_allowance, writable

OPCODE_TEXT, OPCODE_BINARY = 0x1, 0x2
_FIN = 0x80


def frame_header(opcode: int, length: int) -> bytes:
    """The header of an unmasked, final WebSocket frame of `length` payload bytes (RFC 6455 §5.2)."""
    if length < 0 or length >= 1 << 63:
        raise ValueError(f"a frame's payload is 0 to 2**63 - 1 bytes, not {length}")
    if length < 126:
        return bytes((_FIN | opcode, length))
    if length < 1 << 16:
        return bytes((_FIN | opcode, 126)) + length.to_bytes(2, "big")
    return bytes((_FIN | opcode, 127)) + length.to_bytes(8, "big")


class AtOnce:
    """One connection's writes that need no wait: `__call__` is the outbox's `send_at_once`."""

    def __init__(self, transport: asyncio.BaseTransport | None, closed: Callable[[], bool],
                 rate: Callable[[], float | None]) -> None:
        self._transport = writable(transport)
        self._closed = closed  # the WebSocket's close has begun: no data frame may follow its close frame
        self._rate = rate  # the link's measured rate (bytes/s), for the allowance
        self.queue = SendQueue(transport)

    def __call__(self, payload: str | bytes) -> int | None:
        """Write `payload` now and return the bytes the link acknowledged meanwhile; None (nothing written) when
        it must go through the writer: the connection is closing, or the link may hold it back."""
        transport = self._transport
        if transport is None or transport.is_closing() or self._closed():
            return None
        size = len(payload)  # as the writer counts it (server/ws.py)
        before = self.queue.unacknowledged()
        if before + size > in_network_allowance(self._rate(), size):
            return None
        if isinstance(payload, str):
            data, opcode = payload.encode(), OPCODE_TEXT
        else:
            data, opcode = payload, OPCODE_BINARY
        try:
            transport.write(frame_header(opcode, len(data)) + data)
        except Exception:  # what one transport raises is its connection's alone: raised here, it would end the
            return None  # frame's fan-out to every viewer; the writer sends the message instead and meets it there
        return max(0, before + size - self.queue.unacknowledged())
