"""The WebRTC tests that send packets (tests/webrtc/inside/) run in a network namespace with only `lo`: pytest
re-executed under `unshare -n`, with FRAMESTREAM_ICE_HOSTS=127.0.0.1 for the service and 127.0.0.1 for the
clients (aiortc's, and Chromium's with --allow-loopback-in-peer-connection)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.beside import Beside
from tests.netns import in_netns

INSIDE = Path(__file__).parent / "inside"

# Started with the session, beside the rest of the suite (tests/beside.py).
INNER = Beside(lambda: in_netns([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(INSIDE)]))


@pytest.mark.timeout(600)
def test_webrtc_inside_a_loopback_only_network_namespace() -> None:
    done = INNER.outcome()
    assert done.returncode == 0, f"inner pytest failed:\n{done.stdout[-20000:]}\n{done.stderr[-5000:]}"
    assert " passed" in done.stdout and "skipped" not in done.stdout, done.stdout[-3000:]


def test_a_run_that_times_out_leaves_nothing_running_inside() -> None:
    """What the run inside started (a service, here a sleeper in the background) ends with it on a timeout, not
    only the command itself: the inner pytest's service used to be left running in its namespace."""
    marker = f"framestream-netns-{os.getpid()}"
    with pytest.raises(subprocess.TimeoutExpired):
        in_netns(["sh", "-c", f"sleep 300 {marker} & sleep 300"], timeout=1.0)
    left = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _cmdline(p).find(marker) >= 0]
    assert not left, f"still running after the timeout: {[p.name for p in left]}"


def _cmdline(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:  # ended meanwhile
        return ""
