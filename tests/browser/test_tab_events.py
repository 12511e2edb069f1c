"""Download events as the browser's DevTools report them (browser/tab_events.py): pure, no browser."""

from __future__ import annotations

from framestream.browser.tab_events import DownloadProgress


def test_a_download_that_begins_is_started_with_its_suggested_name() -> None:
    began = DownloadProgress.began({"guid": "g1", "suggestedFilename": "Invoice 42.pdf", "url": "http://127.0.0.1/x",
                                    "frameId": "F"})
    assert began == DownloadProgress("g1", "Invoice 42.pdf", "http://127.0.0.1/x", 0, 0, "started")


def test_progress_keeps_the_browsers_states_but_names_a_running_one_progress() -> None:
    states = [DownloadProgress.progressed({"guid": "g1", "state": state, "receivedBytes": 10, "totalBytes": 20}).state
              for state in ("inProgress", "completed", "canceled")]
    assert states == ["progress", "completed", "canceled"]
    running = DownloadProgress.progressed({"guid": "g1", "state": "inProgress", "receivedBytes": 10, "totalBytes": 20})
    assert (running.guid, running.received, running.total) == ("g1", 10, 20)


def test_missing_fields_read_as_empty_and_zero() -> None:
    assert DownloadProgress.progressed({}) == DownloadProgress("", "", "", 0, 0, "progress")
    assert DownloadProgress.began({}) == DownloadProgress("", "", "", 0, 0, "started")
