"""framestream/node from the packed tarball, when the service restarts under it: the Node agent's step during the
outage fails with ConnectionLost, then the client connects again by itself (a fresh token), watches its frame again
and drives it, by the reopened page's pixels (as tests/client/test_connection.py for the Python client)."""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from pathlib import Path

import pytest

from framestream.client.pictures import png_to_rgb
from tests.client.agent_page import BUTTON, GREY, RED, near
from tests.fixtures import service_fixture
from tests.npm.conftest import HERE
from tests.support import TEST_SECRET, Service

pytestmark = pytest.mark.integration

service = service_fixture("agent.html@640x400")


async def test_the_node_agent_comes_back_after_the_service_restarts(service: Service, scratch: Path,
                                                                    tmp_path: Path) -> None:
    shutil.copy(HERE / "consumer" / "restart.mjs", scratch)
    [frame] = service.frame_ids()
    node = shutil.which("node")
    assert node is not None
    cfg = {"base": service.base, "frame": frame, "secret": TEST_SECRET, "sandbox": "test", "dir": str(tmp_path)}
    proc = await asyncio.create_subprocess_exec(
        node, "--experimental-websocket", "restart.mjs", json.dumps(cfg), cwd=scratch,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    stdin, stdout, stderr = proc.stdin, proc.stdout, proc.stderr
    assert stdin is not None and stdout is not None and stderr is not None

    async def line() -> bytes:
        got = await asyncio.wait_for(stdout.readline(), 120)
        assert got, (await stderr.read()).decode()[-3000:]
        return got

    async def tell(what: str) -> None:
        stdin.write(f"{what}\n".encode())
        await stdin.drain()

    try:
        assert (await line()).strip() == b"ready"
        await asyncio.to_thread(service.stop)
        await tell("stopped")
        lost = json.loads(await line())
        restarted_us = time.time_ns() // 1000  # every picture of the new service is captured after this
        await asyncio.to_thread(service.start)
        await tell(f"started {restarted_us}")
        out = json.loads(await line())
        assert await asyncio.wait_for(proc.wait(), 30) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()

    assert lost == {"lostWith": "ConnectionLost", "connected": False}
    assert out["connects"] == 2, out
    # One loss (1001: the service said it was going), one return: no attempt was welcomed by the service on its way out.
    assert out["events"] == [{"close": 1001, "again": True}, {"open": 2}], out
    assert out["firstUs"] >= restarted_us
    # The reopened page, then the Node agent's click on it, by their pixels (the pictures are at dpr 2).
    first = png_to_rgb((tmp_path / "first.png").read_bytes())
    clicked = png_to_rgb((tmp_path / "clicked.png").read_bytes())
    x, y = BUTTON[0] * 2, BUTTON[1] * 2
    assert near(first[y, x], GREY), first[y, x]
    assert near(clicked[y, x], RED), clicked[y, x]
