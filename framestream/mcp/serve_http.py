"""`framestream mcp --http`: the MCP server's streamable HTTP app behind a bearer check, with explicit transport
security settings (allowed hosts and origins), served by uvicorn. The rules are in http_security.py."""

from __future__ import annotations

import json
from typing import Any

import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Receive, Scope, Send

from framestream.mcp.http_security import HttpSecurity

__all__ = ["BearerGate", "http_app", "serve_http"]


class BearerGate:
    """An ASGI wrapper that answers 401 to any HTTP request without the bearer secret (lifespan passes)."""

    def __init__(self, app: ASGIApp, security: HttpSecurity) -> None:
        self.app = app
        self.security = security

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        header = next((v.decode("latin-1") for k, v in scope.get("headers", ()) if k == b"authorization"), None)
        if self.security.authorized(header):
            await self.app(scope, receive, send)
            return
        body = json.dumps({"error": "unauthorized", "message": "send Authorization: Bearer <FRAMESTREAM_MCP_TOKEN>"})
        await send({"type": "http.response.start", "status": 401,
                    "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]})
        await send({"type": "http.response.body", "body": body.encode()})


def http_app(server: MCPServer[Any], security: HttpSecurity, host: str) -> ASGIApp:
    transport = TransportSecuritySettings(enable_dns_rebinding_protection=True,
                                          allowed_hosts=list(security.allowed_hosts),
                                          allowed_origins=list(security.allowed_origins))
    return BearerGate(server.streamable_http_app(transport_security=transport, host=host), security)


def serve_http(server: MCPServer[Any], security: HttpSecurity, host: str, port: int) -> None:
    """Serve until interrupted (blocking, like MCPServer.run)."""
    config = uvicorn.Config(http_app(server, security, host), host=host, port=port, log_level="warning")
    uvicorn.Server(config).run()
