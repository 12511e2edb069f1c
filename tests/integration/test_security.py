"""Tokens against the real service: every bad grant is refused with the contract's code and nothing reaches the page.

Each refused input is a click on the input page's button (tests/pages/input.html), which would turn it from red
to green and count a click; the page paints its state (see tests/integration/test_input.py), so "nothing applied"
is read from the screenshot's exact pixels and from the decoded video. The service refuses to start without a
secret of at least 32 bytes.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import re
import secrets
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
import websockets

from framestream.core.tokens import derive_key, verify
from framestream.service.config import INSECURE_DEV_SECRET
from framestream.tokens import mint_token
from tests.fixtures import service_fixture
from tests.integration.test_input import (
    BLANK,
    BTN,
    GREEN,
    RED,
    SENT_TOKENS,
    Conn,
    H,
    W,
    ack,
    at,
    click,
    close_conns,
    move,
    page_state,
    refused,
    screenshot,
)
from tests.support import TEST_SECRET, FramePool, Service, free_port

pytestmark = pytest.mark.integration
__all__ = ["close_conns"]  # the autouse fixture that closes this module's connections too

SANDBOX = "test"  # tests.support.Service runs with SANDBOX_ID=test
OTHER_SECRET = "another-secret-0123456789-abcdefghijklmnopqrstuvwxyz"


service = service_fixture(env={"FRAME_IDLE_PAUSE_S": "600"}, scope="module", timeout=30)


@pytest.fixture(scope="module")
def frame(service: Service, pages: str) -> Iterator[str]:
    pool = FramePool(service, f"{pages}/input.html", W, H)
    frame_id = pool.take()
    pool.delete(pool.spare)
    yield frame_id
    pool.delete(frame_id)


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def claims_of(token: str) -> dict[str, Any]:
    payload = token.split(".", maxsplit=1)[0]
    return dict(json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))))


def with_claims(token: str, **changes: Any) -> str:
    """The token's claims changed, its signature kept: a forgery."""
    claims = {**claims_of(token), **changes}
    return b64(json.dumps(claims, separators=(",", ":")).encode()) + "." + token.split(".")[1]


def signed(**claims: Any) -> str:
    """A drive grant for `mallory`, signed by the contract's recipe with this sandbox's key, claims as given."""
    now = time.time()
    body = {"v": 1, "sbx": SANDBOX, "frm": "*", "role": "drive", "sub": "mallory", "iat": now, "exp": now + 60,
            "jti": secrets.token_urlsafe(12), **claims}
    payload = b64(json.dumps(body, separators=(",", ":")).encode())
    key = derive_key(TEST_SECRET.encode(), SANDBOX)
    return payload + "." + b64(hmac.new(key, payload.encode(), hashlib.sha256).digest())


def bad_grants(frame: str) -> list[tuple[str, str, str, str]]:
    """(case, grant, code, a word of the message) for every refused grant."""
    good = mint_token(TEST_SECRET, role="drive", sandbox_id=SANDBOX, frame=frame, subject="mallory")
    payload, signature = good.split(".")
    other_sig = signature[:10] + ("A" if signature[10] != "A" else "B") + signature[11:]
    view = mint_token(TEST_SECRET, role="view", sandbox_id=SANDBOX, frame=frame, subject="mallory")
    now = time.time()
    return [
        ("forged signature", f"{payload}.{other_sig}", "unauthorized", "signature"),
        ("view token made drive", with_claims(view, role="drive"), "unauthorized", "signature"),
        ("signed with another secret",
         mint_token(OTHER_SECRET, role="drive", sandbox_id=SANDBOX, frame=frame, subject="mallory"),
         "unauthorized", "signature"),
        ("another sandbox's key",
         mint_token(TEST_SECRET, role="drive", sandbox_id="other", frame=frame, subject="mallory"),
         "unauthorized", "signature"),
        ("another sandbox, this key", signed(sbx="other", frm=frame), "unauthorized", "sandbox"),
        ("another frame", mint_token(TEST_SECRET, role="drive", sandbox_id=SANDBOX, frame="f0ther", subject="m"),
         "forbidden", "frame"),
        ("expired", signed(frm=frame, iat=now - 130, exp=now - 10), "expired", "expired"),
        ("issued in the future", signed(frm=frame, iat=now + 60, exp=now + 120), "unauthorized", "future"),
        ("lifetime over the cap", signed(frm=frame, iat=now, exp=now + 600), "unauthorized", "lifetime"),
        ("step grant over 30 s", signed(frm=frame, iat=now, exp=now + 100, step=True), "unauthorized", "lifetime"),
        ("view step grant", signed(frm=frame, role="view", step=True), "unauthorized", "step"),
        ("view token", view, "forbidden", "drive"),
        ("control token", mint_token(TEST_SECRET, role="control", sandbox_id=SANDBOX, frame=frame), "forbidden",
         "drive"),
        ("not a token", "not-a-token", "unauthorized", "malformed"),
    ]


async def assert_nothing_applied(service: Service, frame: str, watcher: Conn) -> None:
    await watcher.drain(0.5)
    state = await page_state(service, frame, lambda s: True)
    assert (state["clicks"], state["mousedowns"], state["mouseups"], state["keydowns"]) == (0, 0, 0, 0), state
    assert tuple(at(state.picture, BTN)) == RED
    assert watcher.picture is not None and tuple(at(watcher.picture, BTN)) != GREEN
    await watcher.sees_colour(BTN, RED, timeout=1)


async def test_bad_grants_are_refused_and_nothing_is_applied(service: Service, frame: str) -> None:
    watcher = await Conn.open(service, service.token("view", frame=frame, subject="watcher"))
    await watcher.watch(frame)
    await watcher.sees_colour(BTN, RED, timeout=30)
    grants = bad_grants(frame)

    # Over the WebSocket: each input message is refused with its seq and the contract's code.
    for case, grant, code, word in grants:
        seq = await watcher.send_input(frame, grant, click(BTN))
        reply = await watcher.reply(seq)
        refused(reply, code, seq, frame)
        assert word in reply["message"], (case, reply)
        assert grant not in reply["message"]
        print(f"ws   {case:28} -> {code}: {reply['message']}")
    # Over HTTP: the same codes, with the contract's statuses.
    status_of = {"unauthorized": 401, "expired": 401, "forbidden": 403}
    for case, grant, code, _ in grants:
        SENT_TOKENS.add(grant)
        status, body = service.request("POST", f"/frames/{frame}/input", {"seq": 1, "events": click(BTN)},
                                       token=grant)
        assert (status, body["error"]) == (status_of[code], code), (case, body)
        assert grant not in body["message"]
    status, body = service.request("POST", f"/frames/{frame}/input", {"seq": 1, "events": click(BTN)}, token=None)
    assert (status, body["error"]) == (401, "unauthorized"), body
    await assert_nothing_applied(service, frame, watcher)

    # A step grant is good for one input message: used once (a harmless move), then refused as a replay,
    # over either path, whatever its events.
    step = mint_token(TEST_SECRET, role="drive", sandbox_id=SANDBOX, frame=frame, subject="agent", ttl=30, step=True)
    ack(await watcher.step(frame, step, [move(*BLANK)]), frame)
    seq = await watcher.send_input(frame, step, click(BTN))
    refused(await watcher.reply(seq), "replayed", seq, frame)
    SENT_TOKENS.add(step)
    status, body = service.request("POST", f"/frames/{frame}/input", {"seq": 9, "events": click(BTN)}, token=step)
    assert (status, body["error"]) == (409, "replayed"), body
    await assert_nothing_applied(service, frame, watcher)

    # The page was reachable all along: one good click lands, exactly once.
    good = service.token("drive", frame=frame, subject="alice")
    ack(await watcher.step(frame, good, click(BTN)), frame)
    state = await page_state(service, frame, lambda s: s["clicks"] >= 1 and tuple(at(s.picture, BTN)) != RED)
    assert (state["clicks"], state["mousedowns"]) == (1, 1)
    assert tuple(at(state.picture, BTN)) == GREEN
    await watcher.sees_colour(BTN, GREEN)
    await watcher.close()


async def test_bad_tokens_cannot_connect_or_look(service: Service, frame: str) -> None:
    for case, grant, code, _ in bad_grants(frame):
        if code == "forbidden":
            continue  # valid tokens that may not drive: they may still connect (below)
        async with websockets.connect(service.ws_url) as ws:
            SENT_TOKENS.add(grant)
            await ws.send(json.dumps({"type": "hello", "token": grant}))
            with pytest.raises(websockets.ConnectionClosed) as closed:
                await ws.recv()
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 4401, case
        status, body = service.request("GET", f"/frames/{frame}/screenshot", token=grant)
        assert (status, body["error"]) == (401, code), (case, body)
    # A valid token for another frame connects but may neither watch nor screenshot this one.
    other = service.token("view", frame="f0ther")
    conn = await Conn.open(service, other)
    await conn.send({"type": "watch", "frame": frame})
    error = await conn.expect(lambda m: m.get("type") == "error")
    assert (error["code"], error["frame"]) == ("forbidden", frame), error
    await conn.close()
    status, body = service.request("GET", f"/frames/{frame}/screenshot", token=other)
    assert (status, body["error"]) == (403, "forbidden"), body
    status, body = service.request("GET", f"/frames/{frame}/screenshot", token=None)
    assert (status, body["error"]) == (401, "unauthorized"), body
    # A control token may look (it lists and watches the frames it makes live).
    picture, _ = screenshot(service, frame, token=service.token("control"))
    assert picture.shape[:2] == (400, 640)


def _serve(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "framestream", "serve", "--port", str(free_port()), *args],
                          env=env, capture_output=True, text=True, timeout=60, check=False)


def _env(**changes: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TERMINAL_AUTH_SECRET", "SANDBOX_ID")}
    env.update({k: v for k, v in changes.items() if v is not None})
    return env


def test_the_service_refuses_to_start_without_a_long_secret(tmp_path: Any) -> None:
    state = str(tmp_path / "state")
    missing = _serve(_env(FRAMESTREAM_STATE_DIR=state))
    assert missing.returncode == 2, missing
    assert "TERMINAL_AUTH_SECRET is not set" in missing.stderr and "--insecure-dev" in missing.stderr, missing.stderr
    empty = _serve(_env(FRAMESTREAM_STATE_DIR=state, TERMINAL_AUTH_SECRET=""))
    assert empty.returncode == 2 and "TERMINAL_AUTH_SECRET is not set" in empty.stderr, empty
    short = _serve(_env(FRAMESTREAM_STATE_DIR=state, TERMINAL_AUTH_SECRET="x" * 31))
    assert short.returncode == 2, short
    assert "31 bytes" in short.stderr and "at least 32 bytes" in short.stderr, short.stderr
    assert "x" * 31 not in short.stderr + short.stdout  # the secret itself is never echoed
    token = subprocess.run([sys.executable, "-m", "framestream", "token", "--role", "view"],
                           env=_env(FRAMESTREAM_STATE_DIR=state), capture_output=True, text=True, timeout=60,
                           check=False)
    assert token.returncode == 2 and "TERMINAL_AUTH_SECRET" in token.stderr, token


def test_a_32_byte_secret_is_enough(tmp_path: Any) -> None:
    secret = "s" * 32
    svc = Service(tmp_path / "state", env_extra={"TERMINAL_AUTH_SECRET": secret})
    svc.start(timeout=30)
    try:
        assert svc.get("/healthz", token=None) == (200, {"ok": True})
        own = mint_token(secret, role="view", sandbox_id=SANDBOX)
        assert svc.get("/frames", token=own) == (200, {"frames": []})
        assert svc.get("/frames")[0] == 401  # tests.support's usual secret is another secret here
    finally:
        assert svc.stop() == 0
        svc.kill_leftovers()
    assert secret not in svc.log()


def test_insecure_dev_says_so(tmp_path: Any) -> None:
    port = free_port()
    log_path = tmp_path / "insecure.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "framestream", "serve", "--insecure-dev", "--port", str(port)],
                                env=_env(FRAMESTREAM_STATE_DIR=str(tmp_path / "state")), stdout=log,
                                stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                time.sleep(0.05)
        else:
            raise AssertionError(log_path.read_text())
        # The demo page's fresh tokens (its link's would end its connection after 2 minutes): signed with the
        # public key, which is why such a service listens on loopback only.
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/dev/token?role=view", timeout=5) as resp:
            token = json.loads(resp.read())["token"]
        claims = verify(derive_key(INSECURE_DEV_SECRET.encode(), "local"), token, sandbox="local", now=time.time())
        assert claims.role == "view" and claims.sub == "demo"
    finally:
        proc.terminate()
        assert proc.wait(20) == 0
    text = log_path.read_text()
    assert "--insecure-dev" in text and "PUBLIC key" in text and "INSECURE DEV MODE" in text, text


def test_a_real_service_hands_out_no_tokens(service: Service) -> None:
    status, _ = service.get("/dev/token", token=None)
    assert status == 404


def test_no_token_in_the_service_log(service: Service) -> None:
    """Runs after this module's other tests: none of the tokens sent reaches the log."""
    log = service.log()
    assert "frame" in log
    sent = [t for t in SENT_TOKENS if "." in t]
    assert len(sent) >= 10
    leaked = [t for t in sent if t in log or t.split(".")[1] in log]
    assert not leaked, f"{len(leaked)} tokens in the service log"


TOKEN_SHAPE = re.compile(r"eyJ[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{43}")


def test_no_token_shaped_text_in_the_service_log(service: Service) -> None:
    """Nor any other token (the service used to print a viewer URL with a drive token at start)."""
    found = TOKEN_SHAPE.findall(service.log())
    assert not found, f"{len(found)} token(s) in the service log, e.g. claims {claims_of(found[0])}"
