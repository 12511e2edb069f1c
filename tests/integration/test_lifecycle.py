"""Frame lifecycle with real browsers: pause when unwatched, resume at once, the cap, reopen, restart."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.fixtures import service_fixture
from tests.support import (
    TEST_SECRET,
    Service,
    StreamClient,
    browser_pids,
    colour_near,
    descendants,
    processes_using,
    read_counter,
)

pytestmark = pytest.mark.integration

SMALL = {"width": 640, "height": 400, "dpr": 1}
# storage.html's verdict: green when its cookie and localStorage survived, red when they were lost.
GREEN, RED = (20, 170, 60), (220, 30, 30)


def cpu_seconds(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


service = service_fixture(env={"MAX_BROWSERS": "2", "FRAME_IDLE_PAUSE_S": "1"})


def make_frame(service: Service, url: str) -> str:
    return service.create_frame(url, **SMALL)


async def test_counter_continues_after_pause_and_uses_no_cpu_while_paused(service: Service, pages: str) -> None:
    frame_id = make_frame(service, f"{pages}/counter.html")
    await service.wait_state_async(frame_id, "live")
    client = await StreamClient.connect(service)
    await client.watch(frame_id)
    await client.latest_picture(timeout=20)
    await client.collect(1.0)
    before = read_counter(await client.latest_picture_after_keyframe_request(frame_id))
    await client.send({"type": "unwatch", "frame": frame_id})
    paused_at = time.monotonic()
    await service.wait_state_async(frame_id, "paused", timeout=10)
    # Paused: the page's processes use about no CPU.
    assert service.proc is not None
    pids = descendants(service.proc.pid)
    used = cpu_seconds(pids)
    await asyncio.sleep(3.0)
    paused_cpu = (cpu_seconds(pids) - used) / 3.0
    assert paused_cpu < 0.05, f"a paused frame's browser and display used {paused_cpu:.3f} vCPU"
    frozen_for = time.monotonic() - paused_at
    # Resume: the first picture shows the count from where it stopped, not where it would have run to.
    await client.watch(frame_id)
    after = read_counter(await client.latest_picture(timeout=10))
    assert after >= before, (before, after)
    assert after - before < 10 * (frozen_for - 1.0), f"the counter ran while paused: {before} -> {after}"
    await client.collect(1.0)
    later = read_counter(await client.latest_picture_after_keyframe_request(frame_id))
    assert later > after, f"the counter must go on after resume: {after} -> {later}"
    state = service.get(f"/frames/{frame_id}")[1]
    assert state["state"] == "live" and state["viewers"] == 1
    await client.close()


async def test_cap_closes_least_recently_viewed_and_reopen_keeps_profile_and_url(
    service: Service, pages: str
) -> None:
    storage = make_frame(service, f"{pages}/storage.html")
    await service.wait_state_async(storage, "live")
    # The page stored its marks and navigated on by itself: the frame's url follows the page.
    assert (await service.wait_url_async(storage, "step=2")).endswith("storage.html?step=2")
    second = make_frame(service, f"{pages}/box.html")
    await service.wait_state_async(second, "live")
    # A third frame at a cap of two closes the least recently viewed one: the storage frame.
    third = make_frame(service, f"{pages}/counter.html")
    await service.wait_state_async(third, "live")
    closed = await service.wait_state_async(storage, "closed", timeout=20)
    assert closed["url"].endswith("storage.html?step=2")
    assert service.get(f"/frames/{second}")[1]["state"] in ("live", "paused")
    profile = service.state_dir / "profiles" / storage
    assert profile.is_dir() and oct(profile.stat().st_mode & 0o777) == "0o700"
    assert processes_using(str(profile)) == []
    # Watching it reopens it at its last URL with its cookies and localStorage (green), closing another.
    client = await StreamClient.connect(service)
    await client.watch(storage)
    picture, verdict = await client.wait_for_one_of(storage, (50, 100), [GREEN, RED], timeout=30)
    assert verdict == GREEN, "cookie/localStorage lost (the page shows red)"
    assert colour_near(picture[50, 270], (30, 60, 220)), "not reopened at its last URL (step 2)"
    # The least recently viewed other one closes beside the reopen (its storage first: ChromeBrowser.close).
    await service.wait_state_async(second, "closed", timeout=20)
    states = {fid: service.get(f"/frames/{fid}")[1]["state"] for fid in (storage, second, third)}
    assert states[storage] == "live"
    assert sorted(states.values()).count("closed") == 1, states
    await client.close()


async def test_every_browser_watched_means_capacity(service: Service, pages: str) -> None:
    a = make_frame(service, f"{pages}/box.html")
    b = make_frame(service, f"{pages}/box.html")
    await service.wait_state_async(a, "live")
    await service.wait_state_async(b, "live")
    clients = []
    for fid in (a, b):
        client = await StreamClient.connect(service)
        await client.watch(fid)
        clients.append(client)
    status, body = service.request("POST", "/frames", {"url": f"{pages}/box.html", **SMALL})
    assert (status, body["error"]) == (409, "capacity"), body
    assert "2" in body["message"]
    for fid in (a, b):
        assert service.get(f"/frames/{fid}")[1]["state"] == "live"
    for client in clients:
        await client.close()


async def test_concurrent_watches_start_one_browser(service: Service, pages: str) -> None:
    frame_id = make_frame(service, f"{pages}/box.html")
    await service.wait_state_async(frame_id, "live")
    code = service.request("DELETE", f"/frames/{frame_id}")
    assert code[0] == 200
    frame_id = make_frame(service, f"{pages}/box.html")
    await service.wait_state_async(frame_id, "live")
    # Close it through the cap: two more frames, then watch the closed one from three connections at once.
    others = [make_frame(service, f"{pages}/box.html") for _ in range(2)]
    for other in others:
        await service.wait_state_async(other, "live")
    await service.wait_state_async(frame_id, "closed", timeout=20)
    clients = [await StreamClient.connect(service) for _ in range(3)]
    await asyncio.gather(*(c.send({"type": "watch", "frame": frame_id}) for c in clients))
    for client in clients:
        await client.latest_picture(timeout=30)
    browsers = browser_pids(service, frame_id)
    assert len(browsers) == 1, f"{len(browsers)} browser processes for one frame"
    for client in clients:
        await client.close()


async def test_restart_keeps_frames_closed_until_watched(state_dir: Path, pages: str) -> None:
    svc = Service(state_dir).start()
    try:
        frame_id = make_frame(svc, f"{pages}/storage.html")
        await svc.wait_state_async(frame_id, "live")
        await svc.wait_url_async(frame_id, "step=2")
        assert svc.stop() == 0
        svc.proc = None
        svc.start()
        listed = svc.get("/frames")[1]["frames"]
        assert [(f["id"], f["state"]) for f in listed] == [(frame_id, "closed")]
        assert listed[0]["url"].endswith("storage.html?step=2")
        assert processes_using(str(state_dir / "profiles")) == []  # nothing runs until watched
        client = await StreamClient.connect(svc)
        await client.watch(frame_id)
        _, verdict = await client.wait_for_one_of(frame_id, (50, 100), [GREEN, RED], timeout=30)
        assert verdict == GREEN, "cookie/localStorage lost across a restart (the page shows red)"
        await client.close()
    finally:
        svc.stop()
        svc.kill_leftovers()


def test_shared_frames_off(state_dir: Path, pages: str) -> None:
    svc = Service(state_dir, env_extra={"SHARED_FRAMES": "off"}).start()
    try:
        assert svc.get("/config", token=None)[1]["shared_frames"] is False
        status, body = svc.request("POST", "/frames", {"url": f"{pages}/box.html", **SMALL})
        assert (status, body["error"]) == (403, "shared-frames-off")
        assert svc.get("/frames")[1]["frames"] == []
        assert processes_using(str(state_dir)) == []
    finally:
        svc.stop()
    env = {**os.environ, "TERMINAL_AUTH_SECRET": TEST_SECRET, "SHARED_FRAMES": "off",
           "FRAMESTREAM_STATE_DIR": str(state_dir)}
    result = subprocess.run([sys.executable, "-m", "framestream", "serve", "--port", "1", "--frame",
                             f"{pages}/box.html"], env=env, capture_output=True, text=True, timeout=30,
                            check=False)
    assert result.returncode == 2
    assert "SHARED_FRAMES=off" in result.stderr
