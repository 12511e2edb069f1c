"""The consent loop (framestream/webrtc/consent.py) on a stand-in for aioice's connection: retransmitted checks,
expiry counted from the last answered one. The real one is proven by tests/webrtc/test_slow_link_in_netns.py."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aioice import stun

from framestream.webrtc import consent


class _Protocol:
    def __init__(self, answers: list[bool]) -> None:
        self.answers = answers  # one per check: answered (True) or timed out
        self.retransmissions: list[int | None] = []

    async def request(self, request: Any, addr: Any, *, integrity_key: bytes,
                      retransmissions: int | None = None) -> None:
        self.retransmissions.append(retransmissions)
        if not (self.answers.pop(0) if self.answers else False):
            raise stun.TransactionTimeout()


class _Pair:
    def __init__(self, protocol: _Protocol) -> None:
        self.protocol, self.remote_addr = protocol, ("127.0.0.1", 9)


class _Connection:
    def __init__(self, answers: list[bool]) -> None:
        self.remote_password = "pw"
        self.protocol = _Protocol(answers)
        self._nominated = {1: _Pair(self.protocol)}
        self._query_consent_task: object = "aioice's"
        self.closed = asyncio.Event()

    def build_request(self, pair: _Pair, nominate: bool) -> object:
        return object()

    async def close(self) -> None:
        self.closed.set()


@pytest.fixture
def fast(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(consent, "CHECK_EVERY_S", 0.01)
    monkeypatch.setattr(consent, "EXPIRES_AFTER_S", 0.2)


async def test_consent_expires_only_after_no_check_was_answered_for_its_time(fast: None) -> None:
    # Eight failures in a row (aioice closes after six) within the expiry time keep it.
    connection = _Connection(([False] * 8 + [True]) * 3)
    consent.install(connection)
    task = asyncio.create_task(connection.query_consent())  # type: ignore[attr-defined]
    await asyncio.wait_for(connection.closed.wait(), 5.0)  # then nothing answers: expired
    await task
    assert not connection.protocol.answers, "every planned answer was used before it expired"
    assert set(connection.protocol.retransmissions) == {consent.RETRANSMISSIONS}, "each check is retransmitted"
    assert connection._query_consent_task is None


async def test_answered_checks_keep_the_connection(fast: None) -> None:
    connection = _Connection([True] * 1000)
    consent.install(connection)
    task = asyncio.create_task(connection.query_consent())  # type: ignore[attr-defined]
    # 60 checks at least 0.01 s apart span three expiry times or more: waited for by count, not by the clock.
    while len(connection.protocol.retransmissions) < 60:
        assert not connection.closed.is_set(), "closed although every check was answered"
        await asyncio.sleep(0.01)
    task.cancel()
    assert not connection.closed.is_set()
