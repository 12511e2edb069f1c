"""ICE settings, read at start without importing aiortc: which addresses to offer and which STUN/TURN servers.

`FRAMESTREAM_ICE_HOSTS`: comma-separated addresses offered as host candidates (default: every interface but
loopback, aioice's choice). `FRAMESTREAM_ICE_SERVERS`: a JSON list in the browser's RTCIceServer shape
(`[{"urls":"turn:turn.example:3478","username":"u","credential":"p"}]`) or comma-separated STUN/TURN URLs
without credentials. Without servers, none is used (aiortc would otherwise ask Google's public STUN server).
"""

from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass
from typing import Any

from framestream.core.errors import ConfigError

_SCHEMES = ("stun:", "turn:", "turns:")  # aiortc has no stuns:


@dataclass(frozen=True, slots=True)
class IceServer:
    urls: tuple[str, ...]
    username: str | None = None
    credential: str | None = None


def parse_ice_hosts(raw: str) -> tuple[str, ...]:
    hosts = tuple(item.strip() for item in raw.split(",") if item.strip())
    for host in hosts:
        try:
            ipaddress.ip_address(host)
        except ValueError as exc:
            raise ConfigError(f"FRAMESTREAM_ICE_HOSTS: {host!r} is not an IP address") from exc
    return hosts


def _urls(value: object) -> tuple[str, ...]:
    urls = (value,) if isinstance(value, str) else value
    if not isinstance(urls, list | tuple) or not urls or not all(isinstance(u, str) for u in urls):
        raise ConfigError("FRAMESTREAM_ICE_SERVERS: 'urls' must be a URL or a list of URLs")
    for url in urls:
        if not url.startswith(_SCHEMES):
            raise ConfigError(f"FRAMESTREAM_ICE_SERVERS: {url!r} is not a stun:, turn: or turns: URL")
    return tuple(urls)


def _server(item: Any) -> IceServer:
    if not isinstance(item, dict) or "urls" not in item:
        raise ConfigError("FRAMESTREAM_ICE_SERVERS: each server is an object with 'urls'")
    username, credential = item.get("username"), item.get("credential")
    if not all(v is None or isinstance(v, str) for v in (username, credential)):
        raise ConfigError("FRAMESTREAM_ICE_SERVERS: 'username' and 'credential' must be strings")
    return IceServer(_urls(item["urls"]), username, credential)


def parse_ice_servers(raw: str) -> tuple[IceServer, ...]:
    text = raw.strip()
    if not text:
        return ()
    if text.startswith("["):
        try:
            items = json.loads(text)
        except ValueError as exc:
            raise ConfigError("FRAMESTREAM_ICE_SERVERS is not valid JSON") from exc
        if not isinstance(items, list):
            raise ConfigError("FRAMESTREAM_ICE_SERVERS must be a JSON list")
        return tuple(_server(item) for item in items)
    return tuple(IceServer(_urls([url.strip()])) for url in text.split(",") if url.strip())


def offer_only(hosts: tuple[str, ...]) -> None:
    """Offer exactly `hosts` as host candidates (empty: aioice's default, every interface but loopback).

    aioice reads its module-level `get_host_addresses` when a connection gathers; there is no parameter for it,
    and the setting is the process's, so it is replaced once at start."""
    import aioice.ice

    original = getattr(aioice.ice, "_framestream_original", aioice.ice.get_host_addresses)
    aioice.ice._framestream_original = original  # type: ignore[attr-defined]
    if not hosts:
        aioice.ice.get_host_addresses = original
        return

    def configured(use_ipv4: bool, use_ipv6: bool) -> list[str]:
        return [h for h in hosts if (ipaddress.ip_address(h).version == 4 and use_ipv4)
                or (ipaddress.ip_address(h).version == 6 and use_ipv6)]

    aioice.ice.get_host_addresses = configured
