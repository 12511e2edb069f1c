"""`framestream mcp --http`: the same tools over streamable HTTP, reached by the official SDK's HTTP client."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from framestream.client import png_to_rgb
from tests.client.agent_page import MARKS, near
from tests.fixtures import service_fixture
from tests.mcp.session import pngs, texts
from tests.support import TEST_SECRET, Service, free_port

pytestmark = pytest.mark.integration

service = service_fixture("agent.html@640x400")


@pytest.fixture
def mcp_http(service: Service) -> Iterator[str]:
    port = free_port()
    env = {**os.environ, "TERMINAL_AUTH_SECRET": TEST_SECRET, "SANDBOX_ID": "test"}
    proc = subprocess.Popen([sys.executable, "-m", "framestream", "mcp", "--url", service.base,
                             "--http", f"127.0.0.1:{port}"], env=env, stderr=subprocess.DEVNULL)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def listening(url: str, timeout: float = 30.0) -> None:
    host, port = url.split("//")[1].split("/", maxsplit=1)[0].split(":")
    async with asyncio.timeout(timeout):
        while True:
            try:
                with socket.create_connection((host, int(port)), timeout=1):
                    return
            except OSError:
                await asyncio.sleep(0.1)


async def test_tools_over_streamable_http(mcp_http: str) -> None:
    await listening(mcp_http)
    async with streamable_http_client(mcp_http) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        assert "screenshot" in {tool.name for tool in (await session.list_tools()).tools}
        settled = await session.call_tool("wait_for_settle", {})
        assert not settled.is_error, texts(settled)
        [png] = pngs(settled)
        rgb = png_to_rgb(png)
        assert rgb.shape == (400, 640, 3)
        for (x, y), colour in MARKS.items():
            assert near(rgb[y, x], colour), (x, y, rgb[y, x])
