"""Moving a page through its history over DevTools, waiting until the move has happened."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from framestream.browser.cdp import CDPConnection
from framestream.core.errors import ProtocolError


async def load(cdp: CDPConnection, session_id: str, url: str, *, timeout: float = 30.0) -> str | None:
    """Navigate the page and wait for its load; returns Chrome's error text (net::ERR_...) or None."""
    loaded = asyncio.get_running_loop().create_future()

    def on_load(params: dict[str, Any]) -> None:
        if params.get("sessionId") == session_id and not loaded.done():
            loaded.set_result(None)

    unsubscribe = cdp.on("Page.loadEventFired", on_load)
    try:
        result = await cdp.call("Page.navigate", {"url": url}, session_id=session_id, timeout=timeout)
        error = result.get("errorText")
        if error:
            return str(error)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await loaded
        return None
    finally:
        unsubscribe()


async def go(cdp: CDPConnection, session_id: str, step: int, *, timeout: float = 10.0) -> None:
    """Back (-1) or forward (+1) in the page's history, once the entry has committed; `bad-input` at either end."""
    history = await cdp.call("Page.getNavigationHistory", session_id=session_id)
    entries, index = history.get("entries", []), int(history.get("currentIndex", 0))
    if not 0 <= index + step < len(entries):
        raise ProtocolError("bad-input", "no page to go " + ("back" if step < 0 else "forward") + " to")
    committed = asyncio.get_running_loop().create_future()

    def on_commit(params: dict[str, Any]) -> None:
        frame = params.get("frame")
        if params.get("sessionId") == session_id and not committed.done() and (
                not isinstance(frame, dict) or not frame.get("parentId")):
            committed.set_result(None)

    unsubscribes = [cdp.on("Page.frameNavigated", on_commit), cdp.on("Page.navigatedWithinDocument", on_commit)]
    try:
        await cdp.call("Page.navigateToHistoryEntry", {"entryId": entries[index + step]["id"]},
                       session_id=session_id)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await committed
    finally:
        for unsubscribe in unsubscribes:
            unsubscribe()


__all__ = ["go", "load"]
