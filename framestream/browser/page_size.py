"""A frame's size on its pages: each page laid out at exactly the frame's CSS size and dpr as it is set up
(browser/page_setup.py), and every page and its window given a new size in place (a resize: frames/resizing.py)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import Any

from framestream.browser.cdp import CDPConnection
from framestream.browser.tab_events import TabSettings
from framestream.core.errors import CDPError
from framestream.core.pages import Page


def metrics(settings: TabSettings) -> tuple[str, dict[str, Any]]:
    """Lay a page out at exactly the frame's CSS size and dpr: a popup's window would otherwise have its own size,
    and a window narrower than 500 CSS px is impossible in Chromium."""
    css_width, css_height = settings.width // settings.dpr, settings.height // settings.dpr
    return ("Emulation.setDeviceMetricsOverride", {
        "width": css_width, "height": css_height, "deviceScaleFactor": settings.dpr, "mobile": False,
        "screenWidth": css_width, "screenHeight": css_height})


async def resize(cdp: CDPConnection, pages: Sequence[Page], active: Page | None, settings: TabSettings) -> None:
    """Every page's window, then its layout, at the size `settings` give (their dpr is the browser's own): each
    page keeps its document, scripts and scroll, as a browser window resized does. A page that does not answer in
    time (busy or hung) takes the layout when it next runs, as Chromium queues the call. Raises CDPError for the
    windows or for the `active` page, the one the frame shows."""
    await _resize_windows(cdp, pages, settings.width // settings.dpr, settings.height // settings.dpr)
    method, params = metrics(settings)
    results = await asyncio.gather(*(cdp.call(method, params, session_id=page.session_id, timeout=5.0)
                                     for page in pages), return_exceptions=True)
    for page, result in zip(pages, results, strict=True):
        if isinstance(result, CDPError) and page is active:
            raise result
        if isinstance(result, BaseException) and not isinstance(result, CDPError):
            raise result


async def _resize_windows(cdp: CDPConnection, pages: Sequence[Page], css_width: int, css_height: int) -> None:
    """The pages' windows at the new size (CSS pixels, from the screen's top-left): without a window manager a
    fullscreen window keeps the size it had, so a page laid out larger than it would show black beyond it."""
    windows: set[int] = set()
    for page in pages:
        with contextlib.suppress(CDPError):
            found = await cdp.call("Browser.getWindowForTarget", {"targetId": page.target_id}, timeout=5.0)
            windows.add(int(found["windowId"]))
    for window in windows:
        for bounds in ({"windowState": "normal"}, {"left": 0, "top": 0, "width": css_width, "height": css_height},
                       {"windowState": "fullscreen"}):
            await cdp.call("Browser.setWindowBounds", {"windowId": window, "bounds": bounds}, timeout=5.0)


__all__ = ["metrics", "resize"]
