"""Messages written at once when the outbox is idle and the link takes them (server/send_at_once.py): the frames a
real WebSocket client reads, what goes through the writer instead, and the outbox's side of it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp import WSMsgType, web
from websockets.frames import Frame, Opcode

from framestream.core.wire import FLAG_KEYFRAME, pack_video_header
from framestream.fanout.outbox import Outbox
from framestream.server.send_at_once import OPCODE_BINARY, OPCODE_TEXT, AtOnce, frame_header


@pytest.mark.parametrize("length", [0, 1, 125, 126, 65535, 65536, 300_000])
@pytest.mark.parametrize("opcode", [OPCODE_TEXT, OPCODE_BINARY])
def test_a_frame_header_is_the_one_the_websockets_library_writes(length: int, opcode: int) -> None:
    payload = b"a" * length
    reference = Frame(Opcode(opcode), payload).serialize(mask=False, extensions=[])
    assert frame_header(opcode, length) + payload == reference


def test_a_frame_header_refuses_a_length_no_frame_can_have() -> None:
    with pytest.raises(ValueError):
        frame_header(OPCODE_BINARY, -1)
    with pytest.raises(ValueError):
        frame_header(OPCODE_BINARY, 1 << 63)


class Sent:
    """The outbox's `send_at_once`, taking what it is told to (None: refuses) and recording it."""

    def __init__(self) -> None:
        self.payloads: list[str | bytes] = []
        self.answer: int | None = 0

    def __call__(self, payload: str | bytes) -> int | None:
        if self.answer is not None:
            self.payloads.append(payload)
        return self.answer


def video(seq: int, size: int, key: bool = False) -> bytes:
    return pack_video_header(FLAG_KEYFRAME if key else 0, 0, seq, 1) + b"x" * size


async def test_an_idle_outbox_sends_at_once_and_counts_it_as_the_writer_would() -> None:
    outbox, sent = Outbox(), Sent()
    outbox.send_at_once = sent
    sent.answer = 2000
    first = video(1, 1990, key=True)
    assert outbox.push_video(first)
    outbox.push_text('{"type":"ack"}')
    outbox.push_config('{"type":"video-config"}')
    assert sent.payloads == [first, '{"type":"ack"}', '{"type":"video-config"}']
    assert len(outbox) == 0
    assert (outbox.bytes_sent, outbox.pictures_sent, outbox.link.delivered) == (len(first), 1, 6000)


async def test_what_the_link_may_hold_back_and_what_follows_it_wait_for_the_writer_in_order() -> None:
    outbox, sent = Outbox(), Sent()
    outbox.send_at_once = sent
    sent.answer = None  # (a keyframe larger than what may stay in the network, or a link still holding bytes)
    key = video(1, 50_000, key=True)
    assert outbox.push_video(key)
    sent.answer = 0
    delta = video(2, 100)
    assert outbox.push_video(delta)
    outbox.push_text("urgent")
    assert sent.payloads == []  # something waits ahead: nothing may pass it
    assert await outbox.next() == "urgent"
    outbox.sent(6, 0.0)
    assert await outbox.next() == key
    assert sent.payloads == []  # still in flight
    outbox.sent(len(key), 0.0)
    assert await outbox.next() == delta
    outbox.sent(len(delta), 0.0)
    after = video(3, 100)
    assert outbox.push_video(after)
    assert sent.payloads == [after]  # idle again
    assert outbox.pictures_sent == 3


async def test_a_keyed_state_sent_at_once_is_not_kept_for_replacing() -> None:
    outbox, sent = Outbox(), Sent()
    outbox.send_at_once = sent
    outbox.push_text("state 1", key="frame-state:f1")
    sent.answer = None
    outbox.push_text("state 2", key="frame-state:f1")
    outbox.push_text("state 3", key="frame-state:f1")  # replaces the queued one, not the one sent
    assert sent.payloads == ["state 1"]
    assert await outbox.next() == "state 3"


@pytest.fixture
async def viewer_socket() -> AsyncIterator[tuple[web.WebSocketResponse, asyncio.BaseTransport,
                                                 aiohttp.ClientWebSocketResponse, asyncio.Event]]:
    """A real aiohttp WebSocket server side and a client reading it."""
    ready: asyncio.Future[tuple[web.WebSocketResponse, asyncio.BaseTransport]] = \
        asyncio.get_running_loop().create_future()
    done = asyncio.Event()

    async def handle(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(compress=False)
        await ws.prepare(request)
        assert request.transport is not None
        ready.set_result((ws, request.transport))
        await done.wait()
        await ws.close()
        return ws

    app = web.Application()
    app.router.add_get("/", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    async with aiohttp.ClientSession() as session, session.ws_connect(f"http://127.0.0.1:{port}/") as client:
        ws, transport = await ready
        yield ws, transport, client, done
        done.set()
    await runner.cleanup()


async def test_frames_written_at_once_are_read_by_a_real_client_in_order_with_aiohttps(
        viewer_socket: tuple[web.WebSocketResponse, asyncio.BaseTransport, aiohttp.ClientWebSocketResponse,
                             asyncio.Event]) -> None:
    ws, transport, client, _ = viewer_socket
    at_once = AtOnce(transport, lambda: ws.closed, lambda: None)
    big = bytes(range(256)) * 200  # 51,200 bytes: a two-byte length, within the unmeasured allowance
    acknowledged = at_once(b"\x01small")  # (on loopback usually all of it, but an ack may come later)
    assert acknowledged is not None and 0 <= acknowledged <= len(b"\x01small")
    await ws.send_str("from aiohttp")
    assert at_once("text é") is not None
    assert at_once(big) is not None
    received = [await client.receive(timeout=5) for _ in range(4)]
    assert [(m.type, m.data) for m in received] == [
        (WSMsgType.BINARY, b"\x01small"), (WSMsgType.TEXT, "from aiohttp"), (WSMsgType.TEXT, "text é"),
        (WSMsgType.BINARY, big)]


async def test_nothing_is_written_at_once_past_the_allowance_or_once_closing(
        viewer_socket: tuple[web.WebSocketResponse, asyncio.BaseTransport, aiohttp.ClientWebSocketResponse,
                             asyncio.Event]) -> None:
    ws, transport, client, done = viewer_socket
    at_once = AtOnce(transport, lambda: ws.closed, lambda: 1_000_000.0)  # 1 MB/s: 50 KB may stay in the network
    assert at_once(b"\x02" * 200_000) is None  # could be held back: the writer times it
    closing = False
    guarded = AtOnce(transport, lambda: closing, lambda: None)
    closing = True
    assert guarded(b"\x01after close") is None
    assert at_once(b"\x01last") is not None
    message = await client.receive(timeout=5)
    assert message.data == b"\x01last"  # the refused ones were never written
    done.set()
    assert (await client.receive(timeout=5)).type in (WSMsgType.CLOSE, WSMsgType.CLOSED, WSMsgType.CLOSING)
    assert at_once(b"\x01too late") is None


class BrokenTransport:
    """A transport whose write fails in a way no socket should (what AtOnce must keep to its own connection)."""

    def __init__(self) -> None:
        self.writes = 0

    def is_closing(self) -> bool:
        return False

    def get_write_buffer_size(self) -> int:
        return 0

    def get_extra_info(self, name: str) -> None:
        return None

    def write(self, data: bytes) -> None:
        self.writes += 1
        raise ValueError("broken")


def test_a_transport_that_fails_its_write_leaves_the_message_to_the_writer() -> None:
    transport = BrokenTransport()
    at_once = AtOnce(transport, lambda: False, lambda: None)  # type: ignore[arg-type]
    assert at_once(b"\x01picture") is None  # not raised into the frame's fan-out
    assert transport.writes == 1
