"""The web viewer over a slow link (issue 18): the light stream keeps its canvas. Run inside a network namespace
with only `lo`, every packet through one 1 Mbit/s token bucket (tests/web/slowlink/)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from tests import netns
from tests.beside import Beside
from tests.netns import LINK, in_netns

SLOWLINK = Path(__file__).parent / "slowlink"

pytestmark = [pytest.mark.integration, pytest.mark.timeout(660)]

# Started with the session, beside the rest of the suite (tests/beside.py).
INNER = Beside(lambda: in_netns([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", str(SLOWLINK)],
                                env={LINK: "1mbit"}, shape=netns.tbf("1mbit"), timeout=640))


def test_the_web_viewer_over_a_1_mbit_link_inside_a_loopback_only_network_namespace() -> None:
    reason = netns.missing()
    if reason is not None:
        pytest.fail(f"the slow-link tests run in a network namespace: {reason}")
    done = INNER.outcome()
    print(done.stdout[-4000:])
    assert done.returncode == 0, f"inner pytest failed:\n{done.stdout[-20000:]}\n{done.stderr[-5000:]}"
    # "1 passed in 33.76s", or "1 passed in 71.78s (0:01:11)" past a minute: nothing skipped, nothing left out
    summary = done.stdout.strip().splitlines()[-1]
    assert re.fullmatch(r"\d+ passed in [\d.]+s( \(\d+:\d\d:\d\d\))?", summary), done.stdout[-3000:]
