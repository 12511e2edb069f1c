"""A page's JavaScript dialogs (`alert`, `confirm`, `prompt`, `beforeunload`): told, answered by the driver, and
dismissed after a timeout, so no page stays frozen for good."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

from framestream.browser.cdp import CDPConnection
from framestream.browser.tab_events import DialogClosed, DialogOpened, TabEvent
from framestream.core.errors import CDPError, ProtocolError
from framestream.core.pages import Dialog, Page, dialog_kind

log = logging.getLogger("framestream.browser.tabs")


class Dialogs:
    def __init__(self, cdp: CDPConnection, emit: Callable[[TabEvent], None], spawn: Callable[[Any, str], None],
                 timeout_s: float) -> None:
        self.cdp = cdp
        self._emit = emit
        self._spawn = spawn
        self.timeout_s = timeout_s
        self.open: dict[str, Dialog] = {}
        self._sessions: dict[str, str] = {}  # dialog id -> its page's DevTools session
        self._ids = 0
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._opened: dict[str, asyncio.Event] = {}  # per session: wakes an input waiting on that page

    def on(self, page: Page) -> Dialog | None:
        return next((d for d in self.open.values() if d.page_id == page.id), None)

    def next_opening(self, session_id: str) -> asyncio.Event:
        """An event set when a dialog opens on the page of `session_id` from now on."""
        opened = self._opened_event(session_id)
        opened.clear()
        return opened

    def _opened_event(self, session_id: str) -> asyncio.Event:
        return self._opened.setdefault(session_id, asyncio.Event())

    def opening(self, page: Page, params: dict[str, Any]) -> None:
        self._ids += 1
        dialog = Dialog(f"d{self._ids}", page.id, dialog_kind(params.get("type")),
                        str(params.get("message", ""))[:4096], str(params.get("defaultPrompt", ""))[:4096],
                        time.monotonic())
        self.open[dialog.id] = dialog
        self._sessions[dialog.id] = page.session_id
        self._timers[dialog.id] = asyncio.get_running_loop().call_later(
            self.timeout_s, lambda: self._spawn(self._expire(dialog.id), "dialog-timeout"))
        self._opened_event(page.session_id).set()
        log.debug("page %s opened a %s dialog", page.id, dialog.kind)
        self._emit(DialogOpened(dialog))

    def closed(self, page: Page) -> None:
        dialog = self.on(page)
        if dialog is not None:
            self.gone(dialog.id, "answered")

    def page_closed(self, page: Page) -> None:
        for dialog in [d for d in self.open.values() if d.page_id == page.id]:
            self.gone(dialog.id, "closed")
        self._opened.pop(page.session_id, None)

    def gone(self, dialog_id: str, reason: str) -> None:
        if self.open.pop(dialog_id, None) is None:
            return
        self._sessions.pop(dialog_id, None)
        timer = self._timers.pop(dialog_id, None)
        if timer is not None:
            timer.cancel()
        self._emit(DialogClosed(dialog_id, reason))

    async def answer(self, dialog_id: str, accept: bool, text: str | None = None) -> None:
        dialog = self.open.get(dialog_id)
        if dialog is None:
            raise ProtocolError("unknown-dialog", f"no open dialog {dialog_id!r}")
        params: dict[str, Any] = {"accept": accept}
        if text is not None and dialog.kind == "prompt":
            params["promptText"] = text
        await self.cdp.call("Page.handleJavaScriptDialog", params, session_id=self._sessions[dialog_id], timeout=5.0)
        self.gone(dialog_id, "answered")

    async def _expire(self, dialog_id: str) -> None:
        session = self._sessions.get(dialog_id)
        if session is None:
            return
        log.info("nobody answered dialog %s in %g s; dismissed", dialog_id, self.timeout_s)
        self.gone(dialog_id, "timeout")  # before the browser's own "closed" arrives, which would say "answered"
        with contextlib.suppress(CDPError):
            await self.cdp.call("Page.handleJavaScriptDialog", {"accept": False}, session_id=session)

    def close(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()


__all__ = ["Dialogs"]
