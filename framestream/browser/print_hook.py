"""A page that starts to print says so, so the input that started it is answered then and not when the print ends.

With `--kiosk-printing` (browser/preferences.py) the renderer makes the PDF inside `window.print()`, so the click or
key that called it is acknowledged only once the PDF is made: 0.6 s for a small page here, 10-13 s for a long one,
and on a loaded machine past the 5 s an input event is given (the step failed with `internal` while the print went
on). The page's other input is answered meanwhile (checked: a move, a click and a key during a 10 s print, in
10-14 ms each), and so is the probe's `Runtime.evaluate` (browser/responsiveness.py): only that one event waits.

The page tells us as its copies do (browser/copy_hook.py): a wrapper of `window.print`, in the page's own world of
every frame before its scripts, hands the start to an isolated world of ours as a DOM event of a random name, at the
top document when it can reach it (a receipt printed from a new iframe), and that world reports it through a binding
of a random name that exists there alone. Not `beforeprint`: `document.open()`, how a page writes a receipt into a
new iframe before printing it, erases the window's listeners, ours too (checked: such a click still failed).
A page that read the wrapper's event name could only make its own input answered early: the input still goes in.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PrintHook:
    binding: str  # the binding's name, in our world only
    world: str  # our isolated world's name
    event: str  # the DOM event the page's world hands a print's start over with

    @classmethod
    def new(cls) -> PrintHook:
        token = secrets.token_hex(12)
        return cls(f"__fsPrinting_{token}", f"framestream-print-{token}", f"fs-print-{secrets.token_hex(12)}")

    def page_world_script(self) -> str:
        """The page's own world, before its scripts, in every frame: `window.print` tells our world first."""
        return _PAGE_WORLD.replace("EVENT", json.dumps(self.event))

    def our_world_script(self) -> str:
        return _OUR_WORLD.replace("BINDING", json.dumps(self.binding)).replace("EVENT", json.dumps(self.event))


_PAGE_WORLD = """(() => {
  const original = window.print, dispatch = EventTarget.prototype.dispatchEvent, Custom = CustomEvent;
  if (typeof original !== 'function') return;
  const own = document;
  window.print = function print() {
    let target = own;
    try { target = window.top.document; } catch (e) {}  // (a cross-site frame: its own world hears it)
    try { dispatch.call(target, new Custom(EVENT)); } catch (e) {}
    return original.apply(this, arguments);
  };
})();"""

_OUR_WORLD = """(() => {
  const send = globalThis[BINDING];
  if (typeof send !== 'function') return;
  document.addEventListener(EVENT, () => { try { send(''); } catch (e) {} });
})();"""


__all__ = ["PrintHook"]
