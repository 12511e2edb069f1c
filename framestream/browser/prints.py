"""A page's print becomes a PDF download for the frame's driver, as Kasm's and the desktop's "Save as PDF" would.

Chromium prints without a preview into a folder that cannot exist (browser/preferences.py): its print preview
covered the whole frame, out of the driver's reach. So the browser's own print ends as nothing, and the page tells
us it printed:

- A listener in an isolated world of ours tells when the top document printed (browser/print_hook.py).
- The service then prints the page itself (`Page.printToPDF`: the page's print styles, its backgrounds) and streams
  the PDF into the frame's downloads folder as a `download` named after the page's title, under the frame's
  download limits (frames/files.py counts it as it grows and may cancel it, as a browser download).
- A page that prints in a loop gets at most PRINT_RATE prints a second, and one at a time; the rest are dropped.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from framestream.browser.cdp import CDPConnection
from framestream.browser.tab_events import DownloadProgress, TabEvent
from framestream.core.errors import CDPError
from framestream.core.pages import Page
from framestream.core.ratelimit import TokenBucket

log = logging.getLogger(__name__)

PRINT_RATE = (0.5, 2.0)  # prints a second that become PDFs, and the burst
CHUNK_BYTES = 1 << 20  # what one IO.read asks for
PRINT_TIMEOUT_S = 60.0  # a long page's layout for print takes a while


def pdf_name(title: str) -> str:
    """The download's name: the page's title, as the browser's "Save as PDF" names it (frames/files.py makes it a
    safe file name)."""
    return f"{' '.join(title.split())[:120] or 'page'}.pdf"


class PagePrints:
    """The PDFs of a browser's pages' prints, each a download told through `emit` as it starts, grows and ends.
    `spawn` runs a task its owner ends on close."""

    def __init__(self, cdp: CDPConnection, downloads_dir: Path, *, emit: Callable[[TabEvent], None],
                 spawn: Callable[[Any, str], None], rate: tuple[float, float] = PRINT_RATE) -> None:
        self.cdp = cdp
        self.downloads_dir = downloads_dir
        self._emit = emit
        self._spawn = spawn
        self._bucket = TokenBucket(*rate)
        self._running: dict[str, str] = {}  # download id -> the session of the page it prints
        # Pages whose next `afterprint` is our own print's (Page.printToPDF fires one too, not always before it
        # answers): that one is not the page printing again.
        self._ours: set[str] = set()

    def printed(self, page: Page) -> None:
        """The page printed: its PDF, unless one of it is being made or the page prints too often."""
        if page.session_id in self._ours:
            self._ours.discard(page.session_id)
            return
        if page.session_id in self._running.values() or not self._bucket.take(time.monotonic()):
            log.debug("a print of page %s dropped: one runs, or too many", page.id)
            return
        download_id = str(uuid.uuid4())
        self._running[download_id] = page.session_id
        self._spawn(self._print(page, download_id), "print-to-pdf")

    def cancel(self, download_id: str) -> bool:
        """Stop making a PDF (past the frame's download limits); False if it is not one of ours."""
        return self._running.pop(download_id, None) is not None

    async def _print(self, page: Page, download_id: str) -> None:
        self._emit(DownloadProgress(download_id, pdf_name(page.title), page.url, 0, 0, "started"))
        received, state = 0, "canceled"
        self._ours.add(page.session_id)
        try:
            made = await self.cdp.call("Page.printToPDF", {"printBackground": True, "transferMode": "ReturnAsStream"},
                                       session_id=page.session_id, timeout=PRINT_TIMEOUT_S)
            received, done = await self._save(str(made["stream"]), page.session_id, download_id)
            state = "completed" if done else "canceled"
        except (CDPError, KeyError, ValueError, OSError) as exc:
            self._ours.discard(page.session_id)  # (whether it fired is unknown: the page's next print counts)
            log.warning("could not print page %s to PDF: %s", page.id, exc)
        finally:
            self._running.pop(download_id, None)
            self._emit(DownloadProgress(download_id, "", "", received, 0, state))

    async def _save(self, handle: str, session_id: str, download_id: str) -> tuple[int, bool]:
        """Stream the PDF into its file, telling its size as it grows; (bytes, whether it all came)."""
        received = 0
        file: BinaryIO = await asyncio.to_thread(open, self.downloads_dir / download_id, "xb")
        try:
            while download_id in self._running:
                chunk = await self.cdp.call("IO.read", {"handle": handle, "size": CHUNK_BYTES},
                                            session_id=session_id, timeout=PRINT_TIMEOUT_S)
                text = str(chunk.get("data", ""))
                data = base64.b64decode(text) if chunk.get("base64Encoded") else text.encode()
                await asyncio.to_thread(file.write, data)
                received += len(data)
                self._emit(DownloadProgress(download_id, "", "", received, 0, "progress"))  # (limits checked)
                if chunk.get("eof"):
                    return received, True
            return received, False
        finally:
            await asyncio.to_thread(file.close)
            with contextlib.suppress(CDPError):
                await self.cdp.call("IO.close", {"handle": handle}, session_id=session_id, timeout=5.0)


__all__ = ["CHUNK_BYTES", "PRINT_RATE", "PagePrints", "pdf_name"]
