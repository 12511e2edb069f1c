"""A page says when it starts and ends a print, so the input that started it is answered at once, and input sent
while it prints waits for its end instead of being lost.

With `--kiosk-printing` (browser/preferences.py) the renderer makes the PDF inside `window.print()`, so the click or
key that called it is acknowledged only once the PDF is made: 0.6 s for a small page here, 10-13 s for a long one,
and on a loaded machine past the 5 s an input event is given (the step failed with `internal` while the print went
on). Meanwhile Chromium acknowledges other input to the page at once and drops it: a click during a 14 s print was
answered in 5 ms and never reached the page, nor did it later (measured; the probe's `Runtime.evaluate` answers
too). A click right after a print's PDF appeared could fall in the last of it, and nothing happened (CI saw it). So
input to a page that prints waits, up to PRINT_WAIT_S, for the print's end, as input to a busy page would.

The page tells us as its copies do (browser/copy_hook.py): a wrapper of `window.print`, in the page's own world of
every frame before its scripts, hands the start and the end to an isolated world of ours as DOM events of random
names, at the top document when it can reach it (a receipt printed from a new iframe), and that world reports them
through a binding of a random name that exists there alone. Not `beforeprint` alone: `document.open()`, how a page
writes a receipt into a new iframe before printing it, erases the window's listeners, ours too (checked: such a
click still failed). But a print asked for while the page loads is made once it has loaded, after the wrapper
returned (measured: `print()` returned in 63 ms, the PDF came 7 s later, after the load): the top window's trusted
`beforeprint` and `afterprint` tell that one (a print told twice counts twice, and ends twice). The names are held
outside the wrapper, so its source (`window.print.toString()`) does not show them; a page that found them could
only delay or lose its own input.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from dataclasses import dataclass

from framestream.core.errors import ProtocolError
from framestream.core.pages import Page

PRINT_WAIT_S = 15.0  # how long input to a printing page waits for the print's end (a long page's took 10-13 s)


@dataclass(frozen=True, slots=True)
class PrintHook:
    binding: str  # the binding's name, in our world only
    world: str  # our isolated world's name
    started: str  # the DOM events the page's world hands a print's start and end over with
    ended: str

    @classmethod
    def new(cls) -> PrintHook:
        token = secrets.token_hex(12)
        return cls(f"__fsPrinting_{token}", f"framestream-print-{token}", f"fs-print-{secrets.token_hex(12)}",
                   f"fs-printed-{secrets.token_hex(12)}")

    def page_world_script(self) -> str:
        """The page's own world, before its scripts, in every frame: `window.print` tells our world first."""
        return _PAGE_WORLD.replace("STARTED", json.dumps(self.started)).replace("ENDED", json.dumps(self.ended))

    def our_world_script(self) -> str:
        return (_OUR_WORLD.replace("BINDING", json.dumps(self.binding)).replace("STARTED", json.dumps(self.started))
                .replace("ENDED", json.dumps(self.ended)))


_PAGE_WORLD = """(() => {
  const original = window.print, dispatch = EventTarget.prototype.dispatchEvent, Custom = CustomEvent;
  if (typeof original !== 'function') return;
  const own = document, started = STARTED, ended = ENDED;
  window.print = function print() {
    let target = own;
    try { target = window.top.document; } catch (e) {}  // (a cross-site frame: its own world hears it)
    const tell = (name) => { try { dispatch.call(target, new Custom(name)); } catch (e) {} };
    tell(started);
    try { return original.apply(this, arguments); } finally { tell(ended); }
  };
})();"""

_OUR_WORLD = """(() => {
  const send = globalThis[BINDING];
  if (typeof send !== 'function') return;
  const tell = (what) => { try { send(what); } catch (e) {} };
  document.addEventListener(STARTED, () => tell('start'));
  document.addEventListener(ENDED, () => tell('end'));
  if (window !== window.top) return;
  // A print asked for while the page loads is made once it has loaded, past the wrapper: the browser's own events
  // tell it (the top's alone: a frame removed by a beforeprint handler would never tell its end).
  addEventListener('beforeprint', (event) => { if (event.isTrusted) tell('start'); });
  addEventListener('afterprint', (event) => { if (event.isTrusted) tell('end'); });
})();"""


class PagePrints:
    """The prints under way in each page of a browser (by its session), as their hooks tell them."""

    def __init__(self) -> None:
        self._under_way: dict[str, int] = {}
        self._started: dict[str, asyncio.Event] = {}
        self._none: dict[str, asyncio.Event] = {}  # set while the page prints nothing

    def told(self, session_id: str, payload: str) -> None:
        """The page, or one of its frames, started ('start') or ended ('end') a print."""
        count = max(0, self._under_way.get(session_id, 0) + (1 if payload == "start" else -1))
        self._under_way[session_id] = count
        if payload == "start":
            self._started.setdefault(session_id, asyncio.Event()).set()
        none = self._none_event(session_id)
        none.set() if count == 0 else none.clear()

    def next_start(self, session_id: str) -> asyncio.Event:
        """An event set when the page starts a print from now on."""
        started = self._started.setdefault(session_id, asyncio.Event())
        started.clear()
        return started

    async def ended(self, page: Page, wait: float = PRINT_WAIT_S) -> None:
        """Return once `page` prints nothing (at once, mostly); raises `printing` when its print lasts `wait` s."""
        none = self._none_event(page.session_id)
        if none.is_set():
            return
        try:
            async with asyncio.timeout(wait):
                await none.wait()
        except TimeoutError:
            raise ProtocolError("printing", f"page {page.id} has been printing for {wait:g} s and takes no input until "
                                "its print ends (its PDF is a download then)") from None

    def forget(self, session_id: str) -> None:
        """The page closed or its document was replaced: a print cut short tells no end."""
        self._under_way.pop(session_id, None)
        self._started.pop(session_id, None)
        if (none := self._none.pop(session_id, None)) is not None:
            none.set()  # (input waiting on it goes in)

    def _none_event(self, session_id: str) -> asyncio.Event:
        if (none := self._none.get(session_id)) is None:
            none = self._none[session_id] = asyncio.Event()
            none.set()
        return none


__all__ = ["PRINT_WAIT_S", "PagePrints", "PrintHook"]
