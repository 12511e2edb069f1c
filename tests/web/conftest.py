"""Fixtures shared by the viewer's browser tests: their pages, one headless Chromium per module, one clean tab
per test."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio

from tests.support import page_server
from tests.web.browser import Browser, Page


@pytest.fixture(scope="session")
def web_pages() -> Iterator[str]:
    """tests/web/pages on 127.0.0.1 (the pages the viewer tests' frames show)."""
    with page_server(Path(__file__).parent / "pages") as base:
        yield base


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def browser() -> AsyncIterator[Browser]:
    async with Browser() as b:
        yield b


@pytest_asyncio.fixture(loop_scope="module")
async def page(browser: Browser) -> AsyncIterator[Page]:
    """The module's browser tab, on about:blank, with no exception seen yet."""
    p = browser.pages[0] if browser.pages else await browser.page()
    await p.navigate("about:blank")
    await p.wait_for("location.href === 'about:blank'")
    p.exceptions.clear()
    p.console.clear()
    yield p
    assert not p.exceptions, p.exceptions
