"""Is a page's script answering? Every page of a frame is asked every 2 s; one that does not answer within 2 s
(a script that never returns) is marked unresponsive, so it is told within 5 s and input to it ends at once."""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

from framestream.core.errors import CDPError
from framestream.core.pages import Dialog, Page, PageStack

PROBE_INTERVAL_S = 2.0
PROBE_TIMEOUT_S = 2.0


class ProbedPages(Protocol):
    """What the probe needs of a frame's page set (browser/tabs.py `Tabs` implements it): the probe sits below the
    page set, which runs it, so it names only this and never imports the page set."""

    paused: bool
    pages: PageStack

    def open_dialog(self, page: Page | None = None) -> Dialog | None: ...

    def mark_responsive(self, page: Page, responsive: bool) -> None: ...

    def changed(self) -> None: ...

    async def call(self, method: str, params: dict[str, Any] | None = None, *, page: Page | None = None,
                   timeout: float = 10.0) -> dict[str, Any]: ...


async def probe_forever(tabs: ProbedPages) -> None:
    """Run by the page set as a task it owns, until it closes."""
    while True:
        await asyncio.sleep(PROBE_INTERVAL_S)
        if tabs.paused:
            continue  # the renderers are stopped on purpose
        pages = [p for p in tabs.pages if tabs.open_dialog(p) is None]  # a dialog blocks its page's script
        results = await asyncio.gather(*(answers(tabs, p) for p in pages))
        changed = False
        for page, responsive in zip(pages, results, strict=True):
            if responsive is not None and responsive != page.responsive and not tabs.paused:
                tabs.mark_responsive(page, responsive)
                changed = True
        if changed:
            tabs.changed()


async def answers(tabs: ProbedPages, page: Page) -> bool | None:
    """True if the page's main thread answered, False if it did not in time, None if it is gone (no verdict)."""
    try:
        await tabs.call("Runtime.evaluate", {"expression": "0"}, page=page, timeout=PROBE_TIMEOUT_S)
        return True
    except CDPError as exc:
        return False if "no answer" in str(exc) else None


__all__ = ["PROBE_INTERVAL_S", "PROBE_TIMEOUT_S", "ProbedPages", "answers", "probe_forever"]
