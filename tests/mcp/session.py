from __future__ import annotations

import base64
import contextlib
import os
import sys
from collections.abc import AsyncIterator

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import CallToolResult, ImageContent, TextContent

from tests.support import TEST_SECRET, Service


@contextlib.asynccontextmanager
async def mcp_session(service: Service) -> AsyncIterator[ClientSession]:
    """`framestream mcp` as a child process, reached by the SDK's own client over stdio.

    Entered in the test's own task (not a fixture): anyio's cancel scopes must be left in the task that entered
    them."""
    env = {k: v for k, v in os.environ.items() if k not in ("TERMINAL_AUTH_SECRET", "SANDBOX_ID")}
    env.update({"TERMINAL_AUTH_SECRET": TEST_SECRET, "SANDBOX_ID": "test"})
    params = StdioServerParameters(command=sys.executable, args=["-m", "framestream", "mcp", "--url", service.base],
                                   env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


__all__ = ["mcp_session", "pngs", "texts"]


def texts(result: CallToolResult) -> list[str]:
    return [c.text for c in result.content if isinstance(c, TextContent)]


def pngs(result: CallToolResult) -> list[bytes]:
    return [base64.b64decode(c.data) for c in result.content
            if isinstance(c, ImageContent) and c.mime_type == "image/png"]
