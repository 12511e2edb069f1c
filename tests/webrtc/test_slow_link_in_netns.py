"""WebRTC over a slow link (issue 18): the receiver's REMB drives the viewer's choice of stream. Run inside a
network namespace with only `lo`, every packet through one 1 Mbit/s token bucket (tests/webrtc/slowlink/)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests import netns
from tests.beside import Beside
from tests.netns import LINK, in_netns

SLOWLINK = Path(__file__).parent / "slowlink"

# The inner run watches the viewer for 45 s after its first picture; a busy machine's slow start must not let the
# default timeout kill this test and orphan the inner service in its namespace.
pytestmark = pytest.mark.timeout(600)

# Started with the session, beside the rest of the suite (tests/beside.py).
INNER = Beside(lambda: in_netns([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(SLOWLINK)],
                                env={LINK: "1mbit"}, shape=netns.tbf("1mbit")))


def test_webrtc_over_a_1_mbit_link_inside_a_loopback_only_network_namespace() -> None:
    reason = netns.missing()
    if reason is not None:
        pytest.fail(f"the slow-link tests run in a network namespace: {reason}")
    done = INNER.outcome()
    assert done.returncode == 0, f"inner pytest failed:\n{done.stdout[-20000:]}\n{done.stderr[-5000:]}"
    assert " passed" in done.stdout and "skipped" not in done.stdout, done.stdout[-3000:]
