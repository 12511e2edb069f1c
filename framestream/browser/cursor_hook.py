"""The page's cursor at the driver's pointer, for the viewer to show over the picture (a hand over links, an I-beam
over text).

Chromium's own cursor never reaches the X display while input comes over CDP: XFixes' cursor image kept its serial
over a link, even with the X pointer warped there. So the page tells us, as it does its copies (browser/copy_hook.py):

- A listener in an isolated world of ours hears the trusted mouse events the driver's input makes (moves; presses,
  for a click that comes without a move; and scrolls, and the end of a click or key, which can change what is
  under a still pointer) and resolves the cursor there.
- It reports through a binding of a random name that exists in that world alone: the page's scripts can neither
  see nor call it. It reports at every move, and the frame tells viewers only a change (frames/browsing.py): only
  the document under the pointer hears the move, so the last report is always that document's, an iframe's or its
  page's, each in a process of its own when cross-site. Reports so follow the driver's input, never a page's
  timer.
- CSS's `auto` is resolved as Chromium does in the common cases: an I-beam over editable fields and over selectable
  text (the point inside a line of it), the arrow elsewhere; links are `pointer` by the browser's own stylesheet.
  A cursor image (`url(...)`) gives its fallback keyword: the image is the page's, and a viewer shows a keyword.
- A new document knows no pointer position until the pointer moves: it reports what `:hover` says is under the
  pointer, so the cursor of the page before (a link just clicked) does not stay.

The service checks each report against the contract's keywords (core/wire `CURSORS`) before any viewer hears it.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CursorHook:
    binding: str  # the binding's name, in our world only
    world: str  # our isolated world's name

    @classmethod
    def new(cls) -> CursorHook:
        token = secrets.token_hex(12)
        return cls(f"__fsCursor_{token}", f"framestream-cursor-{token}")

    def script(self) -> str:
        """The isolated world's script (Page.addScriptToEvaluateOnNewDocument with `worldName` world)."""
        return _SCRIPT.replace("BINDING", json.dumps(self.binding))


_SCRIPT = """(() => {
  const send = globalThis[BINDING];
  if (typeof send !== 'function') return;
  const TEXT_INPUTS = new Set(['', 'text', 'search', 'email', 'url', 'tel', 'password', 'number']);
  let x = -1, y = -1, again = 0;
  const inText = (el) => {
    const caret = document.caretRangeFromPoint(x, y), node = caret && caret.startContainer;
    if (!node || node.nodeType !== Node.TEXT_NODE || !el.contains(node)) return false;
    const line = document.createRange();
    line.selectNodeContents(node);
    for (const r of line.getClientRects()) {
      if (x >= r.left && x <= r.right && y >= r.top && y <= r.bottom) return true;
    }
    return false;
  };
  const resolve = (el) => {
    if (!(el instanceof Element)) return 'default';
    const style = getComputedStyle(el), named = style.cursor.split(',').pop().trim();
    if (named !== 'auto') return named;
    if (el.isContentEditable || el.localName === 'textarea' ||
        (el.localName === 'input' && TEXT_INPUTS.has(el.getAttribute('type') || ''))) return 'text';
    return x >= 0 && style.userSelect !== 'none' && inText(el) ? 'text' : 'default';
  };
  const report = (el) => {
    let cursor = 'default';
    try { cursor = resolve(el); } catch (e) {}
    send(cursor);
  };
  const look = () => {
    again = 0;
    const el = x >= 0 ? document.elementFromPoint(x, y) : [...document.querySelectorAll(':hover')].pop() || null;
    // Over an iframe, its own document tells (it heard the move); this one would say the frame element's arrow.
    if (!(el instanceof Element && /^(iframe|frame|object|embed)$/.test(el.localName))) report(el);
  };
  // Only once the pointer moved here: a page that scrolls itself would otherwise report ten times a second.
  const soon = (e) => { if (e.isTrusted && x >= 0 && !again) again = setTimeout(look, 100); };
  addEventListener('mousemove', (e) => {
    if (!e.isTrusted) return;
    x = e.clientX; y = e.clientY;
    report(e.composedPath()[0]);
  }, {capture: true, passive: true});
  // A press tells where the pointer is too (a click may come without a move before it): the release looks there
  // soon after, off the press's own dispatch, which input waits for.
  addEventListener('mousedown', (e) => { if (e.isTrusted) { x = e.clientX; y = e.clientY; } },
                   {capture: true, passive: true});
  addEventListener('scroll', soon, {capture: true, passive: true});
  addEventListener('mouseup', soon, {capture: true, passive: true});
  addEventListener('keyup', soon, {capture: true, passive: true});
  if (window === top) addEventListener('DOMContentLoaded', look, {once: true});
})();"""


__all__ = ["CursorHook"]
