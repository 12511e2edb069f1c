"""Which pages one browser has, from its DevTools target events: each new page adopted and set up, its URL and
title followed, and the page forgotten when its target goes.

Split from browser/tabs.py, which drives the pages this keeps (input, navigation, dialogs); this module knows the
page set only through the `PageStack` and the callbacks it is given, so it never imports tabs.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from framestream.browser import page_setup
from framestream.browser.cdp import CDPConnection
from framestream.browser.external_apps import is_another_application
from framestream.browser.tab_events import PageNavigated, PageRefused, TabEvent, TabSettings
from framestream.core.errors import BrowserError, CDPError
from framestream.core.pages import Page, PageStack
from framestream.core.urls import without_query

log = logging.getLogger(__name__)


class PageTargets:
    """Keeps `pages` in step with the browser's targets. `spawn` runs a task its owner ends on close, `changed`
    tells the owner the page set changed, and `page_closed` lets it drop what it kept for a page that went."""

    def __init__(self, cdp: CDPConnection, settings: TabSettings, pages: PageStack, *,
                 emit: Callable[[TabEvent], None], spawn: Callable[[Any, str], None], changed: Callable[[], None],
                 page_closed: Callable[[Page], None]) -> None:
        self.cdp = cdp
        self.settings = settings
        self.pages = pages
        self._emit = emit
        self._spawn = spawn
        self._changed = changed
        self._page_closed = page_closed
        self.first_page: asyncio.Future[Page] = asyncio.get_running_loop().create_future()
        self._subframes: dict[str, str] = {}  # a cross-site iframe's session -> the session it is a frame of
        # Whether the window the last `Page.windowOpen` announced opens at another application's link.
        self._next_popup_elsewhere = False

    def on_attached(self, params: dict[str, Any]) -> None:
        info = params.get("targetInfo") or {}
        session_id = str(params.get("sessionId", ""))
        if info.get("type") == "iframe":  # a cross-site frame of one of our pages (or of such a frame)
            self._subframes[session_id] = str(params.get("parentSessionId", ""))
            self._spawn(page_setup.prepare_subframe(self.cdp, session_id, self.settings), "adopt-iframe")
            return
        if info.get("type") == "page" and self._blank_at_another_application(info):
            self._spawn(self._close_unadopted(str(info.get("targetId", "")), session_id), "close-blank-popup")
            return
        if info.get("type") != "page":
            # Browser UI and workers are not ours to drive: let them run and leave them alone.
            self._spawn(self._release_other(session_id, bool(params.get("waitingForDebugger"))), "detach-other")
            return
        self._spawn(self._adopt(info, session_id), f"adopt-{str(info.get('targetId', ''))[:8]}")

    def on_window_open(self, params: dict[str, Any]) -> None:
        """A page opens a window (a script, a link, a form; with an opener or not). At another application's link
        the window would stay a blank page over the frame (Chromium drops the link, browser/external_apps.py), so
        it is closed as it comes: its target attaches right after this event. Every such event counts, so one for
        a window that never came (a blocked popup) does not close the next (a sign-in popup starts blank too)."""
        self._next_popup_elsewhere = is_another_application(str(params.get("url", "")))

    def _blank_at_another_application(self, info: dict[str, Any]) -> bool:
        elsewhere, self._next_popup_elsewhere = self._next_popup_elsewhere, False
        return elsewhere and info.get("url") in ("", "about:blank")

    async def _close_unadopted(self, target_id: str, session_id: str) -> None:
        log.info("closed a popup opened at another application's link")
        with contextlib.suppress(CDPError):  # (closing it while it waits for us would hang its opener's input)
            await self.cdp.call("Runtime.runIfWaitingForDebugger", session_id=session_id, timeout=5.0)
            await self.cdp.call("Target.closeTarget", {"targetId": target_id}, timeout=5.0)

    async def _release_other(self, session_id: str, waiting: bool) -> None:
        with contextlib.suppress(CDPError):
            if waiting:
                await self.cdp.call("Runtime.runIfWaitingForDebugger", session_id=session_id, timeout=5.0)
            await self.cdp.call("Target.detachFromTarget", {"sessionId": session_id}, timeout=5.0)

    async def _adopt(self, info: dict[str, Any], session_id: str) -> None:
        target_id = str(info.get("targetId", ""))
        url = str(info.get("url", ""))
        if len(self.pages) >= self.settings.max_pages:
            log.warning("a page opened %s past the limit of %d pages; closed", without_query(url),
                        self.settings.max_pages)
            with contextlib.suppress(CDPError):
                await self.cdp.call("Target.closeTarget", {"targetId": target_id}, timeout=5.0)
            self._emit(PageRefused(url, f"a frame holds at most {self.settings.max_pages} pages"))
            return
        opener = self.pages.by_target(str(info.get("openerId") or ""))
        page = Page(self.pages.new_id(), target_id, session_id, url=url, title=str(info.get("title", "")),
                    opener=opener.id if opener else None)
        # Listed before it is set up: it runs before its setup ends (its window is made full screen last), and what
        # it does then (its first navigation, its title, a dialog as it loads) is told of a listed page. Listed
        # after, all that was lost: a new tab without URL or title, an alert nobody could answer.
        self.pages.push(page)
        try:
            await self._prepare(page)
        except CDPError as exc:
            if self.pages.remove(target_id)[0] is not None:
                self._changed()
            if not self.first_page.done():
                self.first_page.set_exception(BrowserError(f"cannot set up the page: {exc}"))
            log.warning("could not set up a new page: %s", exc)
            return
        if not self.first_page.done():
            self.first_page.set_result(page)
        log.debug("page %s opened%s", page.id, f" by {page.opener}" if page.opener else "")
        self._changed()

    async def _prepare(self, page: Page) -> None:
        await page_setup.prepare(self.cdp, page, self.settings)

    def on_target_info(self, params: dict[str, Any]) -> None:
        info = params.get("targetInfo") or {}
        page = self.pages.by_target(str(info.get("targetId", "")))
        if page is None:
            return
        url, title = str(info.get("url", "")), str(info.get("title", ""))
        if url == page.url and title == page.title:
            return
        moved = url != page.url
        page.url, page.title = url, title
        if moved:
            self._emit(PageNavigated(page.id, url, page is self.pages.active))
        self._changed()

    def on_loaded(self, params: dict[str, Any]) -> None:
        page = self.pages.by_session(params.get("sessionId"))
        if page is not None:  # a document's own <title> comes with no targetInfoChanged: read it once loaded
            self._spawn(self._refresh_info(page.target_id), "page-title")

    async def _refresh_info(self, target_id: str) -> None:
        with contextlib.suppress(CDPError):
            info = await self.cdp.call("Target.getTargetInfo", {"targetId": target_id}, timeout=5.0)
            self.on_target_info(info)

    def on_target_destroyed(self, params: dict[str, Any]) -> None:
        self._forget(str(params.get("targetId", "")))

    def on_detached(self, params: dict[str, Any]) -> None:
        if self._subframes.pop(str(params.get("sessionId", "")), None) is not None:
            return
        page = self.pages.by_session(str(params.get("sessionId", "")))
        if page is not None:
            self._forget(page.target_id)

    def _forget(self, target_id: str) -> None:
        page, was_active = self.pages.remove(target_id)
        if page is None:
            return
        self._page_closed(page)
        log.debug("page %s closed", page.id)
        if was_active and self.pages.active is not None:
            # The page below (a popup's opener) takes the screen and the input back at once.
            self._spawn(self._raise(self.pages.active), "raise-page")
        self._changed()

    async def _raise(self, page: Page) -> None:
        with contextlib.suppress(CDPError):
            await self.cdp.call("Target.activateTarget", {"targetId": page.target_id}, timeout=5.0)

    def page_of(self, session_id: str) -> Page | None:
        """The page a session belongs to: its own, or the page whose (cross-site) frame it is."""
        for _ in range(16):  # (frames nest only so deep)
            page = self.pages.by_session(session_id)
            if page is not None or session_id not in self._subframes:
                return page
            session_id = self._subframes[session_id]
        return None


__all__ = ["PageTargets"]
