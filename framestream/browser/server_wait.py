"""Waiting for a page's server to accept connections (core/server_wait.py says when to ask and what the answers
mean): the asyncio edge, a TCP connect and nothing sent."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from framestream.core.errors import CDPError
from framestream.core.pages import Page
from framestream.core.server_wait import ASK_TIMEOUT_S, ask_after, load_again, server_of
from framestream.core.urls import without_query

log = logging.getLogger("framestream.browser.tabs")

Ask = Callable[[str, int], Awaitable[bool]]


async def accepts(host: str, port: int, timeout: float = ASK_TIMEOUT_S) -> bool:
    """Whether `host`:`port` accepts a TCP connection within `timeout` (closed again at once, nothing sent)."""
    try:
        async with asyncio.timeout(timeout):
            _, writer = await asyncio.open_connection(host, port)
    except (OSError, TimeoutError):
        return False
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return True


async def came_back(host: str, port: int, *, ask: Ask = accepts, asking: Callable[[], bool] = lambda: True,
                    refused: Callable[[], None] = lambda: None,
                    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> bool:
    """Ask until the server accepts a connection: True once it does after refusing (`refused()` is called at the
    first refusal), False when it accepted the first ask (it was not down). Runs until cancelled otherwise; asks
    nothing while `asking()` is False (the frame is paused)."""
    answers: list[bool] = []
    while True:
        if asking():
            answers.append(await ask(host, port))
            decided = load_again(answers)
            if decided is not None:
                return decided
            if len(answers) == 1:
                refused()
        await sleep(ask_after(len(answers)))


class ServerWaits:
    """Per page, the wait for the server of the error page it shows, and the load once it answers. Owned by the
    page set (browser/tabs.py), which tells it each commit of a page's main frame; `close()` ends every wait."""

    def __init__(self, *, load: Callable[[Page, str], Awaitable[str | None]],
                 answered: Callable[[Page, str], None], asking: Callable[[], bool],
                 refused: Callable[[str], bool], ask: Ask = accepts) -> None:
        self._load = load  # the page loads the URL: None, or Chrome's error text
        self._answered = answered  # it loaded, its server having come back
        self._asking = asking  # False while the frame is paused
        self._refused = refused  # the allow list refuses this URL: never loaded again
        self._ask = ask
        self._waits: dict[str, asyncio.Task[None]] = {}  # page id -> its wait
        self._down: set[str] = set()  # pages whose wait found the server refusing connections

    def committed(self, page: Page, url: str, unreachable: str | None) -> None:
        """The page's main frame committed `url`: Chrome's error page for `unreachable`, or (None) a document."""
        was_down = page.id in self._down
        self.page_closed(page.id)
        if unreachable is None and was_down:  # it loaded meanwhile: Chromium's own retry, someone's reload
            self._answered(page, url)
        if not unreachable or self._refused(unreachable) or (server := server_of(unreachable)) is None:
            return
        task = asyncio.create_task(self._wait(page, unreachable, *server), name=f"server-wait-{page.id}")
        self._waits[page.id] = task
        task.add_done_callback(lambda done: self._ended(page.id, done))

    def page_closed(self, page_id: str) -> None:
        self._down.discard(page_id)
        task = self._waits.pop(page_id, None)
        if task is not None:
            task.cancel()

    async def close(self) -> None:
        tasks = list(self._waits.values())
        self._waits.clear()
        self._down.clear()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _wait(self, page: Page, url: str, host: str, port: int) -> None:
        def refused() -> None:
            self._down.add(page.id)
            log.info("page %s shows Chrome's error page for %s: %s:%d refuses connections, the page loads again "
                     "once it answers", page.id, without_query(url)[:200], host, port)

        if not await came_back(host, port, ask=self._ask, asking=self._asking, refused=refused):
            return
        # The load commits a document, which would end this wait mid-load: it is no longer this page's wait.
        self._waits.pop(page.id, None)
        self._down.discard(page.id)
        log.info("page %s: %s:%d answers again, loading %s", page.id, host, port, without_query(url)[:200])
        try:
            error = await self._load(page, url)
        except CDPError as exc:  # the page or the browser went meanwhile
            log.info("page %s: loading %s failed: %s", page.id, without_query(url)[:200], exc)
            return
        if error is None:
            self._answered(page, url)

    def _ended(self, page_id: str, task: asyncio.Task[None]) -> None:
        if self._waits.get(page_id) is task:
            del self._waits[page_id]
        if not task.cancelled() and task.exception() is not None:
            log.warning("page %s: waiting for its server failed: %s", page_id, task.exception())


__all__ = ["ServerWaits", "accepts", "came_back"]
