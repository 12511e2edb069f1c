"""A person's paste into a frame's active page, as a real one: the frame's clipboard holds the text, then the
editing command runs (a `paste` event with clipboardData for the page, the text inserted where it is editable)."""

from __future__ import annotations

import json
from typing import Any, Protocol

from framestream.core.errors import BrowserError


class PasteTarget(Protocol):
    """What a paste needs of a frame's page set (browser/tabs.py `Tabs`)."""

    async def call(self, method: str, params: dict[str, Any] | None = None, *, timeout: float = 10.0,
                   ) -> dict[str, Any]: ...

    async def dispatch(self, method: str, params: dict[str, Any], *, timeout: float = 5.0) -> None: ...


async def paste(tabs: PasteTarget, text: str) -> None:
    """Paste `text` into the active page (refused as any input is: under a dialog, to a page that does not answer)."""
    result = await tabs.call("Runtime.evaluate", {
        "expression": f"Clipboard.prototype.writeText.call(navigator.clipboard, {json.dumps(text)})"
                      ".then(() => true, (e) => String(e))",
        "awaitPromise": True, "userGesture": True, "returnByValue": True}, timeout=5.0)
    value = result.get("result", {}).get("value")
    if value is not True:
        raise BrowserError(f"the clipboard refused the text: {value}")
    for kind in ("rawKeyDown", "keyUp"):
        await tabs.dispatch("Input.dispatchKeyEvent", {
            "type": kind, "key": "v", "code": "KeyV", "windowsVirtualKeyCode": 86, "modifiers": 2,
            **({"commands": ["paste"]} if kind == "rawKeyDown" else {})})


__all__ = ["PasteTarget", "paste"]
