"""The frame's page cursor (frames/browsing.py): viewers hear a change once, whichever of the page's documents told
it; one who joins hears a cursor other than the arrow; a new browser starts at the arrow. Pure: no browser."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from framestream.browser.tab_events import CursorChanged
from framestream.frames.browsing import Browsing
from framestream.frames.events import FrameEvent, PageCursor
from framestream.frames.files import FrameFiles


def browsing(tmp_path: Path, heard: list[FrameEvent]) -> Browsing:
    files = FrameFiles(tmp_path, max_download_bytes=1 << 20, max_downloads=4)

    def spawn(coro: Any, name: str) -> None:
        coro.close()

    return Browsing("f1", files, heard.append, spawn, ())


def test_viewers_hear_each_change_of_the_cursor_once(tmp_path: Path) -> None:
    heard: list[FrameEvent] = []
    b = browsing(tmp_path, heard)
    assert b.open_questions() == []  # the arrow, which every watch starts with, is not told
    for cursor in ["default", "pointer", "pointer", "text", "text", "pointer"]:  # a report at every move
        b.on_tab_event(CursorChanged(cursor))
    assert heard == [PageCursor("f1", "pointer"), PageCursor("f1", "text"), PageCursor("f1", "pointer")]
    assert b.open_questions() == [PageCursor("f1", "pointer")]  # who joins now hears it


def test_a_new_browser_starts_at_the_arrow(tmp_path: Path) -> None:
    heard: list[FrameEvent] = []
    b = browsing(tmp_path, heard)
    b.on_tab_event(CursorChanged("grab"))
    b.browser_gone()
    assert b.open_questions() == []
    b.on_tab_event(CursorChanged("grab"))  # the new browser's page tells it again: a change again
    assert heard == [PageCursor("f1", "grab"), PageCursor("f1", "grab")]
