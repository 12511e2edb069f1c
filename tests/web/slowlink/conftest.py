"""Collected only when re-executed inside a loopback-only network namespace whose `lo` is limited
(tests/web/test_viewer_slow_link.py). The viewer tests' fixtures (tests/web/conftest.py) apply here too."""

from __future__ import annotations

import os

from tests.netns import INSIDE, LINK, interfaces, only_loopback

collect_ignore_glob = [] if os.environ.get(INSIDE) == "1" and os.environ.get(LINK) else ["test_*.py"]

if not collect_ignore_glob:
    assert only_loopback(), f"not in a loopback-only network namespace: {interfaces()}"
