"""A page's print becomes a PDF download for the frame's driver: the browser's own "Save as PDF", as on a desktop.

Chromium prints without a preview (`--kiosk-printing`, browser/preferences.py): its print preview covered the whole
frame, out of the driver's reach. It saves each print as a PDF into the profile's prints folder, named after the
page's title, whatever printed: a page's `window.print()`, an iframe's (how react-to-print and print-js print a part
of a page), the PDF viewer's print button. That folder is watched (inotify): each PDF, once Chromium has closed it,
moves into the frame's downloads as a `download`, under the frame's download limits (frames/files.py).

A page that prints in a loop gets at most PRINT_RATE PDFs a second; the others are deleted as they come. What a
browser left in the folder (it ended mid-print) is deleted when the next one starts. Where inotify cannot be had
(a sandbox's dev server's file watchers can use up the user's inotify instances), the folder is listed every
POLL_S instead: the browser launches all the same.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from asyncinotify import Inotify, Mask

from framestream.browser.tab_events import DownloadProgress, TabEvent
from framestream.core.ratelimit import TokenBucket

log = logging.getLogger(__name__)

PRINT_RATE = (0.5, 2.0)  # PDFs a second that become downloads, and the burst
POLL_S = 1.0  # without inotify: how often the folder is listed
# Chromium writes a PDF into a hidden temporary file, makes the PDF's name (an empty file) and renames the first
# onto it (seen with inotify): a file that is closed or moved in, not hidden and not empty, is a whole PDF.
_DONE = Mask.CLOSE_WRITE | Mask.MOVED_TO


def prints_folder(profile_dir: Path) -> Path:
    """Where Chromium saves the profile's prints (its `savefile.default_directory`, browser/preferences.py)."""
    return profile_dir / "prints"


def _clear(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    for entry in folder.iterdir():
        with contextlib.suppress(OSError):
            shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()


def _names(folder: Path) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []  # (the profile purged meanwhile)


def _whole(path: Path) -> bool:
    try:
        return not path.name.startswith(".") and path.is_file() and path.stat().st_size > 0
    except OSError:
        return False


def _move(source: Path, target: Path) -> int:
    """Move a PDF into the downloads folder (a rename within the state dir, a copy across filesystems); its size."""
    shutil.move(source, target)
    return target.stat().st_size


class PrintedPdfs:
    """The prints folder of one browser, watched while it runs; each PDF told through `emit` as a download."""

    def __init__(self, folder: Path, downloads_dir: Path, *, emit: Callable[[TabEvent], None],
                 rate: tuple[float, float] = PRINT_RATE) -> None:
        self.folder = folder
        self.downloads_dir = downloads_dir
        self._emit = emit
        self._bucket = TokenBucket(*rate)
        self._inotify: Inotify | None = None

    async def start(self) -> None:
        """Empty the folder and watch it (before the browser's first page can print)."""
        await asyncio.to_thread(_clear, self.folder)
        try:
            self._inotify = Inotify()
            self._inotify.add_watch(self.folder, _DONE | Mask.ONLYDIR)
        except OSError as exc:
            self.close()
            log.warning("no inotify for the prints folder (%s): it is listed every %g s instead", exc, POLL_S)

    async def run(self) -> None:
        """Take each PDF as Chromium finishes it, until cancelled (by the owner, `Tabs`)."""
        if self._inotify is None:
            while True:
                for name in sorted(await asyncio.to_thread(_names, self.folder)):
                    await self._take(name)
                await asyncio.sleep(POLL_S)
        async for event in self._inotify:
            if event.name is not None and event.mask & _DONE and not event.mask & Mask.ISDIR:
                await self._take(event.name.name)

    def close(self) -> None:
        if self._inotify is not None:
            self._inotify.close()
            self._inotify = None

    async def _take(self, name: str) -> None:
        source = self.folder / name
        if not await asyncio.to_thread(_whole, source):
            return  # Chromium's temporary file, the name it holds for the PDF, or a PDF taken already
        if not self._bucket.take(time.monotonic()):
            log.info("a print dropped: the page prints too often")
            await asyncio.to_thread(source.unlink, missing_ok=True)
            return
        download_id = str(uuid.uuid4())
        self._emit(DownloadProgress(download_id, name, "", 0, 0, "started"))
        try:
            size = await asyncio.to_thread(_move, source, self.downloads_dir / download_id)
        except OSError as exc:
            log.warning("a print's PDF could not be kept: %s", exc)
            self._emit(DownloadProgress(download_id, "", "", 0, 0, "canceled"))
            return
        self._emit(DownloadProgress(download_id, "", "", size, size, "progress"))  # (the limits checked)
        self._emit(DownloadProgress(download_id, "", "", size, size, "completed"))


__all__ = ["POLL_S", "PRINT_RATE", "PrintedPdfs", "prints_folder"]
