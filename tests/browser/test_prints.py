"""The prints folder (browser/prints.py) on a real filesystem with real inotify: each whole PDF Chromium leaves there
becomes a download, as Chromium writes it (a hidden temporary file renamed onto the empty file that holds the PDF's
name, seen with inotify); a page that prints in a loop gets at most PRINT_RATE PDFs; without inotify the folder is
listed instead. The prints themselves, from a page, an iframe and the PDF viewer, are proved by their pixels in
tests/integration/test_browser_ui.py."""

from __future__ import annotations

import asyncio
import errno
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from framestream.browser import prints as prints_module
from framestream.browser.prints import PrintedPdfs, prints_folder
from framestream.browser.tab_events import DownloadProgress, TabEvent
from tests.support import until

PDF = b"%PDF-1.4 a print %%EOF\n"


class Prints:
    def __init__(self, tmp_path: Path) -> None:
        self.folder = prints_folder(tmp_path / "profile")
        self.downloads = tmp_path / "downloads"
        self.downloads.mkdir()
        self.told: asyncio.Queue[TabEvent] = asyncio.Queue()
        # Two at once, then one a quarter hour: however slow the machine, the loop below meets an empty bucket.
        self.pdfs = PrintedPdfs(self.folder, self.downloads, emit=self.told.put_nowait, rate=(1 / 900, 2.0))

    def save_as_chromium_does(self, name: str, data: bytes = PDF) -> None:
        temporary = self.folder / ".org.chromium.Chromium.x1y2z3"
        temporary.write_bytes(data)
        (self.folder / name).write_bytes(b"")  # the name, held
        temporary.rename(self.folder / name)

    async def download(self) -> tuple[str, str, int]:
        """The next PDF told: (its download's name, its file's bytes' size, the size told) once it completed."""
        started = await asyncio.wait_for(self.told.get(), 10.0)
        assert isinstance(started, DownloadProgress) and started.state == "started"
        while True:
            event = await asyncio.wait_for(self.told.get(), 10.0)
            assert isinstance(event, DownloadProgress) and event.guid == started.guid
            if event.state == "completed":
                return started.name, (self.downloads / started.guid).read_bytes().decode(), event.received


@pytest.fixture(params=["inotify", "no inotify"])
async def prints(tmp_path: Path, request: pytest.FixtureRequest,
                 monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Prints]:
    if request.param == "no inotify":  # the user's inotify instances used up (a dev server's watchers): listed
        def used_up() -> None:
            raise OSError(errno.EMFILE, "Too many open files")
        monkeypatch.setattr(prints_module, "Inotify", used_up)
        monkeypatch.setattr(prints_module, "POLL_S", 0.05)  # (listed as before, sooner: the suite stays short)
    made = Prints(tmp_path)
    made.folder.mkdir(parents=True)
    (made.folder / "left mid-print.pdf").write_bytes(PDF)  # by a browser that ended
    await made.pdfs.start()
    watching = asyncio.create_task(made.pdfs.run())
    yield made
    watching.cancel()
    await asyncio.gather(watching, return_exceptions=True)
    made.pdfs.close()


async def test_each_whole_pdf_becomes_a_download_named_as_chromium_named_it(prints: Prints) -> None:
    assert list(prints.folder.iterdir()) == []  # what a browser left went at the start
    prints.save_as_chromium_does("Invoice 42.pdf")
    assert await prints.download() == ("Invoice 42.pdf", PDF.decode(), len(PDF))
    prints.save_as_chromium_does("Receipt.pdf", PDF * 2)
    assert await prints.download() == ("Receipt.pdf", (PDF * 2).decode(), 2 * len(PDF))
    assert list(prints.folder.iterdir()) == [] and prints.told.empty()  # nothing twice, nothing for the temp file


async def test_a_page_printing_in_a_loop_gets_at_most_the_rate(prints: Prints) -> None:
    for n in range(5):
        prints.save_as_chromium_does(f"loop {n}.pdf")
    assert [(await prints.download())[0] for _ in range(2)] == ["loop 0.pdf", "loop 1.pdf"]  # the burst
    prints.save_as_chromium_does("marker.pdf")  # (events come in order: once it is handled, so were the loop's)
    await until("the marker's turn", lambda: asyncio.to_thread(lambda: not (prints.folder / "marker.pdf").exists()))
    assert prints.told.empty()  # the rest dropped ...
    assert list(prints.folder.iterdir()) == []  # ... and deleted
    assert len(list(prints.downloads.iterdir())) == 2
