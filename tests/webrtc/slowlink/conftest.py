"""Collected only when re-executed inside a loopback-only network namespace whose `lo` is limited
(tests/webrtc/test_slow_link_in_netns.py)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.netns import INSIDE, LINK, interfaces, only_loopback
from tests.support import page_server

collect_ignore_glob = [] if os.environ.get(INSIDE) == "1" and os.environ.get(LINK) else ["test_*.py"]

if not collect_ignore_glob:
    assert only_loopback(), f"not in a loopback-only network namespace: {interfaces()}"


@pytest.fixture(scope="module")
def bench_pages() -> Iterator[str]:
    """benchmarks/pages (the scroll pages) served on loopback."""
    with page_server(Path(__file__).resolve().parents[3] / "benchmarks" / "pages") as base:
        yield base
