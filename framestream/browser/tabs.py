"""Every page one browser opens, over its DevTools connection: the first page, popups and new tabs.

Pages are auto-attached paused (`waitForDebuggerOnStart`), so each one is set up before its first script runs
(browser/page_targets.py): the frame's CSS size and dpr, file choosers intercepted (never a native dialog), the copy
hook, and popups' windows made fullscreen so every page covers the frame's screen and shares its coordinates.
What a page asks of its driver (dialogs, file choosers) and what comes out of it (downloads, its prints as PDFs
(browser/prints.py), copied text) is reported as `TabEvent`s to one callback; the owner (a frame) turns them into
messages for its viewers.

Input goes to the active page. A dialog that opens or a print that starts while an input event is being applied
ends that event's wait (the page is now waiting for the dialog or the PDF, not for the input), so the step is
acknowledged at once; input to a page that prints waits for the print's end (browser/print_hook.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Callable, Coroutine, Iterable
from pathlib import Path
from typing import Any, TypeVar

from framestream.browser import navigation, page_size, responsiveness, url_guard
from framestream.browser.cdp import CDPConnection
from framestream.browser.copy_hook import CopyRelay
from framestream.browser.dialogs import Dialogs
from framestream.browser.file_choosers import FileChoosers
from framestream.browser.page_targets import PageTargets
from framestream.browser.paste import paste
from framestream.browser.print_hook import PagePrints
from framestream.browser.prints import PrintedPdfs
from framestream.browser.server_wait import ServerWaits
from framestream.browser.tab_events import (
    Copied,
    CursorChanged,
    DownloadProgress,
    PageCrashed,
    PagesChanged,
    ServerAnswered,
    TabEvent,
    TabSettings,
)
from framestream.core.errors import BrowserError, CDPError, ProtocolError
from framestream.core.pages import Dialog, FileChooser, Page, PageStack
from framestream.core.urls import document_refusal
from framestream.core.wire import CURSORS

log = logging.getLogger(__name__)
T = TypeVar("T")
_DRAG_COPY = 1  # Input.DragData's dragOperationsMask: copy


class Tabs:
    """The pages of one browser. Owns its tasks (attach, probes, timers) and ends them in `close()`."""

    def __init__(self, cdp: CDPConnection, settings: TabSettings, on_event: Callable[[TabEvent], None]) -> None:
        self.cdp = cdp
        self.settings = settings
        self._emit = on_event
        self.file_choosers = FileChoosers(cdp, on_event, self.spawn)
        self.page_dialogs = Dialogs(cdp, on_event, self.spawn, settings.dialog_timeout_s)
        self.pages = PageStack()
        self._hung: dict[str, asyncio.Event] = {}  # per session: set while the page does not answer
        self.printing = PagePrints()  # the prints under way, page by page (a step waits for them: frames/steps.py)
        self._tasks: set[asyncio.Task[Any]] = set()
        self._unsubscribe: list[Callable[[], None]] = []
        self.paused = False
        self.closed = False
        self._copies = CopyRelay(lambda text: self._emit(Copied(text)))  # coalesced, rate-limited
        # Attaching, setting up and forgetting pages as their targets come and go (browser/page_targets.py).
        self._targets = PageTargets(cdp, settings, self.pages, emit=on_event, spawn=self.spawn,
                                    changed=self.changed, page_closed=self._page_closed)
        self._prints = (PrintedPdfs(settings.prints_dir, settings.downloads_dir, emit=on_event)
                        if settings.prints_dir is not None else None)
        # Pages on Chrome's error page because their server refused the connection load again once it answers.
        self._server_waits = ServerWaits(
            load=lambda page, url: navigation.load(self.cdp, page.session_id, url),
            answered=lambda page, url: self._emit(ServerAnswered(page.id, url, page is self.pages.active)),
            asking=lambda: not self.paused,
            refused=lambda url: document_refusal(url, settings.allowed_hosts, settings.own_port) is not None)

    # -- start and stop ----------------------------------------------------------------------------------

    async def start(self, timeout: float = 10.0) -> Page:
        on = self.cdp.on
        self._unsubscribe = [
            on("Target.attachedToTarget", self._targets.on_attached),
            on("Target.targetInfoChanged", self._targets.on_target_info),
            on("Target.targetDestroyed", self._targets.on_target_destroyed),
            on("Target.detachedFromTarget", self._targets.on_detached),
            on("Inspector.targetCrashed", self._on_crashed),
            on("Page.javascriptDialogOpening", self._on_dialog_opening),
            on("Page.javascriptDialogClosed", self._on_dialog_closed),
            on("Page.fileChooserOpened", self._on_file_chooser),
            on("Browser.downloadWillBegin", lambda params: self._emit(DownloadProgress.began(params))),
            on("Browser.downloadProgress", lambda params: self._emit(DownloadProgress.progressed(params))),
            on("Runtime.bindingCalled", self._on_binding),
            on("Page.loadEventFired", self._targets.on_loaded),
            on("Page.frameNavigated", self._on_frame_navigated),
            on("Page.windowOpen", self._targets.on_window_open),
            on("Fetch.requestPaused", self._on_document_request),
            on("Fetch.authRequired", self._on_sign_in),
        ]
        self.settings.downloads_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        if self._prints is not None:
            await self._prints.start()
            self.spawn(self._prints.run(), "prints")
        await self.cdp.call("Browser.setDownloadBehavior", {
            "behavior": "allowAndName", "downloadPath": str(self.settings.downloads_dir), "eventsEnabled": True})
        if self.settings.grant_permissions:
            await self.cdp.call("Browser.grantPermissions", {"permissions": list(self.settings.grant_permissions)})
        await self.cdp.call("Target.setDiscoverTargets", {"discover": True})
        await self.cdp.call("Target.setAutoAttach", {"autoAttach": True, "waitForDebuggerOnStart": True,
                                                      "flatten": True})
        self.spawn(responsiveness.probe_forever(self), "page-probes")
        try:
            async with asyncio.timeout(timeout):
                return await asyncio.shield(self._targets.first_page)
        except TimeoutError as exc:
            raise BrowserError("Chromium opened no page") from exc

    async def close(self) -> None:
        self.closed = True
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self._unsubscribe = []
        self.page_dialogs.close()
        self._copies.close()
        await self._server_waits.close()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._prints is not None:
            self._prints.close()

    def spawn(self, coro: Any, name: str) -> None:
        """Run `coro` as a task this page set owns (ended by `close()`)."""
        if self.closed:
            coro.close()
            return
        task = asyncio.create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("page task %s failed: %s", task.get_name(), task.exception())

    def _on_document_request(self, params: dict[str, Any]) -> None:
        self.spawn(url_guard.check(self.cdp, params, self.settings, self._emit), "url-guard")

    def _on_frame_navigated(self, params: dict[str, Any]) -> None:
        frame = params.get("frame")
        page = self.pages.by_session(str(params.get("sessionId", "")))
        if page is not None and isinstance(frame, dict) and not frame.get("parentId"):  # a page's main frame
            unreachable = frame.get("unreachableUrl")
            self._server_waits.committed(page, str(frame.get("url", "")), str(unreachable) if unreachable else None)
            self.printing.forget(page.session_id)

    def _on_sign_in(self, params: dict[str, Any]) -> None:
        self.spawn(url_guard.cancel_sign_in(self.cdp, params), "decline-sign-in")

    # -- pages -------------------------------------------------------------------------------------------

    @property
    def active(self) -> Page:
        page = self.pages.active
        if page is None:
            raise BrowserError("the browser has no page")
        return page

    async def resize(self, width: int, height: int, dpr: int) -> None:
        """Every page and its window at a new size (encoded pixels) and dpr, in place, and pages opened from now
        on too (browser/page_size.py). Raises CDPError when the windows or the active page did not take it."""
        self.settings = self._targets.settings = dataclasses.replace(self.settings, width=width, height=height,
                                                                     dpr=dpr)
        await page_size.resize(self.cdp, list(self.pages), self.pages.active, self.settings)

    def page(self, page_id: str) -> Page:
        page = self.pages.get(page_id)
        if page is None:
            raise ProtocolError("unknown-page", f"no page {page_id!r} in this frame")
        return page

    async def call(self, method: str, params: dict[str, Any] | None = None, *, page: Page | None = None,
                   timeout: float = 10.0) -> dict[str, Any]:
        target = page or self.active
        return await self.cdp.call(method, params, session_id=target.session_id, timeout=timeout)

    def _page_closed(self, page: Page) -> None:
        self.page_dialogs.page_closed(page)
        self._server_waits.page_closed(page.id)
        self.file_choosers.page_closed(page.id)
        self.printing.forget(page.session_id)
        self._hung.pop(page.session_id, None)

    def changed(self) -> None:
        """Tell the owner the pages as they are now."""
        self._emit(PagesChanged(self.pages.describe()))

    async def activate(self, page_id: str) -> None:
        page = self.page(page_id)
        await self.cdp.call("Target.activateTarget", {"targetId": page.target_id}, timeout=5.0)
        self.pages.activate(page_id)
        self.changed()

    async def close_page(self, page_id: str) -> None:
        page = self.page(page_id)
        if len(self.pages) == 1:
            raise ProtocolError("bad-input", "a frame's last page cannot be closed (delete the frame instead)")
        await self.cdp.call("Target.closeTarget", {"targetId": page.target_id}, timeout=5.0)

    async def reload(self, page_id: str | None = None) -> None:
        """Reload a page, even one whose script never returns (its JavaScript is ended first)."""
        page = self.page(page_id) if page_id else self.active
        hung = not page.responsive
        if hung:
            with contextlib.suppress(CDPError):
                await self.call("Runtime.terminateExecution", page=page, timeout=3.0)
        if page is self.pages.active:
            await self._unless_dialog(self.call("Page.reload", page=page, timeout=10.0), "reload")
        else:
            await self.call("Page.reload", page=page, timeout=10.0)
        if hung and not page.responsive:
            # Its script was ended and it loads again: it answers now (the probe says so again if the new page
            # hangs). Left to the next probe, input to it was refused as `unresponsive` for up to 4 s more.
            self.mark_responsive(page, True)
            self.changed()

    # -- input -------------------------------------------------------------------------------------------

    def open_dialog(self, page: Page | None = None) -> Dialog | None:
        target = page or self.pages.active
        if target is None:
            return None
        return self.page_dialogs.on(target)

    def refuse_under_dialog(self) -> None:
        """Raise `dialog-open` while the active page shows a dialog: input (a drop too) waits for its answer."""
        if (dialog := self.open_dialog()) is not None:
            raise ProtocolError("dialog-open", f"page {dialog.page_id} shows a {dialog.kind} dialog ({dialog.id}): "
                                "answer it with dialog-answer first")

    async def dispatch(self, method: str, params: dict[str, Any], *, timeout: float = 5.0) -> None:
        """Apply one input event to the active page, once it prints nothing; returns early when the event opened a
        dialog or started a print, and raises `unresponsive` at once for a page whose script does not return (or as
        soon as the probe finds it so), `printing` for a print that does not end."""
        page = self.active
        if not page.responsive:
            raise ProtocolError("unresponsive", f"page {page.id} is not answering (reload it with a page action)")
        await self.printing.ended(page)  # (Chromium drops input to a printing page)
        opened = self.page_dialogs.next_opening(page.session_id)
        printing = self.printing.next_start(page.session_id)
        hung = self._hung.setdefault(page.session_id, asyncio.Event())
        call = await self._until(self.call(method, params, page=page, timeout=timeout), method, opened, printing, hung)
        if call.done():
            try:
                call.result()
            except CDPError:
                if self.pages.by_session(page.session_id) is not None:
                    raise
                # The event closed its own page (a popup's "done" button): delivered, and the page is gone.
            return
        if hung.is_set():
            call.cancel()
            raise ProtocolError("unresponsive", f"page {page.id} stopped answering while applying input")
        # The page waits for its dialog now, or prints: the answer comes later (past `timeout` only logged).

    async def _until(self, work: Coroutine[Any, Any, T], name: str, *events: asyncio.Event) -> asyncio.Task[T]:
        """`work` run until it ends or one of `events` is set; then it is owned until it ends (an answer that waits
        for a dialog's, or for a print), as the task `name`."""
        task = asyncio.create_task(work, name=name)
        waiters = [asyncio.ensure_future(event.wait()) for event in events]
        try:
            await asyncio.wait((task, *waiters), return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()
        if not task.done():
            self._tasks.add(task)
            task.add_done_callback(self._task_done)
        return task

    async def paste(self, text: str) -> None:
        await paste(self, text)  # a real paste (browser/paste.py)

    # -- navigation --------------------------------------------------------------------------------------

    async def navigate(self, url: str, *, timeout: float = 30.0) -> str | None:
        """Navigate the active page and wait for its load; returns Chrome's error text (net::ERR_...) or None.
        A dialog the page opens meanwhile (`beforeunload`) ends the wait: the navigation waits for its answer."""
        return await self._unless_dialog(navigation.load(self.cdp, self.active.session_id, url, timeout=timeout),
                                         "navigation")

    async def _unless_dialog(self, work: Coroutine[Any, Any, T], name: str) -> T | None:
        """What `work` gives, or None when the active page opens a dialog first: `work` ends once it is answered."""
        task = await self._until(work, name, self.page_dialogs.next_opening(self.active.session_id))
        return task.result() if task.done() else None

    async def go(self, step: int, *, timeout: float = 10.0) -> None:
        """Back (-1) or forward (+1) in the active page's history, once the entry has committed."""
        await navigation.go(self.cdp, self.active.session_id, step, timeout=timeout)

    async def forget_history(self) -> None:
        """The frame's first page has no history before it (Back never leaves the frame's own pages)."""
        await self.call("Page.resetNavigationHistory")

    # -- dialogs (browser/dialogs.py) ----------------------------------------------------------------------

    @property
    def dialogs(self) -> dict[str, Dialog]:
        return self.page_dialogs.open

    def _on_dialog_opening(self, params: dict[str, Any]) -> None:
        page = self.pages.by_session(params.get("sessionId"))
        if page is not None:
            self.page_dialogs.opening(page, params)

    def _on_dialog_closed(self, params: dict[str, Any]) -> None:
        page = self.pages.by_session(params.get("sessionId"))
        if page is not None:
            self.page_dialogs.closed(page)

    async def answer_dialog(self, dialog_id: str, accept: bool, text: str | None = None) -> None:
        await self.page_dialogs.answer(dialog_id, accept, text)

    # -- file choosers (browser/file_choosers.py) ----------------------------------------------------------

    @property
    def choosers(self) -> dict[str, FileChooser]:
        return self.file_choosers.open

    def _on_file_chooser(self, params: dict[str, Any]) -> None:
        session_id = str(params.get("sessionId", ""))
        page = self._targets.page_of(session_id)
        if page is not None:
            self.file_choosers.opened(page, params, session_id)

    async def choose_files(self, chooser_id: str, paths: Iterable[Path]) -> None:
        await self.file_choosers.choose(chooser_id, paths)

    async def cancel_chooser(self, chooser_id: str) -> None:
        await self.file_choosers.cancel(chooser_id)

    async def drop_files(self, x: float, y: float, paths: Iterable[Path]) -> None:
        """Files dropped on the active page at (x, y) CSS pixels, as a person's drag from their desktop: the
        drag's enter, a move over and the drop, carrying the files (the page reads them as `File`s; a copy, the
        only operation a desktop's file drag offers a page)."""
        data = {"items": [], "files": [str(path) for path in paths], "dragOperationsMask": _DRAG_COPY}
        for kind in ("dragEnter", "dragOver", "drop"):
            await self.dispatch("Input.dispatchDragEvent", {"type": kind, "x": x, "y": y, "data": data})

    # -- downloads, clipboard, crashes --------------------------------------------------------------------

    async def cancel_download(self, guid: str) -> None:
        with contextlib.suppress(CDPError):
            await self.cdp.call("Browser.cancelDownload", {"guid": guid}, timeout=5.0)

    def _on_binding(self, params: dict[str, Any]) -> None:
        name = params.get("name")
        if name == self.settings.copy_hook.binding and self.pages.by_session(params.get("sessionId")) is not None:
            self._copies.offer(str(params.get("payload", "")))
        elif name == self.settings.cursor_hook.binding:
            # The active page's, or one of its cross-site iframes': the pointer is over what the viewer sees.
            cursor = str(params.get("payload", ""))
            page = self._targets.page_of(str(params.get("sessionId", "")))
            if page is not None and page is self.pages.active and cursor in CURSORS:
                self._emit(CursorChanged(cursor))
        elif name == self.settings.print_hook.binding:
            # The page, or one of its iframes, started or ended a print (browser/print_hook.py).
            page = self._targets.page_of(str(params.get("sessionId", "")))
            if page is not None:
                self.printing.told(page.session_id, str(params.get("payload", "")))

    def _on_crashed(self, params: dict[str, Any]) -> None:
        page = self.pages.by_session(params.get("sessionId"))
        if page is not None:
            self._emit(PageCrashed(page.id))

    # -- responsiveness (browser/responsiveness.py probes) -----------------------------------------------------

    def mark_responsive(self, page: Page, responsive: bool) -> None:
        """The probe's verdict on a page: inputs waiting on a page that stopped answering end at once."""
        page.responsive = responsive
        hung = self._hung.setdefault(page.session_id, asyncio.Event())
        hung.clear() if responsive else hung.set()
        log.debug("page %s %s", page.id, "answers again" if responsive else "stopped answering")


__all__ = ["Tabs"]
