"""Faults with real processes: a browser or a display killed comes back; other frames never notice."""

from __future__ import annotations

import contextlib
import os
import signal
import time

import pytest

from tests.fixtures import service_fixture
from tests.support import Service, StreamClient, browser_pid, display_pid, page_renderer_pids

pytestmark = pytest.mark.integration


service = service_fixture("box.html@320x200", "animated.html@320x200")


@pytest.mark.parametrize("victim", ["browser", "display", "renderer"])
async def test_killed_process_comes_back_and_others_keep_streaming(service: Service, victim: str) -> None:
    box, animated = service.frame_ids()
    watcher = await StreamClient.connect(service)
    await watcher.watch(box)
    await watcher.latest_picture(timeout=20)
    other = await StreamClient.connect(service)
    await other.watch(animated)
    await other.next_video(timeout=20)
    pids = page_renderer_pids(service, box) if victim == "renderer" else [
        browser_pid(service, box) if victim == "browser" else display_pid(service, box)]
    killed_at = time.monotonic()
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    # The watcher is told, then gets a fresh video-config and a keyframe showing the page again.
    states: list[str] = []
    configs = 0
    expect_config = victim != "renderer"
    while (not ((configs or not expect_config) and "launching" in states and states[-1] == "live")
           and time.monotonic() - killed_at < 20):
        msg = await watcher.next_text(timeout=20)
        if msg["type"] == "frame-state":
            states.append(msg["state"])
        elif msg["type"] == "video-config" and "launching" in states:
            configs += 1
    assert "launching" in states and states[-1] == "live", states
    if victim != "renderer":  # a crashed page reloads in the same browser, encoder and stream
        assert configs >= 1, "a restarted frame sends a fresh video-config"
    await watcher.wait_for_colour(box, (200, 400), (200, 40, 40), timeout=20)
    recovered = time.monotonic() - killed_at
    assert recovered < 15, f"took {recovered:.1f} s"
    videos = await other.collect(2.0)
    # Not a speed test (benchmarks/faults.py measures it): the other frame must not stall.
    assert len(videos) >= 10, f"the other frame delivered {len(videos)} pictures in 2 s (it must keep streaming)"
    assert service.get(f"/frames/{box}")[1]["state"] == "live"
    if victim == "browser":
        assert browser_pid(service, box) != pids[0]
    await watcher.close()
    await other.close()


async def test_a_hung_browser_is_detected_and_relaunched(service: Service) -> None:
    box, animated = service.frame_ids()
    watcher = await StreamClient.connect(service)
    await watcher.watch(box)
    await watcher.latest_picture(timeout=20)
    pid = browser_pid(service, box)
    os.kill(pid, signal.SIGSTOP)  # hangs; the heartbeat (Browser.getVersion) stops being answered
    stopped_at = time.monotonic()
    try:
        states: list[str] = []
        while not ("launching" in states and states[-1] == "live") and time.monotonic() - stopped_at < 45:
            msg = await watcher.next_text("frame-state", timeout=45)
            states.append(msg["state"])
        assert "launching" in states and states[-1] == "live", states
        await watcher.wait_for_colour(box, (200, 400), (200, 40, 40), timeout=20)
        assert browser_pid(service, box) != pid
        # The service answered everyone meanwhile.
        assert service.get("/healthz", token=None)[0] == 200
        assert service.get(f"/frames/{animated}")[1]["state"] in ("live", "paused")  # unwatched: may pause
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)
    await watcher.close()
