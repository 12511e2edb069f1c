from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support import FramePool, Service


@pytest.fixture(scope="module")
def agent_frames(service: Service) -> Iterator[FramePool]:
    """Fresh frames of tests/pages/agent.html at 640x400 dpr 1, one per test."""
    yield FramePool(service, f"{service.pages}/agent.html", 640, 400, dpr=1)


@pytest.fixture
def frame(agent_frames: FramePool) -> Iterator[str]:
    frame_id = agent_frames.take()
    yield frame_id
    agent_frames.delete(frame_id)
