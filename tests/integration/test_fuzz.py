"""Random and mutated messages against the running service: every one is answered, nothing breaks."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from framestream.core.wire import Input, parse_client_message
from framestream.errors import ProtocolError
from tests.support import Service, StreamClient

pytestmark = pytest.mark.integration

SEED = 20261130


@pytest.fixture
def service(state_dir: Path, pages: str) -> Iterator[Service]:
    svc = Service(state_dir, frames=[f"{pages}/box.html@320x200"],
                  env_extra={"FRAMESTREAM_INPUT_RATE": "100000"}).start()
    for frame_id in svc.frame_ids():
        svc.wait_state(frame_id, "live")
    yield svc
    svc.stop()
    svc.kill_leftovers()


def mutations(frame_id: str, grant: str, rng: random.Random) -> Iterator[str]:
    valid: list[dict[str, Any]] = [
        {"type": "watch", "frame": frame_id},
        {"type": "keyframe", "frame": frame_id},
        {"type": "input", "frame": frame_id, "grant": grant, "seq": 1,
         "event": {"kind": "mouse", "action": "move", "x": 10, "y": 10}},
        {"type": "input", "frame": frame_id, "grant": grant, "seq": 2,
         "events": [{"kind": "key", "action": "down", "key": "a", "code": "KeyA"},
                    {"kind": "key", "action": "up", "key": "a", "code": "KeyA"}]},
    ]
    junk_values: list[Any] = [None, True, -1, 2**70, 1e308, float("nan"), "", "x" * 300, [], {}, [1, {"a": []}],
                              "\ud800", "日本", -0.0]
    for _ in range(400):
        msg = json.loads(json.dumps(rng.choice(valid)))
        target = msg if rng.random() < 0.5 or "event" not in msg else msg["event"]
        for _ in range(rng.randint(1, 3)):
            key = rng.choice([*target.keys(), "extra", "type", "kind"])
            action = rng.random()
            if action < 0.4:
                target[key] = rng.choice(junk_values)
            elif action < 0.6:
                target.pop(key, None)
            else:
                target[key + rng.choice(["", "_", "X"])] = rng.choice(junk_values)
        text = json.dumps(msg, allow_nan=True) if rng.random() < 0.9 else json.dumps(msg)[: rng.randint(0, 40)]
        yield text
    for _ in range(50):
        yield "".join(chr(rng.randint(1, 0x2FFF)) for _ in range(rng.randint(0, 200)))


async def test_every_malformed_message_is_answered_and_streaming_goes_on(service: Service) -> None:
    (frame_id,) = service.frame_ids()
    client = await StreamClient.connect(service)
    await client.watch(frame_id)
    await client.latest_picture(timeout=20)
    rng = random.Random(SEED)
    grant = service.token("drive")
    expected = 0
    for text in mutations(frame_id, grant, rng):
        try:
            await client.ws.send(text)
        except UnicodeEncodeError:
            continue  # lone surrogates cannot even be sent as WebSocket text
        # Each invalid message gets one error; each input one ack or error; a valid keyframe request or a
        # repeated watch has no reply by contract.
        try:
            expected += isinstance(parse_client_message(text), Input)
        except ProtocolError:
            expected += 1
    answered = 0
    codes: set[str] = set()
    while answered < expected:
        msg = await client.next_text(timeout=20)
        if msg["type"] in ("error", "input-ack", "video-config"):
            answered += 1
            if msg["type"] == "error":
                assert msg["code"] in {"bad-message", "bad-input", "unknown-frame", "forbidden", "unauthorized",
                                       "expired", "superseded", "replayed"}, msg
                assert msg["message"]
                codes.add(msg["code"])
        elif msg["type"] not in ("frame-state", "control"):
            raise AssertionError(f"unexpected message {msg}")
    assert {"bad-message", "bad-input"} <= codes
    assert expected > 300
    assert service.get("/healthz", token=None) == (200, {"ok": True})
    await client.wait_for_colour(frame_id, (100, 200), (200, 40, 40), timeout=20)
