"""Attacks on the service's edge (issue 32), each run with real sockets against the real service, which must
refuse it and go on serving: a real viewer connects, watches and gets pictures meanwhile.

Issue 32's findings answered here: unauthenticated bodies that break the JSON parser (#14).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from tests.fixtures import service_fixture
from tests.support import Service, StreamClient

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
