"""A small asyncio Chrome DevTools Protocol client over `websockets`.

Why our own: every call needs a timeout, a dropped socket must fail every pending call at once (we close
Chrome's socket on purpose when a browser stops), and events go to subscribers without blocking the reader.
One reader task per connection, owned by the connection and ended by `close()`.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
from collections.abc import Callable
from typing import Any

import websockets
from websockets.asyncio.client import ClientConnection

from framestream.errors import CDPError

log = logging.getLogger(__name__)

EventHandler = Callable[[dict[str, Any]], None]
DEFAULT_TIMEOUT = 10.0


class CDPConnection:
    def __init__(self, ws: ClientConnection) -> None:
        self._ws = ws
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._handlers: dict[str, list[EventHandler]] = {}
        self._closed_reason: str | None = None
        self._reader = asyncio.create_task(self._read(), name="cdp-reader")

    @classmethod
    async def connect(cls, url: str, *, timeout: float = DEFAULT_TIMEOUT) -> CDPConnection:
        try:
            ws = await asyncio.wait_for(
                websockets.connect(url, max_size=256 * 1024 * 1024, ping_interval=None, open_timeout=timeout),
                timeout,
            )
        except (OSError, TimeoutError, websockets.InvalidHandshake) as exc:
            raise CDPError(f"cannot reach DevTools at {url}: {exc}") from exc
        return cls(ws)

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
            await self._ws.send(json.dumps(message))
            return await asyncio.wait_for(future, timeout)
        except TimeoutError as exc:
            raise CDPError(f"{method}: no answer within {timeout:g} s") from exc
        except websockets.ConnectionClosed as exc:
            raise CDPError(f"{method}: DevTools connection closed") from exc
        finally:
            self._pending.pop(call_id, None)

    async def close(self) -> None:
        self._fail_pending("closed by us")
        await self._ws.close()
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader

    async def wait_closed(self) -> None:
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(self._reader)

    async def _read(self) -> None:
        try:
            async for raw in self._ws:
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
                        params["sessionId"] = message["sessionId"]
                    for handler in list(self._handlers.get(message["method"], ())):
                        try:
                            handler(params)
                        except Exception:
                            log.exception("DevTools event handler for %s failed", message["method"])
            self._fail_pending("socket closed")
        except websockets.ConnectionClosed:
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
