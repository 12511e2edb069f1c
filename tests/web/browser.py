"""A headless Chromium driven over the DevTools protocol, just enough for the viewer tests.

Debian's /usr/bin/chromium (or CHROME_PATH), talked to with framestream's own CDP client: no Playwright, no npm.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import tempfile
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from framestream.browser.cdp import CDPConnection
from framestream.core.errors import CDPError

CHROME = os.environ.get("CHROME_PATH", "/usr/bin/chromium")


def chrome_available() -> bool:
    return Path(CHROME).exists() or shutil.which(CHROME) is not None


class Page:
    """One page target over its own DevTools WebSocket (framestream's own CDP client)."""

    def __init__(self, cdp: CDPConnection) -> None:
        self._cdp = cdp
        self.console: list[str] = []
        self.exceptions: list[str] = []
        cdp.on("Runtime.consoleAPICalled", self._on_console)
        cdp.on("Runtime.exceptionThrown", self._on_exception)

    def _on_console(self, params: dict[str, Any]) -> None:
        args = params.get("args", [])
        self.console.append(" ".join(str(a.get("value", a.get("description", ""))) for a in args))

    def _on_exception(self, params: dict[str, Any]) -> None:
        details = params["exceptionDetails"]
        self.exceptions.append(str(details.get("exception", {}).get("description", details)))

    def on(self, event: str, handler: Callable[[dict[str, Any]], None]) -> Callable[[], None]:
        """Call `handler(params)` for every DevTools `event` of this page; returns the function that stops it."""
        return self._cdp.on(event, handler)

    async def send(self, method: str, params: dict[str, Any] | None = None, within: float = 30) -> Any:
        return await self._cdp.call(method, params, timeout=within)

    async def eval(self, expression: str, within: float = 30) -> Any:
        """Evaluate an expression (awaiting a promise) and return its JSON value."""
        res = await self.send(
            "Runtime.evaluate",
            {"expression": expression, "awaitPromise": True, "returnByValue": True},
            within=within,
        )
        if "exceptionDetails" in res:
            raise CDPError(f"{expression[:80]}...: {res['exceptionDetails']}")
        return res["result"].get("value")

    async def wait_for(self, expression: str, within: float = 20, interval: float = 0.1) -> Any:
        """Poll until the expression is truthy; return its value."""
        deadline = asyncio.get_running_loop().time() + within
        last: Any = None
        while True:
            last = await self.eval(expression)
            if last:
                return last
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError(
                    f"not true within {within}s: {expression}\nlast value: {last!r}\n"
                    f"console: {self.console[-20:]}\nexceptions: {self.exceptions[-5:]}"
                )
            await asyncio.sleep(interval)

    async def navigate(self, url: str) -> None:
        await self.send("Page.navigate", {"url": url})

    async def mouse(self, kind: str, x: float, y: float, *, button: str = "none", click_count: int = 0,
                    buttons: int = 0) -> None:
        await self.send("Input.dispatchMouseEvent", {
            "type": kind, "x": x, "y": y, "button": button, "clickCount": click_count, "buttons": buttons,
        })

    async def click(self, x: float, y: float) -> None:
        await self.mouse("mouseMoved", x, y)
        await self.mouse("mousePressed", x, y, button="left", click_count=1, buttons=1)
        await self.mouse("mouseReleased", x, y, button="left", click_count=1, buttons=0)

    async def key(self, key: str, code: str, text: str | None = None, key_code: int = 0) -> None:
        down: dict[str, Any] = {"type": "keyDown", "key": key, "code": code,
                                "windowsVirtualKeyCode": key_code}
        if text is not None:
            down["text"] = text
        await self.send("Input.dispatchKeyEvent", down)
        await self.send("Input.dispatchKeyEvent", {"type": "keyUp", "key": key, "code": code,
                                                   "windowsVirtualKeyCode": key_code})

    async def close(self) -> None:
        await self._cdp.close()


class Browser:
    """`async with Browser() as b: page = await b.page()`"""

    def __init__(self, width: int = 1400, height: int = 1000, extra_args: tuple[str, ...] = ()) -> None:
        self.width = width
        self.height = height
        self.extra_args = extra_args
        self.proc: asyncio.subprocess.Process | None = None
        self.dir = tempfile.mkdtemp(prefix="fs-viewer-chrome-")
        self.port = 0
        self.pages: list[Page] = []

    async def __aenter__(self) -> Browser:
        self.proc = await asyncio.create_subprocess_exec(
            CHROME,
            "--headless=new",
            "--no-sandbox",
            "--remote-debugging-port=0",
            "--remote-debugging-address=127.0.0.1",
            f"--user-data-dir={self.dir}",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-extensions",
            "--mute-audio",
            f"--window-size={self.width},{self.height}",
            "--force-device-scale-factor=1",
            *self.extra_args,
            "about:blank",
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        port_file = Path(self.dir) / "DevToolsActivePort"
        for _ in range(300):
            if port_file.exists() and port_file.read_text().strip():
                self.port = int(port_file.read_text().split()[0])
                break
            if self.proc.returncode is not None:
                raise RuntimeError(f"chromium exited with {self.proc.returncode}")
            await asyncio.sleep(0.05)
        else:
            raise RuntimeError("chromium did not open its DevTools port")
        return self

    def _targets(self) -> list[dict[str, Any]]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/json/list", timeout=5) as r:
            return json.loads(r.read())  # type: ignore[no-any-return]

    async def page(self) -> Page:
        targets: list[dict[str, Any]] = []
        for _ in range(100):
            targets = [t for t in await asyncio.to_thread(self._targets) if t.get("type") == "page"]
            if targets:
                break
            await asyncio.sleep(0.05)
        page = Page(await CDPConnection.connect(targets[0]["webSocketDebuggerUrl"]))
        self.pages.append(page)
        await page.send("Runtime.enable")
        await page.send("Page.enable")
        return page

    async def __aexit__(self, *exc: object) -> None:
        for page in self.pages:
            with contextlib.suppress(Exception):
                await page.close()
        if self.proc and self.proc.returncode is None:
            self.proc.terminate()
            try:
                await asyncio.wait_for(self.proc.wait(), 5)
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


# Installed before the viewer loads (`Page.addScriptToEvaluateOnNewDocument`): the first picture each frame's
# canvas was drawn with, as the person saw it. `window.fsFirstDrawn[frame]` is a function of the point's
# fraction of the canvas (fx, fy) that gives its [r, g, b] in that first picture.
FIRST_DRAWN_HOOK = """
(() => {
  const draw = CanvasRenderingContext2D.prototype.drawImage;
  window.fsFirstDrawn = {};
  CanvasRenderingContext2D.prototype.drawImage = function (...args) {
    draw.apply(this, args);
    const canvas = this.canvas, frame = canvas && canvas.dataset ? canvas.dataset.frame : undefined;
    if (!frame || frame in window.fsFirstDrawn || canvas.width < 4) return;
    const copy = this.getImageData(0, 0, canvas.width, canvas.height);
    window.fsFirstDrawn[frame] = (fx, fy) => {
      const i = 4 * (Math.floor(fy * copy.height) * copy.width + Math.floor(fx * copy.width));
      return [copy.data[i], copy.data[i + 1], copy.data[i + 2]];
    };
  };
})();
"""


async def first_drawn(page: Page, frame: str, fraction: tuple[float, float]) -> list[int]:
    """[r, g, b] at `fraction` of the canvas in the first picture drawn on `frame`'s canvas (FIRST_DRAWN_HOOK)."""
    key = json.dumps(frame)
    await page.wait_for(f"window.fsFirstDrawn && window.fsFirstDrawn[{key}] !== undefined", within=30)
    return await page.eval(  # type: ignore[no-any-return]
        f"window.fsFirstDrawn[{key}]({fraction[0]}, {fraction[1]})")


# JavaScript helpers evaluated in the viewer page.
JS_CANVAS_POINT = """
(() => {{
  const c = document.querySelector('canvas[data-frame="{frame}"]');
  const r = c.getBoundingClientRect();
  return [r.left + r.width * {fx}, r.top + r.height * {fy}];
}})()
"""


# Where the frame's CSS point (fx, fy as fractions) lies on the screen when the canvas letterboxes its picture
# (object-fit: contain, as in full screen), and the picture's box: [x, y, left, top, width, height].
JS_CONTAINED_POINT = """
(() => {{
  const c = document.querySelector('canvas[data-frame="{frame}"]');
  const r = c.getBoundingClientRect();
  const s = Math.min(r.width / {w}, r.height / {h});
  const left = r.left + (r.width - {w} * s) / 2, top = r.top + (r.height - {h} * s) / 2;
  return [left + {w} * s * {fx}, top + {h} * s * {fy}, left, top, {w} * s, {h} * s,
          getComputedStyle(c).objectFit];
}})()
"""


def close_to(rgb: list[int] | None, want: tuple[int, int, int], tol: int = 24) -> bool:
    return rgb is not None and all(abs(a - b) <= tol for a, b in zip(rgb, want, strict=True))


# Helpers installed in the viewer page (after it loaded) by `install_helpers`: pixels by the frame's CSS
# coordinates whatever its dpr, and a record of every frame-state as the view showed it.
JS_HELPERS = """
(() => {
  const canvasOf = (frame) => document.querySelector(`canvas[data-frame="${frame}"]`);
  const viewOf = (frame) => document.querySelector(`.fs-frame[data-frame="${frame}"]`);
  // The scale from the frame's CSS pixels to the canvas's pixels (its dpr on the full stream; the canvas keeps
  // that size on the light stream, whose pictures are the CSS size drawn scaled), from video-config.
  const scaleOf = (frame) => {
    const info = window.framestream.client.info(frame);
    return info && info.config ? canvasOf(frame).width / info.config.css_width : 1;
  };
  window.fsPixel = (frame, x, y) => {
    const c = canvasOf(frame);
    if (!c || c.width < 4) return null;
    const s = scaleOf(frame);
    const d = c.getContext('2d').getImageData(Math.floor(x * s), Math.floor(y * s), 1, 1).data;
    return [d[0], d[1], d[2]];
  };
  window.fsView = (frame) => {
    const v = viewOf(frame);
    const o = v.querySelector('.fs-overlay');
    const t = v.querySelector('.fs-toast');
    return {
      state: v.querySelector('.fs-state').textContent, mode: v.querySelector('.fs-mode').textContent,
      driver: v.querySelector('.fs-driver').textContent, overlay: o.hidden ? null : o.textContent,
      toast: t.hidden ? null : t.textContent,
    };
  };
  window.fsRecords = {};
  // Every frame-state of `frame` with the view's overlay and badge right after the view rendered it (the
  // view's own listener was added first), and the canvas pixel at `at` (CSS) under the overlay.
  window.fsRecord = (frame, at) => {
    const rec = window.fsRecords[frame] = [];
    window.framestream.client.on('frame-state', (d) => {
      if (d.frame !== frame) return;
      rec.push({ state: d.state, message: d.message ?? null, ...window.fsView(frame),
        px: window.fsPixel(frame, at[0], at[1]) });
    });
    return true;
  };
  // The same for the connection's `close` events (after the page and the view reacted to them).
  window.fsCloses = [];
  window.fsRecordCloses = (frame, at) => {
    window.framestream.client.on('close', (d) => {
      window.fsCloses.push({ code: d.code, reason: d.reason, reconnectInMs: d.reconnectInMs, ...window.fsView(frame),
        conn: document.getElementById('conn').textContent, px: window.fsPixel(frame, at[0], at[1]) });
    });
    return true;
  };
  return true;
})()
"""


# -- the viewer page, as the tests drive it ------------------------------------------------------------------------

class BrowserTab(Protocol):
    """What the helpers below need of a browser tab: `Page` here (Chromium), or Firefox's `Tab`
    (tests/web/firefox.py, WebDriver BiDi)."""

    async def navigate(self, url: str) -> None: ...
    async def eval(self, expression: str, within: float = 30) -> Any: ...
    async def wait_for(self, expression: str, within: float = 20, interval: float = 0.1) -> Any: ...


async def open_viewer(page: BrowserTab, base: str, token: str, frames: list[str]) -> None:
    """Load the service's viewer at `base` for `frames` and install JS_HELPERS in it."""
    fragment = urllib.parse.urlencode([("token", token)] + [("frame", f) for f in frames])
    # via about:blank: a navigation that only changes the fragment would not load the page again
    await page.navigate("about:blank")
    await page.wait_for("location.href === 'about:blank'")
    await page.navigate(f"{base}/#{fragment}")
    # The client is null until the page has asked for its demo tokens (web/app.js): wait for the client itself.
    await page.wait_for("window.framestream && window.framestream.client")
    await page.eval(JS_HELPERS)


async def info(page: BrowserTab, frame: str) -> dict[str, Any]:
    """The viewer client's own account of `frame` (config, counts, last draw)."""
    return await page.eval(  # type: ignore[no-any-return]
        f"JSON.parse(JSON.stringify(window.framestream.client.info({json.dumps(frame)})))")


async def pixel(page: BrowserTab, frame: str, css: tuple[int, int]) -> list[int] | None:
    """The canvas pixel at the frame's CSS point `css` (whatever its dpr), or None before the first picture."""
    return await page.eval(f"fsPixel({json.dumps(frame)}, {css[0]}, {css[1]})")  # type: ignore[no-any-return]


async def wait_pixel(page: BrowserTab, frame: str, css: tuple[int, int], rgb: tuple[int, int, int],
                     within: float = 30) -> list[int]:
    """Wait until the canvas shows `rgb` at the frame's CSS point `css`; an AssertionError says what it showed."""
    js = f"fsPixel({json.dumps(frame)}, {css[0]}, {css[1]})"
    try:
        return await page.wait_for(  # type: ignore[no-any-return]
            f"(() => {{ const p = {js}; const w = {json.dumps(list(rgb))};"
            " return p && p.every((v, i) => Math.abs(v - w[i]) <= 24) ? p : null; })()",
            within=within, interval=0.05,
        )
    except TimeoutError as exc:
        raise AssertionError(f"pixel at CSS {css} is {await page.eval(js)}, wanted {rgb}\n"
                             f"info: {await info(page, frame)}") from exc
