"""`framestream mcp` over stdio, driven by the official SDK's own client against the real service."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mcp import ClientSession
from mcp.types import EmbeddedResource

from framestream.client import Client, png_to_rgb, rgb_to_png
from framestream.core.tokens import derive_key, mint
from tests.client.agent_page import BUTTON, GREY, MARKS, RED, near
from tests.fixtures import service_fixture
from tests.mcp.session import mcp_session, pngs, texts
from tests.support import TEST_SECRET, Service, until

pytestmark = pytest.mark.integration

# One frame at the default dpr 2: screenshots come back at its CSS size.
service = service_fixture("agent.html@640x400")

TOOLS = {"list_frames", "screenshot", "click", "double_click", "move", "drag", "scroll", "type_text", "press",
         "navigate", "wait_for_settle", "ask_human", "open_frame", "resize_frame", "close_frame", "recorded_steps",
         "recorded_picture", "list_downloads", "read_download", "choose_files", "drop_files", "answer_dialog",
         "list_pages", "switch_page", "close_page", "reload_page"}


async def test_lists_the_tools(service: Service) -> None:
    async with mcp_session(service) as session:
        listed = await session.list_tools()
        assert {tool.name for tool in listed.tools} == TOOLS
        click = next(tool for tool in listed.tools if tool.name == "click")
        assert {"x", "y", "frame", "screenshot"} <= set(click.input_schema["properties"])


async def test_screenshot_is_a_png_in_css_pixels_with_the_page_colours_at_their_places(
        service: Service) -> None:
    async with mcp_session(service) as session:
        [frame] = service.frame_ids()
        listed = json.loads(texts(await session.call_tool("list_frames", {}))[0])
        assert [(f["frame"], f["width"], f["height"], f["dpr"]) for f in listed] == [(frame, 640, 400, 2)]
        settled = await session.call_tool("wait_for_settle", {"quiet_ms": 300})
        assert not settled.is_error, texts(settled)
        result = await session.call_tool("screenshot", {})  # the only frame: no need to name it
        assert not result.is_error, texts(result)
        [png] = pngs(result)
        rgb = png_to_rgb(png)
        assert rgb.shape == (400, 640, 3)
        for (x, y), colour in MARKS.items():
            assert near(rgb[y, x], colour), (x, y, rgb[y, x])
        assert near(rgb[BUTTON[1], BUTTON[0]], GREY)


async def test_click_and_see_the_result(service: Service) -> None:
    async with mcp_session(service) as session:
        [frame] = service.frame_ids()
        result = await session.call_tool("click", {"x": BUTTON[0], "y": BUTTON[1], "frame": frame})
        assert not result.is_error, texts(result)
        assert "click" in texts(result)[0]
        [png] = pngs(result)
        rgb = png_to_rgb(png)
        assert rgb.shape == (400, 640, 3)
        assert near(rgb[BUTTON[1], BUTTON[0]], RED), rgb[BUTTON[1], BUTTON[0]]
        no_picture = await session.call_tool("move", {"x": 5, "y": 5, "screenshot": False})
        assert not no_picture.is_error and pngs(no_picture) == []


async def test_an_agent_resizes_a_frame_and_sees_the_page_laid_out_at_the_new_size(service: Service) -> None:
    """tests/pages/resizable.html: a colour in each corner of the viewport, a button a click turns green."""
    corners = {(6, 6): (200, 40, 40), (-6, 6): (30, 180, 60), (6, -6): (30, 60, 220), (-6, -6): (240, 200, 0)}
    async with mcp_session(service) as session:
        opened = await session.call_tool("open_frame", {"url": f"{service.pages}/resizable.html", "width": 640,
                                                        "height": 400, "dpr": 1})
        assert not opened.is_error, texts(opened)
        frame = json.loads(texts(opened)[0])["frame"]
        clicked = await session.call_tool("click", {"x": 100, "y": 80, "frame": frame})
        assert not clicked.is_error and near(png_to_rgb(pngs(clicked)[0])[80, 100], (30, 180, 60)), texts(clicked)
        result = await session.call_tool("resize_frame", {"width": 390, "height": 300, "dpr": 1, "frame": frame})
        assert not result.is_error, texts(result)
        assert texts(result)[0] == f"frame {frame} is 390x300 CSS pixels at dpr 1"
        rgb = png_to_rgb(pngs(result)[0])
        assert rgb.shape == (300, 390, 3)
        for (x, y), colour in corners.items():
            assert near(rgb[y % 300, x % 390], colour), (x, y, rgb[y % 300, x % 390])
        assert near(rgb[80, 100], (30, 180, 60)), "in place: the page kept the state the click left"
        refused = await session.call_tool("resize_frame", {"width": 10, "height": 300, "frame": frame})
        assert refused.is_error and "out of range" in texts(refused)[0], texts(refused)
        closed = await session.call_tool("close_frame", {"frame": frame})
        assert not closed.is_error, texts(closed)


async def test_an_unknown_frame_answers_an_error_not_a_crash(service: Service) -> None:
    async with mcp_session(service) as session:
        for tool, args in [("click", {"x": 1, "y": 1, "frame": "nope"}), ("screenshot", {"frame": "nope"})]:
            result = await session.call_tool(tool, args)
            assert result.is_error
            assert "nope" in texts(result)[0] and "list_frames" in texts(result)[0]
        still = await session.call_tool("list_frames", {})
        assert not still.is_error


async def test_a_person_who_took_over_is_answered_plainly_and_not_retried(service: Service) -> None:
    [frame] = service.frame_ids()
    async with mcp_session(service) as session:
        await session.call_tool("list_frames", {})  # the server is up and connected
        # The person's grant is issued 3 s ahead (within the 5 s the contract tolerates): newer than the step
        # grant the server mints for the next click, as if the person took the frame between its mint and send.
        key = derive_key(TEST_SECRET.encode(), "test")
        person = mint(key, sandbox="test", role="drive", now=time.time() + 3, frame=frame, subject="alice", ttl=60)
        async with await Client.connect(service.base, token=service.token("view"), grants=person,
                                        reconnect=False) as client:
            await client.move(frame, 5, 5)
            result = await session.call_tool("click", {"x": 300, "y": 300})
            listed = json.loads(texts(await session.call_tool("list_frames", {}))[0])
            assert listed[0]["driver"] == "alice"
        assert result.is_error
        assert "a person has taken over" in texts(result)[0] and "not be retried" in texts(result)[0]
        assert "ask_human" in texts(result)[0]
        # The person's connection closed: their hold ended with it, and nobody drives.
        async def nobody_drives() -> bool | None:
            listed = json.loads(texts(await session.call_tool("list_frames", {}))[0])
            return True if listed[0]["driver"] is None else None

        await until("nobody drives once the person left", nobody_drives, within=10)


async def test_ask_human_returns_the_persons_note_and_the_agent_drives_again(service: Service) -> None:
    [frame] = service.frame_ids()
    async with mcp_session(service) as session:
        reloaded = await session.call_tool("navigate", {"action": "reload"})  # the button grey again
        assert not reloaded.is_error and near(png_to_rgb(pngs(reloaded)[0])[BUTTON[1], BUTTON[0]], GREY)
        key = derive_key(TEST_SECRET.encode(), "test")
        async with await Client.connect(service.base, token=service.token("drive", frame=frame, subject="alice"),
                                        grants=lambda _f: mint(key, sandbox="test", role="drive", now=time.time(),
                                                               frame=frame, subject="alice", ttl=60),
                                        reconnect=False) as alice:
            asked = asyncio.Event()
            stop = alice.listen(lambda m: asked.set() if m.get("type") == "help-requested" else None)
            await alice.watch(frame)
            asking = asyncio.create_task(session.call_tool("ask_human", {"reason": "please log in",
                                                                         "timeout_s": 120}))
            await asyncio.wait_for(asked.wait(), 30)
            stop()
            await alice.take_over(frame)
            await alice.release(frame, "done: logged in")
            answer = await asyncio.wait_for(asking, 30)
        assert not answer.is_error and '"done: logged in"' in texts(answer)[0]
        clicked = await session.call_tool("click", {"x": BUTTON[0], "y": BUTTON[1]})
        assert not clicked.is_error, texts(clicked)
        assert near(png_to_rgb(pngs(clicked)[0])[BUTTON[1], BUTTON[0]], RED)


async def test_ask_human_says_when_nobody_came(service: Service) -> None:
    async with mcp_session(service) as session:
        answer = await session.call_tool("ask_human", {"reason": "a CAPTCHA", "timeout_s": 1})
        assert not answer.is_error and "nobody took over" in texts(answer)[0]


async def test_a_download_reads_as_text_and_a_print_as_a_pdf(service: Service) -> None:
    # Two more frames (at dpr 1, as the pages are laid out), each gone at the end: the other tests see one frame.
    tab = service.create_frame(f"{service.pages}/tab.html", width=640, height=400, dpr=1)
    printing = service.create_frame(f"{service.pages}/print.html", width=640, height=400, dpr=1)
    try:
        async with mcp_session(service) as session:
            for frame, (x, y) in ((tab, (100, 270)), (printing, (120, 50))):  # a download link; window.print()
                clicked = await session.call_tool("click", {"x": x, "y": y, "frame": frame, "screenshot": False})
                assert not clicked.is_error, texts(clicked)
            [csv] = await until("the CSV", lambda: downloads_done(session, tab))
            [pdf] = await until("the print's PDF", lambda: downloads_done(session, printing))
            read = await session.call_tool("read_download", {"download": csv["download"], "frame": tab})
            assert texts(read) == [f"report.csv ({csv['size']} bytes)", "id,value\n1,42\n"]
            read = await session.call_tool("read_download", {"download": pdf["download"], "frame": printing})
            [file] = [c.resource for c in read.content if isinstance(c, EmbeddedResource)]
            assert file.mime_type == "application/pdf"
            assert file.uri == f"framestream://frames/{printing}/downloads/{pdf['download']}"
            assert base64.b64decode(getattr(file, "blob", ""))[:5] == b"%PDF-" and pdf["name"] == "A printed page.pdf"
            missing = await session.call_tool("read_download", {"download": "no-such-file", "frame": tab})
            assert missing.is_error and "list_downloads" in texts(missing)[0]
    finally:
        for frame in (tab, printing):
            service.request("DELETE", f"/frames/{frame}?purge=1")


async def downloads_done(session: ClientSession, frame: str) -> list[dict[str, Any]] | None:
    listed = await session.call_tool("list_downloads", {"frame": frame})
    assert not listed.is_error, texts(listed)
    downloads: list[dict[str, Any]] = json.loads(texts(listed)[0])
    return downloads if downloads and all(d["state"] == "done" for d in downloads) else None


async def test_an_agent_answers_a_file_chooser_and_drops_files_on_a_drop_zone(service: Service,
                                                                             tmp_path: Path) -> None:
    """tests/pages/files.html's file input opens a chooser (the click's answer says so), answered with a file of
    the sandbox: its marker shows the file's first bytes. tests/pages/drop.html's zone reads a text file and a PNG
    dropped on it: its bar turns green."""
    files = service.create_frame(f"{service.pages}/files.html", width=640, height=400, dpr=1)
    dropping = service.create_frame(f"{service.pages}/drop.html", width=640, height=400, dpr=1)
    picked = tmp_path / "picked.bin"
    picked.write_bytes(bytes([200, 10, 0]))
    hello, blue = tmp_path / "hello.txt", tmp_path / "blue.png"
    hello.write_text("hello from the desktop\n")
    blue.write_bytes(rgb_to_png(np.full((1, 1, 3), (40, 60, 220), np.uint8)))
    try:
        async with mcp_session(service) as session:
            none_open = await session.call_tool("choose_files", {"paths": [str(picked)], "frame": files})
            assert none_open.is_error and "no open file chooser" in texts(none_open)[0], texts(none_open)
            clicked = await session.call_tool("click", {"x": 100, "y": 30, "frame": files})
            assert not clicked.is_error and "A file chooser is open (one file" in texts(clicked)[0], texts(clicked)
            chosen = await session.call_tool("choose_files", {"paths": [str(picked)], "frame": files})
            assert not chosen.is_error, texts(chosen)
            [png] = pngs(chosen)
            assert near(png_to_rgb(png)[360, 320], (60, 200, 10)), png_to_rgb(png)[360, 320]  # one file, 200, 10
            missing = await session.call_tool("drop_files", {"paths": [str(tmp_path / "nope")], "x": 400,
                                                             "y": 140, "frame": dropping})
            assert missing.is_error and "no file at" in texts(missing)[0], texts(missing)
            dropped = await session.call_tool("drop_files", {"paths": [str(hello), str(blue)], "x": 400, "y": 140,
                                                             "frame": dropping})
            assert not dropped.is_error, texts(dropped)
            [png] = pngs(dropped)
            assert near(png_to_rgb(png)[360, 320], (30, 180, 60)), png_to_rgb(png)[360, 320]
    finally:
        for frame in (files, dropping):
            service.request("DELETE", f"/frames/{frame}?purge=1")
