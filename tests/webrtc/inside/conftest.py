"""Collected only when re-executed inside a loopback-only network namespace (tests/webrtc/test_in_netns.py)."""

from __future__ import annotations

import os

from tests.netns import INSIDE, interfaces, only_loopback

collect_ignore_glob = [] if os.environ.get(INSIDE) == "1" else ["test_*.py"]

if os.environ.get(INSIDE) == "1":
    assert only_loopback(), f"not in a loopback-only network namespace: {interfaces()}"
