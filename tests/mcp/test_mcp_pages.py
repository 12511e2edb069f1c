"""`framestream mcp`'s pages and dialogs, driven by the official SDK's client over stdio against the real service.

tests/pages/tab.html (640x400): its `confirm` button paints the marker strip blue on OK and red on Cancel, its
`prompt` button green when answered "yes"; its `new tab` link opens tests/pages/tab_new.html (purple) in a new page;
its `hang` button runs a script that never returns; its `copy` button copies "copied-from-page". A model sees none
of the browser's dialogs, pages or clipboard in the picture: each step's answer must say what opened, and the tools
must deal with it."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from mcp import ClientSession

from framestream.client import png_to_rgb
from tests.client.agent_page import GREY, RED, near
from tests.fixtures import service_fixture
from tests.mcp.session import mcp_session, pngs, texts
from tests.support import Service

pytestmark = pytest.mark.integration

service = service_fixture("tab.html@640x400")

CONFIRM, PROMPT, NEW_TAB, HANG, SELECT, COPY = (100, 130), (320, 130), (320, 40), (320, 220), (540, 30), (320, 280)
MARKER = (320, 360)
BLUE, GREEN, PURPLE = (40, 60, 220), (30, 180, 60), (120, 40, 200)


async def call(session: ClientSession, tool: str, args: dict[str, Any], *, error: bool = False,
               ) -> tuple[str, Any]:
    """The tool's text and picture (RGB, or None); it must fail exactly when `error`."""
    result = await session.call_tool(tool, args)
    said = " ".join(texts(result))
    assert result.is_error == error, f"{tool} {args}: {said}"
    shots = pngs(result)
    return said, png_to_rgb(shots[0]) if shots else None


async def pages(session: ClientSession) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = json.loads((await call(session, "list_pages", {}))[0])
    return listed


async def test_an_agent_is_told_of_dialogs_and_new_pages_and_answers_switches_closes_and_reloads(
        service: Service) -> None:
    async with mcp_session(service) as session:
        tools = {tool.name for tool in (await session.list_tools()).tools}
        assert {"answer_dialog", "list_pages", "switch_page", "close_page", "reload_page"} <= tools

        # A confirm: the click's answer says it is open, with its message; other steps are refused, naming the tool.
        [first] = await pages(session)
        said, _ = await call(session, "click", {"x": CONFIRM[0], "y": CONFIRM[1]})
        assert f'A confirm dialog is open on page {first["page"]}: "sure?"' in said and "answer_dialog" in said, said
        said, _ = await call(session, "click", {"x": SELECT[0], "y": SELECT[1]}, error=True)
        assert "answer_dialog" in said, said
        # A screenshot says so too (the dialog is not in the page's picture), and says nothing once it is answered.
        said, rgb = await call(session, "screenshot", {})
        assert f'A confirm dialog is open on page {first["page"]}: "sure?"' in said and rgb is not None, said
        said, rgb = await call(session, "answer_dialog", {"accept": False})
        assert "confirm dialog answered Cancel" in said and "dialog is open" not in said, said
        assert near(rgb[MARKER[1], MARKER[0]], RED), rgb[MARKER[1], MARKER[0]]
        said, rgb = await call(session, "screenshot", {})
        assert said == "" and near(rgb[MARKER[1], MARKER[0]], RED), said

        # A prompt: its default told; answered with text.
        said, _ = await call(session, "click", {"x": PROMPT[0], "y": PROMPT[1]})
        assert '"say yes" (default text "no")' in said, said
        said, rgb = await call(session, "answer_dialog", {"accept": True, "text": "yes"})
        assert near(rgb[MARKER[1], MARKER[0]], GREEN), rgb[MARKER[1], MARKER[0]]
        said, _ = await call(session, "answer_dialog", {}, error=True)
        assert "no open dialog" in said, said

        # A copy: its text is told (a model cannot read the clipboard from the picture).
        said, _ = await call(session, "click", {"x": COPY[0], "y": COPY[1]})
        assert 'The page copied 16 characters to its clipboard: "copied-from-page"' in said, said

        # A link to a new tab: the answer names the new page, shown; list_pages has both.
        said, rgb = await call(session, "click", {"x": NEW_TAB[0], "y": NEW_TAB[1]})
        listed = await pages(session)
        [new] = [p for p in listed if p["page"] != first["page"]]
        assert f'A new page opened and is shown: {new["page"]} "' in said and "/tab_new.html" in said, said
        assert new["active"] and new["url"].endswith("/tab_new.html") and new["responsive"], listed
        assert near(rgb[200, 320], PURPLE), rgb[200, 320]
        # Back to the first page (as it was: green), then the new one closed.
        said, rgb = await call(session, "switch_page", {"page": first["page"]})
        assert f'Page {first["page"]} is shown now' in said, said
        assert near(rgb[MARKER[1], MARKER[0]], GREEN), rgb[MARKER[1], MARKER[0]]
        said, _ = await call(session, "close_page", {"page": new["page"]})
        assert f'Page {new["page"]} closed' in said, said
        assert [p["page"] for p in await pages(session)] == [first["page"]]
        said, _ = await call(session, "switch_page", {"page": "nope"}, error=True)
        assert "no page 'nope'" in said and first["page"] in said, said

        # A script that never returns: the click that started it, and any step once the page says it does not
        # answer, are refused naming reload_page, which brings the page back (grey again).
        said, _ = await call(session, "click", {"x": HANG[0], "y": HANG[1], "screenshot": False}, error=True)
        assert "does not answer" in said and "reload_page" in said, said
        deadline = time.monotonic() + 30
        while (await pages(session))[0]["responsive"]:
            assert time.monotonic() < deadline, "the hung page never said it does not answer"
        said, _ = await call(session, "click", {"x": SELECT[0], "y": SELECT[1]}, error=True)
        assert "reload_page" in said, said
        said, rgb = await call(session, "reload_page", {})
        assert near(rgb[MARKER[1], MARKER[0]], GREY), rgb[MARKER[1], MARKER[0]]
        # It answers again at once: listed so, and the next step is applied (a confirm: its dialog is told).
        assert (await pages(session))[0]["responsive"]
        said, _ = await call(session, "click", {"x": CONFIRM[0], "y": CONFIRM[1], "screenshot": False})
        said, rgb = await call(session, "answer_dialog", {"accept": True})
        assert near(rgb[MARKER[1], MARKER[0]], BLUE), rgb[MARKER[1], MARKER[0]]
