"""When a message has really left a connection's socket: the writer's clock for the link's drain rate.

`send_bytes` returns once the bytes are in the transport or the kernel's send buffer, which on loopback grows to
megabytes (seconds of a slow link). So after each message the writer waits until neither the transport's buffer
nor the kernel (SIOCOUTQNSD: bytes not yet sent) holds any of it. What is queued then stays in the `Outbox`,
where a viewer that falls behind can skip to a keyframe, and the time the wait took measures the link.
"""

from __future__ import annotations

import asyncio
import fcntl
import socket
import struct
import time
from typing import Any

SIOCOUTQNSD = 0x894B  # linux/sockios.h: bytes in a TCP socket's send queue not yet sent
POLL_MIN_S = 0.002
POLL_MAX_S = 0.02


def unsent_bytes(sock: Any) -> int:
    """Bytes the kernel holds for `sock` that have not gone out yet (0 when it cannot tell)."""
    try:
        if sock is None or sock.family not in (socket.AF_INET, socket.AF_INET6):
            return 0
        raw = fcntl.ioctl(sock.fileno(), SIOCOUTQNSD, b"\0\0\0\0")
    except (OSError, AttributeError, ValueError):
        return 0
    return int(struct.unpack("i", raw)[0])


def pending_bytes(transport: asyncio.BaseTransport | None) -> int:
    """Bytes written to `transport` that have not left the machine's socket yet."""
    if transport is None or transport.is_closing():
        return 0
    buffered = transport.get_write_buffer_size() if isinstance(transport, asyncio.WriteTransport) else 0
    return buffered + unsent_bytes(transport.get_extra_info("socket"))


async def wait_drained(transport: asyncio.BaseTransport | None, rate: float | None) -> float:
    """Wait until nothing written to `transport` is left unsent; the seconds it took. Polls with a step
    from what is left at `rate` (bytes/s), so a fast link costs one check and a slow one a few a picture."""
    started = time.monotonic()
    while (left := pending_bytes(transport)) > 0:
        step = POLL_MAX_S if not rate else left / rate
        await asyncio.sleep(min(POLL_MAX_S, max(POLL_MIN_S, step)))
    return time.monotonic() - started

