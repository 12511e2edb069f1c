"""A page's file choosers: intercepted (never a native dialog), told as events, answered with files or cancelled.

`Page.setInterceptFileChooserDialog` makes Chromium report `Page.fileChooserOpened` instead of opening a dialog;
the `<input type=file>` it belongs to then takes files with `DOM.setFileInputFiles`, and a cancel is the `cancel`
event a person's Cancel would fire (Chromium has no DevTools call for it).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from framestream.browser.cdp import CDPConnection
from framestream.browser.tab_events import FileChooserClosed, FileChooserOpened, TabEvent
from framestream.core.errors import CDPError, ProtocolError
from framestream.core.pages import FileChooser, Page, parse_accept

log = logging.getLogger("framestream.browser.tabs")


class FileChoosers:
    def __init__(self, cdp: CDPConnection, emit: Callable[[TabEvent], None],
                 spawn: Callable[[Any, str], None]) -> None:
        self.cdp = cdp
        self._emit = emit
        self._spawn = spawn
        self.open: dict[str, FileChooser] = {}
        self._ids = 0

    def opened(self, page: Page, params: dict[str, Any], session_id: str | None = None) -> None:
        """A chooser opened in `page`, or in one of its cross-site frames (whose `session_id` owns the input)."""
        self._spawn(self._tell(page, params, session_id or page.session_id), "file-chooser")

    async def _tell(self, page: Page, params: dict[str, Any], session_id: str) -> None:
        node = params.get("backendNodeId")
        accept: tuple[str, ...] = ()
        if isinstance(node, int):
            with contextlib.suppress(CDPError):
                described = await self.cdp.call("DOM.describeNode", {"backendNodeId": node},
                                                 session_id=session_id)
                attributes = described.get("node", {}).get("attributes", [])
                accept = parse_accept(dict(zip(attributes[::2], attributes[1::2], strict=False)).get("accept"))
        self._ids += 1
        chooser = FileChooser(f"c{self._ids}", page.id, session_id, node if isinstance(node, int) else None,
                              params.get("mode") == "selectMultiple", accept)
        self.open[chooser.id] = chooser
        log.debug("page %s opened a file chooser", page.id)
        self._emit(FileChooserOpened(chooser))

    def get(self, chooser_id: str) -> FileChooser:
        chooser = self.open.get(chooser_id)
        if chooser is None:
            raise ProtocolError("unknown-file-chooser", f"no open file chooser {chooser_id!r}")
        return chooser

    async def choose(self, chooser_id: str, paths: Iterable[Path]) -> None:
        chooser = self.get(chooser_id)
        files = [str(p) for p in paths]
        if len(files) > 1 and not chooser.multiple:
            raise ProtocolError("bad-input", "this file chooser takes one file")
        if chooser.backend_node_id is None:
            raise ProtocolError("bad-input", "this file chooser has no file input to fill")
        await self.cdp.call("DOM.setFileInputFiles", {"files": files, "backendNodeId": chooser.backend_node_id},
                            session_id=chooser.session_id, timeout=10.0)
        self._closed(chooser_id)

    async def cancel(self, chooser_id: str) -> None:
        chooser = self.get(chooser_id)
        if chooser.backend_node_id is not None:
            with contextlib.suppress(CDPError):
                node = await self.cdp.call("DOM.resolveNode", {"backendNodeId": chooser.backend_node_id},
                                           session_id=chooser.session_id)
                await self.cdp.call("Runtime.callFunctionOn", {
                    "objectId": node["object"]["objectId"],
                    "functionDeclaration": "function () { this.dispatchEvent(new Event('cancel', {bubbles: true})); }",
                }, session_id=chooser.session_id)
        self._closed(chooser_id)

    def page_closed(self, page_id: str) -> None:
        for chooser in [c for c in self.open.values() if c.page_id == page_id]:
            self._closed(chooser.id)

    def _closed(self, chooser_id: str) -> None:
        if self.open.pop(chooser_id, None) is not None:
            self._emit(FileChooserClosed(chooser_id))


__all__ = ["FileChoosers"]
