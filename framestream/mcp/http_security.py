"""What `framestream mcp --http` lets in (issue 32, #12): the rules, without a server.

Whoever reaches the MCP endpoint drives every frame (the tools mint grants with the sandbox key), so:
- a bearer secret is always required (FRAMESTREAM_MCP_TOKEN, at least 16 characters): every request must
  carry `Authorization: Bearer <it>` (compared in constant time), else 401;
- the `Host` header must name this server (DNS rebinding): on a loopback bind `127.0.0.1`, `localhost` and
  `[::1]` at its port, on another address that address too, plus the names in FRAMESTREAM_MCP_ALLOWED_HOSTS
  (`name` or `name:port`), given to the MCP SDK as explicit transport security settings (421 otherwise);
- a non-loopback bind without a secret is refused with its own message.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from framestream.core.urls import is_loopback

TOKEN_ENV: Final = "FRAMESTREAM_MCP_TOKEN"
HOSTS_ENV: Final = "FRAMESTREAM_MCP_ALLOWED_HOSTS"
MIN_TOKEN_CHARS: Final = 16
_LOOPBACK_NAMES: Final = ("127.0.0.1", "localhost", "[::1]")


@dataclass(frozen=True, slots=True)
class HttpSecurity:
    token: str
    allowed_hosts: tuple[str, ...]  # Host header values, `name:port`
    allowed_origins: tuple[str, ...]  # Origin header values (browsers), `http://name:port`

    def authorized(self, header: str | None) -> bool:
        """Whether an Authorization header carries the bearer secret."""
        scheme, _, value = (header or "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), self.token.encode())


def http_security(host: str, port: int, env: Mapping[str, str]) -> HttpSecurity:
    """The settings for serving on `host`:`port`; ValueError (a message for the operator) when refused."""
    token = env.get(TOKEN_ENV, "").strip()
    if not token:
        if not is_loopback(host):
            raise ValueError(f"refusing to serve MCP on {host} without a bearer secret: set {TOKEN_ENV} "
                             f"(at least {MIN_TOKEN_CHARS} characters); anyone who reaches it drives every frame")
        raise ValueError(f"--http needs a bearer secret: set {TOKEN_ENV} (at least {MIN_TOKEN_CHARS} characters) "
                         "and send it as Authorization: Bearer <secret>")
    if len(token) < MIN_TOKEN_CHARS:
        raise ValueError(f"{TOKEN_ENV} is {len(token)} characters; it must be at least {MIN_TOKEN_CHARS}")
    names = list(_LOOPBACK_NAMES)
    if host not in ("0.0.0.0", "::", "") and not is_loopback(host):
        names.append(f"[{host}]" if ":" in host else host)
    hosts = [f"{name}:{port}" for name in names]
    for item in (part.strip() for part in env.get(HOSTS_ENV, "").split(",")):
        if item:
            hosts.append(item if _has_port(item) else f"{item}:{port}")
    hosts = list(dict.fromkeys(hosts))
    origins = [f"{scheme}://{h}" for h in hosts for scheme in ("http", "https")]
    return HttpSecurity(token, tuple(hosts), tuple(origins))


def _has_port(item: str) -> bool:
    if item.startswith("["):
        return "]:" in item
    return item.count(":") == 1
