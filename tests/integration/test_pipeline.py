"""The live frame pipeline end to end: real Xvfb, Chromium, libx264 and WebSockets, checked by pixels."""

from __future__ import annotations

import asyncio
import collections
import itertools
import json
import signal
import socket
import time
from pathlib import Path

import pytest
import websockets

from framestream.browser.proctable import read_process
from tests.fixtures import service_fixture
from tests.support import (
    Service,
    StreamClient,
    VideoMessage,
    colour_near,
    descendants,
    processes_using,
    wait_until_gone,
)

pytestmark = pytest.mark.integration


service = service_fixture("box.html@640x400")


async def test_keyframe_decodes_to_the_known_box(service: Service) -> None:
    (frame_id,) = service.frame_ids()
    client = await StreamClient.connect(service)
    config = await client.watch(frame_id)
    assert config["codec"].startswith("avc1.42")
    assert (config["width"], config["height"]) == (1280, 800)  # 640x400 CSS at dpr 2
    assert (config["css_width"], config["css_height"]) == (640, 400)
    first = await client.next_video(timeout=30)
    assert first.keyframe, "a new watcher must start at a keyframe"
    assert first.slot == config["slot"]
    picture = client.decode(first)
    assert picture is not None and picture.shape == (800, 1280, 3)
    if not colour_near(picture[200, 400], (200, 40, 40)):  # the page's paint may follow its first keyframe
        picture = await client.wait_for_colour(frame_id, (200, 400), (200, 40, 40), timeout=10)
    # The box is at CSS (100,50) size 200x100: at dpr 2, pixels (200..600, 100..300).
    assert colour_near(picture[200, 400], (200, 40, 40)), picture[200, 400]
    assert colour_near(picture[110, 210], (200, 40, 40)), picture[110, 210]
    assert colour_near(picture[90, 400], (255, 255, 255)), picture[90, 400]  # above the box
    assert colour_near(picture[200, 620], (255, 255, 255)), picture[200, 620]  # right of it
    await client.close()


async def test_still_page_goes_quiet_after_refinement(service: Service) -> None:
    (frame_id,) = service.frame_ids()
    await service.wait_state_async(frame_id, "live")
    client = await StreamClient.connect(service)
    await client.watch(frame_id)
    refined = await client.latest_picture(timeout=30, refined=True)
    assert colour_near(refined[200, 400], (200, 40, 40))
    await client.collect(0.5)  # the rest of the refinement (a few pictures)
    quiet = await client.collect(2.5)
    got = [(v.sequence, v.flags) for v in client.videos]
    assert quiet == [], f"a still page must send nothing after its refinement; got (sequence, flags) {got}"
    await client.close()


async def live_frame(service: Service, page: str, width: int, height: int, dpr: int) -> str:
    frame_id = service.create_frame(f"{service.pages}/{page}", width=width, height=height, dpr=dpr)
    await service.wait_state_async(frame_id, "live")
    return frame_id


async def pictures_of(client: StreamClient, frame_id: str, count: int, timeout: float = 60.0) -> list[VideoMessage]:
    """The first `count` pictures a new watcher of `frame_id` receives after its first one (how fast they come is
    the benchmark's business: `make bench` reports fps side by side with the peers)."""
    await client.watch(frame_id)
    await client.next_video(timeout=30)
    start = len(client.videos)
    deadline = time.monotonic() + timeout
    while len(client.videos) - start < count and (left := deadline - time.monotonic()) > 0:
        await client.receive(left)
    videos = client.videos[start:start + count]
    assert len(videos) == count, f"only {len(videos)} of {count} pictures within {timeout:g} s"
    return videos


async def test_animated_page_streams_every_picture_in_order(service: Service) -> None:
    frame_id = await live_frame(service, "animated.html", 640, 400, 1)
    client = await StreamClient.connect(service)
    videos = await pictures_of(client, frame_id, 40)
    sequences = [v.sequence for v in videos]
    assert sequences == sorted(sequences)
    assert len({bytes(v.payload) for v in videos}) > 30, "the animation moves picture after picture"
    await client.close()


async def test_a_stalled_viewer_does_not_hold_up_another(service: Service) -> None:
    frame_id = await live_frame(service, "animated.html", 640, 400, 1)
    # The stalled viewer: the client library stops reading once 1 message is queued, so TCP fills.
    stalled = await StreamClient.connect(service, max_queue=1)
    await stalled.send({"type": "watch", "frame": frame_id})
    healthy = await StreamClient.connect(service)
    videos = await pictures_of(healthy, frame_id, 60)
    # Every picture it got decodes: it never skipped, while the other one is hopelessly behind.
    gaps = [b.sequence - a.sequence for a, b in itertools.pairwise(videos)]
    assert set(gaps) == {1}, collections.Counter(gaps)
    await healthy.close()
    await stalled.close()


async def test_bad_input_gets_clear_errors_and_streaming_goes_on(service: Service) -> None:
    (frame_id,) = service.frame_ids()
    client = await StreamClient.connect(service)
    await client.watch(frame_id)
    await client.next_video(timeout=30)
    cases = [
        ("{not json", "bad-message"),
        (json.dumps({"type": "dance"}), "bad-message"),
        (json.dumps([1, 2]), "bad-message"),
        (json.dumps({"type": "watch"}), "bad-message"),
        (json.dumps({"type": "watch", "frame": "nope"}), "unknown-frame"),
        (json.dumps({"type": "keyframe", "frame": "nope"}), "unknown-frame"),
        (json.dumps({"type": "watch", "frame": "x" * 70000}), "bad-message"),  # over 64 KiB
    ]
    for raw, code in cases:
        await client.ws.send(raw)
        error = await client.next_text("error")
        assert error["code"] == code, (raw[:40], error)
        assert error["message"]
    # Input with a view token is refused, naming the reason.
    await client.send({"type": "input", "frame": frame_id, "grant": service.token("view"), "seq": 7,
                       "event": {"kind": "mouse", "action": "move", "x": 5, "y": 5}})
    error = await client.next_text("error")
    assert (error["code"], error["seq"]) == ("forbidden", 7)
    # Still streaming: a keyframe request is answered with a keyframe that decodes to the box.
    await client.send({"type": "keyframe", "frame": frame_id})
    picture = await client.latest_picture(timeout=10)
    assert colour_near(picture[200, 400], (200, 40, 40))
    await client.close()


async def test_hello_rules_close_with_contract_codes(service: Service) -> None:
    async with websockets.connect(service.ws_url) as ws:
        await ws.send(json.dumps({"type": "watch", "frame": "x"}))
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await asyncio.wait_for(ws.recv(), 5)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 4401
    async with websockets.connect(service.ws_url) as ws:
        await ws.send(json.dumps({"type": "hello", "token": "forged.token"}))
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await asyncio.wait_for(ws.recv(), 5)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 4401
    async with websockets.connect(service.ws_url) as ws:
        started = time.monotonic()
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await asyncio.wait_for(ws.recv(), 60)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 4408
        assert time.monotonic() - started >= 4.0  # after the hello timeout (5 s), not at once


def test_http_bad_input(service: Service) -> None:
    status, body = service.request("POST", "/frames", {"url": "file:///etc/passwd"})
    assert status == 400 and body["error"] == "bad-message" and "http" in body["message"]
    for size in ({"width": 0, "height": 0}, {"width": 99999, "height": 5}, {"width": "wide", "height": 400}):
        status, body = service.request("POST", "/frames", {"url": "http://127.0.0.1/", **size})
        assert status == 400, (size, body)
        assert body["error"] == "bad-message"
    status, body = service.request("POST", "/frames", raw=b"{oops")
    assert (status, body["error"]) == (400, "bad-message")
    status, body = service.request("POST", "/frames", raw=b"x" * 200_000)
    assert status == 413
    status, body = service.request("POST", "/frames", {"url": "http://127.0.0.1/"}, token="view")
    assert (status, body["error"]) == (403, "forbidden")
    status, body = service.request("POST", "/frames", {"url": "http://127.0.0.1/"}, token=None)
    assert (status, body["error"]) == (401, "unauthorized")
    status, body = service.get("/frames/nope")
    assert (status, body["error"]) == (404, "unknown-frame")
    assert service.get("/healthz", token=None) == (200, {"ok": True})
    status, body = service.get("/config", token=None)
    assert status == 200 and body["protocol"] == 1 and body["shared_frames"] is True


async def test_unloadable_url_is_reported_and_others_keep_streaming(service: Service) -> None:
    unloadable = service.create_frame("http://127.0.0.1:9/nothing-here", width=320, height=200, dpr=1)
    failed = await service.wait_state_async(unloadable, "error")
    assert "ERR_" in failed["message"], failed
    (box_id,) = [f for f in service.frame_ids() if f != unloadable]
    client = await StreamClient.connect(service)
    await client.watch(box_id)
    picture = await client.latest_picture(timeout=30)
    assert colour_near(picture[200, 400], (200, 40, 40))
    await client.close()


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGINT])
def test_stopping_leaves_no_browser_or_display(state_dir: Path, pages: str, how: int) -> None:
    svc = Service(state_dir, frames=[f"{pages}/box.html@320x200"]).start()
    try:
        (frame_id,) = svc.frame_ids()
        svc.wait_state(frame_id, "live")
        assert svc.proc is not None
        children = descendants(svc.proc.pid)
        assert len(children) >= 3, "expected Xvfb and Chromium processes under the service"
        code = svc.stop(how)  # (past 20 s it is killed, and the code says so)
        assert code == 0, svc.log()[-2000:]
        assert processes_using(str(state_dir)) == []
        assert [pid for pid in children if (info := read_process(pid)) is not None and not info.zombie] == []
    finally:
        svc.kill_leftovers()


def _read_http_head(sock: socket.socket) -> tuple[bytes, bytes]:
    """One HTTP response's head from `sock`, and what came after it."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        assert chunk, f"the connection ended: {data!r}"
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


async def test_a_kept_alive_connection_cannot_join_a_service_that_shuts_down(state_dir: Path, pages: str) -> None:
    """A client reusing an HTTP connection kept alive from before the shutdown (as Node's fetch and WebSocket do,
    sharing one pool) gets 1001 on its upgrade, never a welcome: the port no longer listens, yet that connection
    could otherwise join a service about to exit and reconnect only once the process is gone."""
    svc = Service(state_dir, frames=[f"{pages}/box.html@320x200"]).start()
    kept = socket.create_connection(("127.0.0.1", svc.port), timeout=30)
    try:
        (frame_id,) = svc.frame_ids()
        await svc.wait_state_async(frame_id, "live")
        kept.sendall(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{svc.port}\r\n\r\n".encode())
        head, _ = _read_http_head(kept)
        assert head.startswith(b"HTTP/1.1 200"), head
        async with websockets.connect(svc.ws_url) as watcher:
            await watcher.send(json.dumps({"type": "hello", "token": svc.token("view")}))
            assert json.loads(await watcher.recv())["type"] == "welcome"
            await watcher.send(json.dumps({"type": "watch", "frame": frame_id}))  # its browser closes slowly
            assert svc.proc is not None
            svc.proc.send_signal(signal.SIGTERM)
            with pytest.raises(websockets.ConnectionClosed) as closed:
                while True:
                    await watcher.recv()
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1001  # the shutdown began
        key = "dGhlIHNhbXBsZSBub25jZQ=="
        kept.sendall((f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{svc.port}\r\nUpgrade: websocket\r\n"
                      f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
                      ).encode())
        head, rest = _read_http_head(kept)
        assert head.startswith(b"HTTP/1.1 101"), head
        hello = json.dumps({"type": "hello", "token": svc.token("view")}).encode()
        mask = b"\x01\x02\x03\x04"
        kept.sendall(bytes([0x81, 0x80 | 126]) + len(hello).to_bytes(2, "big") + mask
                     + bytes(b ^ mask[i % 4] for i, b in enumerate(hello)))
        while len(rest) < 4:
            chunk = kept.recv(4096)
            assert chunk, rest
            rest += chunk
        # The first frame is a close (opcode 8) with 1001: no welcome.
        assert rest[0] == 0x88 and int.from_bytes(rest[2:4], "big") == 1001, rest[:64]
        kept.sendall(bytes([0x88, 0x82]) + mask + bytes(b ^ mask[i] for i, b in enumerate((1001).to_bytes(2, "big"))))
        assert svc.proc.wait(30) == 0, svc.log()[-2000:]  # (the shutdown goes on as it would)
    finally:
        kept.close()
        svc.stop()
        svc.kill_leftovers()


async def test_sigkill_leaves_nothing_and_next_start_cleans_up(state_dir: Path, pages: str) -> None:
    svc = Service(state_dir, frames=[f"{pages}/box.html@320x200"]).start()
    try:
        (frame_id,) = svc.frame_ids()
        await svc.wait_state_async(frame_id, "live")
        assert processes_using(str(state_dir))
        killed = svc.proc.pid if svc.proc is not None else 0
        svc.stop(signal.SIGKILL)
        assert wait_until_gone(str(state_dir), 5.0) == [], "the kernel's parent-death signal ends every child"
        # Chromium killed hard leaves its profile lock; the next launch must clear it or Chromium refuses. (Now and
        # then Chromium reads its DevTools pipe's end before the kernel's KILL lands, and starts a clean exit that
        # removes it: then the lock is left here as a killed one leaves it, so the cleanup is always what is tested.)
        lock = state_dir / "profiles" / frame_id / "SingletonLock"
        if not lock.is_symlink():
            lock.symlink_to(f"{socket.gethostname()}-{killed}")
        svc.proc, svc.frames = None, []
        svc.start()
        listed = svc.get("/frames")[1]["frames"]
        assert [(f["id"], f["state"]) for f in listed] == [(frame_id, "closed")]
        client = await StreamClient.connect(svc)
        await client.watch(frame_id)
        picture = await client.latest_picture(timeout=30, refined=True)
        assert colour_near(picture[200, 400], (200, 40, 40)), picture[200, 400]
        await client.close()
    finally:
        svc.stop()
        svc.kill_leftovers()


@pytest.mark.parametrize("dpr", [1, 2])
async def test_the_whole_page_at_its_css_size_is_in_the_picture(service: Service, dpr: int) -> None:
    frame_id = await live_frame(service, "corners.html", 320, 200, dpr)
    client = await StreamClient.connect(service)
    config = await client.watch(frame_id)
    w, h = config["width"], config["height"]
    assert (w, h) == (320 * dpr, 200 * dpr)
    picture = await client.wait_for_colour(frame_id, (h - 4, w - 4), (240, 200, 0), timeout=20)
    assert colour_near(picture[3, 3], (200, 40, 40)), picture[3, 3]
    assert colour_near(picture[3, w - 4], (30, 180, 60)), picture[3, w - 4]
    assert colour_near(picture[h - 4, 3], (30, 60, 220)), picture[h - 4, 3]
    # The last row and column belong to the page too (no black border from a window short of the screen).
    assert colour_near(picture[h - 1, w // 2], (255, 255, 255)), picture[h - 1, w // 2]
    assert colour_near(picture[h // 2, w - 1], (255, 255, 255)), picture[h // 2, w - 1]
    await client.close()
