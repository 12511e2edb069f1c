"""Attacks on the service's edge (issue 32), each run with real sockets against the real service, which must
refuse it and go on serving: a real viewer connects, watches and gets pictures meanwhile.

Issue 32's findings answered here: a viewer that floods messages and never reads (#5), watch/unwatch floods that
fan out to every viewer (#7), sockets that never say hello (#8), connections that outlive their token and step
grants used as a connection's token (#11), the secret in the browser's and the display's environment (#13),
unauthenticated bodies that break the JSON parser (#14).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import socket
import time
import urllib.error
import urllib.request
from typing import Any

import pytest
import websockets

from framestream.browser.process import INHERITED
from framestream.client import Client
from tests.fixtures import service_fixture
from tests.support import (
    TEST_SECRET,
    Service,
    StreamClient,
    browser_pid,
    display_pid,
    forged,
    until,
)

pytestmark = pytest.mark.integration

CANARY = "canary-0123456789-not-for-children"  # a secret of the operator's own, in the service's environment
service = service_fixture("box.html@320x200", env={"FRAME_IDLE_PAUSE_S": "600", "AWS_SECRET_ACCESS_KEY": CANARY},
                          scope="module")


def post(svc: Service, path: str, body: bytes, token: str | None) -> tuple[int, dict[str, Any]]:
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(svc.base + path, data=body, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


async def still_serving(svc: Service, frame_id: str) -> None:
    """/healthz answers and a new viewer gets the frame's picture."""
    assert svc.get("/healthz", token=None) == (200, {"ok": True})
    viewer = await StreamClient.connect(svc)
    await viewer.watch(frame_id)
    await viewer.next_video(timeout=20)
    await viewer.close()


async def test_a_deeply_nested_body_without_a_token_is_refused_before_it_is_parsed(service: Service) -> None:
    """#14: 50,000 `[` answer 401 on every JSON route without a valid token (the parser never runs), and 400
    with one (never a 500 with a RecursionError)."""
    (frame_id,) = service.frame_ids()
    body = b"[" * 50_000
    bad_signature = forged(service.token("drive"))
    routes = ["/frames", f"/frames/{frame_id}/input", f"/frames/{frame_id}/navigate"]
    for path in routes:
        for token in (None, bad_signature, "not-a-token"):
            status, answer = post(service, path, body, token)
            assert (status, answer["error"]) == (401, "unauthorized"), (path, token, answer)
    for path, token in (("/frames", service.token("control")), (f"/frames/{frame_id}/input", service.token("drive")),
                        (f"/frames/{frame_id}/navigate", service.token("drive"))):
        status, answer = post(service, path, body, token)
        assert (status, answer["error"]) == (400, "bad-message"), (path, answer)
    log = service.log()
    assert "RecursionError" not in log and "Traceback" not in log, log[-3000:]
    await still_serving(service, frame_id)


def waiting_connections(svc: Service) -> float:
    text = svc.get("/metrics", token=None)[1].decode()
    match = re.search(r"^framestream_waiting_connections (\S+)$", text, re.M)
    assert match, "no framestream_waiting_connections in /metrics"
    return float(match.group(1))


async def closed_with(ws: websockets.ClientConnection, timeout: float = 20.0) -> int:
    """The close code the service ended `ws` with (nothing else may come before it)."""
    with pytest.raises(websockets.ConnectionClosed) as closed:
        await asyncio.wait_for(ws.recv(), timeout)
    assert closed.value.rcvd is not None, "closed without a close frame"
    return closed.value.rcvd.code


@pytest.mark.parametrize(("per_address", "pending"), [(8, 32), (64, 8)], ids=["per-address", "all-addresses"])
async def test_sockets_that_never_say_hello_do_not_lock_viewers_out(
        state_dir: Any, per_address: int, pending: int) -> None:
    """#8: 40 sockets that never send hello (their deadline far off), from one address: only the newest 8
    (the per-address cap, or the cap on all waiting sockets) stay open, the older ones are closed with 4429,
    and viewers with a valid token are welcomed up to FRAMESTREAM_MAX_CONNECTIONS (3), which counts only
    welcomed connections; past it a valid hello is closed with 4429, and a place left is taken again."""
    svc = Service(state_dir, env_extra={
        "FRAMESTREAM_MAX_CONNECTIONS": "3", "FRAMESTREAM_HELLO_TIMEOUT_S": "60",
        "FRAMESTREAM_MAX_PENDING_PER_ADDRESS": str(per_address), "FRAMESTREAM_MAX_PENDING_CONNECTIONS": str(pending),
    }).start()
    kept = min(per_address, pending)
    silent: list[websockets.ClientConnection] = []
    try:
        for _ in range(40):
            silent.append(await websockets.connect(svc.ws_url))
        codes = await asyncio.gather(*(closed_with(ws) for ws in silent[:-kept]))
        assert set(codes) == {4429}, codes
        viewers = [await StreamClient.connect(svc) for _ in range(3)]  # the first displaces the oldest silent one
        assert all(v.welcome["type"] == "welcome" for v in viewers)
        late = await websockets.connect(svc.ws_url)
        await late.send(json.dumps({"type": "hello", "token": svc.token("view")}))
        assert await closed_with(late) == 4429
        assert await closed_with(silent[-kept]) == 4429
        # (the welcomed ones waited no more, so the next two found room among the waiting ones)
        assert [ws.state for ws in silent[-kept + 1:]] == [websockets.State.OPEN] * (kept - 1)

        async def waiting() -> bool:  # the silent ones left open, as /metrics counts them
            return waiting_connections(svc) == kept - 1

        await until(f"{kept - 1} connections waiting for hello in /metrics", waiting, within=20)
        await viewers.pop().close()

        async def welcomed() -> StreamClient | None:  # once the service saw that viewer leave
            try:
                return await StreamClient.connect(svc)
            except (websockets.ConnectionClosed, AssertionError):
                return None

        viewers.append(await until("a viewer welcomed in the place left", welcomed, within=20))
        assert svc.get("/healthz", token=None) == (200, {"ok": True})
        for viewer in viewers:
            await viewer.send({"type": "watch", "frame": "nope"})
            assert (await viewer.next_text("error"))["code"] == "unknown-frame"  # still served
    finally:
        for ws in silent:
            await ws.close()
        svc.stop()
        svc.kill_leftovers()


async def test_a_connection_ends_when_its_token_expires_unless_refreshed(service: Service) -> None:
    """#11: a viewer under a 1 s view token watches and gets pictures, then is closed with 4401 once the token
    is past its exp plus the 5 s of skew; one that sent `refresh` with a newer token stays, as does a
    framestream.client whose token source mints 2 s tokens (it refreshes them itself); a refresh naming another
    subject is refused and changes nothing; and a one-step grant never says hello (4403)."""
    (frame_id,) = service.frame_ids()
    # The client's first token expires first, so by the time `short` is closed it would have been closed too.
    async with await Client.connect(service.base, token=lambda: service.token("view", ttl=2, subject="agent"),
                                    reconnect=False) as client:
        short = await StreamClient.connect(service, service.token("view", ttl=2, subject="ann"))
        await short.watch(frame_id)
        await short.next_video(timeout=20)
        kept = await StreamClient.connect(service, service.token("view", ttl=1, subject="ann"))
        await kept.send({"type": "refresh", "token": service.token("view", subject="bob")})
        refused = await kept.next_text("error")
        assert refused["code"] == "forbidden" and "subject" in refused["message"], refused
        await kept.send({"type": "refresh", "token": service.token("view", ttl=120, subject="ann")})
        with pytest.raises(websockets.ConnectionClosed) as closed:
            while True:  # pictures (and texts) until the service closes it
                await short.receive(timeout=30)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 4401, closed.value
        assert "token expired" in closed.value.rcvd.reason
        # Past the time `short` was closed, the refreshed connection and the client are still served.
        await kept.watch(frame_id)
        await kept.next_video(timeout=20)
        view = await client.watch(frame_id)
        await view.picture()
        assert client.connection.connects == 1 and client.connection.closed_reason is None
    step = service.token("drive", frame=frame_id, subject="agent", ttl=30, step=True)
    stepper = await websockets.connect(service.ws_url)
    await stepper.send(json.dumps({"type": "hello", "token": step}))
    with pytest.raises(websockets.ConnectionClosed) as closed:
        await asyncio.wait_for(stepper.recv(), 10)  # no welcome before the close
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 4403
    assert "step grant" in closed.value.rcvd.reason
    await still_serving(service, frame_id)


def resident_mb(svc: Service) -> float:
    text = svc.get("/metrics", token=None)[1].decode()
    match = re.search(r"^process_resident_memory_bytes (\S+)$", text, re.M)
    assert match, "no process_resident_memory_bytes in /metrics"
    return float(match.group(1)) / 1e6


async def test_a_watch_flood_is_closed_and_does_not_fan_out_to_other_viewers(service: Service) -> None:
    """#5 and #7: one connection sends 4,000 watch/unwatch of the frame and 4,000 watches of a 60,000-character
    id as fast as it can. It is answered `rate-limited` past the limits and closed with 4429 ("messages too
    fast"); the frame's other viewer gets a bounded number of `frame-state`s (not one per watch), the log gets
    no line per watch, the service's memory stays put, and it goes on serving."""
    (frame_id,) = service.frame_ids()
    observer = await StreamClient.connect(service)
    await observer.watch(frame_id)
    await observer.next_video(timeout=20)
    before_mb = resident_mb(service)
    log_before = len(service.log())
    # It reads into its own buffer as fast as the service sends (max_queue=None), so it sees the close at once.
    attacker = await websockets.connect(service.ws_url, max_size=None, max_queue=None)
    await attacker.send(json.dumps({"type": "hello", "token": service.token("view", subject="mallory")}))
    assert json.loads(await attacker.recv())["type"] == "welcome"
    long_id = json.dumps({"type": "watch", "frame": "x" * 60_000})
    flood = [json.dumps({"type": "watch" if i % 2 == 0 else "unwatch", "frame": frame_id}) for i in range(4000)]
    flood = [m for pair in zip(flood, [long_id] * 4000, strict=True) for m in pair]
    sent = 0
    try:
        for message in flood:
            await attacker.send(message)
            sent += 1
    except websockets.ConnectionClosed:
        pass  # closed while it was still sending
    await asyncio.wait_for(attacker.wait_closed(), 20)
    assert (attacker.close_code, attacker.close_reason) == (4429, "messages too fast")
    answers = []
    with pytest.raises(websockets.ConnectionClosed):  # what it was sent before the close, all bounded
        while True:
            answers.append(await asyncio.wait_for(attacker.recv(), 10))
    codes = {json.loads(a).get("code") for a in answers if isinstance(a, str) and '"error"' in a}
    assert "rate-limited" in codes, codes
    assert all(len(a) < 2000 for a in answers if isinstance(a, str)), "an error echoed the long id"
    # The observer: pictures still, and frame-states bounded by the watch rate (not one per watch and unwatch).
    seen = len(observer.texts)
    await observer.send({"type": "keyframe", "frame": frame_id})
    await observer.next_video(timeout=20)
    async def quiet_again() -> bool:  # the attacker's last unwatch reached the observer: 1 viewer again
        msg = await observer.next_text("frame-state", timeout=20)
        return bool(msg["viewers"] == 1)
    states = [m for m in observer.texts[seen:] if m.get("type") == "frame-state"]
    if not states or states[-1]["viewers"] != 1:
        await until("the observer sees 1 viewer again", quiet_again, within=20)
    states = [m for m in observer.texts if m.get("type") == "frame-state"]
    print(f"flood: {sent} messages sent before the close, {len(answers)} answers, {len(states)} frame-states "
          "to the other viewer")
    assert len(states) <= 150, len(states)
    log = service.log()[log_before:]
    assert log.count("watching") <= 2 and "stopped watching" not in log, log[-2000:]
    assert "messages too fast" in log
    assert resident_mb(service) - before_mb < 60
    await still_serving(service, frame_id)


async def not_reading(svc: Service) -> websockets.ClientConnection:
    """A welcomed viewer with a 64 KiB receive buffer that reads nothing more (its client buffers one message).

    The buffer is set, so the kernel does not grow it to megabytes of replies. Not smaller: with 4 KiB, Linux
    6.18 now and then dropped the service's segments past the tiny window, their ACKs with them, and each end
    then waited on the other's zero window for good (1 connection in about 30 under load; the service's
    heartbeat dropped it after 45 s, but never by the text bound this test is about)."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    sock.connect(("127.0.0.1", svc.port))
    sock.setblocking(False)
    ws = await websockets.connect(svc.ws_url, sock=sock, max_size=None, max_queue=1, close_timeout=1)
    await ws.send(json.dumps({"type": "hello", "token": svc.token("view", subject="mallory")}))
    assert json.loads(await ws.recv())["type"] == "welcome"
    return ws


def connections(svc: Service) -> float:
    text = svc.get("/metrics", token=None)[1].decode()
    match = re.search(r"^framestream_connections (\S+)$", text, re.M)
    assert match, "no framestream_connections in /metrics"
    return float(match.group(1))


async def test_a_viewer_that_does_not_read_is_closed_past_the_text_bound(state_dir: Any, pages: str) -> None:
    """#5: with the message rate out of the way (FRAMESTREAM_MESSAGE_RATE=100000), a viewer with a tiny receive
    buffer that sends watch messages for a 60,000-character id and reads nothing fills its text queue: past
    FRAMESTREAM_MAX_QUEUED_TEXT_BYTES (64 KiB here) it is dropped and closed with 4429 (seen once it reads
    again); one that never reads again loses its connection all the same; the service's memory does not follow
    the floods."""
    svc = Service(state_dir, env_extra={"FRAMESTREAM_MESSAGE_RATE": "100000",
                                        "FRAMESTREAM_MAX_QUEUED_TEXT_BYTES": "65536"},
                  frames=[f"{pages}/box.html@320x200"]).start()
    try:
        (frame_id,) = svc.frame_ids()
        await svc.wait_state_async(frame_id, "live")
        before_mb = resident_mb(svc)
        message = json.dumps({"type": "watch", "frame": "x" * 60_000})
        sent = 0

        async def flood(attacker: websockets.ClientConnection, closes: int) -> None:
            """Send until the log says the service gave up on `closes` clients that do not read. The log is watched
            beside the sends: once it gives up, the service reads no more, so a send blocks, and a flood that
            looked at the log only between its sends waited there until the service dropped the connection (5 s),
            and its close frame was never read."""
            nonlocal sent

            async def send() -> None:
                nonlocal sent
                with contextlib.suppress(websockets.ConnectionClosed):  # dropped already
                    while True:
                        await attacker.send(message)
                        sent += 1

            async def gave_up() -> bool:
                return svc.log().count("does not read") >= closes or sending.done()

            sending = asyncio.create_task(send())
            try:
                await until(f"the service gave up on {closes} clients that do not read", gave_up, within=60)
            finally:
                sending.cancel()
                await asyncio.gather(sending, return_exceptions=True)

        attacker = await not_reading(svc)
        await flood(attacker, 1)
        with pytest.raises(websockets.ConnectionClosed) as closed:
            while True:  # reading again: what was in the pipe, then the close
                await asyncio.wait_for(attacker.recv(), 10)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 4429, closed.value
        assert "not reading" in closed.value.rcvd.reason
        print(f"not reading: closed after {sent} messages sent")
        # One that never reads again is dropped all the same (it never takes the close frame: 5 s later).
        silent = await not_reading(svc)
        try:
            await flood(silent, 2)

            async def dropped() -> bool:
                return connections(svc) == 0

            await until("the client that never reads dropped", dropped, within=30)
        finally:
            await silent.close()
        assert resident_mb(svc) - before_mb < 60
        await still_serving(svc, frame_id)
    finally:
        svc.stop()
        svc.kill_leftovers()


def environment(pid: int) -> dict[str, str]:
    with open(f"/proc/{pid}/environ", "rb") as fh:
        raw = fh.read()
    return dict(item.decode(errors="replace").split("=", 1) for item in raw.split(b"\0") if b"=" in item)


async def test_the_browser_and_its_display_get_an_allow_listed_environment(service: Service) -> None:
    """#13: the real Chromium (its browser process, which runs the network service) and the real Xvfb of a
    frame hold neither TERMINAL_AUTH_SECRET nor any other variable of the service's own environment (an
    operator's secret, SANDBOX_ID, the state dir): only allow-listed ones, and DISPLAY."""
    (frame_id,) = service.frame_ids()
    assert service.proc is not None
    started_with = {**os.environ, **service.env_extra, "TERMINAL_AUTH_SECRET": TEST_SECRET}
    # (Renderers are forked from the zygote, which writes their command line over the environment's memory, so
    # /proc says nothing about theirs: they inherit the browser's.)
    pids = {"browser": browser_pid(service, frame_id), "display": display_pid(service, frame_id)}
    for name, pid in pids.items():
        env = environment(pid)
        assert "TERMINAL_AUTH_SECRET" not in env, name
        values = "\0".join(env.values())
        assert TEST_SECRET not in values and CANARY not in values, name
        assert not {"AWS_SECRET_ACCESS_KEY", "SANDBOX_ID", "FRAMESTREAM_STATE_DIR", "FRAME_IDLE_PAUSE_S"} & set(env)
        # Nothing else of what the service was started with (Debian's chromium wrapper, a shell script, adds its
        # own CHROME_... and the shell's PWD, SHLVL and _).
        leaked = {k for k in env if k in started_with and k not in INHERITED and not k.startswith("LC_")}
        assert not leaked - {"DISPLAY", "XAUTHORITY", "PWD", "SHLVL", "_"}, (name, leaked)
        assert env.get("PATH"), name
        if "XAUTHORITY" in env:  # the browser's own display's cookie (browser/xauth.py), never another one's
            assert os.path.basename(env["XAUTHORITY"]).startswith("display-"), (name, env["XAUTHORITY"])
            assert env["XAUTHORITY"] != started_with.get("XAUTHORITY"), name
    assert environment(pids["browser"])["DISPLAY"].startswith(":")
    await still_serving(service, frame_id)


async def test_watch_churn_from_many_connections_reaches_a_viewer_at_most_20_times_a_second(
        service: Service) -> None:
    """#7: eight connections each send their whole burst of watch/unwatch (40 each, within the limits: none is
    refused), 320 changes of the frame's viewer count within a moment; the frame's other viewer, reading as
    fast as it can, gets at most one `frame-state` of the frame every 50 ms, and the last one is current."""
    (frame_id,) = service.frame_ids()
    observer = await StreamClient.connect(service)
    await observer.watch(frame_id)
    await observer.next_video(timeout=20)
    # (They read all they get into their buffers, so that closing them at the end is quick.)
    anchor = await StreamClient.connect(service, service.token("view", subject="anchor"), max_queue=None)
    await anchor.watch(frame_id)  # while it watches, the frame has 2 viewers at least
    churners = [await StreamClient.connect(service, service.token("view", subject=f"c{i}"), max_queue=None)
                for i in range(8)]
    seen = len(observer.texts)
    started = time.monotonic()
    burst = [json.dumps({"type": "watch" if i % 2 == 0 else "unwatch", "frame": frame_id}) for i in range(40)]

    async def churn(c: StreamClient) -> None:
        for message in burst:
            await c.ws.send(message)
        while len([m for m in c.texts if m.get("type") in ("video-config", "error")]) < 20:
            await c.next_text(timeout=20)  # each watch answered: every message of the burst was taken

    await asyncio.gather(*(churn(c) for c in churners))
    assert all(m.get("type") != "error" for c in churners for m in c.texts), "a churner was refused"
    await anchor.send({"type": "unwatch", "frame": frame_id})  # a state no churn could show: 1 viewer
    while (await observer.next_text("frame-state", timeout=20))["viewers"] != 1:
        pass
    elapsed = time.monotonic() - started
    states = [m for m in observer.texts[seen:] if m.get("type") == "frame-state" and m["frame"] == frame_id]
    print(f"churn: 320 watch/unwatch in {elapsed:.2f} s, {len(states)} frame-states to the other viewer")
    assert len(states) <= elapsed / 0.05 + 3, (len(states), elapsed)
    await still_serving(service, frame_id)
