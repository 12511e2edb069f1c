"""The writer's clock for a link (server/drain.py), over a real loopback TCP connection."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from framestream.server.drain import timed_send

Reader = Callable[[asyncio.StreamReader], Awaitable[None]]
Connect = Callable[[Reader], Awaitable[asyncio.StreamWriter]]


@pytest.fixture
async def connect() -> AsyncIterator[Connect]:
    """A connection to a loopback server whose reading side does what the test says."""
    servers: list[asyncio.Server] = []
    writers: list[asyncio.StreamWriter] = []

    async def connect(read: Reader) -> asyncio.StreamWriter:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await read(reader)
            writer.close()

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        servers.append(server)
        _, writer = await asyncio.open_connection("127.0.0.1", server.sockets[0].getsockname()[1])
        writers.append(writer)
        return writer

    yield connect
    for writer in writers:
        writer.close()
    for server in servers:
        server.close()
        await server.wait_closed()


async def read_all(reader: asyncio.StreamReader) -> None:
    while await reader.read(1 << 20):
        pass


async def test_a_message_the_link_took_at_once_reads_as_instant_however_long_its_send_took(connect: Connect) -> None:
    # A loaded machine preempts the sender: 300 bytes whose send took 40 ms read a loopback link as 57 kbit/s.
    writer = await connect(read_all)

    async def preempted_send() -> None:
        writer.write(b"x" * 300)
        await asyncio.sleep(0.05)

    delivered, busy, held = await timed_send(writer.transport, None, 300, preempted_send())
    assert (delivered, busy, held) == (300, 0.0, False)


async def test_a_message_the_link_held_back_is_timed_until_it_left(connect: Connect) -> None:
    started = asyncio.Event()

    async def read_late(reader: asyncio.StreamReader) -> None:
        await started.wait()
        await asyncio.sleep(0.2)  # a viewer that reads only after 200 ms: the link is what waits
        await read_all(reader)

    writer = await connect(read_late)
    size = 32 << 20  # past what loopback's socket buffers hold

    async def send() -> None:
        started.set()
        writer.write(b"x" * size)
        await writer.drain()

    delivered, busy, held = await timed_send(writer.transport, None, size, send())
    assert held and busy >= 0.2 and delivered > 0
