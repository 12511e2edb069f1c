from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from framestream.client import Client, SandboxKey
from tests.support import TEST_SECRET, FramePool, Service


@pytest.fixture
def key() -> SandboxKey:
    return SandboxKey(TEST_SECRET, "test", subject="agent")


@pytest.fixture(scope="module")
def agent_frames(service: Service) -> Iterator[FramePool]:
    """Fresh frames of tests/pages/agent.html at 640x400 dpr 1, one per test."""
    yield FramePool(service, f"{service.pages}/agent.html", 640, 400, dpr=1)


@pytest.fixture
def frame(agent_frames: FramePool) -> Iterator[str]:
    frame_id = agent_frames.take()
    yield frame_id
    agent_frames.delete(frame_id)


@pytest.fixture
async def client(service: Service, key: SandboxKey) -> AsyncIterator[Client]:
    async with await Client.connect(service.base, key=key) as c:
        yield c
