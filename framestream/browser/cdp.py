"""A small asyncio Chrome DevTools Protocol client, over a pair of pipes or over `websockets`.

Why our own: every call needs a timeout, a dropped connection must fail every pending call at once (we close
Chrome's on purpose when a browser stops), and events go to subscribers without blocking the reader.
One reader task per connection, owned by the connection and ended by `close()`.

A frame's browser is driven over `--remote-debugging-pipe` (`CDPConnection.over_pipes`): Chromium reads
NUL-terminated JSON commands on its fd 3 and writes answers and events on its fd 4. No TCP port exists, so
neither the page (a navigation to `http://127.0.0.1:<port>/json`, DevTools' own inspector page) nor another
local user can reach the browser's DevTools. The WebSocket form stays for the test harness's own browser.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol

import websockets
from websockets.asyncio.client import ClientConnection

from framestream.core.errors import CDPError
from framestream.tasks import stop_task

log = logging.getLogger(__name__)

EventHandler = Callable[[dict[str, Any]], None]
DEFAULT_TIMEOUT = 10.0
MAX_MESSAGE = 256 * 1024 * 1024  # a full-page screenshot of a long page is tens of MB


class _Closed(Exception):
    """The transport's other end went away."""


class _Transport(Protocol):
    async def send(self, text: str) -> None: ...

    def messages(self) -> AsyncIterator[str | bytes]: ...

    async def close(self) -> None: ...


class _WebSocketTransport:
    def __init__(self, ws: ClientConnection) -> None:
        self._ws = ws

    async def send(self, text: str) -> None:
        try:
            await self._ws.send(text)
        except websockets.ConnectionClosed as exc:
            raise _Closed from exc

    async def messages(self) -> AsyncIterator[str | bytes]:
        with contextlib.suppress(websockets.ConnectionClosed):
            async for raw in self._ws:
                yield raw

    async def close(self) -> None:
        await self._ws.close()


class _PipeTransport:
    """Chromium's `--remote-debugging-pipe`: one NUL-terminated JSON message after another, each way."""

    def __init__(self, reader: asyncio.StreamReader, read_end: asyncio.BaseTransport,
                 writer: asyncio.WriteTransport) -> None:
        self._reader = reader
        self._read_end = read_end
        self._writer = writer

    @classmethod
    async def open(cls, read_fd: int, write_fd: int) -> _PipeTransport:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=MAX_MESSAGE)
        read_end, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader),
                                                   os.fdopen(read_fd, "rb", 0))
        writer, _ = await loop.connect_write_pipe(asyncio.Protocol, os.fdopen(write_fd, "wb", 0))
        return cls(reader, read_end, writer)

    async def send(self, text: str) -> None:
        if self._writer.is_closing():
            raise _Closed
        self._writer.write(text.encode() + b"\0")

    async def messages(self) -> AsyncIterator[str | bytes]:
        while True:
            try:
                raw = await self._reader.readuntil(b"\0")
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            except asyncio.LimitOverrunError:
                log.warning("DevTools sent a message over %d bytes; closing", MAX_MESSAGE)
                return
            yield raw[:-1]

    async def close(self) -> None:
        self._writer.close()  # Chromium reads EOF on its fd 3
        self._read_end.close()
        self._reader.feed_eof()


class CDPConnection:
    def __init__(self, transport: _Transport) -> None:
        self._transport = transport
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._handlers: dict[str, list[EventHandler]] = {}
        self._closed_reason: str | None = None
        self._reader = asyncio.create_task(self._read(), name="cdp-reader")

    @classmethod
    async def connect(cls, url: str, *, timeout: float = DEFAULT_TIMEOUT) -> CDPConnection:
        try:
            async with asyncio.timeout(timeout):
                ws = await websockets.connect(url, max_size=256 * 1024 * 1024, ping_interval=None,
                                              open_timeout=timeout)
        except (OSError, TimeoutError, websockets.InvalidHandshake) as exc:
            raise CDPError(f"cannot reach DevTools at {url}: {exc}") from exc
        return cls(_WebSocketTransport(ws))

    @classmethod
    async def over_pipes(cls, read_fd: int, write_fd: int) -> CDPConnection:
        """Over Chromium's `--remote-debugging-pipe`: `read_fd` is our end of its fd 4, `write_fd` of its fd 3
        (both taken over and closed with the connection)."""
        return cls(await _PipeTransport.open(read_fd, write_fd))

    @property
    def closed(self) -> bool:
        return self._closed_reason is not None

    def on(self, event: str, handler: EventHandler) -> Callable[[], None]:
        """Call `handler(params_with_sessionId)` for every `event`; returns a function that unsubscribes."""
        self._handlers.setdefault(event, []).append(handler)

        def unsubscribe() -> None:
            with contextlib.suppress(ValueError):
                self._handlers.get(event, []).remove(handler)

        return unsubscribe

    async def call(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        session_id: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> dict[str, Any]:
        if self._closed_reason is not None:
            raise CDPError(f"{method}: DevTools connection closed ({self._closed_reason})")
        call_id = next(self._ids)
        message: dict[str, Any] = {"id": call_id, "method": method, "params": params or {}}
        if session_id is not None:
            message["sessionId"] = session_id
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[call_id] = future
        try:
            await self._transport.send(json.dumps(message))
            async with asyncio.timeout(timeout):  # not wait_for: it lost a cancel that came with the answer
                return await future
        except TimeoutError as exc:
            raise CDPError(f"{method}: no answer within {timeout:g} s") from exc
        except _Closed as exc:
            raise CDPError(f"{method}: DevTools connection closed") from exc
        finally:
            self._pending.pop(call_id, None)

    async def close(self) -> None:
        self._fail_pending("closed by us")
        await self._transport.close()
        await stop_task(self._reader)

    async def wait_closed(self) -> None:
        await asyncio.wait([self._reader])  # the reader goes on when the caller is cancelled

    async def _read(self) -> None:
        try:
            async for raw in self._transport.messages():
                try:
                    message = json.loads(raw)
                except ValueError:
                    log.warning("DevTools sent invalid JSON; ignored")
                    continue
                if "id" in message:
                    future = self._pending.get(message["id"])
                    if future is None or future.done():
                        continue
                    if "error" in message:
                        err = message["error"]
                        future.set_exception(CDPError(f"{err.get('message', 'error')} ({err.get('code')})"))
                    else:
                        future.set_result(message.get("result", {}))
                elif "method" in message:
                    params = dict(message.get("params", {}))
                    if "sessionId" in message:
                        # An event about a session (a target attached to a page's session) keeps that session's id
                        # and names the one it came through as `parentSessionId`.
                        params["parentSessionId" if "sessionId" in params else "sessionId"] = message["sessionId"]
                    for handler in list(self._handlers.get(message["method"], ())):
                        try:
                            handler(params)
                        except Exception:
                            log.exception("DevTools event handler for %s failed", message["method"])
            self._fail_pending("socket closed")
        finally:
            if self._closed_reason is None:
                self._fail_pending("reader ended")

    def _fail_pending(self, reason: str) -> None:
        if self._closed_reason is None:
            self._closed_reason = reason
        for future in self._pending.values():
            if not future.done():
                future.set_exception(CDPError(f"DevTools connection {reason}"))
        self._pending.clear()
