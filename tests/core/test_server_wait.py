"""When a page whose server refused the connection loads again (core/server_wait.py, browser/server_wait.py's
waiting with a scripted server): pure logic, no socket."""

from __future__ import annotations

import asyncio

import pytest

from framestream.browser.server_wait import came_back
from framestream.core.server_wait import ask_after, load_again, server_of


def test_the_server_of_a_pages_url() -> None:
    assert server_of("http://127.0.0.1:3000/app?x=1") == ("127.0.0.1", 3000)
    assert server_of("http://localhost/") == ("localhost", 80)
    assert server_of("https://127.0.0.2/a") == ("127.0.0.2", 443)
    assert server_of("http://[::1]:5173/") == ("::1", 5173)
    assert server_of("http://app.localhost:1355/") == ("localhost", 1355)  # as the browser takes it
    for other in ("about:blank", "chrome-error://chromewebdata/", "file:///etc/passwd", "data:text/html,x",
                  "http://127.0.0.1:99999/", "http:///nohost", "https://example.test/a", "http://10.0.0.5:3000/"):
        assert server_of(other) is None, other


def test_asks_come_sooner_first_then_every_two_seconds() -> None:
    assert [ask_after(n) for n in range(1, 8)] == [0.25, 0.5, 1.0, 2.0, 2.0, 2.0, 2.0]


def test_load_again_only_after_a_refusal() -> None:
    assert load_again([]) is None
    assert load_again([True]) is False  # up at once: the page failed for another reason, never reloaded in a loop
    assert load_again([False]) is None
    assert load_again([False, False, False]) is None
    assert load_again([False, False, True]) is True


class ScriptedServer:
    """Answers asks from a script (True: accepts), recording when each came on a clock the sleeps move."""

    def __init__(self, answers: list[bool]) -> None:
        self.answers = answers
        self.now = 0.0
        self.asked_at: list[float] = []

    async def ask(self, host: str, port: int) -> bool:
        assert (host, port) == ("127.0.0.1", 3000)
        self.asked_at.append(self.now)
        return self.answers.pop(0)

    async def sleep(self, seconds: float) -> None:
        self.now += seconds


async def test_a_server_that_comes_back_is_asked_on_the_schedule_and_reported_once() -> None:
    server = ScriptedServer([False, False, False, False, False, True])
    refusals: list[float] = []
    back = await came_back("127.0.0.1", 3000, ask=server.ask, sleep=server.sleep,
                           refused=lambda: refusals.append(server.now))
    assert back is True
    assert server.asked_at == [0.0, 0.25, 0.75, 1.75, 3.75, 5.75]
    assert refusals == [0.0]  # said once, at the first refusal


async def test_a_server_up_at_the_first_ask_is_not_waited_for() -> None:
    server = ScriptedServer([True])
    assert await came_back("127.0.0.1", 3000, ask=server.ask, sleep=server.sleep) is False
    assert server.asked_at == [0.0]


async def test_nothing_is_asked_while_the_frame_is_paused() -> None:
    server = ScriptedServer([False, True])
    paused_until = 10.0
    back = await came_back("127.0.0.1", 3000, ask=server.ask, sleep=server.sleep,
                           asking=lambda: server.now >= paused_until or not server.asked_at)
    assert back is True
    assert server.asked_at[0] == 0.0 and server.asked_at[1] >= paused_until


async def test_a_wait_that_never_ends_is_cancelled_by_its_owner() -> None:
    async def refuse(host: str, port: int) -> bool:
        return False

    waiting = asyncio.ensure_future(came_back("127.0.0.1", 3000, ask=refuse, sleep=lambda s: asyncio.sleep(0)))
    await asyncio.sleep(0.01)
    assert not waiting.done()
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
