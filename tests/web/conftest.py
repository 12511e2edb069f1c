"""Fixtures shared by the viewer's browser tests: one headless Chromium per module, one clean tab per test, and the
same for Firefox ESR over WebDriver BiDi (their pages, `web_pages`, are in tests/conftest.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol, TypeVar

import pytest
import pytest_asyncio

from tests.web.browser import Browser, BrowserTab, Page
from tests.web.firefox import FIREFOX, Firefox, Tab, firefox_available


class _Watched(BrowserTab, Protocol):
    """A tab that records the page's console and uncaught exceptions (Chromium's `Page`, Firefox's `Tab`)."""

    console: list[str]
    exceptions: list[str]


_T = TypeVar("_T", bound=_Watched)


async def _blank(tab: _T) -> AsyncIterator[_T]:
    """`tab` on about:blank with nothing seen yet, for one test, which fails if the page threw meanwhile."""
    await tab.navigate("about:blank")
    await tab.wait_for("location.href === 'about:blank'")
    tab.exceptions.clear()
    tab.console.clear()
    yield tab
    assert not tab.exceptions, tab.exceptions


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def browser() -> AsyncIterator[Browser]:
    async with Browser() as b:
        yield b


@pytest_asyncio.fixture(loop_scope="module")
async def page(browser: Browser) -> AsyncIterator[Page]:
    """The module's browser tab, on about:blank, with no exception seen yet."""
    async for p in _blank(browser.pages[0] if browser.pages else await browser.page()):
        yield p


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def firefox() -> AsyncIterator[Firefox]:
    if not firefox_available():  # never silently: `make system-deps` installs it
        pytest.fail(f"{FIREFOX} not found: run `make system-deps` (Debian's firefox-esr)")
    async with Firefox() as f:
        yield f


@pytest_asyncio.fixture(loop_scope="module")
async def tab(firefox: Firefox) -> AsyncIterator[Tab]:
    """The module's Firefox tab, on about:blank, with no exception seen yet."""
    async for t in _blank(firefox.tabs[0] if firefox.tabs else await firefox.tab()):
        yield t
