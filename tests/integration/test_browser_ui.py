"""The browser's own UI stays off the frame (browser/preferences.py, browser/url_guard.py), where the driver's input
over DevTools could not reach it and every viewer saw it. Before, a page's `window.print()` and the PDF viewer's
print button opened the print preview over the whole frame, with the page waiting for it (the next click was an
internal error, the dialog stayed); a login form sent left the password manager's "Save password?" bubble over 70 %
of the frame for good, the username in clear; and a page that asked for HTTP authentication showed Chromium's "Sign
in" dialog instead."""

from __future__ import annotations

import http.server
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import numpy as np
import pytest

from framestream.client import Client, ClientError, SandboxKey, png_to_rgb
from tests.client.agent_page import near
from tests.fixtures import service_fixture
from tests.support import TEST_SECRET, Service, page_server

pytestmark = pytest.mark.integration

service = service_fixture(scope="module")

RED = (200, 30, 30)
GREEN = (30, 160, 60)
BLUE = (0, 0, 255)  # the PDF's rectangle


@pytest.fixture
async def client(service: Service) -> AsyncIterator[Client]:
    async with await Client.connect(service.base, key=SandboxKey(TEST_SECRET, "test", subject="agent")) as c:
        yield c


def new_frame(service: Service, page: str) -> Iterator[str]:
    """A 640x400 frame of `page` (tests/pages, or a whole URL) until the test ends."""
    url = page if "://" in page else f"{service.pages}/{page}"
    frame = service.create_frame(url, width=640, height=400, dpr=1)
    yield frame
    service.request("DELETE", f"/frames/{frame}?purge=1")


@pytest.fixture
def printing(service: Service) -> Iterator[str]:
    yield from new_frame(service, "print.html")


@pytest.fixture
def pdf(service: Service) -> Iterator[str]:
    yield from new_frame(service, "printable.pdf")


async def test_a_pages_print_leaves_the_frame_as_it_was(client: Client, printing: str) -> None:
    view = await client.watch(printing)
    await view.picture_after(0, where=lambda p: near(p.pixel(400, 300), (255, 255, 255)))
    await client.click(printing, 120, 50)  # window.print(): answered (before: an internal error after 5 s)
    step = await client.click(printing, 120, 150)  # the page goes on: it turns red
    await view.picture_after(step.sent_us, where=lambda p: near(p.pixel(400, 300), RED))
    shown = png_to_rgb((await client.screenshot(printing)).png).astype(int)
    right = shown[:, 240:]  # right of the buttons: all the page's red, no dialog over any of it
    assert (np.abs(right - RED).max(axis=2) <= 24).mean() > 0.999  # (the picture is H.264's)


async def test_the_pdf_viewers_print_button_puts_no_dialog_over_the_document(client: Client, pdf: str) -> None:
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


@pytest.fixture
def login(service: Service) -> Iterator[str]:
    yield from new_frame(service, "login.html")


async def test_a_login_leaves_no_offer_to_save_the_password_over_the_page(client: Client, login: str) -> None:
    view = await client.watch(login)
    await view.picture_after(0, where=lambda p: near(p.pixel(400, 300), (255, 255, 255)))
    await client.click(login, 120, 35)
    await client.type_text(login, "ann")
    await client.click(login, 120, 75)
    await client.type_text(login, "not-a-real-password")
    await client.press(login, "Enter")  # the form goes: login_done.html, green
    await view.picture_after(0, where=lambda p: near(p.pixel(120, 200), GREEN))
    # Loaded (its title in the frame's state): the password manager offered to save by then, 0.15 s after the
    # first green picture.
    await view.wait_for(lambda v: v.state is not None and any(p.get("title") == "logged in" for p in v.state.pages))
    step = await client.click(login, 120, 50)  # its button turns it red
    await view.picture_after(step.sent_us, where=lambda p: near(p.pixel(120, 200), RED))
    shown = png_to_rgb((await client.screenshot(login)).png).astype(int)
    right = shown[:, 240:]
    assert (np.abs(right - RED).max(axis=2) <= 24).mean() > 0.999  # all the page's: no bubble over any of it


class _SignIn(http.server.BaseHTTPRequestHandler):
    """Every document asks for HTTP authentication; what it sends with its 401 is a red page."""

    def do_GET(self) -> None:
        body = b'<!doctype html><html style="background:rgb(200,30,30)"><body></body></html>'
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Basic realm="staging"')
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


async def test_a_request_to_sign_in_is_declined_and_the_page_shows_what_came_with_it(client: Client,
                                                                                   service: Service) -> None:
    with page_server(handler=_SignIn) as base:
        for frame in new_frame(service, f"{base}/private"):
            view = await client.watch(frame)
            await view.picture_after(0, where=lambda p: near(p.pixel(320, 200), RED), timeout=20.0)
            shown = png_to_rgb((await client.screenshot(frame)).png).astype(int)
            assert (np.abs(shown - RED).max(axis=2) <= 24).mean() > 0.999  # the 401's page, no dialog over it
