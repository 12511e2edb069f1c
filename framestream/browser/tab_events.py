"""What a browser's pages report (`TabEvent`s) and the page set's settings.

Values only: `browser/tabs.py` makes them from DevTools events; a frame (frames/browsing.py) turns them into what
its viewers hear.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from framestream.browser.copy_hook import CopyHook
from framestream.browser.cursor_hook import CursorHook
from framestream.browser.print_hook import PrintHook
from framestream.core.pages import DIALOG_TIMEOUT_S, MAX_PAGES, Dialog, FileChooser


@dataclass(frozen=True, slots=True)
class PagesChanged:
    pages: list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class PageNavigated:
    page_id: str
    url: str
    active: bool


@dataclass(frozen=True, slots=True)
class PageRefused:
    url: str
    reason: str
    code: str = "page-limit"  # the error code viewers hear (`url-not-allowed`: a navigation off the allow list)


@dataclass(frozen=True, slots=True)
class PageCrashed:
    page_id: str


@dataclass(frozen=True, slots=True)
class DialogOpened:
    dialog: Dialog


@dataclass(frozen=True, slots=True)
class DialogClosed:
    id: str
    reason: str  # "answered", "timeout", "closed"


@dataclass(frozen=True, slots=True)
class FileChooserOpened:
    chooser: FileChooser


@dataclass(frozen=True, slots=True)
class FileChooserClosed:
    id: str


@dataclass(frozen=True, slots=True)
class DownloadProgress:
    guid: str
    name: str
    url: str
    received: int
    total: int
    state: str  # "started", "progress", "completed", "canceled"

    @classmethod
    def began(cls, params: dict[str, Any]) -> DownloadProgress:
        """From `Browser.downloadWillBegin`."""
        return cls(str(params.get("guid", "")), str(params.get("suggestedFilename", "")), str(params.get("url", "")),
                   0, 0, "started")

    @classmethod
    def progressed(cls, params: dict[str, Any]) -> DownloadProgress:
        """From `Browser.downloadProgress`."""
        state = str(params.get("state", "inProgress"))
        return cls(str(params.get("guid", "")), "", "", int(params.get("receivedBytes", 0)),
                   int(params.get("totalBytes", 0)), {"inProgress": "progress"}.get(state, state))


@dataclass(frozen=True, slots=True)
class Copied:
    text: str


@dataclass(frozen=True, slots=True)
class CursorChanged:
    """The active page's cursor at the driver's pointer, one of core/wire's CURSORS (browser/cursor_hook.py)."""

    cursor: str


@dataclass(frozen=True, slots=True)
class ServerAnswered:
    """A page that showed Chrome's error page while its server refused connections loaded `url`: once the server
    answered (browser/server_wait.py), or meanwhile by Chromium's own retry or someone's reload."""

    page_id: str
    url: str
    active: bool


TabEvent = (PagesChanged | PageNavigated | PageRefused | PageCrashed | DialogOpened | DialogClosed
            | FileChooserOpened | FileChooserClosed | DownloadProgress | Copied | CursorChanged | ServerAnswered)


@dataclass(frozen=True, slots=True)
class TabSettings:
    width: int  # encoded pixels
    height: int
    dpr: int
    downloads_dir: Path
    grant_permissions: tuple[str, ...] = ()
    max_pages: int = MAX_PAGES
    dialog_timeout_s: float = DIALOG_TIMEOUT_S
    allowed_hosts: tuple[str, ...] = ()  # FRAMESTREAM_URL_ALLOW_HOSTS: every document a page loads must be on it
    own_port: int | None = None  # the service's port: of it, pages may load only /web/ (core/urls.py)
    copy_hook: CopyHook = field(default_factory=CopyHook.new)  # new names at every launch (browser/copy_hook.py)
    cursor_hook: CursorHook = field(default_factory=CursorHook.new)  # the same (browser/cursor_hook.py)
    print_hook: PrintHook = field(default_factory=PrintHook.new)  # the same (browser/print_hook.py)
    prints_dir: Path | None = None  # where the browser saves its prints, watched (browser/prints.py)


__all__ = ["Copied", "CursorChanged", "DialogClosed", "DialogOpened", "DownloadProgress",
           "FileChooserClosed", "FileChooserOpened", "PageCrashed", "PageNavigated", "PageRefused", "PagesChanged",
           "ServerAnswered", "TabEvent", "TabSettings"]
