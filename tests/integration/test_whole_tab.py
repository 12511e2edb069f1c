"""A frame is a whole browser tab: popups, new tabs, dialogs, select lists, file choosers, a hung page, navigation,
downloads and the clipboard, each driven through the stream and checked by the decoded picture.

The test page tests/pages/tab.html (640x400 CSS at dpr 1, so CSS pixels are picture pixels) paints the outcome of
each task into its marker band at the bottom.
"""

from __future__ import annotations

import json
import os
import time
import urllib.request
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.fixtures import service_fixture
from tests.support import Service, StreamClient, colour_near

pytestmark = pytest.mark.integration

service = service_fixture(scope="module")

MARKER = (360, 320)  # (y, x)
GREY = (128, 128, 128)
RED = (220, 30, 30)
BLUE = (40, 60, 220)
GREEN = (30, 180, 60)
CYAN = (20, 200, 200)
TEAL = (20, 150, 150)
YELLOW = (240, 200, 0)
ORANGE = (240, 140, 20)
PURPLE = (120, 40, 200)
TOP = (200, 300)  # a point of the page's background away from any control


class Driver:
    """One viewer that drives one frame: input, page, navigate and dialog-answer messages, answered in order."""

    def __init__(self, service: Service, client: StreamClient, frame: str) -> None:
        self.service = service
        self.client = client
        self.frame = frame
        self.seq = 0
        self.grant = service.token("drive", frame=frame)

    async def send(self, message: dict[str, Any]) -> dict[str, Any]:
        """Send a driver message; its `input-ack` or `error` (by seq)."""
        self.seq += 1
        seq = self.seq
        await self.client.send({**message, "frame": self.frame, "grant": self.grant, "seq": seq})
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            msg = await self.client.next_text(timeout=deadline - time.monotonic())
            if msg.get("type") in ("input-ack", "error") and msg.get("seq") == seq:
                return msg
        raise AssertionError(f"no answer to seq {seq}")

    async def click(self, x: float, y: float) -> dict[str, Any]:
        """Move there, press and release, as a person's click (the date field's button needs the hover)."""
        return await self.send({"type": "input", "events": [
            {"kind": "mouse", "action": "move", "x": x, "y": y},
            {"kind": "mouse", "action": "down", "x": x, "y": y},
            {"kind": "mouse", "action": "up", "x": x, "y": y}]})

    async def text_of(self, type_: str, timeout: float = 15.0, **fields: Any) -> dict[str, Any]:
        """The first text message of `type_` whose fields match (already received ones count)."""
        for msg in self.client.texts:
            if msg.get("type") == type_ and all(msg.get(k) == v for k, v in fields.items()):
                return msg
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            msg = await self.client.next_text(timeout=left)
            if msg.get("type") == type_ and all(msg.get(k) == v for k, v in fields.items()):
                return msg
        raise AssertionError(f"no {type_} {fields}; got {self.client.texts[-6:]}")

    async def pages(self, count: int, timeout: float = 15.0) -> list[dict[str, Any]]:
        """The frame's pages once there are `count` of them (from frame-state)."""
        deadline = time.monotonic() + timeout
        while True:
            states = [m for m in self.client.texts if m.get("type") == "frame-state" and "pages" in m]
            if states and len(states[-1]["pages"]) == count:
                return list(states[-1]["pages"])
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"never {count} pages; last {states[-1:]}")
            await self.client.next_text("frame-state", timeout=left)

    async def colour(self, at: tuple[int, int], rgb: tuple[int, int, int], timeout: float = 15.0) -> np.ndarray:
        return await self.client.wait_for_colour(self.frame, at, rgb, timeout)


async def drive_page(service: Service, url: str, marker: tuple[int, int] | None = MARKER) -> AsyncIterator[Driver]:
    """A fresh 640x400 frame of `url`, watched and driven by one viewer until the test ends (then purged); it starts
    once the page shows its grey `marker` (None: at once)."""
    frame = service.create_frame(url, width=640, height=400, dpr=1)
    client = await StreamClient.connect(service, service.token("drive", frame=frame))
    await client.watch(frame)
    d = Driver(service, client, frame)
    if marker is not None:
        await d.colour(marker, GREY)
    yield d
    await client.close()
    service.request("DELETE", f"/frames/{frame}?purge=1")


@pytest.fixture
async def driver(service: Service, pages: str) -> AsyncIterator[Driver]:
    async for d in drive_page(service, f"{pages}/tab.html"):
        yield d


async def test_a_popup_takes_the_clicks_and_closing_it_hands_the_frame_back(driver: Driver) -> None:
    assert (await driver.click(100, 40))["type"] == "input-ack"
    pages = await driver.pages(2)
    assert [p["active"] for p in pages] == [False, True]
    await driver.colour(TOP, ORANGE)  # the popup covers the frame's screen
    assert (await driver.click(100, 40))["type"] == "input-ack"  # its "done" button: paints the opener, closes
    await driver.pages(1)
    await driver.colour(MARKER, CYAN)
    assert (await driver.click(320, 40))["type"] == "input-ack"  # the opener takes input again: a new tab
    await driver.pages(2)


async def test_a_new_tab_is_driven_and_pages_are_switched_and_closed(driver: Driver) -> None:
    await driver.click(320, 40)
    pages = await driver.pages(2)
    first, tab = pages[0]["id"], pages[1]["id"]
    await driver.colour(TOP, PURPLE)
    await driver.click(100, 40)  # the new tab's own button
    await driver.colour(TOP, YELLOW)
    assert (await driver.send({"type": "page", "action": "activate", "page": first}))["type"] == "input-ack"
    await driver.colour(MARKER, GREY)
    assert (await driver.send({"type": "page", "action": "close", "page": tab}))["type"] == "input-ack"
    assert [p["id"] for p in await driver.pages(1)] == [first]
    refused = await driver.send({"type": "page", "action": "close", "page": first})
    assert refused["code"] == "bad-input"
    unknown = await driver.send({"type": "page", "action": "activate", "page": "p999"})
    assert unknown["code"] == "unknown-page"


async def test_confirm_and_prompt_are_told_and_answered_by_the_driver(driver: Driver) -> None:
    # Acknowledged when the dialog opens: a click that waited on the page for its 5 s would end in an error.
    assert (await driver.click(100, 130))["type"] == "input-ack"
    dialog = await driver.text_of("dialog", kind="confirm")
    assert dialog["message"] == "sure?"
    blocked = await driver.click(500, 300)
    assert blocked["code"] == "dialog-open"
    answer = await driver.send({"type": "dialog-answer", "id": dialog["id"], "accept": True})
    assert answer["type"] == "input-ack"
    await driver.text_of("dialog-closed", id=dialog["id"])
    await driver.colour(MARKER, BLUE)

    await driver.click(320, 130)
    prompt = await driver.text_of("dialog", kind="prompt")
    assert prompt["default"] == "no"
    await driver.send({"type": "dialog-answer", "id": prompt["id"], "accept": True, "text": "yes"})
    await driver.colour(MARKER, GREEN)
    assert (await driver.send({"type": "dialog-answer", "id": prompt["id"], "accept": True}))["code"] \
        == "unknown-dialog"


async def test_a_select_option_is_picked_with_the_mouse(driver: Driver) -> None:
    await driver.click(540, 30)
    # The list opens below the select as the browser's own popup, over an empty white area: its extent is where
    # that area is no longer white.
    deadline = time.monotonic() + 15
    rows: np.ndarray = np.array([])
    while time.monotonic() < deadline and rows.size == 0:
        picture = await driver.client.latest_picture_after_keyframe_request(driver.frame)
        area = picture[52:180, 452:628].astype(int)
        rows = np.nonzero((np.abs(area - 255) > 8).any(axis=2).any(axis=1))[0] + 52
    assert rows.size, "the select list never showed"
    third = int(rows[0] + (rows[-1] - rows[0]) * 5 // 6)  # the middle of the third of three options
    assert (await driver.click(540, third))["type"] == "input-ack"
    await driver.colour(MARKER, YELLOW)
    await driver.click(100, 130)  # the page takes input again afterwards
    await driver.text_of("dialog", kind="confirm")


async def test_a_file_chooser_takes_an_upload_and_a_cancel(driver: Driver, service: Service) -> None:
    await driver.click(100, 210)
    chooser = await driver.text_of("file-chooser")
    assert chooser["multiple"] is False and chooser["accept"] == [".bin", "image/png"]
    status, body = _upload(service, driver, chooser["id"], [("colour.bin", bytes([200, 50, 90, 0]))])
    assert status == 200 and body["files"] == ["colour.bin"], body
    await driver.text_of("file-chooser-closed", id=chooser["id"])
    await driver.colour(MARKER, (200, 50, 90))
    uploads = list((service.state_dir / "files" / driver.frame / "uploads").rglob("colour.bin"))
    assert len(uploads) == 1 and uploads[0].read_bytes()[:3] == bytes([200, 50, 90])

    await driver.click(100, 210)
    again = await driver.text_of("file-chooser", id=f"c{int(chooser['id'][1:]) + 1}")
    status, body = _request(service, "DELETE", f"/frames/{driver.frame}/file-chooser/{again['id']}", driver.grant)
    assert status == 200, body
    await driver.colour(MARKER, TEAL)
    status, body = _request(service, "DELETE", f"/frames/{driver.frame}/file-chooser/{again['id']}", driver.grant)
    assert status == 404 and body["error"] == "unknown-file-chooser"


async def test_a_hung_page_is_told_and_a_reload_brings_it_back(driver: Driver) -> None:
    # The marker blue first (a confirm's OK), so the reloaded page is seen by its grey.
    await driver.click(100, 130)
    confirm = await driver.text_of("dialog", kind="confirm")
    await driver.send({"type": "dialog-answer", "id": confirm["id"], "accept": True})
    await driver.colour(MARKER, BLUE)
    answer = await driver.click(320, 220)  # while (true) {}
    assert answer.get("code") == "unresponsive", answer
    pages = [m for m in driver.client.texts if m.get("type") == "frame-state" and m.get("pages")]
    assert pages[-1]["pages"][0]["responsive"] is False
    assert (await driver.click(100, 130)).get("code") == "unresponsive"  # refused at once, not queued
    page = pages[-1]["pages"][0]["id"]
    seen = len(driver.client.texts)
    assert (await driver.send({"type": "page", "action": "reload", "page": page}))["type"] == "input-ack"
    # The reloaded page answers as soon as it shows: a click is applied (its confirm opens), not refused as
    # `unresponsive` until the probe's next look (up to 4 s on), and the frame's state says it answers.
    await driver.colour(MARKER, GREY)
    clicked = len(driver.client.texts)
    assert (await driver.click(100, 130)).get("type") == "input-ack"
    deadline = time.monotonic() + 15
    while not any(m.get("type") == "dialog" for m in driver.client.texts[clicked:]):
        await driver.client.next_text(timeout=deadline - time.monotonic())
    states = [m for m in driver.client.texts[seen:] if m.get("type") == "frame-state" and m.get("pages")]
    assert states and states[-1]["pages"][0]["responsive"] is True, states


async def test_navigation_goes_back_and_forward_and_never_leaves_the_frames_pages(driver: Driver,
                                                                                pages: str) -> None:
    new = f"{pages}/tab_new.html"
    assert (await driver.send({"type": "navigate", "url": new}))["type"] == "input-ack"
    await driver.colour(TOP, PURPLE)
    assert (await driver.text_of("frame-state", url=new))["url"] == new
    assert (await driver.send({"type": "navigate", "action": "back"}))["type"] == "input-ack"
    await driver.colour(MARKER, GREY)
    assert (await driver.send({"type": "navigate", "action": "forward"}))["type"] == "input-ack"
    await driver.colour(TOP, PURPLE)
    await driver.click(100, 40)  # the page paints itself yellow; a reload brings back what it loads as
    await driver.colour(TOP, YELLOW)
    assert (await driver.send({"type": "navigate", "action": "reload"}))["type"] == "input-ack"
    await driver.colour(TOP, PURPLE)
    await driver.send({"type": "navigate", "action": "back"})
    await driver.colour(MARKER, GREY)
    # The first page has no history before it: Back answers an error and the frame stays where it is.
    assert (await driver.send({"type": "navigate", "action": "back"}))["code"] == "bad-input"
    await driver.send({"type": "input", "events": [
        {"kind": "key", "action": "down", "key": "Alt", "code": "AltLeft", "modifiers": 1},
        {"kind": "key", "action": "down", "key": "ArrowLeft", "code": "ArrowLeft", "modifiers": 1},
        {"kind": "key", "action": "up", "key": "ArrowLeft", "code": "ArrowLeft", "modifiers": 1},
        {"kind": "key", "action": "up", "key": "Alt", "code": "AltLeft", "modifiers": 0}]})
    await driver.colour(MARKER, GREY)
    status, frame = driver.service.get(f"/frames/{driver.frame}")
    assert status == 200 and frame["url"] == f"{pages}/tab.html"
    refused = await driver.send({"type": "navigate", "url": "file:///etc/passwd"})
    assert refused["code"] == "bad-input"
    status, body = _request(driver.service, "POST", f"/frames/{driver.frame}/navigate", driver.grant,
                            json.dumps({"seq": 1, "url": new}).encode(), content_type="application/json")
    assert status == 200 and body["url"] == new, body
    await driver.colour(TOP, PURPLE)


async def test_a_download_is_told_fetched_and_purged_with_the_frame(driver: Driver, service: Service,
                                                                   pages: str) -> None:
    home_downloads = Path.home() / "Downloads"
    before = set(os.listdir(home_downloads)) if home_downloads.is_dir() else set()
    await driver.click(100, 270)
    done = await driver.text_of("download", state="done")
    assert done["name"] == "report.csv" and done["size"] == len(b"id,value\n1,42\n")
    status, listing = _request(service, "GET", f"/frames/{driver.frame}/downloads", driver.grant)
    assert status == 200 and [d["id"] for d in listing["downloads"]] == [done["id"]]
    status, data = _request(service, "GET", f"/frames/{driver.frame}/downloads/{done['id']}", driver.grant)
    assert status == 200 and data == (Path(__file__).parents[1] / "pages" / "report.csv").read_bytes()
    view = service.token("view", frame=driver.frame)
    assert _request(service, "GET", f"/frames/{driver.frame}/downloads/{done['id']}", view)[0] == 403
    after = set(os.listdir(home_downloads)) if home_downloads.is_dir() else set()
    assert after == before, "nothing lands in $HOME"
    files = service.state_dir / "files" / driver.frame
    assert (files / "downloads" / done["id"]).is_file()
    status, _ = service.request("DELETE", f"/frames/{driver.frame}?purge=1")
    assert status == 200 and not files.exists()


async def test_copied_text_reaches_drivers_only_and_a_paste_is_a_real_paste(driver: Driver,
                                                                          service: Service) -> None:
    watcher = await StreamClient.connect(service, service.token("view", frame=driver.frame))
    await watcher.watch(driver.frame)
    await driver.click(320, 280)
    copied = await driver.text_of("clipboard")
    assert copied["text"] == "copied-from-page"
    await driver.click(540, 220)
    await driver.send({"type": "input", "event": {"kind": "paste", "text": "pasted-text"}})
    await driver.colour(MARKER, GREEN)
    await watcher.wait_for_colour(driver.frame, MARKER, GREEN)
    assert not [m for m in watcher.texts if m.get("type") == "clipboard"]


async def test_webgl_draws_its_triangle(service: Service, pages: str) -> None:
    frame = service.create_frame(f"{pages}/webgl.html", width=400, height=400, dpr=1)
    client = await StreamClient.connect(service, service.token("view", frame=frame))
    await client.watch(frame)
    picture = await client.wait_for_colour(frame, (230, 200), (230, 25, 204))
    assert colour_near(picture[110, 110], (0, 0, 0)), "outside the triangle the canvas is cleared black"
    await client.close()
    service.request("DELETE", f"/frames/{frame}?purge=1")


def _request(service: Service, method: str, path: str, grant: str, data: bytes | None = None, *,
             content_type: str | None = None) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {grant}"}
    if content_type:
        headers["Content-Type"] = content_type
    req = urllib.request.Request(service.base + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            payload, status, ctype = resp.read(), resp.status, resp.headers.get("Content-Type", "")
    except urllib.error.HTTPError as err:
        payload, status, ctype = err.read(), err.code, err.headers.get("Content-Type", "")
    return status, (json.loads(payload) if "json" in ctype else payload)


def _upload(service: Service, driver: Driver, chooser: str, files: list[tuple[str, bytes]]) -> tuple[int, Any]:
    boundary = uuid.uuid4().hex
    body = b"".join(
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
        f"Content-Type: application/octet-stream\r\n\r\n".encode() + content + b"\r\n"
        for name, content in files) + f"--{boundary}--\r\n".encode()
    return _request(service, "POST", f"/frames/{driver.frame}/file-chooser/{chooser}", driver.grant, body,
                    content_type=f"multipart/form-data; boundary={boundary}")


@pytest.fixture
async def more(service: Service, pages: str) -> AsyncIterator[Driver]:
    async for d in drive_page(service, f"{pages}/tab_more.html"):
        yield d


async def test_no_native_pickers_or_prompts_and_a_date_is_picked_with_the_mouse(more: Driver) -> None:
    await more.colour((300, 320), GREEN)  # showOpenFilePicker and friends are not offered: pages use <input type=file>
    await more.click(415, 40)  # Notification.requestPermission(): denied by policy, no prompt over the page
    await more.colour(MARKER, (60, 60, 60))
    before = await more.client.latest_picture_after_keyframe_request(more.frame)
    await more.click(203, 28)  # the date field's calendar button: the browser's own popup
    deadline = time.monotonic() + 15
    rows: np.ndarray = np.array([])
    while time.monotonic() < deadline and rows.size < 60:
        picture = await more.client.latest_picture_after_keyframe_request(more.frame)
        changed = (np.abs(picture[50:290, 10:330].astype(int) - before[50:290, 10:330].astype(int)) > 24).any(axis=2)
        rows, cols = np.nonzero(changed)
    assert rows.size >= 60, "the date picker never showed"
    top, bottom, left, right = (int(v) for v in (rows.min() + 50, rows.max() + 50, cols.min() + 10, cols.max() + 10))
    # A day in the middle of the month grid.
    assert (await more.click((left + right) // 2, (top + bottom) // 2))["type"] == "input-ack"
    await more.colour(MARKER, BLUE)


async def test_beforeunload_is_asked_and_the_mouse_back_button_reaches_the_page(more: Driver) -> None:
    await more.send({"type": "input", "events": [
        {"kind": "mouse", "action": "down", "x": 540, "y": 130, "button": "back", "buttons": 8},
        {"kind": "mouse", "action": "up", "x": 540, "y": 130, "button": "back", "buttons": 0}]})
    await more.colour(MARKER, ORANGE)
    await more.click(100, 118)
    await more.send({"type": "input", "event": {"kind": "text", "text": "unsaved"}})
    assert (await more.click(320, 120))["type"] == "input-ack"  # leaving asks first
    dialog = await more.text_of("dialog", kind="beforeunload")
    assert (await more.send({"type": "dialog-answer", "id": dialog["id"], "accept": True}))["type"] == "input-ack"
    await more.colour(TOP, PURPLE)


async def test_metrics_count_what_pages_did(driver: Driver, service: Service) -> None:
    await driver.click(100, 130)
    dialog = await driver.text_of("dialog", kind="confirm")
    _, text = service.get("/metrics", token=None)
    body = text.decode()
    assert f'framestream_open_dialogs{{frame="{driver.frame}"}} 1' in body
    assert f'framestream_dialogs_total{{frame="{driver.frame}",kind="confirm"}} 1' in body
    assert f'framestream_pages{{frame="{driver.frame}"}} 1' in body
    await driver.send({"type": "dialog-answer", "id": dialog["id"], "accept": False})
    await driver.colour(MARKER, RED)
    _, text = service.get("/metrics", token=None)
    assert f'framestream_open_dialogs{{frame="{driver.frame}"}} 0' in text.decode()


async def test_a_page_past_the_limit_is_refused_and_the_frame_goes_on(driver: Driver) -> None:
    first = (await driver.pages(1))[0]["id"]
    for count in range(2, 9):  # the first page and seven tabs: the limit of 8
        await driver.click(320, 40)
        await driver.pages(count)
        assert (await driver.send({"type": "page", "action": "activate", "page": first}))["type"] == "input-ack"
    await driver.click(320, 40)  # a ninth page
    refused = await driver.text_of("error", code="page-limit")
    assert "at most 8 pages" in refused["message"]
    assert len(await driver.pages(8)) == 8
    await driver.colour(MARKER, GREY)
    await driver.click(100, 130)  # the frame still takes input
    await driver.text_of("dialog", kind="confirm")
