"""`framestream mcp --http`: the same tools over streamable HTTP, reached by the official SDK's HTTP client, behind
a bearer secret and an explicit list of Host names (issue 32, #12)."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator

import httpx2
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
MCP_TOKEN = "mcp-bearer-0123456789-abcdef"


def mcp_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FRAMESTREAM_MCP_")}
    return {**env, "TERMINAL_AUTH_SECRET": TEST_SECRET, "SANDBOX_ID": "test", **extra}


@pytest.fixture
def mcp_http(service: Service) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "framestream", "mcp", "--url", service.base,
                             "--http", f"127.0.0.1:{port}"], env=mcp_env(FRAMESTREAM_MCP_TOKEN=MCP_TOKEN),
                            stderr=subprocess.DEVNULL)
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


def client(token: str = MCP_TOKEN) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                              timeout=httpx2.Timeout(30.0, read=300.0))


async def test_tools_over_streamable_http(mcp_http: str) -> None:
    await listening(mcp_http)
    async with client() as http, streamable_http_client(mcp_http, http_client=http) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        assert "screenshot" in {tool.name for tool in (await session.list_tools()).tools}
        settled = await session.call_tool("wait_for_settle", {})
        assert not settled.is_error, texts(settled)
        [png] = pngs(settled)
        rgb = png_to_rgb(png)
        assert rgb.shape == (400, 640, 3)
        for (x, y), colour in MARKS.items():
            assert near(rgb[y, x], colour), (x, y, rgb[y, x])


def post(url: str, headers: dict[str, str]) -> int:
    body = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",' \
           b'"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}'
    req = urllib.request.Request(url, data=body, method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as err:
        return int(err.code)


async def test_without_the_bearer_or_with_another_host_nothing_is_served(mcp_http: str) -> None:
    """No bearer, a wrong one or another scheme: 401 (the SDK's client too); the right bearer with
    `Host: attacker.example` (DNS rebinding): 421; meanwhile the right bearer and Host are served."""
    await listening(mcp_http)
    for headers in ({}, {"Authorization": "Bearer wrong-token-0123456789"}, {"Authorization": f"Basic {MCP_TOKEN}"},
                    {"Authorization": f"Bearer {MCP_TOKEN}x"}):
        assert await asyncio.to_thread(post, mcp_http, headers) == 401, headers
    assert await asyncio.to_thread(post, mcp_http, {"Authorization": f"Bearer {MCP_TOKEN}",
                                                    "Host": "attacker.example"}) == 421
    with pytest.raises(Exception):  # noqa: B017 - the SDK wraps the 401 in its own exception groups
        async with client("wrong-token-0123456789") as http, \
                streamable_http_client(mcp_http, http_client=http) as (read, write), \
                ClientSession(read, write) as session:
            await asyncio.wait_for(session.initialize(), 30)
    assert await asyncio.to_thread(post, mcp_http, {"Authorization": f"Bearer {MCP_TOKEN}"}) == 200


@pytest.mark.parametrize(("bind", "message"), [
    ("0.0.0.0", "refusing to serve MCP on 0.0.0.0 without a bearer secret"),
    ("127.0.0.1", "--http needs a bearer secret"),
])
def test_http_without_a_secret_does_not_start(bind: str, message: str) -> None:
    done = subprocess.run([sys.executable, "-m", "framestream", "mcp", "--url", "http://127.0.0.1:9",
                           "--http", f"{bind}:{free_port()}"], env=mcp_env(), capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 2 and message in done.stderr, done
