"""When a page that could not load comes back by itself: its server in the sandbox (a loopback host) refused the
connection (a dev server not up yet after a sandbox starts, or restarting), so the page is loaded again once the
server accepts one. Pure.

Chromium leaves such a page on its error page until someone reloads it, or retries it itself at growing
intervals where it does (up to minutes apart), and the frame said `error` for good when its first load failed.
Here the server is asked (a TCP connect, no request) at once when the error page commits, then after 0.25, 0.5
and 1 s and every 2 s after that for as long as the page shows the error: a loopback connect costs microseconds,
and the page is back within 2 s of its server. A server that answers the first ask was up when the page failed
for some other reason (an empty response, a bad certificate): that page is left as it is, so it never loads in a
loop.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from framestream.core.urls import is_loopback

# Seconds before each ask after the first, which goes at once; the last repeats.
ASK_AFTER_S = (0.25, 0.5, 1.0, 2.0)
ASK_TIMEOUT_S = 1.0  # a connect not answered within this long counts as not answering
_DEFAULT_PORTS = {"http": 80, "https": 443}


def server_of(url: str) -> tuple[str, int] | None:
    """(host, port) to ask for an http(s) `url` served in the sandbox (a loopback host), or None for any other URL.
    Other hosts are not waited for: a name that does not resolve would hold a resolver thread on every ask. A
    subdomain of localhost (a dev proxy's `app.localhost`), which browsers take to loopback and the system's
    resolver may not, is asked as `localhost` (both 127.0.0.1 and ::1, as the browser tries them)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    host = parts.hostname
    if parts.scheme not in _DEFAULT_PORTS or not host or not is_loopback(host):
        return None
    return "localhost" if host.endswith(".localhost") else host, port or _DEFAULT_PORTS[parts.scheme]


def ask_after(asked: int) -> float:
    """Seconds to wait before the next ask, `asked` asks in (at least 1)."""
    return ASK_AFTER_S[min(max(asked, 1), len(ASK_AFTER_S)) - 1]


def load_again(answers: list[bool]) -> bool | None:
    """Given the answers so far (True: it accepted the connection), whether to load the page again (True), to give
    up on it (False: it answered the first ask, so it was not down) or to go on asking (None)."""
    if not answers or not answers[-1]:
        return None
    return len(answers) > 1


__all__ = ["ASK_AFTER_S", "ASK_TIMEOUT_S", "ask_after", "load_again", "server_of"]
