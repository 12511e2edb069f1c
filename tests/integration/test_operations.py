"""What an operator relies on: metrics that move with the stream, and the Origin allowlist."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import urllib.request
from pathlib import Path

import pytest
import websockets

from framestream.client import Client, Forbidden
from tests.fixtures import service_fixture
from tests.support import Service, forged, processes_using

pytestmark = pytest.mark.integration


service = service_fixture("animated.html@320x200", env={"FRAMESTREAM_ALLOWED_ORIGINS": "http://good.test"})


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
    async with await Client.connect(service.base, token=service.token("view"), reconnect=False) as client:
        view = await client.watch(frame_id)
        await view.picture()
        with pytest.raises(Forbidden):  # input under a view token
            await client.move(frame_id, 1, 1, grant=service.token("view"))
        after = service.request("GET", "/metrics", token=None)[1].decode()
        label = f'{{frame="{frame_id}"}}'
        # A joiner of a still page gets its last keyframe and the pictures since (no new encode), so what follows
        # the stream is what was sent to it.
        assert metric(after, "framestream_pictures_total", label) >= 1
        assert metric(after, "framestream_sent_bytes_total") > metric(text, "framestream_sent_bytes_total")
        assert metric(after, "framestream_viewers", label) == 1
        assert metric(after, "framestream_connections") == 1
        assert metric(after, "framestream_sent_bytes_total") > 0
        assert metric(after, "framestream_keyframes_total", label) >= 1
        assert metric(after, "framestream_input_refused_total", '{code="forbidden"}') == 1
        assert "token" not in after.lower()  # nothing secret in an open endpoint


async def test_origin_allowlist(service: Service) -> None:
    with pytest.raises(websockets.InvalidStatus) as refused:
        await websockets.connect(service.ws_url, origin=websockets.Origin("http://evil.test"))
    assert refused.value.response.status_code == 403
    ok = await websockets.connect(service.ws_url, origin=websockets.Origin("http://good.test"))
    await ok.send(json.dumps({"type": "hello", "token": service.token("view")}))
    assert '"welcome"' in await asyncio.wait_for(ok.recv(), 10)
    await ok.close()
    # Non-browser clients (no Origin header: the app, the agent) are not affected.
    client = await Client.connect(service.base, token=service.token("view"), reconnect=False)
    await client.close()


async def test_json_logs_carry_frame_and_connection_ids(state_dir: Path, pages: str) -> None:
    """FRAMESTREAM_LOG_FORMAT=json: every line of the service's output is one JSON object, and what happens to
    a frame or a viewer is findable by its id without parsing messages."""
    svc = Service(state_dir, env_extra={"FRAMESTREAM_LOG_FORMAT": "json"}).start()
    try:
        frame_id = svc.create_frame(f"{pages}/box.html", width=320, height=200, dpr=1)
        await svc.wait_state_async(frame_id, "live")
        client = await Client.connect(svc.base, token=svc.token("view"), reconnect=False)
        await client.watch(frame_id)
        await client.close()
        bad_signature = forged(svc.token("view"))
        refused = await websockets.connect(svc.ws_url)
        await refused.send(json.dumps({"type": "hello", "token": bad_signature}))
        with pytest.raises(websockets.ConnectionClosed):
            await asyncio.wait_for(refused.recv(), 10)
        assert svc.request("DELETE", f"/frames/{frame_id}")[0] == 200
    finally:
        svc.stop()
        svc.kill_leftovers()
    records = [json.loads(line) for line in svc.log().splitlines() if line.strip()]  # each line parses
    assert all({"time", "level", "logger", "message"} <= set(r) for r in records), records[:3]
    about_frame = [r["message"] for r in records if r.get("frame") == frame_id]
    assert about_frame[0].startswith("created at 320x200"), about_frame
    assert "live" in about_frame and "deleted" in about_frame, about_frame
    assert "watching" not in about_frame  # at debug: a watch flood must not flood the log (issue 32, #7)
    joined = next(r for r in records if r["message"].startswith("viewer joined"))
    left = next(r for r in records if r["message"].startswith("viewer left"))
    assert left["conn"] == joined["conn"] and "viewer joined as user (view)" == joined["message"]
    hello_refused = next(r for r in records if r["message"].startswith("hello refused"))
    assert hello_refused["code"] == 4401 and hello_refused["conn"] != joined["conn"]
    assert bad_signature not in svc.log() and bad_signature.split(".")[1] not in svc.log()
    assert any(r["message"].startswith("open http://127.0.0.1:") for r in records), "the what-to-open line"


def listening_inodes() -> set[str]:
    """The socket inodes of every TCP socket listening on this machine (/proc/net/tcp and tcp6)."""
    found = set()
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A":  # 0A: LISTEN
                found.add(fields[9])
    return found


def test_the_frames_browser_listens_on_no_port_and_the_service_passes_no_devtools_on(service: Service) -> None:
    """Issue 32, #1 and #2: DevTools only over the browser's own pipes. A port on 127.0.0.1 let a driver open
    DevTools' inspector inside the frame (navigate to /json/list, then /devtools/inspector.html?ws=...) and any
    local user drive every browser."""
    (frame_id,) = service.frame_ids()
    assert not (service.state_dir / "profiles" / frame_id / "DevToolsActivePort").exists()
    listening = listening_inodes()
    pids = processes_using(str(service.state_dir / "profiles" / frame_id))
    assert pids, "the frame's browser runs"
    for pid in pids:
        with contextlib.suppress(FileNotFoundError, PermissionError):
            for fd in os.listdir(f"/proc/{pid}/fd"):
                with contextlib.suppress(FileNotFoundError):
                    target = os.readlink(f"/proc/{pid}/fd/{fd}")
                    assert target.removeprefix("socket:[").removesuffix("]") not in listening, \
                        f"process {pid} of the frame's browser listens on a TCP port"
    for path in ("/json/version", "/json", "/json/list", "/devtools/browser", "/devtools/page/x",
                 "/web/../profiles", f"/frames/{frame_id}/devtools"):
        status, _ = service.get(path)
        assert status in (404, 403), f"{path} answered {status}"


def test_the_viewer_page_has_a_content_security_policy(service: Service) -> None:
    """Its own scripts only, its own connections, embedded only by itself (or FRAMESTREAM_ALLOWED_ORIGINS)."""
    with urllib.request.urlopen(f"{service.base}/", timeout=10) as resp:
        policy = resp.headers["Content-Security-Policy"]
    directives = dict(part.strip().split(" ", 1) for part in policy.split(";"))
    assert directives["script-src"] == "'self'", policy
    assert directives["frame-ancestors"] == "'self' http://good.test", policy  # this service's allowed origin
    assert directives["object-src"] == "'none'" and directives["connect-src"] == "'self' blob:", policy
