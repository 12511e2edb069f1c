"""The page tells us it printed (browser/prints.py makes the print a PDF download).

A listener in an isolated world of ours hears the top document's trusted `afterprint`: the page's `window.print()`
has returned, so the browser's own print (to nowhere, browser/preferences.py) is over and ours does not meet it. It
reports through a binding that exists in that world alone, under a name new at each launch: the page's scripts can
neither see nor call it, and a page's own `new Event('afterprint')` is not trusted.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PrintHook:
    binding: str  # the binding's name, in our world only
    world: str  # our isolated world's name

    @classmethod
    def new(cls) -> PrintHook:
        token = secrets.token_hex(12)
        return cls(f"__fsPrinted_{token}", f"framestream-print-{token}")

    def script(self) -> str:
        """The isolated world's script (Page.addScriptToEvaluateOnNewDocument with `worldName` world)."""
        return _SCRIPT.replace("BINDING", json.dumps(self.binding))


_SCRIPT = """(() => {
  const send = globalThis[BINDING];
  if (typeof send !== 'function' || window !== top) return;
  addEventListener('afterprint', (e) => { if (e.isTrusted) try { send(''); } catch (err) {} });
})();"""


__all__ = ["PrintHook"]
