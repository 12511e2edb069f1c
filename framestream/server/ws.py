"""One viewer connection: `hello`, then any number of watched frames multiplexed by slot, and input.

The connection owns two tasks: this reader (the handler itself) and a writer draining its `Outbox`; both end
when the socket closes or the service shuts down (close code 1001).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

from aiohttp import WSMsgType, web

from framestream.core.lifecycle import CapacityError
from framestream.core.ratelimit import TokenBucket
from framestream.core.tokens import Claims
from framestream.core.wire import (
    CLOSE_FORBIDDEN,
    CLOSE_GOING_AWAY,
    CLOSE_HELLO_TIMEOUT,
    CLOSE_PROTOCOL,
    CLOSE_TOO_MANY,
    CLOSE_UNAUTHORIZED,
    Hello,
    Input,
    KeyframeRequest,
    Unwatch,
    Watch,
    control_message,
    error_message,
    input_ack,
    parse_client_message,
    video_config,
    welcome,
)
from framestream.errors import ProtocolError, TokenError
from framestream.frames import Frame, FrameGone
from framestream.server.context import ServiceContext
from framestream.server.feed import Outbox
from framestream.server.feed import Watch as FeedWatch
from framestream.server.inputs import apply_step

log = logging.getLogger(__name__)


class ViewerConnection:
    def __init__(self, ctx: ServiceContext, ws: web.WebSocketResponse, peer: str | None = None) -> None:
        self.ctx = ctx
        self.ws = ws
        self.number = next(ctx.connection_numbers)  # names the connection in logs
        self.peer = peer
        self.opened = time.monotonic()
        self.outbox = Outbox()
        self.claims: Claims | None = None
        self.watches: dict[str, FeedWatch] = {}
        self._next_slot = 1
        self._input_bucket = TokenBucket(ctx.settings.input_rate_per_s, ctx.settings.input_rate_per_s)
        self._tasks: set[asyncio.Task[Any]] = set()
        self._last_input: asyncio.Task[Any] | None = None  # steps apply in order, each after the previous

    def _log(self, level: int, message: str, *args: object, **fields: object) -> None:
        log.log(level, message, *args, extra={"conn": self.number, **fields})

    async def run(self) -> None:
        writer = asyncio.create_task(self._write(), name="ws-writer")
        try:
            if await self._hello():
                await self._read()
                self._log(logging.INFO, "viewer left after %.0f s", time.monotonic() - self.opened)
        finally:
            for frame_id in list(self.watches):
                self._unwatch(frame_id)
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            self.outbox.close()
            with contextlib.suppress(asyncio.CancelledError):
                await writer

    async def _refuse(self, code: int, message: str) -> None:
        """Close before `welcome`; the reason is ours (never the token's text)."""
        self._log(logging.INFO, "hello refused: %s", message, code=code, peer=self.peer)
        await self.close(code, message)

    async def close(self, code: int, message: str) -> None:
        self.outbox.close()
        await self.ws.close(code=code, message=message.encode()[:120])

    # -- handshake ---------------------------------------------------------------------------------------

    async def _hello(self) -> bool:
        try:
            msg = await self.ws.receive(timeout=self.ctx.settings.hello_timeout_s)
        except TimeoutError:
            await self._refuse(CLOSE_HELLO_TIMEOUT, "no hello in time")
            return False
        if msg.type not in (WSMsgType.TEXT, WSMsgType.BINARY):
            return False
        try:
            parsed = parse_client_message(msg.data, max_bytes=self.ctx.settings.max_message_bytes)
        except ProtocolError as exc:
            await self._refuse(CLOSE_UNAUTHORIZED, f"hello expected: {exc.message}")
            return False
        if not isinstance(parsed, Hello):
            await self._refuse(CLOSE_UNAUTHORIZED, "hello expected first")
            return False
        try:
            self.claims = self.ctx.verify(parsed.token)
        except TokenError as exc:
            await self._refuse(CLOSE_UNAUTHORIZED, exc.message)
            return False
        if not self.claims.allows("view", None):
            await self._refuse(CLOSE_FORBIDDEN, "this token may not view frames")
            return False
        self._log(logging.INFO, "viewer joined as %s (%s)", self.claims.sub, self.claims.role, peer=self.peer)
        self.outbox.push_text(welcome(self.ctx.settings.sandbox_id, self.ctx.settings.shared_frames))
        return True

    # -- reading -----------------------------------------------------------------------------------------

    async def _read(self) -> None:
        async for msg in self.ws:
            if msg.type == WSMsgType.BINARY:
                await self.close(CLOSE_PROTOCOL, "binary messages are not part of the protocol")
                return
            if msg.type != WSMsgType.TEXT:
                continue
            try:
                parsed = parse_client_message(msg.data, max_bytes=self.ctx.settings.max_message_bytes)
                if isinstance(parsed, Watch):
                    self._watch(parsed.frame)
                elif isinstance(parsed, Unwatch):
                    self._unwatch(parsed.frame)
                elif isinstance(parsed, KeyframeRequest):
                    self._frame(parsed.frame).request_keyframe()
                elif isinstance(parsed, Input):
                    self._input(parsed)
                elif isinstance(parsed, Hello):
                    raise ProtocolError("bad-message", "hello was already accepted")
            except ProtocolError as exc:
                self.outbox.push_text(error_message(exc.code, exc.message, exc.frame, exc.seq))

    def _frame(self, frame_id: str) -> Frame:
        frame = self.ctx.manager.get(frame_id)
        if frame is None:
            raise ProtocolError("unknown-frame", f"no frame {frame_id!r}", frame=frame_id)
        assert self.claims is not None
        if not self.claims.allows("view", frame_id):
            raise ProtocolError("forbidden", "this token may not view this frame", frame=frame_id)
        return frame

    def _watch(self, frame_id: str) -> None:
        frame = self._frame(frame_id)
        if frame_id in self.watches:
            frame.request_keyframe()
            return
        if len(self.watches) >= self.ctx.settings.max_watch_per_connection:
            raise ProtocolError("capacity", f"a connection may watch at most "
                                f"{self.ctx.settings.max_watch_per_connection} frames", frame=frame_id)
        slot = self._next_slot
        self._next_slot = self._next_slot % 0xFFFF + 1
        watch = FeedWatch(frame_id, slot, self.outbox, send_config=lambda w: self._send_config(frame, w))
        self.watches[frame_id] = watch
        if frame.feed.codec is not None and frame.state.value == "live":
            self._send_config(frame, watch)
            watch.configured = True
        self.outbox.push_text(frame.state_message())
        frame.add_watch(watch)
        self._log(logging.INFO, "watching", frame=frame_id)
        self._spawn(self._bring_up(frame), f"watch-{frame_id}")

    async def _bring_up(self, frame: Frame) -> None:
        try:
            await frame.ensure_running()
        except CapacityError as exc:
            self._unwatch(frame.id)  # not a viewer of a frame it cannot see
            self.outbox.push_text(error_message("capacity", str(exc), frame.id))
        except FrameGone:
            self.outbox.push_text(error_message("unknown-frame", f"frame {frame.id} was deleted", frame.id))

    def _send_config(self, frame: Frame, watch: FeedWatch) -> None:
        self.outbox.push_text(video_config(
            frame.id, watch.slot, frame.feed.codec or "avc1.42C01F", frame.size.width, frame.size.height,
            frame.size.css_width, frame.size.css_height,
        ))

    def _unwatch(self, frame_id: str) -> None:
        watch = self.watches.pop(frame_id, None)
        frame = self.ctx.manager.get(frame_id)
        if watch is not None and frame is not None:
            frame.remove_watch(watch)
            self._log(logging.INFO, "stopped watching", frame=frame_id)

    def _input(self, message: Input) -> None:
        frame = self._frame(message.frame)
        if not self._input_bucket.take(time.monotonic(), len(message.events)):
            raise ProtocolError("rate-limited", f"at most {self.ctx.settings.input_rate_per_s:g} input events "
                                "a second per connection", seq=message.seq, frame=frame.id)
        # Steps apply in order: each waits for the previous one of this connection.
        previous = self._last_input
        self._last_input = self._spawn(self._apply(frame, message, previous), f"input-{frame.id}")

    async def _apply(self, frame: Frame, message: Input, previous: asyncio.Task[Any] | None) -> None:
        if previous is not None:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await previous
        try:
            await apply_step(self.ctx, frame, message.grant, message.seq, message.events, presenter=id(self.outbox))
        except ProtocolError as exc:
            self.outbox.push_text(error_message(exc.code, exc.message, frame.id, message.seq))
            if exc.code == "superseded" and frame.id not in self.watches:
                # Watchers heard of the change already; a holder that does not watch hears it here.
                self.outbox.push_text(control_message(frame.id, frame.control.driver, False))
            return
        self.outbox.push_text(input_ack(frame.id, message.seq))

    def _spawn(self, coro: Any, name: str) -> asyncio.Task[Any]:
        task = asyncio.create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # -- writing -----------------------------------------------------------------------------------------

    async def _write(self) -> None:
        try:
            while True:
                item = await self.outbox.next()
                if item is None:
                    return
                if isinstance(item, bytes):
                    await self.ws.send_bytes(item)
                else:
                    await self.ws.send_str(item)
        except (ConnectionError, RuntimeError):
            pass  # the peer went away; the reader sees it too and cleans up


async def handle_ws(request: web.Request) -> web.StreamResponse:
    ctx: ServiceContext = request.app["ctx"]
    origins = ctx.settings.allowed_origins
    origin = request.headers.get("Origin")
    if origins and origin is not None and origin not in origins:
        raise web.HTTPForbidden(text='{"error":"forbidden","message":"origin not allowed"}',
                                content_type="application/json")
    # aiohttp closes with 1009 past max_msg_size; leave room so our parser answers a clear `bad-message` for
    # anything up to 4x the limit and only truly huge messages end the connection.
    ws = web.WebSocketResponse(max_msg_size=4 * ctx.settings.max_message_bytes, heartbeat=30.0, compress=False)
    await ws.prepare(request)
    if len(ctx.connections) >= ctx.settings.max_connections:
        await ws.close(code=CLOSE_TOO_MANY, message=b"too many connections")
        return ws
    conn = ViewerConnection(ctx, ws, request.remote)
    ctx.connections.add(conn)
    try:
        await conn.run()
    finally:
        ctx.connections.discard(conn)
        ctx.bytes_sent_closed += conn.outbox.bytes_sent
    return ws


async def close_all(ctx: ServiceContext) -> None:
    await asyncio.gather(*(c.close(CLOSE_GOING_AWAY, "shutting down") for c in list(ctx.connections)),
                         return_exceptions=True)
