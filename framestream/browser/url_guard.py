"""The allow list on a page's own navigations (issue 32, #4): redirects, links, popups and script navigation
reached hosts off FRAMESTREAM_URL_ALLOW_HOSTS while the frame's `url` still showed the last allowed one.

Every page pauses each document request it makes (`Fetch.enable` for resource type Document, browser/page_setup.py),
top-level and in frames alike; `check` lets it go on unless core/urls.py `document_refusal` says no (a host off the
allow list when one is set; the service's own port, of which only `/web/` is a frame's) and fails it otherwise:
the page shows Chrome's "blocked" page, and viewers hear `error` `url-not-allowed`.

A document that asks for HTTP authentication (401 with `WWW-Authenticate`) opened Chromium's "Sign in" dialog over
the whole frame, which the driver's input over DevTools cannot reach: the frame showed it until navigated away. The
same pause answers it now (`handleAuthRequests`): `cancel_sign_in` declines, and the page shows the document the
server sent with its 401.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from typing import Any

from framestream.browser.cdp import CDPConnection
from framestream.browser.tab_events import PageRefused, TabEvent, TabSettings
from framestream.core.errors import CDPError
from framestream.core.urls import document_refusal, without_query

log = logging.getLogger("framestream.browser.tabs")


async def check(cdp: CDPConnection, params: dict[str, Any], settings: TabSettings,
                emit: Callable[[TabEvent], None]) -> None:
    """Answer one `Fetch.requestPaused`: continue the request, or fail it and `emit` why."""
    session_id, request_id = params.get("sessionId"), params.get("requestId")
    url = str(params.get("request", {}).get("url", ""))
    reason = document_refusal(url, settings.allowed_hosts, settings.own_port)
    if reason is None:
        with contextlib.suppress(CDPError):
            await cdp.call("Fetch.continueRequest", {"requestId": request_id}, session_id=session_id)
        return
    with contextlib.suppress(CDPError):
        await cdp.call("Fetch.failRequest", {"requestId": request_id, "errorReason": "BlockedByClient"},
                       session_id=session_id)
    log.warning("a page tried to load %s: blocked, %s", without_query(url)[:200], reason)
    emit(PageRefused(url, reason, code="url-not-allowed"))


async def cancel_sign_in(cdp: CDPConnection, params: dict[str, Any]) -> None:
    """Answer one `Fetch.authRequired` (a document's request for HTTP authentication) by declining it."""
    url = str(params.get("request", {}).get("url", ""))
    with contextlib.suppress(CDPError):
        await cdp.call("Fetch.continueWithAuth", {"requestId": params.get("requestId"),
                                                  "authChallengeResponse": {"response": "CancelAuth"}},
                       session_id=params.get("sessionId"))
    log.info("a page asked to sign in to %s: declined (no dialog over the frame)", without_query(url)[:200])


__all__ = ["check"]
