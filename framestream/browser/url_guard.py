"""The allow list on a page's own navigations (issue 32, #4): redirects, links, popups and script navigation
reached hosts off FRAMESTREAM_URL_ALLOW_HOSTS while the frame's `url` still showed the last allowed one.

With an allow list every page pauses each document request it makes (`Fetch.enable` for resource type Document,
browser/page_setup.py), top-level and in frames alike; `check` lets it go on when its host is allowed
(core/urls.py, the rule `POST /frames` and `navigate` use) and fails it otherwise: the page shows Chrome's
"blocked" page, and viewers hear `error` `url-not-allowed`.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Sequence
from typing import Any

from framestream.browser.cdp import CDPConnection
from framestream.browser.tab_events import PageRefused, TabEvent
from framestream.core.urls import host_allowed, without_query
from framestream.errors import CDPError

log = logging.getLogger("framestream.browser.tabs")


async def check(cdp: CDPConnection, params: dict[str, Any], allowed_hosts: Sequence[str],
                emit: Callable[[TabEvent], None]) -> None:
    """Answer one `Fetch.requestPaused`: continue the request, or fail it and `emit` why."""
    session_id, request_id = params.get("sessionId"), params.get("requestId")
    url = str(params.get("request", {}).get("url", ""))
    if host_allowed(url, allowed_hosts):
        with contextlib.suppress(CDPError):
            await cdp.call("Fetch.continueRequest", {"requestId": request_id}, session_id=session_id)
        return
    with contextlib.suppress(CDPError):
        await cdp.call("Fetch.failRequest", {"requestId": request_id, "errorReason": "BlockedByClient"},
                       session_id=session_id)
    log.warning("a page tried to load %s, off FRAMESTREAM_URL_ALLOW_HOSTS: blocked", without_query(url)[:200])
    emit(PageRefused(url, "its host is not in FRAMESTREAM_URL_ALLOW_HOSTS", code="url-not-allowed"))


__all__ = ["check"]
