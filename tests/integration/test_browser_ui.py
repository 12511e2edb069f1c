"""The browser's own UI stays off the frame (browser/preferences.py, browser/url_guard.py), where the driver's input
over DevTools could not reach it and every viewer saw it. Before, a page's `window.print()` and the PDF viewer's
print button opened the print preview over the whole frame, with the page waiting for it (the next click was an
internal error, the dialog stayed); a login form sent left the password manager's "Save password?" bubble over 70 %
of the frame for good, the username in clear; a page that asked for HTTP authentication showed Chromium's "Sign in"
dialog instead; a link to another application asked "Open xdg-open?" over the frame (a popup's left a blank page
too), and a `mailto:` link started Firefox on the frame's display (browser/external_apps.py). A print now becomes a
PDF download (browser/prints.py), each shown by Chromium's PDF viewer as what was printed."""

from __future__ import annotations

import asyncio
import functools
import http.server
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from framestream.browser.external_apps import ATTEMPT_FILE, HANDLER_CHECK
from framestream.client import Client, ClientError, Download, FrameView, ServiceError, png_to_rgb
from tests.client.agent_page import near
from tests.fixtures import service_fixture
from tests.support import PAGES, Service, page_server, until

pytestmark = pytest.mark.integration

service = service_fixture(scope="module")

RED = (200, 30, 30)
GREEN = (30, 160, 60)
BLUE = (0, 0, 255)  # the PDF's rectangle


@pytest.fixture
def open_frame(service: Service) -> Iterator[Callable[[str], str]]:
    """Opens a 640x400 frame of a page (of tests/pages, or a whole URL); each goes when the test ends."""
    made: list[str] = []

    def open_(page: str) -> str:
        url = page if "://" in page else f"{service.pages}/{page}"
        made.append(service.create_frame(url, width=640, height=400, dpr=1))
        return made[-1]

    yield open_
    for frame in made:
        service.request("DELETE", f"/frames/{frame}?purge=1")


async def white_page(client: Client, frame: str) -> FrameView:
    """The frame watched, once a picture shows its page's white."""
    view = await client.watch(frame)
    await view.picture_after(0, where=lambda p: near(p.pixel(400, 300), (255, 255, 255)))
    return view


async def only_red(client: Client, frame: str, left: int) -> None:
    """The frame shows the page's red right of column `left` (its buttons'), nothing over any of it."""
    shown = png_to_rgb((await client.screenshot(frame)).png).astype(int)[:, left:]
    assert (np.abs(shown - RED).max(axis=2) <= 24).mean() > 0.999  # (the picture is H.264's)


async def turns_red(client: Client, view: FrameView, frame: str, button: tuple[int, int]) -> None:
    """Click the page's button that turns it red: a picture shows it, and nothing over the page right of it."""
    step = await client.click(frame, *button)
    await view.picture_after(step.sent_us, where=lambda p: near(p.pixel(400, 300), RED))
    await only_red(client, frame, 240)


async def test_a_pages_print_becomes_a_pdf_download_and_leaves_the_frame_as_it_was(
        client: Client, open_frame: Callable[[str], str]) -> None:
    printing = open_frame("print.html")
    view = await white_page(client, printing)
    await client.click(printing, 120, 50)  # window.print(): answered (before: an internal error after 5 s)
    [page] = await printed(client, printing, 1)
    assert page.name == "A printed page.pdf"  # named after the page's title, as Chrome's "Save as PDF"
    await turns_red(client, view, printing, (120, 150))  # the page goes on
    await client.click(printing, 120, 250)  # a receipt printed from a hidden iframe (react-to-print's way)
    receipt = (await printed(client, printing, 2))[1]
    # Each PDF is what was printed: Chromium's PDF viewer shows the page's print styles' green band (not on screen),
    # then the receipt's blue.
    for download, colour in ((page, GREEN), (receipt, BLUE)):
        assert await pdf_shows(client, open_frame, printing, download, colour) > 0.1
    with pytest.raises(ServiceError) as unknown:
        await client.download(printing, "no-such-download")
    assert (unknown.value.code, unknown.value.status) == ("unknown-download", 404)


class _Answers(http.server.BaseHTTPRequestHandler):
    """A test's own pages, answered quietly."""

    def answer(self, status: int, body: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in {"Content-Type": content_type, **(headers or {})}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _HeldPrints(_Answers):
    """A page whose buttons print (itself; a receipt from a new iframe, written with document.write) and then hold
    the click's handler in a synchronous request to /hold, which is answered once the test releases `holds`."""

    PAGE = b"""<!doctype html><html><head><meta charset="utf-8"><title>A held print</title>
<style>html,body{margin:0;background:#fff}button{position:absolute;left:20px;width:200px;height:60px}</style></head>
<body><button style="top:20px" onclick="window.print(); held()">print</button>
<button style="top:120px" onclick="document.documentElement.style.background='rgb(200,30,30)'">red</button>
<button style="top:220px" onclick="receipt(); held()">receipt</button>
<script>
const held = () => { const r = new XMLHttpRequest(); r.open('GET', '/hold', false); r.send(); };
const receipt = () => {
  const frame = document.createElement('iframe');
  document.body.append(frame);
  frame.contentDocument.write('<!doctype html><title>Receipt</title><p>receipt</p>');
  frame.contentDocument.close();
  frame.contentWindow.print();
  frame.remove();
};
</script></body></html>"""

    def __init__(self, *args: Any, holds: threading.Semaphore, **kwargs: Any) -> None:
        self.holds = holds
        super().__init__(*args, **kwargs)

    def do_GET(self) -> None:
        if self.path == "/hold" and self.holds.acquire(timeout=60):
            self.answer(200, b"held", "text/plain")
        else:
            self.answer(200, self.PAGE, "text/html")


async def test_the_input_that_starts_a_print_is_answered_when_the_print_starts(
        client: Client, open_frame: Callable[[str], str]) -> None:
    """The renderer makes the PDF inside window.print(), so the click that called it was answered only once the
    PDF was made: on a loaded machine past the 5 s an input event is given, an `internal` error for a click that
    printed (seen in CI; browser/print_hook.py). Here each click's handler goes on after its print until the test
    lets it: only a click answered as its print starts lets the test go on (before, each failed after 5 s)."""
    holds = threading.Semaphore(0)
    with page_server(handler=functools.partial(_HeldPrints, holds=holds)) as base:
        try:
            frame = open_frame(f"{base}/")
            view = await white_page(client, frame)
            for count, button in enumerate([(120, 50), (120, 250)], 1):  # window.print(); an iframe's, written
                await client.click(frame, *button)
                holds.release()
                await printed(client, frame, count)
            await turns_red(client, view, frame, (120, 150))  # the page goes on
        finally:
            for _ in range(2):
                holds.release()  # (a handler still held, when the test failed)


async def test_input_sent_while_a_page_prints_is_applied_once_the_print_ends(
        client: Client, open_frame: Callable[[str], str]) -> None:
    """Chromium acknowledges input to a printing page at once and drops it (a click right after a print's PDF
    appeared did nothing, in CI). Here the red click is sent as soon as the print click is answered, as its long
    print starts: it must be applied once the print ends (before, it was lost in 5 runs of 5)."""
    frame = open_frame("print_long.html")
    view = await white_page(client, frame)
    await client.click(frame, 120, 50)
    step = await client.click(frame, 120, 150)
    print("STEP", (step.acked_us - step.sent_us) / 1e6)
    await view.picture_after(step.sent_us, where=lambda p: near(p.pixel(400, 300), RED))
    [paper] = await printed(client, frame, 1)
    assert paper.name == "A long printed page.pdf"


class _PrintsAsItLoads(_Answers):
    """tests/pages/print_long.html, printed by a script as it loads (an invoice's print view), which tells /printing
    as its print starts."""

    PAGE = (PAGES / "print_long.html").read_bytes().replace(b"</body>", b"""<script>
addEventListener('beforeprint', () => fetch('/printing', {method: 'POST', keepalive: true}));
window.print();
</script></body>""")

    def __init__(self, *args: Any, printing: threading.Event, **kwargs: Any) -> None:
        self.printing = printing
        super().__init__(*args, **kwargs)

    def do_POST(self) -> None:
        self.printing.set()
        self.answer(204, b"", "text/plain")

    def do_GET(self) -> None:
        self.answer(200, self.PAGE, "text/html")


async def test_input_sent_while_a_page_prints_as_it_loads_is_applied_once_the_print_ends(
        client: Client, open_frame: Callable[[str], str]) -> None:
    """A print asked for while the page loads is made once it has loaded, past `window.print`'s wrapper: the
    browser's own beforeprint and afterprint tell it (browser/print_hook.py). The red click is sent once the page
    has told its server the print started (before, it was lost in 4 runs of 4)."""
    printing = threading.Event()
    with page_server(handler=functools.partial(_PrintsAsItLoads, printing=printing)) as base:
        frame = open_frame(f"{base}/")
        view = await client.watch(frame)
        assert await asyncio.to_thread(printing.wait, 30.0), "the page did not print"
        step = await client.click(frame, 120, 150)
        await view.picture_after(step.sent_us, where=lambda p: near(p.pixel(400, 300), RED))
    [paper] = await printed(client, frame, 1)
    assert paper.name == "A long printed page.pdf"


async def printed(client: Client, frame: str, count: int) -> list[Download]:
    """The frame's first `count` downloads, once all are done (downloads are told to people who drive; an agent
    asks)."""
    async def done() -> list[Download] | None:
        ended = [d for d in await client.downloads(frame) if d.state != "started"]
        return ended if len(ended) >= count else None
    downloads = await until(f"{count} PDFs", done, within=30.0)
    assert [d.state for d in downloads] == ["done"] * count and all(d.name.endswith(".pdf") for d in downloads)
    return downloads


async def pdf_shows(client: Client, open_frame: Callable[[str], str], frame: str, download: Download,
                    colour: tuple[int, int, int]) -> float:
    """The fraction of a frame showing `download` (a PDF of `frame`'s) in Chromium's PDF viewer that is `colour`,
    once its picture shows it."""
    pdf = await client.download(frame, download.id)
    assert pdf[:5] == b"%PDF-" and len(pdf) == download.size
    with tempfile.TemporaryDirectory() as folder, page_server(Path(folder)) as base:
        (Path(folder) / f"{download.id}.pdf").write_bytes(pdf)
        paper = await client.watch(open_frame(f"{base}/{download.id}.pdf"))
        shown = await paper.picture_after(0, where=lambda p: near(p.pixel(460, 150), colour), timeout=20.0)
    return float((np.abs(shown.rgb.astype(int) - colour).max(axis=2) <= 24).mean())


async def test_the_pdf_viewers_print_button_puts_no_dialog_over_the_document_and_prints_it(
        client: Client, open_frame: Callable[[str], str]) -> None:
    pdf = open_frame("printable.pdf")
    view = await client.watch(pdf)
    shown = await view.picture_after(0, where=lambda p: near(p.pixel(400, 150), BLUE))
    assert near(shown.pixel(520, 240), (255, 255, 255))  # beyond the rectangle's corner, which zooming in covers
    await client.click(pdf, 572, 28)  # the toolbar's print button
    # Zoom in until the picture shows it: the document, not a dialog. (The viewer takes no clicks for the 1.5 s
    # its print takes; before, the print preview stayed over it for good.)
    deadline = time.monotonic() + 20.0
    while True:
        step = await client.click(pdf, 238, 28)
        try:
            await view.picture_after(step.sent_us, where=lambda p: near(p.pixel(520, 240), BLUE), timeout=1.0)
            break
        except ClientError:
            assert time.monotonic() < deadline, "the document never zoomed in: something covers it"
    [printed_pdf] = await printed(client, pdf, 1)  # as a download: the document, with its blue rectangle
    assert printed_pdf.name == "printable.pdf"
    assert await pdf_shows(client, open_frame, pdf, printed_pdf, BLUE) > 0.02


async def test_a_login_leaves_no_offer_to_save_the_password_over_the_page(client: Client,
                                                                          open_frame: Callable[[str], str]) -> None:
    login = open_frame("login.html")
    view = await white_page(client, login)
    await client.click(login, 120, 35)
    await client.type_text(login, "ann")
    await client.click(login, 120, 75)
    await client.type_text(login, "not-a-real-password")
    await client.press(login, "Enter")  # the form goes: login_done.html, green
    await view.picture_after(0, where=lambda p: near(p.pixel(120, 200), GREEN))
    # Loaded (its title in the frame's state): the password manager offered to save by then, 0.15 s after the
    # first green picture.
    await view.wait_for(lambda v: v.state is not None and any(p.get("title") == "logged in" for p in v.state.pages))
    await turns_red(client, view, login, (120, 50))


class _SignIn(_Answers):
    """Every document asks for HTTP authentication; what it sends with its 401 is a red page."""

    def do_GET(self) -> None:
        self.answer(401, b'<!doctype html><html style="background:rgb(200,30,30)"><body></body></html>', "text/html",
                    {"WWW-Authenticate": 'Basic realm="staging"'})


async def test_a_request_to_sign_in_is_declined_and_the_page_shows_what_came_with_it(
        client: Client, open_frame: Callable[[str], str]) -> None:
    with page_server(handler=_SignIn) as base:
        frame = open_frame(f"{base}/private")
        view = await client.watch(frame)
        await view.picture_after(0, where=lambda p: near(p.pixel(320, 200), RED), timeout=20.0)
        await only_red(client, frame, 0)  # the 401's page, no dialog over it


async def test_links_to_other_applications_open_nothing_over_the_frame(client: Client, service: Service,
                                                                       open_frame: Callable[[str], str]) -> None:
    frame = open_frame("other_apps.html")
    view = await white_page(client, frame)
    # A popup at another application's link, blocked (no click), then a sign-in popup: it opens blank, and stays.
    await view.picture_after(0, where=lambda p: near(p.pixel(230, 316), GREEN))
    step = await client.click(frame, 120, 316)
    await view.picture_after(step.sent_us, where=lambda p: near(p.pixel(400, 300), BLUE))
    await view.wait_for(lambda v: v.state is not None and len(v.state.pages) == 2)  # a page of the frame's
    assert view.state is not None
    closed = await client.page(frame, "close", view.state.pages[-1]["id"])
    await view.picture_after(closed.sent_us, where=lambda p: near(p.pixel(400, 300), (255, 255, 255)))
    # slack:// by a link, zoommtg:// by script, vscode:// by a form, mailto: by a link, msteams:// by a popup. The
    # page paints the square beside each green once the navigation was cancelled before it left, or the popup
    # closed (the dialog came later, or Firefox, or a blank page over the frame).
    for y in (28, 76, 124, 172, 220):
        step = await client.click(frame, 120, y)
        await view.picture_after(step.sent_us, where=lambda p, y=y: near(p.pixel(230, y), GREEN))
    # An iframe's first document fires no navigation the page can cancel: Chromium asks the desktop whether it is
    # the scheme's handler itself, hears yes, and asks no one (the dialog stayed even after the frame navigated).
    asked = service.state_dir / "profiles" / frame / "external-apps" / ATTEMPT_FILE
    asked.unlink(missing_ok=True)
    await client.click(frame, 120, 268)
    await until("Chromium asked whether it handles the iframe's scheme",
                lambda: asyncio.to_thread(reads, asked, f"{HANDLER_CHECK}\n"), within=10.0)
    await turns_red(client, view, frame, (120, 364))  # and nothing over the page
    assert view.state is not None
    assert [page["url"] for page in view.state.pages] == [f"{service.pages}/other_apps.html"]  # no blank popup


def reads(path: Path, text: str) -> bool:
    return path.is_file() and path.read_text() == text
