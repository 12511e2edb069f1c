"""Printing never puts a dialog over a frame (browser/printing.py). Before, a page's `window.print()` and the PDF
viewer's print button opened Chromium's print preview over the whole frame, where input over DevTools could not
reach it, and the page waited for it: the next click was an internal error and the dialog stayed."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator

import numpy as np
import pytest

from framestream.client import Client, ClientError, SandboxKey, png_to_rgb
from tests.client.agent_page import near
from tests.fixtures import service_fixture
from tests.support import TEST_SECRET, Service

pytestmark = pytest.mark.integration

service = service_fixture(scope="module")

RED = (200, 30, 30)
BLUE = (0, 0, 255)  # the PDF's rectangle


@pytest.fixture
async def client(service: Service) -> AsyncIterator[Client]:
    async with await Client.connect(service.base, key=SandboxKey(TEST_SECRET, "test", subject="agent")) as c:
        yield c


def new_frame(service: Service, page: str) -> Iterator[str]:
    frame = service.create_frame(f"{service.pages}/{page}", width=640, height=400, dpr=1)
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
