"""Slow links (issue 18), proven on loopback inside network namespaces of their own (tests/netns).

The page (tests/pages/noise.html at 640x400) streams a few Mbit/s, more than the 1 Mbit/s the slow viewer's link
carries. Before issue 18 such a viewer queued up to 2 MiB (16 s at 1 Mbit/s) and fell ever further behind; now
its queue is bounded by time at its link's measured rate, and once it had to skip it takes the frame's light
stream (the CSS size, its rate capped to the link) until its link carries the full one.

The bounds on time are generous (the budget plus a second for a loaded machine), far from the seconds an
unbounded queue reaches; whether the fast viewer is unaffected is judged by sequence numbers, never by time.
"""

from __future__ import annotations

from typing import Any

import pytest

from framestream.fanout.outbox import BUDGET_S
from tests import netns
from tests.beside import Beside

PAGE = "noise.html"
SIZE = [640, 400, 1]
SLOW_PORT = 40123
SLACK_MS = 1000  # scheduling on a shared 2-core machine, tbf's own queue, the keyframe's encode

# Each run waits its turn beside the suite (tests/beside.py) behind the other namespace runs.
pytestmark = pytest.mark.timeout(600)


def in_namespace(shape: list[str], viewers: list[dict[str, Any]], size: list[int] = SIZE, page: str = PAGE,
                 warm: int = 4) -> dict[str, Any]:
    return run(shape, "tests.netns.slowlink",
               {"page": page, "size": size, "seconds": 10, "warm": warm, "viewers": viewers})


def run(shape: list[str], module: str, args: dict[str, Any]) -> dict[str, Any]:
    reason = netns.missing()
    assert reason is None, f"the slow-link tests run in a network namespace: {reason}"
    return netns.run(shape, module, args, timeout=300)


SLOW_ALONE = Beside(lambda: in_namespace(netns.tbf("1mbit"), [{"name": "slow", "link_kbit": 1000}],
                                         size=[640, 400, 2]))
SLOW_BESIDE_FAST = Beside(lambda: in_namespace(netns.port_limit("1mbit", SLOW_PORT), [
    {"name": "slow", "port": SLOW_PORT, "link_kbit": 1000}, {"name": "fast"}]))
RECOVERY = Beside(lambda: run(netns.tbf("1mbit"), "tests.netns.link_recovery",
                              {"for_ms": 10_000, "size": [640, 400, 2]}))
PLAIN_SCROLL = Beside(lambda: in_namespace(netns.tbf("3mbit"), [{"name": "plain", "link_kbit": 3000, "decode": True}],
                                           size=[1280, 800, 2], page="scroll.html", warm=3))


def test_a_slow_viewer_takes_the_light_stream_within_the_budget_and_keeps_getting_pictures() -> None:
    result = SLOW_ALONE.outcome()
    slow, frame = result["viewers"]["slow"], result["frame"]
    assert frame["skips"] >= 1 and frame["slow_viewers"] == 1, f"the stream should be heavier than the link: {frame}"
    assert slow["light_sizes"] == [[640, 400]], f"the light stream is the CSS size, not 1280x800: {slow}"
    # The cap is 60 % of the link's measure (media/light_policy.py). A measure over a token bucket reads above its
    # rate by what its burst let through at once: up to 1.5x over the 0.5 s of held sends it spans (fanout/link.py;
    # before, one send alone read 10-25 Mbit/s and the cap came to 7764 kbit/s in one CI run of six), which a
    # skip's cut of the light stream's share corrects. So the cap must come from this link (not the 8000 kbit/s of
    # a link too fast to tell), and the light stream must fit it: few gaps and queue waits within the budget.
    assert 150 <= frame["light_kbps"] <= 2 * 1000, f"capped by the link's measure: {frame}"
    assert slow["light_pictures"] == slow["pictures"] >= 20, f"light pictures must keep coming: {slow}"
    assert slow["gaps"] <= 3, f"the light stream is capped to the link: it rarely skips: {slow}"
    assert slow["queue_wait_ms"]["max"] <= BUDGET_S * 1000 + SLACK_MS, slow
    assert slow["longest_without_picture_s"] <= 2, slow


def test_a_fast_viewer_beside_a_slow_one_gets_every_picture() -> None:
    result = SLOW_BESIDE_FAST.outcome()
    slow, fast, frame = result["viewers"]["slow"], result["viewers"]["fast"], result["frame"]
    assert frame["skips"] >= 1 and frame["slow_viewers"] == 1, f"the slow one should skip: {slow} {frame}"
    assert slow["light_pictures"] >= 20, f"and keep getting pictures, of the light stream: {slow}"
    sequences = fast["sequences"]
    assert fast["gaps"] == 0 and sequences == list(range(sequences[0], sequences[0] + len(sequences))), fast
    assert len(sequences) >= 0.9 * frame["pictures"], f"the fast one saw the frame's pictures: {fast} {frame}"


def test_a_light_viewer_of_a_page_that_went_still_is_shown_the_full_picture_once_its_link_recovers() -> None:
    """A light viewer looked at its link only when a picture was offered, so once the page went still it kept the
    CSS-size picture, however fast its link became, until the page changed again. Here the page moves (heavier than
    the 1 Mbit/s link), goes still on columns one device pixel wide, and then the link is lifted: the viewer must be
    shown them, which only the full stream's 1280x800 can (tests/netns/link_recovery.py)."""
    result = RECOVERY.outcome()
    log = result.pop("service_log_tail", "")
    assert result["configs"][:2] == [[1280, 800, "full"], [640, 400, "light"]], f"light while it moved: {result}"
    assert result["lifted"] and result["stripes_on_light"] < 20, f"still; the light picture cannot show it: {result}"
    assert result.get("back_after_s") is not None, f"never shown the full picture: {result}\n{log}"
    assert result["configs"][-1] == [1280, 800, "full"] and result["last_picture"] == [800, 1280], result
    assert result["stripes"] > 60, f"the columns one device pixel wide are shown: {result}"


def test_a_plain_client_of_a_dpr_2_scroll_over_3_mbit_keeps_up() -> None:
    """Issue 26: a client that says a plain `hello` (no features) watching a full-screen scroll at 1280x800 dpr 2
    (2560x1600) through a 3 Mbit/s token bucket got its pictures 2.7 s late (p95). This one decodes every picture
    in its read loop, as a client that shows them does. Bounds here are the budget plus
    the slack, far below that; the issue's 300 ms is measured in `make bench` (slowlink)."""
    result = PLAIN_SCROLL.outcome()
    plain = result["viewers"]["plain"]
    assert plain["pictures"] >= 100, f"at least 10 pictures a second: {plain}"
    assert plain["capture_to_recv_ms"]["p95"] <= BUDGET_S * 1000 + SLACK_MS, plain
    assert plain["longest_without_picture_s"] <= 2, plain
