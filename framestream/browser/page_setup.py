"""Setting a new page up before its first script runs: the frame's size and dpr, file choosers intercepted, the copy
hook (browser/copy_hook.py: copied text, no File System Access pickers), the cursor and print hooks
(browser/cursor_hook.py, browser/print_hook.py), the browser's keys, links to other applications and dropped files
guarded (browser/key_guard.py, browser/external_apps.py, browser/drop_guard.py), and its window fullscreen so it
covers the frame's screen."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from framestream.browser import drop_guard, external_apps, key_guard
from framestream.browser.cdp import CDPConnection
from framestream.browser.copy_hook import CopyHook
from framestream.browser.page_size import metrics
from framestream.browser.print_hook import PrintHook
from framestream.browser.tab_events import TabSettings
from framestream.core.errors import CDPError
from framestream.core.pages import Page

_FETCH: tuple[tuple[str, dict[str, Any]], ...] = (
    ("Fetch.enable", {"patterns": [{"urlPattern": "*", "resourceType": "Document", "requestStage": "Request"}],
                      "handleAuthRequests": True}),)  # a sign-in dialog declined (browser/url_guard.py)

# A cross-site iframe is a target of its own: without a session of ours its <input type=file> opened GTK's native
# "Open File" dialog on the frame's screen, through which a driver could browse the service's own files (issue 32,
# checked). Every page (and frame) auto-attaches its frames, paused, for `prepare_subframe`.
_SUBFRAMES: tuple[tuple[str, dict[str, Any]], ...] = (
    ("Target.setAutoAttach", {"autoAttach": True, "waitForDebuggerOnStart": True, "flatten": True}),)


# Keys a page (or a focused iframe) leaves that would open the browser's UI over it (browser/key_guard.py).
_KEY_GUARD = ("Page.addScriptToEvaluateOnNewDocument", {"source": key_guard.script(), "worldName": key_guard.WORLD})
# Links to other applications (browser/external_apps.py): no dialog over the frame asking to open one.
_LINK_GUARD = ("Page.addScriptToEvaluateOnNewDocument", {"source": external_apps.script(),
                                                          "worldName": external_apps.WORLD})
# Files dropped where the page takes none (browser/drop_guard.py): the file is not loaded in place of the page.
_DROP_GUARD = ("Page.addScriptToEvaluateOnNewDocument", {"source": drop_guard.SCRIPT, "worldName": drop_guard.WORLD})


def _our_world(binding: str, world: str, source: str) -> tuple[tuple[str, dict[str, Any]], ...]:
    """A script in an isolated world of ours and the binding it reports through, which exists in that world only
    (the page's scripts can neither see nor call it)."""
    return (("Runtime.addBinding", {"name": binding, "executionContextName": world}),
            ("Page.addScriptToEvaluateOnNewDocument", {"source": source, "worldName": world}))


def _cursor_hook(settings: TabSettings) -> tuple[tuple[str, dict[str, Any]], ...]:
    """The cursor at the pointer (browser/cursor_hook.py)."""
    hook = settings.cursor_hook
    return _our_world(hook.binding, hook.world, hook.script())


def _both_worlds(hook: CopyHook | PrintHook) -> tuple[tuple[str, dict[str, Any]], ...]:
    """A hook with a script in the page's own world (before its scripts), which hands over to our world's."""
    return (("Page.addScriptToEvaluateOnNewDocument", {"source": hook.page_world_script()}),
            *_our_world(hook.binding, hook.world, hook.our_world_script()))


async def prepare_subframe(cdp: CDPConnection, session_id: str, settings: TabSettings) -> None:
    """A cross-site iframe before its first script: its file choosers intercepted (browser/tabs.py hands them to
    the page it belongs to), the browser's keys guarded, its cursor and its prints told, the allow list on its
    documents, its own frames attached the same way."""
    calls: list[tuple[str, dict[str, Any]]] = [
        ("Page.enable", {}),
        ("Page.setInterceptFileChooserDialog", {"enabled": True}),
        _KEY_GUARD,
        _LINK_GUARD,
        _DROP_GUARD,
        ("Runtime.enable", {}),  # without it, the iframe's binding calls never reached us (checked)
        *_cursor_hook(settings),
        *_both_worlds(settings.print_hook),  # a print's start and end (browser/print_hook.py)
        *_FETCH,
        *_SUBFRAMES,
        ("Runtime.runIfWaitingForDebugger", {}),
    ]
    with contextlib.suppress(CDPError):  # (an iframe gone before it was set up)
        await asyncio.gather(*(cdp.call(method, params, session_id=session_id) for method, params in calls))


async def prepare(cdp: CDPConnection, page: Page, settings: TabSettings) -> None:
    """The calls go out together, with the one that lets the page run last, as some of them (Page.enable on a new
    tab) answer only once the page runs."""
    calls: list[tuple[str, dict[str, Any]]] = [
        ("Page.enable", {}),
        ("Runtime.enable", {}),
        ("Inspector.enable", {}),  # Inspector.targetCrashed: a renderer crash
        ("Page.setInterceptFileChooserDialog", {"enabled": True}),
        # Copied text (browser/copy_hook.py): the clipboard API's wrapper in the page's world, and our world.
        *_both_worlds(settings.copy_hook),
        _KEY_GUARD,
        _LINK_GUARD,
        _DROP_GUARD,
        *_cursor_hook(settings),
        *_both_worlds(settings.print_hook),  # a print's start and end (browser/print_hook.py)
        metrics(settings),
        # With an allow list, every document this page loads (its own navigations, redirects, links, scripts,
        # frames) is paused for `Tabs` to check its host first (core/urls.py).
        *_FETCH,
        *_SUBFRAMES,
        ("Runtime.runIfWaitingForDebugger", {}),
    ]
    await asyncio.gather(*(cdp.call(method, params, session_id=page.session_id) for method, params in calls))
    with contextlib.suppress(CDPError):
        window = await cdp.call("Browser.getWindowForTarget", {"targetId": page.target_id})
        if window.get("bounds", {}).get("windowState") != "fullscreen":
            # A popup window has its own toolbar and position: fullscreen covers the frame's screen exactly.
            await cdp.call("Browser.setWindowBounds", {"windowId": window["windowId"],
                                                       "bounds": {"windowState": "fullscreen"}})


__all__ = ["prepare", "prepare_subframe"]
