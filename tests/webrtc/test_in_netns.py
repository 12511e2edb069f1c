"""The WebRTC tests that send packets (tests/webrtc/inside/) run in a network namespace with only `lo`: pytest
re-executed under `unshare -n`, with FRAMESTREAM_ICE_HOSTS=127.0.0.1 for the service and 127.0.0.1 for the
clients (aiortc's, and Chromium's with --allow-loopback-in-peer-connection)."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.webrtc.netns import in_netns

INSIDE = Path(__file__).parent / "inside"


def test_webrtc_inside_a_loopback_only_network_namespace() -> None:
    done = in_netns([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(INSIDE)])
    assert done.returncode == 0, f"inner pytest failed:\n{done.stdout[-20000:]}\n{done.stderr[-5000:]}"
    assert " passed" in done.stdout and "skipped" not in done.stdout, done.stdout[-3000:]
