"""Files dropped from the driver's desktop onto a frame (`POST /frames/{id}/drop`) against a real service and page:
the page's drop zone gets them as `File`s (a text file's text, a PNG's pixel), a drop where the page takes none
leaves the page as it was (Chromium would load the file in its place), and a drop out of the frame, without a
point, or under a view token changes nothing. tests/pages/drop.html lays it out."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np
import pytest

from framestream.client import rgb_to_png
from tests.fixtures import service_fixture
from tests.integration.test_whole_tab import GREEN, MARKER, RED, Driver, drive_page
from tests.support import Service

pytestmark = pytest.mark.integration

service = service_fixture(scope="module")

ZONE, BESIDE = (400, 140), (100, 140)  # (x, y): the page's drop zone, and the page around it


@pytest.fixture
async def dropping(service: Service, pages: str) -> AsyncIterator[Driver]:
    async for d in drive_page(service, f"{pages}/drop.html"):
        yield d


def blue_png() -> bytes:
    return rgb_to_png(np.full((1, 1, 3), (40, 60, 220), np.uint8))


async def drop(service: Service, frame: str, query: str, files: list[tuple[str, bytes, str]], *,
               token: str | None = None) -> tuple[int, dict[str, Any]]:
    form = aiohttp.FormData()
    for name, data, kind in files:
        form.add_field("file", data, filename=name, content_type=kind)
    headers = {"Authorization": f"Bearer {token or service.token('drive', frame=frame)}"}
    async with aiohttp.ClientSession() as http, \
            http.post(f"{service.base}/frames/{frame}/drop{query}", data=form, headers=headers) as response:
        return response.status, await response.json()


def uploads(service: Service, frame: str) -> list[Path]:
    return sorted(p for p in (service.state_dir / "files" / frame / "uploads").rglob("*") if p.is_file())


HELLO = ("hello.txt", b"hello from the desktop\n", "text/plain")


async def test_dropped_files_reach_the_pages_drop_zone_and_nowhere_else(dropping: Driver, service: Service) -> None:
    d = dropping
    # Beside the zone: the page takes no drop there, and stays (its zone takes the next drop, below).
    status, body = await drop(service, d.frame, f"?x={BESIDE[0]}&y={BESIDE[1]}", [HELLO])
    assert (status, body) == (200, {"applied": True, "files": ["hello.txt"]}), body
    # On the zone: the text file's text and the PNG's blue pixel, read by the page.
    status, body = await drop(service, d.frame, f"?x={ZONE[0]}&y={ZONE[1]}",
                              [HELLO, ("blue.png", blue_png(), "image/png")])
    assert (status, body) == (200, {"applied": True, "files": ["hello.txt", "blue.png"]}), body
    await d.colour(MARKER, GREEN)
    # A drop the page does not like says so: the page is still the one that reads drops.
    status, _ = await drop(service, d.frame, f"?x={ZONE[0]}&y={ZONE[1]}", [("other.txt", b"no\n", "text/plain")])
    assert status == 200
    await d.colour(MARKER, RED)
    # Each drop's files kept in a folder of its own while the browser runs (the page may read them later).
    assert sorted(p.name for p in uploads(service, d.frame)) == ["blue.png", "hello.txt", "hello.txt", "other.txt"]


@pytest.mark.parametrize(("query", "token_role"), [
    ("?x=641&y=10", "drive"),  # outside the frame's 640x400 CSS pixels
    ("?x=-1&y=10", "drive"),
    ("?x=nan&y=10", "drive"),
    ("?y=10", "drive"),  # no point
    ("?x=10&y=10", "view"),  # a token that may not drive
])
async def test_a_bad_drop_is_refused_and_changes_nothing(dropping: Driver, service: Service, query: str,
                                                         token_role: str) -> None:
    d = dropping
    token = service.token(token_role, frame=d.frame)
    status, body = await drop(service, d.frame, query, [HELLO], token=token)
    assert (status, body["error"]) == ((403, "forbidden") if token_role == "view" else (400, "bad-input")), body
    assert uploads(service, d.frame) == []
