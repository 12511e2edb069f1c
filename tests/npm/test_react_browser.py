"""framestream/react from the packed tarball, bundled by esbuild into a small React app and rendered in a real
headless Chromium against the real service: the frame's pixels show in the canvas, the view follows its container's
width, and unmounting closes its decoder and its socket (checked on the page's own objects); an app that gives its
drive grant through a token function drives (a real click on the canvas turns the page's box green)."""

from __future__ import annotations

import contextlib
import shutil
import urllib.parse
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.fixtures import service_fixture
from tests.npm.conftest import HERE, node
from tests.support import Service, page_server
from tests.web.browser import Browser, Page

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

service = service_fixture("viewer.html@320x200", pages="web_pages", timeout=60)

# tests/web/pages/viewer.html: a red box at CSS (100, 50) 200x100 on white that a click turns green; the frame is
# 320x200 CSS at dpr 2.
CANVAS_PIXEL = """(() => {{
  const c = document.querySelector('#box canvas');
  if (!c || c.width < 4) return null;
  const s = c.width / 320;
  const d = c.getContext('2d').getImageData(Math.floor({x} * s), Math.floor({y} * s), 1, 1).data;
  return [d[0], d[1], d[2]];
}})()"""


def close_to(rgb: list[int] | None, want: tuple[int, int, int], tol: int = 30) -> bool:
    return rgb is not None and all(abs(a - b) <= tol for a, b in zip(rgb, want, strict=True))


def bundle(scratch: Path) -> Path:
    dist = scratch / "dist"
    dist.mkdir(exist_ok=True)
    shutil.copy(HERE / "consumer" / "react_app.jsx", scratch)
    shutil.copy(HERE / "consumer" / "react_index.html", dist / "index.html")
    # esbuild's JavaScript API, as a bundler plugin of an app would call it.
    node("--input-type=module", "-e", "import { build } from 'esbuild'; await build({ entryPoints: ['react_app.jsx'],"
         " bundle: true, format: 'esm', jsx: 'automatic', outfile: 'dist/app.js', logLevel: 'warning' });",
         cwd=scratch)
    return dist


@contextlib.asynccontextmanager
async def react_app(scratch: Path, fragment: str) -> AsyncIterator[Page]:
    """The app, bundled and served, open in headless Chromium at `fragment`, once its canvas shows the red box."""
    dist = bundle(scratch)
    with page_server(dist) as base:
        async with Browser() as browser:
            page = await browser.page()
            await page.navigate(f"{base}/index.html#{fragment}")
            await page.wait_for(f"(() => {{ const p = {CANVAS_PIXEL.format(x=200, y=100)};"
                                " return p && p[0] > 170 && p[1] < 80 && p[2] < 80; })()", within=40)
            yield page


async def test_react_frame_shows_the_frame_resizes_and_frees_decoder_and_socket(service: Service,
                                                                                scratch: Path) -> None:
    frame = service.frame_ids()[0]
    token = service.token("view", subject="react")
    fragment = urllib.parse.urlencode({"token": token, "ws": service.ws_url, "frame": frame, "drive": "0"})
    async with react_app(scratch, fragment) as page:
        assert close_to(await page.eval(CANVAS_PIXEL.format(x=200, y=100)), (200, 40, 40))
        assert close_to(await page.eval(CANVAS_PIXEL.format(x=20, y=20)), (255, 255, 255))
        assert await page.eval("document.querySelector('#box canvas').width") == 640  # dpr 2
        assert await page.eval("document.querySelector('#box canvas').getBoundingClientRect().width") == 320
        assert await page.eval("document.querySelector('#box .fs-mode').textContent") == "view only"
        assert await page.eval("window.fsTest.decoders.length") == 1
        assert await page.eval("window.fsTest.decoders[0].state") == "configured"
        assert await page.eval("window.fsTest.sockets.map((s) => s.readyState)") == [1]

        # Resizing: a narrower container, a narrower canvas (aspect kept).
        await page.eval("window.fsTest.setWidth(160)")
        await page.wait_for("document.querySelector('#box canvas').getBoundingClientRect().width === 160")
        assert await page.eval("document.querySelector('#box canvas').getBoundingClientRect().height") == 100

        # Unmounting frees what it made: the decoder closed, the socket closed, the view gone.
        await page.eval("window.fsTest.unmount()")
        await page.wait_for("window.fsTest.decoders.every((d) => d.state === 'closed')"
                            " && window.fsTest.sockets.every((s) => s.readyState === WebSocket.CLOSED)")
        assert await page.eval("document.querySelectorAll('canvas, .fs-frame').length") == 0
        assert await page.eval("window.fsTest.client.state") == "closed"
        assert await page.eval("window.fsTest.view") is None
        assert not page.exceptions, page.exceptions


async def test_react_frame_drives_with_a_drive_grant_a_token_function_gives(service: Service, scratch: Path) -> None:
    """The default `drive` follows the token's role once the function has answered (before it, there is none)."""
    frame = service.create_frame(f"{service.pages}/viewer.html", width=320, height=200)  # its own red box
    service.wait_state(frame, "live")
    token = service.token("drive", subject="react-fn")
    fragment = urllib.parse.urlencode({"token": token, "ws": service.ws_url, "frame": frame, "fn": "1"})
    async with react_app(scratch, fragment) as page:
        await page.wait_for("document.querySelector('#box .fs-mode')?.dataset.mode === 'drive'", within=10)
        rect = await page.eval("(() => { const r = document.querySelector('#box canvas')"
                               ".getBoundingClientRect(); return [r.left, r.top, r.width / 320]; })()")
        left, top, scale = rect
        await page.click(left + 200 * scale, top + 100 * scale)  # the middle of the page's box
        await page.wait_for(f"(() => {{ const p = {CANVAS_PIXEL.format(x=200, y=100)};"
                            " return p && p[1] > 140 && p[0] < 80; })()", within=20)
        assert close_to(await page.eval(CANVAS_PIXEL.format(x=200, y=100)), (30, 180, 60))
        assert not page.exceptions, page.exceptions
