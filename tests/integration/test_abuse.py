"""Attacks on the service's edge (issue 32), each run with real sockets against the real service, which must
refuse it and go on serving: a real viewer connects, watches and gets pictures meanwhile.

Issue 32's findings answered here: sockets that never say hello (#8), connections that outlive their token and
step grants used as a connection's token (#11), unauthenticated bodies that break the JSON parser (#14).
"""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from typing import Any

import pytest
import websockets

from framestream.client import Client
from tests.fixtures import service_fixture
from tests.support import Service, StreamClient, until

pytestmark = pytest.mark.integration

service = service_fixture("box.html@320x200", env={"FRAME_IDLE_PAUSE_S": "600"}, scope="module")


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
    forged = service.token("drive")[:-4] + "AAAA"
    routes = ["/frames", f"/frames/{frame_id}/input", f"/frames/{frame_id}/navigate"]
    for path in routes:
        for token in (None, forged, "not-a-token"):
            status, answer = post(service, path, body, token)
            assert (status, answer["error"]) == (401, "unauthorized"), (path, token, answer)
    for path, token in (("/frames", service.token("control")), (f"/frames/{frame_id}/input", service.token("drive")),
                        (f"/frames/{frame_id}/navigate", service.token("drive"))):
        status, answer = post(service, path, body, token)
        assert (status, answer["error"]) == (400, "bad-message"), (path, answer)
    log = service.log()
    assert "RecursionError" not in log and "Traceback" not in log, log[-3000:]
    await still_serving(service, frame_id)


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
        viewers = [await StreamClient.connect(svc) for _ in range(3)]  # each displaces the oldest silent one
        assert all(v.welcome["type"] == "welcome" for v in viewers)
        late = await websockets.connect(svc.ws_url)
        await late.send(json.dumps({"type": "hello", "token": svc.token("view")}))
        assert await closed_with(late) == 4429
        assert [ws.state for ws in silent[-kept + 3:]] == [websockets.State.OPEN] * (kept - 3)
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
