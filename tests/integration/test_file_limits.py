"""Uploads and downloads stay within their limits against a real service and a real page (issue 32, #9 and #10).

#9: a file chooser's answer is admitted before its body is read (a superseded grant's 5 MB leaves nothing on
disk), at most 64 parts (3,000 tiny parts are refused at once while /healthz answers), within the answer's
bytes and the frame's upload quota (the oldest answers go), and whatever is refused leaves nothing behind.
#10: a running download that the count limit evicts is cancelled (its server sees the connection close) and its
file deleted, the frame's byte quota keeps the newest downloads, and files not in the index go.

The page is tests/pages/files.html (640x400 CSS at dpr 1), served with its downloads by a small HTTP server on
127.0.0.1 in this module, which can stream a body slowly for as long as the browser reads it.
"""

from __future__ import annotations

import asyncio
import http.server
import io
import json
import os
import re
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.fixtures import service_fixture
from tests.integration.test_whole_tab import Driver, drive_page
from tests.support import Service, until

pytestmark = pytest.mark.integration

MIB = 1024 * 1024
service = service_fixture(scope="module", env={
    "FRAMESTREAM_UPLOAD_MAX_BYTES": str(8 * MIB),
    "FRAMESTREAM_UPLOAD_QUOTA_BYTES": str(12 * MIB),
    "FRAMESTREAM_DOWNLOAD_MAX_BYTES": str(MIB),
    "FRAMESTREAM_DOWNLOAD_MAX_COUNT": "2",
    "FRAMESTREAM_DOWNLOAD_QUOTA_BYTES": str(MIB * 3 // 2),
})

MARKER = (360, 320)  # (y, x)
ONE, MANY = (100, 30), (320, 30)  # the file inputs: one file, several
TRICKLE, SMALL1, SMALL2, BIG1, BIG2 = "t", "1", "2", "b", "n"  # the keys that start the page's downloads


class Downloads:
    """The downloads' server: `/bytes/<n>/<name>` sends n bytes; `/trickle/<name>` sends 64 KiB, then a byte every
    50 ms for as long as the reader takes them, and records when the reader went away."""

    def __init__(self) -> None:
        self.began: dict[str, threading.Event] = {}
        self.closed: dict[str, threading.Event] = {}
        self.stop = threading.Event()
        self.base = ""

    def event(self, table: dict[str, threading.Event], name: str) -> threading.Event:
        return table.setdefault(name, threading.Event())

    async def wait(self, table: dict[str, threading.Event], name: str, within: float = 20.0) -> None:
        event = self.event(table, name)
        await until(f"{name} {'began' if table is self.began else 'closed'}",
                    lambda: asyncio.to_thread(event.wait, 0.5), within)


def _handler(downloads: Downloads) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"  # a body ends when the connection does: no length for the trickle

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            if self.path == "/files.html":
                page = (Path(__file__).parents[1] / "pages" / "files.html").read_bytes()
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(page)))
                self.end_headers()
                self.wfile.write(page)
                return
            sized = re.fullmatch(r"/bytes/(\d+)/(\w+)", self.path)
            trickle = re.fullmatch(r"/trickle/(\w+)", self.path)
            if not (sized or trickle):
                self.send_error(404)
                return
            name = (sized or trickle).group(2 if sized else 1)  # type: ignore[union-attr]
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Disposition", f'attachment; filename="{name}.bin"')
            if sized:
                self.send_header("Content-Length", sized.group(1))
            self.end_headers()
            try:
                if sized:
                    self.wfile.write(b"d" * int(sized.group(1)))
                    return
                self.wfile.write(b"t" * 65536)
                self.wfile.flush()
                downloads.event(downloads.began, name).set()
                while not downloads.stop.wait(0.05):
                    self.wfile.write(b"t")
                    self.wfile.flush()
            except OSError:
                downloads.event(downloads.closed, name).set()

    return Handler


@pytest.fixture(scope="module")
def download_server() -> Iterator[Downloads]:
    downloads = Downloads()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(downloads))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    downloads.base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield downloads
    finally:
        downloads.stop.set()
        server.shutdown()
        server.server_close()


@pytest.fixture
async def driver(service: Service, download_server: Downloads) -> AsyncIterator[Driver]:
    # Served by the downloads' server: its links are same-origin `<a download>`s, downloads without navigations.
    async for d in drive_page(service, f"{download_server.base}/files.html"):
        yield d


def multipart(files: list[tuple[str, bytes]], field: str = "file") -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    body = b"".join(
        f'--{boundary}\r\nContent-Disposition: form-data; name="{field}"; filename="{name}"\r\n'
        f"Content-Type: application/octet-stream\r\n\r\n".encode() + content + b"\r\n"
        for name, content in files) + f"--{boundary}--\r\n".encode()
    return body, f"multipart/form-data; boundary={boundary}"


async def upload(service: Service, frame: str, chooser: str, grant: str,
                 files: list[tuple[str, bytes]]) -> tuple[int, Any]:
    body, content_type = multipart(files)
    async with aiohttp.ClientSession() as http, http.post(
            f"{service.base}/frames/{frame}/file-chooser/{chooser}", data=io.BytesIO(body),
            headers={"Authorization": f"Bearer {grant}", "Content-Type": content_type}) as resp:
        return resp.status, await resp.json()


def uploaded(service: Service, frame: str) -> list[Path]:
    """Every file under the frame's uploads folder."""
    return sorted(p for p in (service.state_dir / "files" / frame / "uploads").rglob("*") if p.is_file())


async def chooser_opened(driver: Driver, at: tuple[int, int]) -> dict[str, Any]:
    """Click a file input; the new chooser's message (it may come before the click's ack)."""
    def choosers() -> list[dict[str, Any]]:
        return [m for m in driver.client.texts if m.get("type") == "file-chooser"]
    seen = {m["id"] for m in choosers()}
    assert (await driver.click(*at))["type"] == "input-ack"
    deadline = time.monotonic() + 15
    while not (new := [m for m in choosers() if m["id"] not in seen]):
        await driver.client.next_text("file-chooser", timeout=max(0.0, deadline - time.monotonic()))
    return new[0]


async def test_an_upload_under_a_superseded_grant_is_refused_unread_and_leaves_nothing(
        driver: Driver, service: Service) -> None:
    chooser = await chooser_opened(driver, ONE)
    newer = service.token("drive", frame=driver.frame, subject="agent")
    status, body = service.request("POST", f"/frames/{driver.frame}/input", {
        "seq": 1, "event": {"kind": "mouse", "action": "move", "x": 5, "y": 5}}, token=newer)
    assert status == 200, body  # the agent's newer grant drives now

    status, body = await upload(service, driver.frame, chooser["id"], driver.grant, [("big.bin", b"\1" * 5_000_000)])
    assert status == 409 and body["error"] == "superseded", body
    assert uploaded(service, driver.frame) == []

    status, body = await upload(service, driver.frame, chooser["id"], newer, [("ok.bin", bytes([7, 9]))])
    assert status == 200 and body["files"] == ["ok.bin"], body
    await driver.colour(MARKER, (60, 7, 9))
    assert [p.name for p in uploaded(service, driver.frame)] == ["ok.bin"]


async def test_a_step_grant_answers_once_and_its_replay_is_refused_unread(driver: Driver, service: Service) -> None:
    chooser = await chooser_opened(driver, ONE)
    step = service.token("drive", frame=driver.frame, step=True)
    status, body = await upload(service, driver.frame, chooser["id"], step, [("s.bin", bytes([11, 12]))])
    assert status == 200, body  # spent when admitted, before the body; the files follow under it
    await driver.colour(MARKER, (60, 11, 12))
    driver.grant = service.token("drive", frame=driver.frame)  # newer than the step grant: the clicks go on
    chooser = await chooser_opened(driver, ONE)
    status, body = await upload(service, driver.frame, chooser["id"], step, [("again.bin", b"\1" * 1_000_000)])
    assert status == 409 and body["error"] == "replayed", body
    assert [p.name for p in uploaded(service, driver.frame)] == ["s.bin"]


async def test_three_thousand_parts_are_refused_at_once_while_healthz_answers(driver: Driver,
                                                                            service: Service) -> None:
    chooser = await chooser_opened(driver, MANY)
    assert chooser["multiple"] is True

    async def healthz(http: aiohttp.ClientSession) -> int:
        async with http.get(f"{service.base}/healthz") as resp:
            return resp.status

    async with aiohttp.ClientSession() as http:
        answers = await asyncio.gather(
            upload(service, driver.frame, chooser["id"], driver.grant, [("a", b"x")] * 3000),
            *(healthz(http) for _ in range(20)))
    (status, body), health = answers[0], answers[1:]
    assert status == 413 and "at most 64 parts" in body["message"], body
    assert health == [200] * 20
    assert uploaded(service, driver.frame) == []

    # The chooser is still open, and an answer within the limits works: repeated names are kept apart.
    status, body = await upload(service, driver.frame, chooser["id"], driver.grant,
                                [("a", bytes([10, 20])), ("a", bytes([30, 40]))])
    assert status == 200 and body["files"] == ["a", "2-a"], body
    await driver.colour(MARKER, (120, 10, 20))
    assert sorted(p.read_bytes() for p in uploaded(service, driver.frame)) == [bytes([10, 20]), bytes([30, 40])]


async def test_answers_past_a_limit_leave_nothing_and_the_quota_drops_the_oldest(driver: Driver,
                                                                               service: Service) -> None:
    chooser = await chooser_opened(driver, ONE)
    status, body = await upload(service, driver.frame, chooser["id"], driver.grant, [("a", b"1"), ("b", b"2")])
    assert status == 400 and body["error"] == "bad-input", body  # this chooser takes one file
    status, body = await upload(service, driver.frame, chooser["id"], driver.grant, [("a", b"\1" * (9 * MIB))])
    assert status == 413 and "FRAMESTREAM_UPLOAD_MAX_BYTES" in body["message"], body
    assert uploaded(service, driver.frame) == []

    folders = []
    for k in range(3):  # 5 MB answers within a 12 MiB quota: the third takes the first one's place
        if k:
            chooser = await chooser_opened(driver, ONE)
        status, body = await upload(service, driver.frame, chooser["id"], driver.grant,
                                    [(f"f{k}", bytes([k + 1, 5]) * 2_500_000)])
        assert status == 200, body
        await driver.colour(MARKER, (60, k + 1, 5))
        folders.append(next(p.parent for p in uploaded(service, driver.frame) if p.name == f"f{k}"))
    assert not folders[0].exists() and folders[1].exists() and folders[2].exists()
    assert sum(p.stat().st_size for p in uploaded(service, driver.frame)) <= 12 * MIB


async def start_download(driver: Driver, key: str) -> None:
    """Press the page's key for a download (keys, not clicks: hovering a link shows its URL in a popup window,
    and while a popup is up pointer input goes through X, which raced the page's own click)."""
    code = f"Key{key.upper()}" if key.isalpha() else f"Digit{key}"
    answer = await driver.send({"type": "input", "events": [
        {"kind": "key", "action": "down", "key": key, "code": code, "modifiers": 0},
        {"kind": "key", "action": "up", "key": key, "code": code, "modifiers": 0}]})
    assert answer["type"] == "input-ack", answer


def _on_disk(service: Service, frame: str) -> set[str]:
    folder = service.state_dir / "files" / frame / "downloads"
    return set(os.listdir(folder)) if folder.is_dir() else set()


def _listing(service: Service, driver: Driver) -> list[dict[str, Any]]:
    status, body = service.request("GET", f"/frames/{driver.frame}/downloads", token=driver.grant)
    assert status == 200, body
    return list(body["downloads"])


async def test_an_evicted_running_download_is_cancelled_and_its_file_deleted(
        driver: Driver, service: Service, download_server: Downloads) -> None:
    await start_download(driver, TRICKLE)
    trickle = await driver.text_of("download", name="t.bin", state="started")
    await download_server.wait(download_server.began, "t")

    async def trickle_on_disk() -> bool:  # the browser has taken it as a download: the next click is a new one
        return any(name.startswith(trickle["id"]) for name in _on_disk(service, driver.frame))
    await until("the running download's file", trickle_on_disk, 15)
    stray = service.state_dir / "files" / driver.frame / "downloads" / "stray"
    stray.write_bytes(b"not in the index")
    os.utime(stray, (time.time() - 60, time.time() - 60))

    await start_download(driver, SMALL1)
    s1 = await driver.text_of("download", name="s1.bin", state="done")
    await start_download(driver, SMALL2)  # a third download past the count of 2: the oldest, still running, goes
    s2 = await driver.text_of("download", name="s2.bin", state="done")
    await download_server.wait(download_server.closed, "t")  # the browser stopped fetching it
    assert (await driver.text_of("download", id=trickle["id"], state="failed"))["size"] < MIB

    kept = {"index.json", s1["id"], s2["id"]}

    async def only_kept() -> bool:
        return _on_disk(service, driver.frame) == kept
    await until(f"only {kept} on disk (have {_on_disk(service, driver.frame)})", only_kept, 15)
    assert [(d["id"], d["state"]) for d in _listing(service, driver)] == [(s1["id"], "done"), (s2["id"], "done")]
    index = json.loads((service.state_dir / "files" / driver.frame / "downloads" / "index.json").read_text())
    assert [d["id"] for d in index["downloads"]] == [s1["id"], s2["id"]]


async def test_the_frames_download_quota_keeps_the_newest(driver: Driver, service: Service) -> None:
    await start_download(driver, BIG1)
    b1 = await driver.text_of("download", name="b1.bin", state="done")
    await start_download(driver, BIG2)  # 800,000 + 900,000 bytes pass the quota of 1.5 MiB: the oldest goes
    b2 = await driver.text_of("download", name="b2.bin", state="done")
    assert b2["size"] == 900_000

    async def only_newest() -> bool:
        return _on_disk(service, driver.frame) == {"index.json", b2["id"]}
    await until("only the newest download on disk", only_newest, 15)
    assert [d["id"] for d in _listing(service, driver)] == [b2["id"]]
    assert b1["id"] not in {d["id"] for d in _listing(service, driver)}

