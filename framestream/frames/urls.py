"""Which pages a frame may show."""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlsplit

ALLOWED_SCHEMES = ("http", "https")
MAX_URL_LENGTH = 8192


def check_url(url: object, allowed_hosts: Sequence[str] = ()) -> str:
    """http(s) URLs only: no file:, chrome:, javascript:, data: or devtools: pages in a shared browser; and
    when `allowed_hosts` is set (FRAMESTREAM_URL_ALLOW_HOSTS), only those hosts."""
    if not isinstance(url, str) or not url or len(url) > MAX_URL_LENGTH:
        raise ValueError(f"url must be a string of 1..{MAX_URL_LENGTH} characters")
    parts = urlsplit(url)
    if parts.scheme.lower() not in ALLOWED_SCHEMES or not parts.netloc:
        raise ValueError(f"url must be an absolute http or https URL, got scheme {parts.scheme or 'none'!r}")
    if allowed_hosts and (parts.hostname or "").lower() not in allowed_hosts:
        raise ValueError(f"host {parts.hostname!r} is not in FRAMESTREAM_URL_ALLOW_HOSTS")
    return url


__all__ = ["ALLOWED_SCHEMES", "MAX_URL_LENGTH", "check_url"]
