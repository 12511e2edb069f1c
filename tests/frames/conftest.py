from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from framestream.frames.manager import FrameManager
from tests.frames.fakes import Launches, managed


@pytest.fixture
def launches() -> Launches:
    return Launches()


@pytest.fixture
async def frames(state_dir: Path, launches: Launches) -> AsyncIterator[FrameManager]:
    """A manager whose frames launch fake runtimes (cap 2, no idle pause within a test)."""
    async with managed(state_dir, launches) as m:
        yield m
