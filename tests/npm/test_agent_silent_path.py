"""framestream/node from the packed tarball, when the path to the real service dies without a close: the Node
agent's own check (web/lib/liveness.js) gives the socket up, and a step waiting on it fails with ConnectionLost
instead of its 30 s timeout."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest

from tests.fixtures import service_fixture
from tests.npm.conftest import HERE
from tests.silent_path import SilentPath
from tests.support import Service

pytestmark = pytest.mark.integration

service = service_fixture("box.html@320x200")


async def test_the_node_agent_gives_up_a_silent_path_and_fails_what_waits(service: Service, scratch: Path) -> None:
    shutil.copy(HERE / "consumer" / "silent_path.mjs", scratch)
    [frame] = service.frame_ids()
    node = shutil.which("node")
    assert node is not None
    async with SilentPath(service.port) as path:
        cfg = {"base": path.base, "frame": frame, "token": service.token("drive", subject="node-agent"),
               "grant": service.token("drive", subject="node-agent")}
        proc = await asyncio.create_subprocess_exec(
            node, "--experimental-websocket", "silent_path.mjs", json.dumps(cfg), cwd=scratch,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        try:
            assert proc.stdin is not None and proc.stdout is not None
            ready = await asyncio.wait_for(proc.stdout.readline(), 60)
            assert ready.strip() == b"ready", ready
            assert path.cut() >= 1
            proc.stdin.write(b"cut\n")
            await proc.stdin.drain()
            line = await asyncio.wait_for(proc.stdout.readline(), 60)
            assert line, (await proc.stderr.read()).decode()[-3000:] if proc.stderr else ""
            out = json.loads(line)
        finally:
            if proc.returncode is None:
                proc.kill()
            await proc.wait()
    assert out["lost"] is True and out["error"] == "ConnectionLost", out  # not a step timeout's ClientError
    [close] = out["closes"]
    assert (close["code"], close["reason"]) == (1006, "no answer from the service"), out
    assert close["reconnectInMs"] is not None, out  # then it tries again by itself
    assert out["connected"] is False
    print(f"the node agent gave up the silent path; its click failed after {out['ms']} ms: {out}")
