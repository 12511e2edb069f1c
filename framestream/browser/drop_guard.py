"""Files dropped where the page takes none do nothing, where Chromium would open the file in place of the page.

A driver drops files from their desktop onto a frame (`POST /frames/{id}/drop`, browser/tabs.py `drop_files`).
A page takes a drop by cancelling the drag's `dragover` and its `drop`; where it does not, Chromium's default is to
load the file in the tab (checked: a text file dropped beside the page's drop zone replaced the page), leaving the
page for a file:// view the allow list never sees. A listener in an isolated world of ours, on the window and so
after the page's own handlers, cancels both for a drag of files the page left alone: the drop then reaches the
element under it as an ordinary `drop` event, and nothing loads.
"""

from __future__ import annotations

WORLD = "framestream-drops"

SCRIPT = """(() => {
  const files = (e) => Boolean(e.dataTransfer) && [...e.dataTransfer.types].includes('Files');
  const taken = (e) => { if (!e.defaultPrevented && files(e)) e.preventDefault(); };
  addEventListener('dragover', taken);
  addEventListener('drop', taken);
})();"""

__all__ = ["SCRIPT", "WORLD"]
