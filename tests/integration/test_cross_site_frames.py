"""A file chooser in a cross-site iframe (issue 32, suspected and confirmed): such a frame is a browser target of
its own, and without a session of ours its `<input type=file>` opened GTK's native "Open File" dialog on the
frame's screen, where a driver could browse the service's own files and upload any of them. Now it is
intercepted like the page's own and answered the same way; no native window opens."""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import AsyncIterator

import pytest

from tests.fixtures import service_fixture
from tests.integration.test_whole_tab import Driver, _upload, drive_page
from tests.support import Service, browser_pid

service = service_fixture(scope="module")

INSIDE = (200, 400)  # (y, x): in the iframe, below its file input


@pytest.fixture
async def framed(service: Service, pages: str) -> AsyncIterator[Driver]:
    async for d in drive_page(service, f"{pages}/cross_site.html", marker=INSIDE):
        yield d


def windows(service: Service, frame: str) -> str:
    """The titles of the top-level windows on the frame's display (read with its own cookie)."""
    with open(f"/proc/{browser_pid(service, frame)}/environ", "rb") as fh:
        env = {k.decode(): v.decode() for k, _, v in (i.partition(b"=") for i in fh.read().split(b"\0")) if k}
    done = subprocess.run(["xwininfo", "-root", "-children", "-display", env["DISPLAY"]], capture_output=True,
                          text=True, timeout=20, check=True,
                          env={"PATH": os.environ["PATH"], "XAUTHORITY": env["XAUTHORITY"]})
    return done.stdout


async def test_a_cross_site_frames_file_chooser_is_the_drivers_not_a_native_dialog(framed: Driver,
                                                                                   service: Service) -> None:
    await framed.click(170, 70)  # the iframe's file input
    chooser = await framed.text_of("file-chooser")
    assert "Open File" not in await asyncio.to_thread(windows, service, framed.frame), "a native dialog opened"
    status, body = await asyncio.to_thread(_upload, service, framed, chooser["id"],
                                           [("colour.bin", bytes([30, 60, 200, 0]))])
    assert status == 200 and body["files"] == ["colour.bin"], body
    await framed.colour(INSIDE, (30, 60, 200))  # the iframe's page got the file
