"""What a frame's browser shows and asks, as the frame keeps it for its viewers: pages, dialogs, file choosers,
downloads and copied text; and the driver's actions on them (navigate, page, dialog-answer, files).

The browser layer (browser/tabs.py) reports `TabEvent`s; `Browsing` keeps what a joining viewer must be told
(the pages, the open dialogs and file choosers), keeps the frame's downloads within their limits, and turns it all
into frame events (frames/events.py). It outlives the browser, like the frame's feed: a relaunch starts it afresh.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from framestream.browser.tab_events import (
    Copied,
    CursorChanged,
    DialogClosed,
    DialogOpened,
    DownloadProgress,
    FileChooserClosed,
    FileChooserOpened,
    PageRefused,
    PagesChanged,
    ServerAnswered,
    TabEvent,
)
from framestream.browser.tabs import Tabs
from framestream.core.errors import ProtocolError
from framestream.core.urls import without_query
from framestream.core.wire import DialogAnswer, Navigate, PageRequest
from framestream.frames.events import (
    ClipboardCopied,
    DialogGone,
    DialogShown,
    DownloadChanged,
    FileChooserGone,
    FileChooserShown,
    FrameEvent,
    PageCursor,
)
from framestream.frames.events import PageRefused as PageRefusedEvent
from framestream.frames.files import DownloadUpdate, FrameFiles, remove_folders, sweep_downloads
from framestream.frames.urls import check_url

log = logging.getLogger("framestream.frames")

CLIPBOARD_MAX_CHARS = 64 * 1024


@dataclass(frozen=True, slots=True)
class ChooseFiles:
    """The driver's answer to a file chooser: files already saved in the frame's uploads folder."""

    id: str
    paths: tuple[Path, ...]


@dataclass(frozen=True, slots=True)
class CancelFileChooser:
    id: str


@dataclass(frozen=True, slots=True)
class AdmitFiles:
    """The driver is about to answer file chooser `id`: admitted (arbitration, the chooser still open) before a
    byte of the upload is read; the files follow as `ChooseFiles` under the same grant."""

    id: str


@dataclass(frozen=True, slots=True)
class AdmitDrop:
    """The driver is about to drop files on the active page at (x, y): admitted (arbitration, a browser running)
    before a byte of the upload is read; the files follow as `DropFiles` under the same grant."""

    x: float
    y: float


@dataclass(frozen=True, slots=True)
class DropFiles:
    """Files dropped on the active page at (x, y) CSS pixels, as a person drags them from their desktop: already
    saved in the frame's uploads folder."""

    x: float
    y: float
    paths: tuple[Path, ...]


FrameAction = (Navigate | PageRequest | DialogAnswer | ChooseFiles | CancelFileChooser | AdmitFiles | AdmitDrop
               | DropFiles)


class Browsing:
    def __init__(self, frame_id: str, files: FrameFiles, emit: Callable[[FrameEvent], None],
                 spawn: Callable[[Any, str], object], allowed_hosts: Sequence[str], *,
                 own_port: int | None = None) -> None:
        self.frame_id = frame_id
        self.files = files
        self._emit = emit
        self._spawn = spawn
        self._allowed_hosts = allowed_hosts
        self._own_port = own_port  # the service's: only its /web/ files are a frame's to open
        self.pages: list[dict[str, Any]] | None = None
        self.dialogs: dict[str, DialogShown] = {}
        self.choosers: dict[str, FileChooserShown] = {}
        self.cursor = PageCursor(frame_id, "default")  # at the driver's pointer, as the page last said
        self.tabs: Tabs | None = None  # the running browser's pages, set by the frame
        # What happened, for /metrics: ("dialogs", kind), ("dialog-timeouts", ""), ("file-choosers", ""),
        # ("downloads", state), ("pages-refused", ""), ("pages-unresponsive", ""), ("pages-server-back", "").
        self.counts: collections.Counter[tuple[str, str]] = collections.Counter()
        self._index_lock = asyncio.Lock()  # one write of the downloads' index at a time, each the newest

    def _log(self, message: str, *args: object, warning: bool = False) -> None:
        log.log(logging.WARNING if warning else logging.INFO, message, *args, extra={"frame": self.frame_id})

    @property
    def unresponsive_pages(self) -> int:
        return sum(1 for page in self.pages or () if not page.get("responsive", True))

    # -- what a viewer is told ---------------------------------------------------------------------------

    def open_questions(self) -> list[FrameEvent]:
        """What a viewer that joins now must hear besides the frame's state: open dialogs and file choosers, and
        the cursor unless it is the arrow every viewer starts with."""
        cursor = [self.cursor] if self.cursor.cursor != "default" else []
        return [*self.dialogs.values(), *self.choosers.values(), *cursor]

    def recordable(self, url: str) -> bool:
        """Whether a page's URL may become the frame's URL (kept in the registry, reopened after a restart)."""
        try:
            check_url(url, self._allowed_hosts, self._own_port)
        except ValueError:
            return False
        return True

    def active_url(self) -> str | None:
        for page in self.pages or ():
            if page.get("active"):
                return str(page.get("url", ""))
        return None

    # -- from the browser --------------------------------------------------------------------------------

    def on_tab_event(self, event: TabEvent) -> bool:
        """Take one report of the browser; True when the frame's state (its pages) changed."""
        fid = self.frame_id
        if isinstance(event, PagesChanged):
            before = {p["id"]: p for p in self.pages or ()}
            for page in event.pages:
                old = before.pop(page["id"], None)
                if old is None:
                    self._log("page %s opened", page["id"])
                elif old.get("responsive", True) != page.get("responsive", True):
                    if not page.get("responsive", True):
                        self.counts["pages-unresponsive", ""] += 1
                    self._log("page %s %s", page["id"], "answers again" if page.get("responsive", True)
                              else "stopped answering", warning=not page.get("responsive", True))
            for page_id in before:
                self._log("page %s closed", page_id)
            self.pages = event.pages
            return True
        if isinstance(event, DialogOpened):
            d = event.dialog
            shown = DialogShown(fid, d.id, d.page_id, d.kind, d.message, d.default)
            self.dialogs[d.id] = shown
            self.counts["dialogs", d.kind] += 1
            self._log("page %s opened a %s dialog (%s)", d.page_id, d.kind, d.id)
            self._emit(shown)
        elif isinstance(event, DialogClosed):
            if self.dialogs.pop(event.id, None) is not None:
                if event.reason == "timeout":
                    self.counts["dialog-timeouts", ""] += 1
                self._log("dialog %s closed (%s)", event.id, event.reason)
                self._emit(DialogGone(fid, event.id, event.reason))
        elif isinstance(event, FileChooserOpened):
            c = event.chooser
            chooser = FileChooserShown(fid, c.id, c.page_id, c.multiple, c.accept)
            self.choosers[c.id] = chooser
            self.counts["file-choosers", ""] += 1
            self._log("page %s opened a file chooser (%s)", c.page_id, c.id)
            self._emit(chooser)
        elif isinstance(event, FileChooserClosed):
            if self.choosers.pop(event.id, None) is not None:
                self._emit(FileChooserGone(fid, event.id))
        elif isinstance(event, DownloadProgress):
            self._download(event)
        elif isinstance(event, Copied):
            self._emit(ClipboardCopied(fid, event.text[:CLIPBOARD_MAX_CHARS]))
        elif isinstance(event, CursorChanged):
            if event.cursor != self.cursor.cursor:  # the page tells at every move; viewers hear a change
                self.cursor = PageCursor(fid, event.cursor)
                self._emit(self.cursor)
        elif isinstance(event, PageRefused):
            self.counts["pages-refused", ""] += 1
            self._log("a page was refused: %s", event.reason, warning=True)
            self._emit(PageRefusedEvent(fid, f"a page tried to open {without_query(event.url)[:200]}: {event.reason}",
                                        event.code))
        elif isinstance(event, ServerAnswered):
            self.counts["pages-server-back", ""] += 1
            self._log("page %s loaded %s again: its server answers", event.page_id, without_query(event.url)[:200])
        return False

    def _download(self, event: DownloadProgress) -> None:
        if event.state == "started":
            update = self.files.started(event.guid, event.name)
            for download in update.told[:1]:
                self._log("download %s started", download.id)
        else:
            update = self.files.progressed(event.guid, event.received, event.state)
        self._carry_out(update)

    def _carry_out(self, update: DownloadUpdate) -> None:
        """Tell what changed; cancel downloads no longer kept and delete files, off the loop."""
        for download in update.told:
            if download.state != "started":
                self.counts["downloads", download.state] += 1
                self._log("download %s %s (%d bytes)", download.id, download.state, download.size)
            self._emit(DownloadChanged(self.frame_id, download.id, download.name, download.size, download.state))
        if update.cancel:
            log.warning("download %s cancelled: past the frame's download limits", ", ".join(update.cancel),
                        extra={"frame": self.frame_id})
            self._spawn(self._cancel_and_remove(update.cancel), "cancel-downloads")
        if update.delete:
            self._spawn(asyncio.to_thread(self.files.remove_download_files, update.delete), "remove-downloads")
        if update.index_changed:
            self._spawn(self._save_index(), "save-downloads")

    async def _cancel_and_remove(self, ids: list[str]) -> None:
        tabs = self.tabs
        if tabs is not None:
            await asyncio.gather(*(tabs.cancel_download(i) for i in ids))
        await asyncio.to_thread(self.files.remove_download_files, ids)
        # Anything else of the folder not in the index goes too (a file whose download nobody kept).
        await asyncio.to_thread(sweep_downloads, self.files.downloads_dir, self.files.kept_files())

    async def _save_index(self) -> None:
        async with self._index_lock:  # the newest index, taken on the loop, written last
            index = self.files.index()
            await asyncio.to_thread(self.files.write_index, index)

    def browser_gone(self) -> None:
        """The browser closed: its pages, dialogs and choosers are gone with it, and so are its running
        downloads and the uploads its pages were given."""
        self.tabs = None
        self.pages = None
        self.cursor = PageCursor(self.frame_id, "default")  # a new browser's page tells its own
        self._carry_out(self.files.browser_gone())
        uploads = self.files.forget_uploads()
        if uploads:
            self._spawn(asyncio.to_thread(remove_folders, uploads), "remove-uploads")
        for dialog_id in list(self.dialogs):
            del self.dialogs[dialog_id]
            self._emit(DialogGone(self.frame_id, dialog_id, "closed"))
        for chooser_id in list(self.choosers):
            del self.choosers[chooser_id]
            self._emit(FileChooserGone(self.frame_id, chooser_id))

    # -- the driver's actions ----------------------------------------------------------------------------

    async def apply(self, action: FrameAction) -> None:
        tabs = self.tabs
        if tabs is None:
            raise ProtocolError("internal", "the frame's browser is not running")
        if isinstance(action, Navigate):
            await self._navigate(tabs, action)
        elif isinstance(action, PageRequest):
            if action.action == "activate":
                await tabs.activate(action.page)
            elif action.action == "close":
                await tabs.close_page(action.page)
            else:
                await tabs.reload(action.page)
        elif isinstance(action, DialogAnswer):
            await tabs.answer_dialog(action.id, action.accept, action.text)
        elif isinstance(action, ChooseFiles):
            await tabs.choose_files(action.id, action.paths)
        elif isinstance(action, AdmitFiles):
            if action.id not in tabs.choosers:
                raise ProtocolError("unknown-file-chooser", f"no open file chooser {action.id!r}")
        elif isinstance(action, AdmitDrop | DropFiles):
            tabs.refuse_under_dialog()
            if isinstance(action, DropFiles):
                await tabs.drop_files(action.x, action.y, action.paths)
        else:
            await tabs.cancel_chooser(action.id)

    async def _navigate(self, tabs: Tabs, action: Navigate) -> None:
        if action.url is not None:
            try:
                url = check_url(action.url, self._allowed_hosts, self._own_port)
            except ValueError as exc:
                raise ProtocolError("bad-input", str(exc)) from exc
            error = await tabs.navigate(url)
            if error:
                raise ProtocolError("navigation-failed", f"could not load {url}: {error}")
        elif action.action == "reload":
            await tabs.reload()
        else:
            await tabs.go(-1 if action.action == "back" else 1)


__all__ = ["AdmitDrop", "AdmitFiles", "Browsing", "CancelFileChooser", "ChooseFiles", "DropFiles", "FrameAction"]
