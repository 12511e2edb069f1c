"""A page cannot forge copied text (issue 32, #6): at load, without any user action, tests/pages/forge_copy.html
calls whatever could be the copy binding, dispatches synthetic copy and cut events and writes through the
clipboard API, 64 KiB at a time, thirty times over; its driver hears none of it. Then a real click copies, and
that is the first `clipboard` message the driver gets (messages keep their order, so any forged one would have
come first). A page that copies a hundred times on one click reaches the driver a few times a second, the
newest text last."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.fixtures import service_fixture
from tests.integration.test_whole_tab import Driver, drive_page
from tests.support import Service

service = service_fixture(scope="module")

DONE = (50, 50)  # (y, x): #done turns green once the page is through forging
GREEN = (30, 180, 60)


@pytest.fixture
async def forger(service: Service, pages: str) -> AsyncIterator[Driver]:
    async for d in drive_page(service, f"{pages}/forge_copy.html", marker=None):
        yield d


async def test_a_page_cannot_forge_copied_text(forger: Driver) -> None:
    await forger.colour(DONE, GREEN)
    await forger.click(225, 60)  # #copy: a real click, then navigator.clipboard.writeText('legit-copy')
    copied = await forger.text_of("clipboard")
    assert copied["text"] == "legit-copy", f"a forged copy reached the driver: {copied['text'][:80]!r}"


async def test_copies_are_coalesced_and_rate_limited(forger: Driver) -> None:
    await forger.colour(DONE, GREEN)
    await forger.click(425, 60)  # #flood: flood-0 .. flood-99 as fast as the page can
    await forger.text_of("clipboard", text="flood-99", timeout=30.0)  # the newest always arrives
    texts = [m["text"] for m in forger.client.texts if m.get("type") == "clipboard"]
    assert len(texts) <= 6, f"{len(texts)} clipboard messages for one click: {[t[:20] for t in texts[-8:]]}"
    assert texts[-1] == "flood-99"
