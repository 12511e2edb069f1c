"""Keys a page leaves to the browser that would open the browser's own UI over the shared page.

Input reaches a frame's Chromium as real key events (Input.dispatchKeyEvent), so a key the page does not handle goes
on to the browser's accelerators. Ctrl+Shift+A opened the tab search bubble over the page, where it stayed: keys
go to the page, not to it, so Escape did not close it (tests/web/test_viewer_robustness.py failed once in CI on it).
Probing 60 accelerators on a kiosk frame found the ones below: browser UI over the page, dialogs that stop it,
windows over it, or the page closed (the frame then had no page). Not here: the find bar (Ctrl+F, Ctrl+G: it finds
in the page and closes on Escape), a new tab (Ctrl+T, Alt+Home: the frame shows tabs) and what draws nothing.

The page still gets the key (a web IDE's Ctrl+Shift+A is its own): a listener in an isolated world of ours, on
the window and so after the page's own handlers of the target, marks such a key handled when the page did not.
"""

from __future__ import annotations

import json

# (DOM `code`, ctrl, shift, alt, meta) of each such accelerator.
BROWSER_UI_KEYS: tuple[tuple[str, bool, bool, bool, bool], ...] = (
    ("KeyA", True, True, False, False),  # tab search
    ("KeyP", True, False, False, False),  # print preview, a dialog over 27 % of a 640x400 frame
    ("KeyP", True, True, False, False),  # the system's print dialog: the page stopped answering
    ("KeyO", True, False, False, False),  # GTK's Open File dialog: the service's own files to browse (issue 32)
    ("KeyH", True, False, False, False),  # history
    ("KeyJ", True, False, False, False),  # downloads
    ("KeyD", True, False, False, False),  # the bookmark bubble
    ("KeyO", True, True, False, False),  # the bookmarks manager
    ("KeyU", True, False, False, False),  # the page's source
    ("Delete", True, True, False, False),  # clear browsing data
    ("Escape", False, True, False, False),  # the task manager, which ends processes
    ("KeyF", False, False, True, False),  # the browser's menu (settings, new windows, exit)
    ("KeyE", False, False, True, False),  # the same
    ("KeyI", True, True, False, False),  # DevTools, over three quarters of the frame
    ("KeyJ", True, True, False, False),  # the same
    ("KeyC", True, True, False, False),  # the same
    ("F12", False, False, False, False),  # the same
    ("F7", False, False, False, False),  # caret browsing's dialog
    ("KeyN", True, False, False, False),  # a new window
    ("KeyN", True, True, False, False),  # a new incognito window, over the whole frame
    ("KeyW", True, False, False, False),  # closing the page: its last one left the frame without a page
    ("KeyW", True, True, False, False),  # the same, the window
    ("F4", False, False, True, False),  # the same
)

WORLD = "framestream-keys"

_SCRIPT = """(() => {
  const keys = new Set(KEYS.map((k) => k.join(',')));
  addEventListener('keydown', (e) => {
    if (!e.defaultPrevented && keys.has([e.code, e.ctrlKey, e.shiftKey, e.altKey, e.metaKey].join(','))) {
      e.preventDefault();
    }
  });
})();"""


def script() -> str:
    """The isolated world's script (Page.addScriptToEvaluateOnNewDocument with `worldName` WORLD)."""
    return _SCRIPT.replace("KEYS", json.dumps([list(key) for key in BROWSER_UI_KEYS]))


__all__ = ["BROWSER_UI_KEYS", "WORLD", "script"]
