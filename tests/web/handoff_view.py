"""What a test or a benchmark needs to act as a person in the web viewer's handing-over row (web/lib/handoffui.js):
the page's token function answered through DevTools, and its elements found, waited for and clicked."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

from tests.web.browser import Page


@contextlib.asynccontextmanager
async def token_endpoint(page: Page, mint: Callable[[], str]) -> AsyncIterator[list[str]]:
    """Answer the viewer page's `dev/token` (its token function) with `mint()`, as an app's token endpoint would;
    yields the tokens handed out, in order."""
    minted: list[str] = []
    replies: set[asyncio.Task[Any]] = set()

    def paused(params: dict[str, Any]) -> None:
        minted.append(mint())
        body = json.dumps({"token": minted[-1]}).encode()
        reply = asyncio.get_running_loop().create_task(page.send("Fetch.fulfillRequest", {
            "requestId": params["requestId"], "responseCode": 200, "body": base64.b64encode(body).decode(),
            "responseHeaders": [{"name": "Content-Type", "value": "application/json"},
                                {"name": "Cache-Control", "value": "no-store"}]}))
        replies.add(reply)
        reply.add_done_callback(replies.discard)

    stop = page.on("Fetch.requestPaused", paused)
    await page.send("Fetch.enable", {"patterns": [{"urlPattern": "*/dev/token*", "requestStage": "Request"}]})
    try:
        yield minted
    finally:
        stop()
        await page.send("Fetch.disable")


def in_view(frame: str, selector: str) -> str:
    """JS for the first element matching `selector` in the frame's view."""
    return f"document.querySelector('.fs-frame[data-frame=\"{frame}\"]').querySelector({json.dumps(selector)})"


def shown(element: str) -> str:
    """JS: the element is there and laid out (not hidden), and enabled."""
    return f"(() => {{ const e = {element}; return Boolean(e && !e.disabled && e.getClientRects().length); }})()"


async def centre_of(page: Page, element: str) -> tuple[float, float]:
    """The centre of a viewer element, once it is shown."""
    await page.wait_for(shown(element))
    x, y = await page.eval(f"(() => {{ const r = ({element}).getBoundingClientRect();"
                           " return [r.left + r.width / 2, r.top + r.height / 2]; })()")
    return x, y
