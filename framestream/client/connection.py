"""The WebSocket: hello, one reader task, answers matched by `seq`, and reconnection with re-watching.

One reader task reads every message and hands it to the frame's `FrameView` (pictures are decoded there, in
order). When the socket drops, steps waiting for an answer fail with `ConnectionLost` (they may have been applied),
and the same task reconnects with exponential backoff, says hello with a fresh token and watches the same frames
again; a step begun meanwhile waits for that (`until_connected`) and is sent then. The
service closes a connection whose token expired (4401): with a token source that mints (a callable), a refresh
task sends a fresh token (`refresh`) before each expires.
`close()` ends the task and the socket: nothing is left running.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp

from framestream.client.errors import ClientError, ConnectionLost, ServiceError, Unauthorized, error_for
from framestream.client.grants import TokenSource, expires_at, token_now
from framestream.client.view import FrameView
from framestream.client.wire import encode_client_message
from framestream.core.wire import (
    KIND_PATCH,
    KIND_VIDEO,
    ClientMessage,
    KeyframeRequest,
    Refresh,
    Unwatch,
    Watch,
    unpack_video_header,
)
from framestream.tasks import stop_task

__all__ = ["HEARTBEAT_S", "Connection"]

log = logging.getLogger("framestream.client")

# Close codes after which reconnecting cannot help: the token or the request is refused.
_FATAL_CLOSE = {4401: "unauthorized", 4403: "forbidden", 4400: "bad-message"}
# A socket silent this long is sent a WebSocket ping, and given up (then reconnected) when nothing at all comes in
# half as long again: a path that died without a close (a NAT or proxy that dropped it) would otherwise leave a
# step or a `wait_for` waiting on a connection that can no longer answer. Any message counts as the answer.
HEARTBEAT_S = 10.0


class Connection:
    """`ws://HOST:PORT/ws` for one client. Use `Connection.open(...)`, then `close()`."""

    def __init__(self, session: aiohttp.ClientSession, ws_url: str, token: TokenSource, *,
                 reconnect: bool = True, backoff: tuple[float, float] = (0.1, 5.0),
                 hello_timeout: float = 10.0, patches: bool = True, heartbeat: float = HEARTBEAT_S) -> None:
        self._session = session
        # Small changes as lossless patches (docs/protocol.md): a frame sends them only while every viewer takes
        # them, so an agent watching without them would turn them off for the people watching too.
        self.patches = patches
        self.ws_url = ws_url
        self._token = token
        self.reconnect = reconnect
        self._backoff = backoff
        self._hello_timeout = hello_timeout
        self._heartbeat = heartbeat
        self._ws: aiohttp.ClientWebSocketResponse | None = None
        self._reader: asyncio.Task[None] | None = None
        self._refresher: asyncio.Task[None] | None = None  # sends `refresh` before the token expires
        self._seq = itertools.count(1)
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._watch_errors: dict[str, asyncio.Future[None]] = {}
        self.views: dict[str, FrameView] = {}
        self._slots: dict[int, FrameView] = {}
        self._listeners: list[Callable[[dict[str, Any]], None]] = []
        self._state = asyncio.Condition()  # notified when the socket opens or the connection ends for good
        self._closing = False
        self.welcome: dict[str, Any] = {}
        self.connects = 0  # how many times a socket was opened (1 + reconnects)
        self.closed_reason: BaseException | None = None

    @classmethod
    async def open(cls, session: aiohttp.ClientSession, ws_url: str, token: TokenSource, **options: Any
                   ) -> Connection:
        conn = cls(session, ws_url, token, **options)
        await conn._connect()  # the first connect raises: a wrong URL or token is reported, not retried
        conn._reader = asyncio.create_task(conn._run(), name="framestream-client-reader")
        return conn

    # -- the socket ---------------------------------------------------------------------------------------------

    async def _connect(self) -> None:
        ws = await self._session.ws_connect(self.ws_url, max_msg_size=0, autoping=True, heartbeat=self._heartbeat)
        token = token_now(self._token)
        try:
            hello: dict[str, Any] = {"type": "hello", "token": token}
            if self.patches:
                hello["features"] = ["patches", "copies"]
            await ws.send_str(json.dumps(hello))
            async with asyncio.timeout(self._hello_timeout):
                msg = await ws.receive()
            if msg.type != aiohttp.WSMsgType.TEXT:
                code = ws.close_code or 0
                raise error_for(_FATAL_CLOSE.get(code, "internal"), f"the service closed the socket ({code})")
            welcome = json.loads(msg.data)
            if welcome.get("type") != "welcome":
                raise ClientError(f"expected welcome, got {welcome.get('type')!r}")
        except BaseException:
            await ws.close()
            raise
        self.welcome = welcome
        self._ws = ws
        self.connects += 1
        self._keep_fresh(token)
        await self._announce()

    def _keep_fresh(self, token: str) -> None:
        """With a minting token source, refresh the connection's token before it expires."""
        if self._refresher is not None:
            self._refresher.cancel()
            self._refresher = None
        exp = expires_at(token)
        if isinstance(self._token, str) or exp is None:
            return  # a fixed token: the service closes the connection once it expired
        self._refresher = asyncio.create_task(self._refresh(exp), name="framestream-client-refresh")

    async def _refresh(self, exp: float) -> None:
        while not self._closing:
            left = exp - time.time()
            await asyncio.sleep(max(0.5, left - min(30.0, max(1.0, left / 3))))  # a third of it, or 30 s, early
            token = token_now(self._token)
            try:
                await self._send(Refresh(token))
            except (ConnectionLost, aiohttp.ClientError, ConnectionError):
                return  # the reconnect says hello with a fresh token and starts another refresher
            exp = expires_at(token) or exp + 1.0

    async def _run(self) -> None:
        while not self._closing:
            ws = self._ws
            assert ws is not None
            with contextlib.suppress(aiohttp.ClientError, ConnectionError):
                async for msg in ws:
                    if msg.type == aiohttp.WSMsgType.ERROR:
                        break
                    if msg.type == aiohttp.WSMsgType.TEXT:
                        self._on_text(json.loads(msg.data))
                    elif msg.type == aiohttp.WSMsgType.BINARY:
                        self._on_binary(msg.data)
            if self._closing:
                return
            code = ws.close_code
            self._drop(ConnectionLost(f"the socket closed ({code})"))
            if not self.reconnect or code in _FATAL_CLOSE:
                self.closed_reason = error_for(_FATAL_CLOSE.get(code or 0, "internal"), f"closed with {code}")
                await self._announce()
                return
            await self._reconnect()

    async def _reconnect(self) -> None:
        delay, ceiling = self._backoff
        while not self._closing:
            await asyncio.sleep(delay * random.uniform(0.8, 1.2))
            try:
                await self._connect()
            except Unauthorized as exc:
                self.closed_reason = exc
                await self._announce()
                return
            except (OSError, aiohttp.ClientError, TimeoutError, ServiceError, ClientError) as exc:
                log.debug("reconnect to %s failed: %s", self.ws_url, exc)
                delay = min(ceiling, delay * 2)
                continue
            for frame, view in self.views.items():
                await self._send(Watch(frame, video=view.video))
            return

    def _drop(self, error: ClientError) -> None:
        self._ws = None
        self._slots.clear()
        futures: list[asyncio.Future[Any]] = [*self._pending.values(), *self._watch_errors.values()]
        for fut in futures:
            if not fut.done():
                fut.set_exception(error)
                fut.exception()  # nobody may be waiting any more: never "exception was never retrieved"
        self._pending.clear()
        self._watch_errors.clear()
        for view in self.views.values():
            view.on_disconnect()

    async def close(self) -> None:
        self._closing = True
        if self._refresher is not None:
            await stop_task(self._refresher)
            self._refresher = None
        ws, self._ws = self._ws, None
        if ws is not None:
            await ws.close()
        if self._reader is not None:
            await stop_task(self._reader)
            self._reader = None
        self._drop(ConnectionLost("the client was closed"))
        await self._announce()

    async def _announce(self) -> None:
        async with self._state:
            self._state.notify_all()

    def _open(self) -> bool:
        return self._ws is not None and not self._ws.closed

    async def until_connected(self, timeout: float = 30.0) -> None:
        """Return once the socket is open: at once, or when the reconnect under way has said hello (within
        `timeout` s). A step not yet sent is safe to send then; one in flight when the socket dropped failed with
        `ConnectionLost`, since it may have been applied. Raises `ConnectionLost` when the connection was closed or
        given up (a refused token, `reconnect=False`), or did not come back in time."""
        def settled() -> bool:
            return self._open() or self._closing or self.closed_reason is not None or not self.reconnect

        try:
            async with asyncio.timeout(timeout), self._state:
                await self._state.wait_for(settled)
        except TimeoutError:
            raise ConnectionLost(f"not reconnected within {timeout:g} s") from None
        if not self._open():
            raise ConnectionLost(f"not connected ({self.closed_reason or 'closed'})")

    async def wait_connected(self, timeout: float = 30.0) -> None:
        """Wait for the socket, however long the connection keeps trying (TimeoutError after `timeout` s)."""
        async with asyncio.timeout(timeout), self._state:
            await self._state.wait_for(self._open)

    # -- messages in --------------------------------------------------------------------------------------------

    def _on_text(self, msg: dict[str, Any]) -> None:
        kind = msg.get("type")
        frame = msg.get("frame")
        seq = msg.get("seq")
        if kind == "input-ack" and isinstance(seq, int):
            fut = self._pending.pop(seq, None)
            if fut is not None and not fut.done():
                fut.set_result(msg)
        elif kind == "error":
            error = error_for(str(msg.get("code")), str(msg.get("message", "")), frame=frame,
                              seq=seq if isinstance(seq, int) else None)
            fut = self._pending.pop(seq, None) if isinstance(seq, int) else None
            if fut is None and isinstance(frame, str) and seq is None:
                fut_watch = self._watch_errors.pop(frame, None)
                if fut_watch is not None and not fut_watch.done():
                    fut_watch.set_exception(error)
            elif fut is not None and not fut.done():
                fut.set_exception(error)
        if isinstance(frame, str) and (view := self.views.get(frame)) is not None:
            # A watch is answered by its video-config, or without pictures by the frame's state.
            answered = kind == "video-config" if view.video else kind == "frame-state"
            if kind == "video-config":
                self._slots[int(msg["slot"])] = view
            if answered and (fut_watch := self._watch_errors.pop(frame, None)) is not None and not fut_watch.done():
                fut_watch.set_result(None)
            view.on_message(msg)
        for listener in list(self._listeners):
            listener(msg)

    def _on_binary(self, data: bytes) -> None:
        if len(data) < 16 or data[0] not in (KIND_VIDEO, KIND_PATCH):  # padding and unknown kinds are ignored
            return
        header = unpack_video_header(data)
        view = self._slots.get(header.slot)
        if view is None:
            return
        if data[0] == KIND_PATCH:
            view.on_patch(header.sequence, header.capture_us, data[16:])
        else:
            view.on_video(header.flags, header.sequence, header.capture_us, data[16:])

    def listen(self, callback: Callable[[dict[str, Any]], None]) -> Callable[[], None]:
        """Call `callback` with every text message; returns the function that stops it."""
        self._listeners.append(callback)
        return lambda: self._listeners.remove(callback) if callback in self._listeners else None

    # -- messages out -------------------------------------------------------------------------------------------

    async def _send(self, message: ClientMessage) -> None:
        ws = self._ws
        if ws is None or ws.closed:
            raise ConnectionLost("not connected")
        await ws.send_str(encode_client_message(message))

    async def watch(self, frame: str, *, decode: bool = True, video: bool = True, timeout: float = 60.0,
                    ) -> FrameView:
        """Watch `frame`: returns once its `video-config` arrived, or without `video` its `frame-state`
        (`UnknownFrame`, `Forbidden`... otherwise). A watched frame's pictures go on or off as `video` says.
        While the socket reconnects, it waits for that first."""
        await self.until_connected(timeout)
        view = self.views.get(frame)
        if view is not None and view.video == video and (view.config if video else view.state) is not None:
            return view
        if view is None:
            view = self.views[frame] = FrameView(frame, decode=decode, video=video,
                                                 on_keyframe_needed=self.ask_keyframe)
        elif view.video != video:
            view.video = video  # watched anew: the service moves it to a new slot, or ends its pictures
            self._slots = {slot: v for slot, v in self._slots.items() if v is not view}
            view.on_disconnect()
        answered: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._watch_errors[frame] = answered
        try:
            await self._send(Watch(frame, video=video))
            async with asyncio.timeout(timeout):
                await answered
        except BaseException:
            self.views.pop(frame, None)
            self._watch_errors.pop(frame, None)
            raise
        return view

    async def unwatch(self, frame: str) -> None:
        if self.views.pop(frame, None) is not None:
            self._slots = {slot: v for slot, v in self._slots.items() if v.frame != frame}
            with contextlib.suppress(ConnectionLost):
                await self._send(Unwatch(frame))

    def ask_keyframe(self, frame: str) -> None:
        if self._ws is not None:
            task = asyncio.ensure_future(self._send(KeyframeRequest(frame)))
            task.add_done_callback(lambda t: t.cancelled() or t.exception())

    def next_seq(self) -> int:
        return next(self._seq)

    async def request(self, build: Callable[[int], ClientMessage | Awaitable[ClientMessage]],
                      timeout: float = 30.0) -> dict[str, Any]:
        """Send the message `build(seq)` makes and wait for its `input-ack` (or raise its typed error)."""
        seq = self.next_seq()
        built = build(seq)
        message = await built if isinstance(built, Awaitable) else built
        answer: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[seq] = answer
        try:
            await self._send(message)
            async with asyncio.timeout(timeout):
                return await answer
        finally:
            self._pending.pop(seq, None)
