"""What `framestream mcp --http` lets in (framestream/mcp/http_security.py), without a server."""

from __future__ import annotations

import re

import pytest

from framestream.mcp.http_security import http_security, is_loopback

TOKEN = "mcp-secret-0123456789"


def test_a_bearer_secret_is_always_required_and_non_loopback_binds_say_so() -> None:
    with pytest.raises(ValueError, match="--http needs a bearer secret: set FRAMESTREAM_MCP_TOKEN"):
        http_security("127.0.0.1", 8765, {})
    with pytest.raises(ValueError, match=re.escape("refusing to serve MCP on 0.0.0.0 without a bearer secret")):
        http_security("0.0.0.0", 8765, {})
    with pytest.raises(ValueError, match=re.escape("refusing to serve MCP on 192.0.2.4")):
        http_security("192.0.2.4", 8765, {"FRAMESTREAM_MCP_TOKEN": "  "})
    with pytest.raises(ValueError, match="at least 16"):
        http_security("127.0.0.1", 8765, {"FRAMESTREAM_MCP_TOKEN": "short"})


def test_the_bearer_is_compared_exactly() -> None:
    security = http_security("127.0.0.1", 8765, {"FRAMESTREAM_MCP_TOKEN": TOKEN})
    assert security.authorized(f"Bearer {TOKEN}") and security.authorized(f"bearer {TOKEN}")
    for header in (None, "", TOKEN, f"Basic {TOKEN}", f"Bearer {TOKEN}x", f"Bearer {TOKEN[:-1]}", "Bearer "):
        assert not security.authorized(header), header


def test_allowed_hosts_are_explicit() -> None:
    loopback = http_security("127.0.0.1", 8765, {"FRAMESTREAM_MCP_TOKEN": TOKEN})
    assert loopback.allowed_hosts == ("127.0.0.1:8765", "localhost:8765", "[::1]:8765")
    assert "http://localhost:8765" in loopback.allowed_origins
    assert "attacker.example:8765" not in loopback.allowed_hosts
    extra = "mcp.internal, gw.example:443,[2001:db8::1]"
    wide = http_security("0.0.0.0", 9000, {"FRAMESTREAM_MCP_TOKEN": TOKEN, "FRAMESTREAM_MCP_ALLOWED_HOSTS": extra})
    assert wide.allowed_hosts == ("127.0.0.1:9000", "localhost:9000", "[::1]:9000", "mcp.internal:9000",
                                  "gw.example:443", "[2001:db8::1]:9000")
    own = http_security("192.0.2.4", 9000, {"FRAMESTREAM_MCP_TOKEN": TOKEN})
    assert "192.0.2.4:9000" in own.allowed_hosts


def test_loopback() -> None:
    assert all(map(is_loopback, ["127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"]))
    assert not any(map(is_loopback, ["0.0.0.0", "::", "192.0.2.1", "example.com"]))
