"""A page's localStorage is on disk before its browser is asked to close: real Xvfb, Chromium and profile.

Chromium's storage service commits localStorage some time after a write and, at a graceful close, only if it
outlives the browser's exit long enough: a write 1.2 s before the cap closed its paused frame was lost once, in CI.
So `ChromeBrowser.close` stops the page and waits for the commit (browser/chrome.py, STORAGE_FLUSH_FLAG) before
`Browser.close`, and the test looks at the profile at that moment: without the wait (or the flag, 5 s then) the
write is not there yet.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from framestream.browser.chrome import ChromeBrowser
from framestream.browser.tab_events import TabSettings
from framestream.browser.xvfb import XvfbDisplay
from tests.web.browser import CHROME

MARK = "framestream-kept"


def on_disk(profile: Path) -> bool:
    folder = profile / "Default" / "Local Storage" / "leveldb"
    return folder.is_dir() and any(MARK.encode() in p.read_bytes() for p in folder.iterdir() if p.is_file())


async def launched(display: XvfbDisplay, profile: Path, downloads: Path) -> ChromeBrowser:
    return await ChromeBrowser.launch(
        chrome_path=CHROME, display=display.name, xauthority=display.xauthority, profile_dir=profile,
        width=640, height=400, dpr=1, tab_settings=TabSettings(640, 400, 1, downloads))


async def test_a_write_just_before_the_close_is_on_disk_when_the_browser_is_asked_to_close(
        tmp_path: Path, pages: str) -> None:
    profile = tmp_path / "profile"
    display = await XvfbDisplay.start(640, 400)
    try:
        browser = await launched(display, profile, tmp_path / "downloads")
        try:
            assert await browser.navigate(f"{pages}/box.html") is None
            assert await browser.evaluate(f"localStorage.setItem('mark', '{MARK}'), localStorage.getItem('mark')") \
                == MARK
            written_at = time.monotonic()
            asked: list[tuple[bool, float]] = []
            call = browser.cdp.call

            async def watched(method: str, params: dict[str, Any] | None = None, **kwargs: Any) -> dict[str, Any]:
                if method == "Browser.close":
                    asked.append((on_disk(profile), time.monotonic() - written_at))
                return await call(method, params, **kwargs)

            browser.cdp.call = watched  # type: ignore[method-assign]
        finally:
            await browser.close()
        assert asked and asked[0][0], f"not on disk {asked[0][1]:.2f} s after the write, at Browser.close"

        # And the next launch of the profile reads it back.
        browser = await launched(display, profile, tmp_path / "downloads")
        try:
            assert await browser.navigate(f"{pages}/box.html") is None
            assert await browser.evaluate("localStorage.getItem('mark')") == MARK
        finally:
            await browser.close(keep_storage=False)
    finally:
        await display.stop()
