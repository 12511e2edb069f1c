"""What an operator relies on: metrics that move with the stream, and the Origin allowlist."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import websockets

from tests.support import Service, StreamClient

pytestmark = pytest.mark.integration


@pytest.fixture
def service(state_dir: Path, pages: str) -> Iterator[Service]:
    svc = Service(state_dir, frames=[f"{pages}/animated.html@320x200"],
                  env_extra={"FRAMESTREAM_ALLOWED_ORIGINS": "http://good.test"}).start()
    for frame_id in svc.frame_ids():
        svc.wait_state(frame_id, "live")
    yield svc
    svc.stop()
    svc.kill_leftovers()


def metric(text: str, name: str, labels: str = "") -> float:
    match = re.search(rf"^{re.escape(name)}{re.escape(labels)} (\S+)$", text, re.M)
    assert match, f"{name}{labels} not in /metrics"
    return float(match.group(1))


async def test_metrics_follow_the_stream(service: Service) -> None:
    (frame_id,) = service.frame_ids()
    status, before = service.request("GET", "/metrics", token=None)
    assert status == 200
    text = before.decode()
    assert "# TYPE framestream_pictures_total counter" in text
    assert metric(text, "framestream_frames", '{state="live"}') == 1
    client = await StreamClient.connect(service)
    await client.watch(frame_id)
    await client.collect(1.5)
    await client.send({"type": "input", "frame": frame_id, "grant": service.token("view"), "seq": 1,
                       "event": {"kind": "mouse", "action": "move", "x": 1, "y": 1}})
    await client.next_text("error")
    after = service.request("GET", "/metrics", token=None)[1].decode()
    label = f'{{frame="{frame_id}"}}'
    assert metric(after, "framestream_pictures_total", label) > metric(text, "framestream_pictures_total", label)
    assert metric(after, "framestream_viewers", label) == 1
    assert metric(after, "framestream_connections") == 1
    assert metric(after, "framestream_sent_bytes_total") > 0
    assert metric(after, "framestream_keyframes_total", label) >= 1
    assert metric(after, "framestream_input_refused_total", '{code="forbidden"}') == 1
    assert "token" not in after.lower()  # nothing secret in an open endpoint
    await client.close()


async def test_origin_allowlist(service: Service) -> None:
    with pytest.raises(websockets.InvalidStatus) as refused:
        await websockets.connect(service.ws_url, origin=websockets.Origin("http://evil.test"))
    assert refused.value.response.status_code == 403
    ok = await websockets.connect(service.ws_url, origin=websockets.Origin("http://good.test"))
    await ok.send(json.dumps({"type": "hello", "token": service.token("view")}))
    assert '"welcome"' in await asyncio.wait_for(ok.recv(), 10)
    await ok.close()
    # Non-browser clients (no Origin header: the app, the agent) are not affected.
    client = await StreamClient.connect(service)
    await client.close()
