"""Text a page copies, for the frame's driver: the scripts every page runs and the names they share, new at each
launch (issue 32, #6).

A page knows what it copied, so it tells us; reading the X clipboard would need a selection owner per display.
Before, the binding that carried it was a global function of the page's own world under a fixed name: a page could
call it itself, with no copy at all, 64 KiB at a time in a loop (24 `clipboard` messages without a copy, the
service's memory 115 -> 649 MB in 8 s), and the web viewer wrote each into the person's clipboard. Now:

- The binding exists only in an isolated world of our own (`Runtime.addBinding` with `executionContextName`), under
  a random name: the page's scripts cannot see it, let alone call it.
- That world hears the page's trusted `copy` and `cut` events (DOM events reach every world; a page's synthetic
  `new ClipboardEvent('copy')` is not trusted) and reads the selection or what the page put in `clipboardData`.
- The async clipboard API (`navigator.clipboard.writeText` / `write`) lives in the page's own world: a wrapper
  there, installed before the page's scripts, hands the text to our world as a DOM event of a random name, which
  our world takes only while the page has transient user activation (a person or agent just acted on it).
- The service coalesces and rate-limits what arrives (browser/tabs.py), and the web viewer writes to the person's
  clipboard only right after the person's own gesture (web/lib/transfers.js).
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

from framestream.core.ratelimit import TokenBucket

MAX_COPY_CHARS = 64 * 1024  # what a copy keeps (the rest of a larger one is cut)
COPY_RATE = (2.0, 4.0)  # copies a second that reach the driver, and the burst


@dataclass(frozen=True, slots=True)
class CopyHook:
    binding: str  # the binding's name, in our world only
    world: str  # our isolated world's name
    event: str  # the DOM event the page's world hands async-clipboard text over with

    @classmethod
    def new(cls) -> CopyHook:
        token = secrets.token_hex(12)
        return cls(f"__fsCopied_{token}", f"framestream-{token}", f"fs-copy-{secrets.token_hex(12)}")

    def page_world_script(self) -> str:
        """The page's own world, before its scripts: no File System Access pickers (native dialogs no viewer could
        use; pages fall back to <input type=file>, whose choosers the driver answers) and the clipboard wrapper."""
        return _PAGE_WORLD.replace("EVENT", json.dumps(self.event))

    def our_world_script(self) -> str:
        return _OUR_WORLD.replace("BINDING", json.dumps(self.binding)).replace("EVENT", json.dumps(self.event))


_PAGE_WORLD = """(() => {
  for (const name of ['showOpenFilePicker', 'showSaveFilePicker', 'showDirectoryPicker']) {
    try { delete window[name]; delete Window.prototype[name]; } catch (e) {}
  }
  const clip = navigator.clipboard;
  if (!clip) return;
  const dispatch = EventTarget.prototype.dispatchEvent, Custom = CustomEvent, doc = document;
  const hand = (text) => {
    try { if (typeof text === 'string' && text) dispatch.call(doc, new Custom(EVENT, {detail: text})); } catch (e) {}
  };
  const writeText = Clipboard.prototype.writeText, write = Clipboard.prototype.write;
  clip.writeText = function (text) {
    return writeText.call(this, text).then((r) => { hand(String(text)); return r; });
  };
  clip.write = function (items) {
    return write.call(this, items).then(async (r) => {
      for (const item of items) if (item.types.includes('text/plain'))
        hand(await (await item.getType('text/plain')).text());
      return r;
    });
  };
})();"""

_OUR_WORLD = """(() => {
  const send = globalThis[BINDING];
  if (typeof send !== 'function') return;
  const post = (text) => { try { if (typeof text === 'string' && text) send(text); } catch (e) {} };
  const selected = () => {
    const a = document.activeElement;
    if (a && (a instanceof HTMLInputElement || a instanceof HTMLTextAreaElement) && a.selectionStart !== null)
      return a.value.slice(a.selectionStart, a.selectionEnd);
    return String(getSelection());
  };
  const onCopy = (e) => {
    if (e.isTrusted) post(e.defaultPrevented ? e.clipboardData.getData('text/plain') : selected());
  };
  addEventListener('copy', onCopy);
  addEventListener('cut', onCopy);
  document.addEventListener(EVENT, (e) => {
    if (navigator.userActivation && navigator.userActivation.isActive) post(e.detail);
  });
})();"""



class CopyRelay:
    """Copied text to the frame at most COPY_RATE a second; in between only the newest copy waits (coalesced)."""

    def __init__(self, emit: Callable[[str], None], rate: tuple[float, float] = COPY_RATE) -> None:
        self._emit = emit
        self._bucket = TokenBucket(*rate)
        self._interval = 1.0 / rate[0]
        self._pending: str | None = None
        self._timer: asyncio.TimerHandle | None = None
        self.coalesced = 0  # copies that a newer one replaced before they went out

    def offer(self, text: str) -> None:
        text = text[:MAX_COPY_CHARS]
        if self._timer is None and self._bucket.take(time.monotonic()):
            self._emit(text)
            return
        self.coalesced += self._pending is not None
        self._pending = text
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self._interval, self._flush)

    def _flush(self) -> None:
        self._timer = None
        text, self._pending = self._pending, None
        if text is not None:
            self.offer(text)

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._pending = None


__all__ = ["MAX_COPY_CHARS", "CopyHook", "CopyRelay"]
