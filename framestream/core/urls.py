"""Which pages a frame may show: the URL rule, pure (no I/O).

http and https only (no file:, chrome:, javascript:, data: or devtools: pages in a shared browser), and when an
allow list is set (FRAMESTREAM_URL_ALLOW_HOSTS), only its hosts. A URL is refused unless Python and a browser
(WHATWG's URL parser) read the same host in it (issue 32, #4: `http://localhost:8712\\@127.0.0.1/` passed the
list as 127.0.0.1 while Chromium loaded localhost). So: no backslash, whitespace or control character anywhere,
no userinfo, and a host written the one way WHATWG serializes it: lowercase ASCII labels, IPv4 as four decimal
numbers without leading zeros (not `127.1`, `0x7f.0.0.1` or `2130706433`, which WHATWG reads as 127.0.0.1),
IPv6 in brackets, no percent-escapes and no trailing dot. Upper-case scheme and host letters are lowered.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from urllib.parse import urlsplit, urlunsplit

ALLOWED_SCHEMES = ("http", "https")
MAX_URL_LENGTH = 8192

_LABEL = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?\Z")
_FORBIDDEN = re.compile(r"[\x00-\x20\x7f\\]")
_NUMERIC_LAST = re.compile(r"(?:0x[0-9a-f]*|[0-9]+)\Z")  # WHATWG: such a last label makes the host an IPv4


def canonical_host(host: str) -> str:
    """The host as WHATWG would serialize it, or ValueError when it is written any other way that matters."""
    if host.startswith("["):
        if not host.endswith("]"):
            raise ValueError(f"host {host!r} is not a valid IPv6 literal")
        try:
            return f"[{ipaddress.IPv6Address(host[1:-1]).compressed}]"
        except ValueError as exc:
            raise ValueError(f"host {host!r} is not a valid IPv6 literal") from exc
    lowered = host.lower()
    if not lowered or not lowered.isascii() or "%" in lowered:
        raise ValueError(f"host {host!r} must be ASCII (punycode for international names), without escapes")
    labels = lowered.split(".")
    if _NUMERIC_LAST.match(labels[-1]):
        try:
            address = ipaddress.IPv4Address(lowered)
        except ValueError as exc:
            raise ValueError(f"host {host!r} is an IPv4 address in a non-canonical form") from exc
        if str(address) != lowered:
            raise ValueError(f"host {host!r} is an IPv4 address in a non-canonical form")
        return lowered
    if not all(_LABEL.match(label) for label in labels):
        raise ValueError(f"host {host!r} is not a canonical host name")
    return lowered


def check_url(url: object, allowed_hosts: Sequence[str] = (), own_port: int | None = None) -> str:
    """`url` if a frame may show it (with its scheme and host lowered), else ValueError saying why. `own_port`:
    the service's own port, of which a frame may load only the static `/web/` files (the demo page), never the
    API, /metrics or the viewer (issue 32, #1: no loopback port the service owns is a frame's to open)."""
    if not isinstance(url, str) or not url or len(url) > MAX_URL_LENGTH:
        raise ValueError(f"url must be a string of 1..{MAX_URL_LENGTH} characters")
    if _FORBIDDEN.search(url):
        raise ValueError("url must not contain whitespace, control characters or backslashes")
    parts = urlsplit(url)
    if parts.scheme.lower() not in ALLOWED_SCHEMES or not parts.netloc or not url[len(parts.scheme):].startswith("://"):
        raise ValueError(f"url must be an absolute http or https URL, got scheme {parts.scheme or 'none'!r}")
    if "@" in parts.netloc:
        raise ValueError("url must not carry a user name or password")
    hostport = parts.netloc
    host, port = hostport, ""
    if hostport.startswith("["):
        end = hostport.find("]")
        host, rest = hostport[:end + 1], hostport[end + 1:]
        if rest and not rest.startswith(":"):
            raise ValueError(f"bad host and port {hostport!r}")
        port = rest[1:]
    elif ":" in hostport:
        host, port = hostport.rsplit(":", 1)
    if port and (not port.isdigit() or not 0 < int(port) < 65536):
        raise ValueError(f"bad port {port!r}")
    host = canonical_host(host)
    if allowed_hosts and host not in allowed_hosts:
        raise ValueError(f"host {host!r} is not in FRAMESTREAM_URL_ALLOW_HOSTS")
    effective_port = int(port) if port else (443 if parts.scheme.lower() == "https" else 80)
    if own_port is not None and effective_port == own_port and is_loopback(host) \
            and not parts.path.startswith("/web/"):
        raise ValueError("a frame may open only /web/ of the service's own port")
    netloc = f"{host}:{port}" if port else host
    return urlunsplit((parts.scheme.lower(), netloc, parts.path, parts.query, parts.fragment))


def is_loopback(host: str) -> bool:
    """`localhost` (and its subdomains, which browsers resolve to it), 127.0.0.0/8, ::1 (with or without [])."""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def host_allowed(url: str, allowed_hosts: Sequence[str], own_port: int | None = None) -> bool:
    """Whether a frame may be made at, or navigated to, `url` (`check_url` without the reason)."""
    try:
        check_url(url, allowed_hosts, own_port)
    except ValueError:
        return False
    return True


def document_refusal(url: str, allowed_hosts: Sequence[str], own_port: int | None) -> str | None:
    """Why a page may not load the document at `url` (its own navigations, redirects, popups, frames), or None.
    `url` is the browser's own, already canonical: only the allow list (when set) and the service's own port
    count; what is not http(s) (about:, data:, blob:) is the browser's to judge."""
    parts = urlsplit(url)
    if parts.scheme not in ALLOWED_SCHEMES:
        return None
    host = parts.hostname or ""
    if allowed_hosts and host not in allowed_hosts and f"[{host}]" not in allowed_hosts:
        return "its host is not in FRAMESTREAM_URL_ALLOW_HOSTS"
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return "its port is not a port"
    if own_port is not None and port == own_port and is_loopback(host) and not parts.path.startswith("/web/"):
        return "it is the service's own port (of which a frame may open only /web/)"
    return None


def without_query(url: str) -> str:
    """`url` without its query and fragment, which often carry secrets (OAuth codes, an app's own tokens): what
    view-only viewers and the log are told of a page."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")) if parts.scheme else url.split("?", 1)[0]


__all__ = ["ALLOWED_SCHEMES", "MAX_URL_LENGTH", "canonical_host", "check_url", "document_refusal", "host_allowed",
           "is_loopback", "without_query"]
