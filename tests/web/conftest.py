"""Fixtures shared by the viewer's browser tests: one headless Chromium per module, one clean tab per test (their
pages, `web_pages`, are in tests/conftest.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest_asyncio

from tests.web.browser import Browser, Page


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
