"""The writer's clock for a link (server/drain.py), over a real loopback TCP connection."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
import uvloop

from framestream.server.drain import SendQueue, timed_send, writable

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

    delivered, busy, held = await timed_send(SendQueue(writer.transport), None, 300, preempted_send())
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

    delivered, busy, held = await timed_send(SendQueue(writer.transport), None, size, send())
    assert held and busy >= 0.2 and delivered > 0


async def test_the_send_queue_counts_what_the_viewer_has_not_taken_and_nothing_once_closing(connect: Connect) -> None:
    stop_reading = asyncio.Event()

    async def read_nothing(reader: asyncio.StreamReader) -> None:
        await stop_reading.wait()

    writer = await connect(read_nothing)
    queue = SendQueue(writer.transport)
    assert queue.unacknowledged() == 0
    size = 32 << 20  # more than loopback's socket buffers take: some stays in the transport, some in the kernel
    writer.write(b"x" * size)
    held = queue.unacknowledged()
    assert 0 < held <= size
    assert writer.transport.get_write_buffer_size() < held  # the kernel's share is counted too
    writer.transport.abort()
    assert queue.unacknowledged() == 0  # its fd may be another connection's by the next read
    stop_reading.set()


async def test_a_send_queue_without_a_tcp_socket_counts_the_transport_alone(tmp_path: Path) -> None:
    done, handled = asyncio.Event(), asyncio.Event()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await done.wait()  # reads nothing
        writer.close()
        await writer.wait_closed()
        handled.set()

    path = str(tmp_path / "unix.sock")
    server = await asyncio.start_unix_server(handle, path)
    try:
        _, writer = await asyncio.open_unix_connection(path)
        queue = SendQueue(writer.transport)
        writer.write(b"x" * (32 << 20))
        buffered = writer.transport.get_write_buffer_size()
        assert buffered > 0
        assert queue.unacknowledged() == buffered
        writer.transport.abort()
    finally:
        done.set()
        await handled.wait()
        server.close()
        await server.wait_closed()
    assert SendQueue(None).unacknowledged() == 0


def test_uvloops_transport_is_taken_as_writable_and_its_buffer_counted() -> None:
    # The service runs on uvloop, whose transports derive from no asyncio class: an isinstance check took them for
    # not writable, so their buffer went uncounted (and server/ws.py's abort of a connection that never takes its
    # close frame was skipped).
    async def check() -> None:
        done = asyncio.Event()

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await done.wait()  # reads nothing
            writer.close()

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", server.sockets[0].getsockname()[1])
            assert not isinstance(writer.transport, asyncio.WriteTransport)
            assert writable(writer.transport) is writer.transport
            queue = SendQueue(writer.transport)
            writer.write(b"x" * (32 << 20))
            buffered = writer.transport.get_write_buffer_size()
            assert buffered > 0
            assert queue.unacknowledged() > buffered  # the transport's buffer and the kernel's queue
            writer.transport.abort()
        finally:
            done.set()
            server.close()
            await server.wait_closed()

    uvloop.run(check())
