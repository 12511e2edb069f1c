"""The DevTools client over real pipes, the test playing Chromium on the other ends (NUL-terminated JSON)."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from framestream.browser.cdp import CDPConnection
from framestream.core.errors import CDPError


@dataclass
class Chromium:
    """Our connection, and the test's ends of its two pipes."""

    cdp: CDPConnection
    commands: int  # what we send (Chromium's fd 3)
    answers: int  # what Chromium sends (its fd 4)
    unread: bytes = b""

    async def command(self) -> dict[str, object]:
        """The next command we sent."""
        while b"\0" not in self.unread:
            self.unread += await asyncio.to_thread(os.read, self.commands, 65536)
        raw, self.unread = self.unread.split(b"\0", 1)
        message: dict[str, object] = json.loads(raw)
        return message

    def send(self, *messages: dict[str, object]) -> None:
        os.write(self.answers, b"".join(json.dumps(m).encode() + b"\0" for m in messages))


@pytest.fixture
async def chromium() -> AsyncIterator[Chromium]:
    commands_r, commands_w = os.pipe()
    answers_r, answers_w = os.pipe()
    cdp = await CDPConnection.over_pipes(answers_r, commands_w)
    yield Chromium(cdp, commands_r, answers_w)
    await cdp.close()
    os.close(commands_r)
    os.close(answers_w)


async def test_a_call_cancelled_as_its_answer_comes_ends_cancelled(chromium: Chromium) -> None:
    """The browser's heartbeat loop is ended by `cancel()`. With `asyncio.wait_for` (Python 3.11) a call whose answer
    had come when the cancellation did returned the answer instead, the loop went on, and deleting the frame waited
    for it until the service stopped (seen once in a loaded run of the suite)."""
    for _ in range(5):
        call = asyncio.create_task(chromium.cdp.call("Browser.getVersion", timeout=10.0))
        unsubscribe = chromium.cdp.on("Test.afterAnswer", lambda _params, call=call: call.cancel())
        command = await chromium.command()
        # The event right behind the answer is read in the same pass: its handler cancels the call after the
        # answer came and before the call's task ran again.
        chromium.send({"id": command["id"], "result": {"product": "Chrome"}}, {"method": "Test.afterAnswer"})
        with pytest.raises(asyncio.CancelledError):
            await call
        unsubscribe()
    # The connection is as good as before.
    call = asyncio.create_task(chromium.cdp.call("Browser.getVersion"))
    chromium.send({"id": (await chromium.command())["id"], "result": {"product": "Chrome"}})
    assert await call == {"product": "Chrome"}


async def test_a_call_without_an_answer_fails_in_its_time_and_a_closed_pipe_fails_the_rest(chromium: Chromium) -> None:
    with pytest.raises(CDPError, match=r"no answer within 0\.05 s"):
        await chromium.cdp.call("Page.enable", timeout=0.05)
    waiting = asyncio.create_task(chromium.cdp.call("Page.reload", timeout=30.0))
    assert (await chromium.command())["method"] == "Page.enable"
    assert (await chromium.command())["method"] == "Page.reload"
    os.close(chromium.answers)  # Chromium went away
    chromium.answers = os.open(os.devnull, os.O_WRONLY)  # for the fixture to close
    with pytest.raises(CDPError, match="DevTools connection"):
        await waiting
