"""When a message has really left for the viewer: the writer's clock for the link's drain rate.

`send_bytes` returns once the bytes are in the transport or the kernel's send buffer, which on loopback grows to
megabytes (seconds of a slow link). So after each message the writer waits until what the transport and the
kernel still hold for the connection (SIOCOUTQ: not yet sent or not yet acknowledged by the viewer's side) is
at most about 50 ms of the link. The queue then stays in the `Outbox`, where a viewer that falls behind can skip
to a keyframe, and the bytes acknowledged over the time the wait took measure the link.
"""

from __future__ import annotations

import asyncio
import fcntl
import socket
import sys
import time
from collections.abc import Awaitable
from typing import cast

SIOCOUTQ = 0x5411  # linux/sockios.h (= TIOCOUTQ): bytes in a TCP socket's send queue, unsent or unacknowledged
POLL_MIN_S = 0.002
POLL_MAX_S = 0.02
IN_NETWORK_S = 0.05  # what may stay in the network below us, in seconds of the measured link
IN_NETWORK_MIN, IN_NETWORK_MAX, IN_NETWORK_UNMEASURED = 4096, 256 * 1024, 64 * 1024


def writable(transport: asyncio.BaseTransport | None) -> asyncio.WriteTransport | None:
    """`transport` as the writing transport it is, else None. By what it does: uvloop's transports (the service's
    loop) derive from no asyncio class, so `isinstance(..., asyncio.WriteTransport)` is False for them, and the bytes
    held in their buffer went uncounted."""
    if transport is not None and all(hasattr(transport, name) for name in ("write", "get_write_buffer_size")):
        return cast(asyncio.WriteTransport, transport)
    return None


class SendQueue:
    """What one connection's transport and kernel still hold, unsent or unacknowledged by the viewer's side.

    Read twice a message, so the socket is looked up once: through the transport each read cost 3.5 µs (its
    family is an enum made anew each time), 1,500 messages a second for 50 viewers at 30 fps."""

    def __init__(self, transport: asyncio.BaseTransport | None) -> None:
        self._transport = writable(transport)
        self._fd = -1  # the TCP socket's; -1: not TCP (a Unix socket has no such queue), or unknown
        self._answer = bytearray(4)
        sock = None if transport is None else transport.get_extra_info("socket")
        try:
            if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
                self._fd = sock.fileno()
        except (OSError, AttributeError, ValueError):
            pass

    def unacknowledged(self) -> int:
        """Bytes written to the transport that the viewer's side has not acknowledged yet (0 once closing: the
        fd is then no longer this connection's to read)."""
        transport = self._transport
        if transport is None or transport.is_closing():
            return 0
        buffered = transport.get_write_buffer_size()
        if self._fd < 0:
            return buffered
        try:
            fcntl.ioctl(self._fd, SIOCOUTQ, self._answer, True)
        except OSError:
            return buffered
        return buffered + int.from_bytes(self._answer, sys.byteorder, signed=True)


def in_network_allowance(rate: float | None, size: int) -> int:
    """What may stay unacknowledged when the writer moves on: about 50 ms of the link, but at most half of the
    message just written (at least 4 KiB), so every message past 8 KiB has its tail timed: small pictures (a
    light stream's) still measure the link, instead of being absorbed by an allowance an earlier, larger
    estimate made large."""
    if rate is None:
        return IN_NETWORK_UNMEASURED
    return int(max(IN_NETWORK_MIN, min(IN_NETWORK_MAX, rate * IN_NETWORK_S, size // 2)))


async def timed_send(queue: SendQueue, rate: float | None, size: int,
                     send: Awaitable[None]) -> tuple[int, float, bool]:
    """Await `send` (a message of `size` bytes), then until at most `in_network_allowance` of what was written
    is left unacknowledged. Returns the bytes acknowledged meanwhile, the link's busy time (the seconds it all took
    when the link held the message back: it had to wait, so the link and not the sender set the pace; 0.0 when it
    took the message at once) and whether it held it back. Polls with a step from what is left at `rate`: one check
    on a fast link."""
    started = time.monotonic()
    before = queue.unacknowledged()
    await send
    allowance = in_network_allowance(rate, size)
    held = False
    while (left := queue.unacknowledged()) > allowance:
        held = True
        step = POLL_MAX_S if not rate else (left - allowance) / rate
        await asyncio.sleep(min(POLL_MAX_S, max(POLL_MIN_S, step)))
    # A message the link took at once: the time its send took was the sender's, not the link's, so it reads as
    # instant. On a loaded machine a 300-byte message whose send was preempted for 40 ms read a loopback link as
    # 57 kbit/s, and its viewer took the light stream.
    busy = time.monotonic() - started if held else 0.0
    return max(0, before + size - left), busy, held
