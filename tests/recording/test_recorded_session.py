"""A driven session recorded by the real service (Xvfb, Chromium, libx264): the MP4 decodes, the picture at each
step's time plus 0.5 s shows its effect, and the sidecar lists every step with its subject and nothing secret."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import numpy as np

from tests.fixtures import service_fixture
from tests.recording.recorded import at, decoded, download, fetch, recordings, sidecar
from tests.support import Service, StreamClient, colour_near, until

service = service_fixture(env={"FRAMESTREAM_RECORD": "on", "FRAME_IDLE_PAUSE_S": "1.5"})

RED, GREEN, BLUE, YELLOW = (220, 30, 30), (30, 180, 60), (40, 60, 220), (250, 220, 60)


def click(x: int, y: int) -> list[dict[str, Any]]:
    return [{"kind": "mouse", "action": "down", "x": x, "y": y}, {"kind": "mouse", "action": "up", "x": x, "y": y}]


def ink(picture: np.ndarray, box: tuple[int, int, int, int]) -> int:
    """Dark pixels in (x0, y0, x1, y1): the typed letters."""
    x0, y0, x1, y1 = box
    return int((picture[y0:y1, x0:x1].mean(axis=2) < 100).sum())


FIELD = (24, 124, 120, 200)  # the first two letters of the big field


async def _drain(viewer: StreamClient) -> None:
    while True:
        await viewer.receive(1.0)


async def test_a_driven_session_is_recorded_with_its_steps(service: Service, tmp_path: Path) -> None:
    frame_id = await asyncio.to_thread(service.create_frame, f"{service.pages}/replay.html", width=640, height=400,
                                       dpr=1)
    await service.wait_state_async(frame_id, "live")
    drive = service.token("drive", frame_id, subject="agent-7")
    viewer = await StreamClient.connect(service, drive, features=["patches"])  # small changes go as patches
    await viewer.watch(frame_id)
    reader = asyncio.create_task(_drain(viewer))
    seq = 0

    async def step(events: list[dict[str, Any]]) -> None:
        nonlocal seq
        seq += 1
        status, body = await asyncio.to_thread(service.request, "POST", f"/frames/{frame_id}/input",
                                               {"seq": seq, "events": events}, drive)
        assert status == 200, body
        await past(0.7)

    async def past(seconds: float) -> None:
        # The check below reads the picture 0.5 s after each step: the next step must come after that moment
        # (what is awaited is the clock itself).
        left = seconds - (time.monotonic() - last[0])
        if left > 0:
            await asyncio.sleep(left)
        last[0] = time.monotonic()

    last = [time.monotonic()]

    try:
        # The page as it was before the first step is in the recording (its first keyframe written).
        await until("the recording's first picture", lambda: _started(service, frame_id), 30.0)
        await past(0.1)
        await step(click(100, 60))  # the button turns green
        await step([*click(200, 160), {"kind": "text", "text": "WM"}])  # two big letters, as patches
        await step([*click(150, 260), {"kind": "text", "text": "hunter2"}])  # a password
        await step(click(540, 60))  # confirm() opens
        dialog = await until("the dialog", lambda: _first(viewer, "dialog"), 15.0)
        seq += 1
        await viewer.send({"type": "dialog-answer", "frame": frame_id, "grant": drive, "seq": seq,
                           "id": dialog["id"], "accept": True})
        await until("the answer's ack", lambda: _first(viewer, "input-ack", seq=seq), 15.0)
        last[0] = time.monotonic()
        await past(0.7)
        seq += 1
        status, body = await asyncio.to_thread(service.request, "POST", f"/frames/{frame_id}/navigate",
                                               {"seq": seq, "url": f"{service.pages}/replay.html?page=2"}, drive)
        assert status == 200, body
        await until("the yellow page", lambda: _yellow_in_screenshot(service, frame_id), 15.0)
        await past(0.7)
        for token, code in ((service.token("view", frame_id, subject="watcher"), 403), ("not.a-token", 401)):
            status, body = await asyncio.to_thread(service.request, "POST", f"/frames/{frame_id}/input",
                                                   {"seq": 99, "events": click(100, 60)}, token)
            assert status == code, body
    finally:
        reader.cancel()
        await viewer.close()
    await service.wait_state_async(frame_id, "paused")  # the pause ends the recording

    ended = await until("the ended recording", lambda: _ended(service, frame_id), 30.0)
    lines = await asyncio.to_thread(sidecar, service, frame_id, ended["id"])
    raw = b"".join((str(line) + "\n").encode() for line in lines)
    everything = [line for line in lines if line["type"] == "step"]
    steps = [line for line in everything if line["ok"]]
    assert [s.get("kind") for s in steps] == ["input", "input", "input", "input", "dialog-answer", "navigate"]
    assert all(s["subject"] == "agent-7" and s["role"] == "drive" for s in steps)
    refused = [(s["subject"], s["error"]) for s in everything if not s["ok"]]
    assert refused == [("watcher", "forbidden")], refused  # (a grant that does not verify names nobody: not kept)
    assert steps[1]["events"][-1] == {"kind": "text", "text": "WM"}
    assert steps[2]["events"][-1] == {"kind": "text", "redacted": True, "length": 7}
    assert b"hunter2" not in raw and drive.encode() not in raw and drive.split(".")[1].encode() not in raw
    assert ended["steps"] == 7
    kinds = {line["type"] for line in lines}
    assert {"recording", "dialog", "dialog-closed", "url"} <= kinds, kinds

    path = await asyncio.to_thread(download, service, ended, tmp_path)
    ffprobe = shutil.which("ffprobe")
    assert ffprobe is not None, "ffprobe is missing: `make test` installs ffmpeg"
    probe = await asyncio.to_thread(
        subprocess.run, [ffprobe, "-v", "error", "-count_frames", "-show_entries", "stream=nb_read_frames", "-of",
                         "csv=p=0", str(path)], capture_output=True, text=True, check=True)
    pictures = decoded(path)
    assert int(probe.stdout.strip()) == len(pictures) > 3

    def shown(line: dict[str, Any], after: float) -> np.ndarray:
        return at(pictures, (line["end_us"] - ended["start_us"]) / 1e6 + after)

    before_click = at(pictures, (steps[0]["t_us"] - ended["start_us"]) / 1e6 - 0.02)
    assert colour_near(before_click[60, 100], RED, 30), before_click[60, 100]
    assert colour_near(shown(steps[0], 0.5)[60, 100], GREEN, 30)
    assert ink(shown(steps[0], 0.5), FIELD) < 20
    assert ink(shown(steps[1], 0.5), FIELD) > 300  # the letters, though they went to the viewer as patches
    assert colour_near(shown(steps[4], 0.5)[60, 540], BLUE, 30)
    assert colour_near(shown(steps[5], 0.5)[200, 320], YELLOW, 30)

    # The video answers range requests (a <video> seeks with them).
    status, part, headers = await asyncio.to_thread(fetch, service, ended["video"], {"Range": "bytes=100-299"})
    assert status == 206 and len(part) == 200 and part == path.read_bytes()[100:300]
    assert headers["Content-Range"] == f"bytes 100-299/{path.stat().st_size}"


def _first(viewer: StreamClient, kind: str, **fields: Any) -> Any:
    async def probe() -> dict[str, Any] | None:
        for message in viewer.texts:
            if message.get("type") == kind and all(message.get(k) == v for k, v in fields.items()):
                return message
        return None
    return probe()


async def _yellow_in_screenshot(service: Service, frame_id: str) -> bool | None:
    import io

    import av

    status, png = await asyncio.to_thread(service.get, f"/frames/{frame_id}/screenshot", "view")
    if status != 200:
        return None
    with av.open(io.BytesIO(png), "r") as container:
        picture = next(container.decode(video=0)).to_ndarray(format="rgb24")
    return True if colour_near(picture[200, 320], YELLOW, 10) else None


async def _started(service: Service, frame_id: str) -> dict[str, Any] | None:
    found = await asyncio.to_thread(recordings, service, frame_id)
    active = [r for r in found if r["active"] and r["bytes"] > 0]
    return active[-1] if active else None


async def _ended(service: Service, frame_id: str) -> dict[str, Any] | None:
    found = await asyncio.to_thread(recordings, service, frame_id)
    done = [r for r in found if not r["active"]]
    return done[-1] if done else None

