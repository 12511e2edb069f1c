"""Fixtures shared by the viewer's browser tests: one headless Chromium per module, one clean tab per test, and the
same for Firefox ESR over WebDriver BiDi (their pages, `web_pages`, are in tests/conftest.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from tests.web.browser import Browser, Page
from tests.web.firefox import FIREFOX, Firefox, Tab, firefox_available


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


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def firefox() -> AsyncIterator[Firefox]:
    if not firefox_available():  # never silently: `make system-deps` installs it
        pytest.fail(f"{FIREFOX} not found: run `make system-deps` (Debian's firefox-esr)")
    async with Firefox() as f:
        yield f


@pytest_asyncio.fixture(loop_scope="module")
async def tab(firefox: Firefox) -> AsyncIterator[Tab]:
    """The module's Firefox tab, on about:blank, with no exception seen yet."""
    t = firefox.tabs[0] if firefox.tabs else await firefox.tab()
    await t.navigate("about:blank")
    t.exceptions.clear()
    t.console.clear()
    yield t
    assert not t.exceptions, t.exceptions
