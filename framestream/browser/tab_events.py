"""What a browser's pages report (`TabEvent`s), the page set's settings, and the copy hook every page runs.

Values only: `browser/tabs.py` makes them from DevTools events; a frame (frames/browsing.py) turns them into what
its viewers hear.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from framestream.core.pages import DIALOG_TIMEOUT_S, MAX_PAGES, Dialog, FileChooser

COPY_BINDING = "__framestreamCopied"  # named in PAGE_HOOK
# Main world, before the page's scripts (every page and frame): no File System Access pickers (below), and copied
# text (a copy or cut event, the async clipboard API) goes to the binding, which only the frame's driver hears.
# Reading it from the X clipboard instead would need a selection owner per display; the page knows what it copied.
PAGE_HOOK = """(() => {
  if (window.__framestreamCopyHook) return;
  // The File System Access pickers open native dialogs no viewer could use, and DevTools cannot answer them:
  // without them pages fall back to <input type=file>, whose choosers the driver answers.
  for (const name of ['showOpenFilePicker', 'showSaveFilePicker', 'showDirectoryPicker']) {
    try { delete window[name]; delete Window.prototype[name]; } catch (e) {}
  }
  Object.defineProperty(window, '__framestreamCopyHook', {value: true});
  const send = globalThis.__framestreamCopied;
  const post = (text) => { try { if (typeof text === 'string' && text) send(text); } catch (e) {} };
  const selected = () => {
    const a = document.activeElement;
    if (a && (a instanceof HTMLInputElement || a instanceof HTMLTextAreaElement) && a.selectionStart !== null)
      return a.value.slice(a.selectionStart, a.selectionEnd);
    return String(getSelection());
  };
  const onCopy = (e) => post(e.defaultPrevented ? e.clipboardData.getData('text/plain') : selected());
  addEventListener('copy', onCopy);
  addEventListener('cut', onCopy);
  const clip = navigator.clipboard;
  if (clip) {
    const writeText = Clipboard.prototype.writeText, write = Clipboard.prototype.write;
    clip.writeText = function (text) {
      return writeText.call(this, text).then((r) => { post(String(text)); return r; });
    };
    clip.write = function (items) {
      return write.call(this, items).then(async (r) => {
        for (const item of items) if (item.types.includes('text/plain'))
          post(await (await item.getType('text/plain')).text());
        return r;
      });
    };
  }
})();"""


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


@dataclass(frozen=True, slots=True)
class Copied:
    text: str


TabEvent = (PagesChanged | PageNavigated | PageRefused | PageCrashed | DialogOpened | DialogClosed
            | FileChooserOpened | FileChooserClosed | DownloadProgress | Copied)


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


__all__ = ["COPY_BINDING", "PAGE_HOOK", "Copied", "DialogClosed", "DialogOpened", "DownloadProgress",
           "FileChooserClosed", "FileChooserOpened", "PageCrashed", "PageNavigated", "PageRefused", "PagesChanged",
           "TabEvent", "TabSettings"]
