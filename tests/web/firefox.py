"""A headless Firefox ESR driven over WebDriver BiDi, just enough for the viewer tests.

Debian's firefox-esr (or FIREFOX_PATH) with `--remote-debugging-port=0`: it picks a free loopback port and writes
it to WebDriverBiDiServer.json in its profile; we talk BiDi to ws://127.0.0.1:PORT/session over `websockets`. No
geckodriver, no Selenium. A fresh profile per browser, with prefs that keep it off the network (no updates,
telemetry, safe browsing, remote settings or captive-portal checks): only loopback pages are ever loaded.

    async with Firefox() as firefox:
        tab = await firefox.tab()
        await tab.navigate("http://127.0.0.1:8000/")
        assert await tab.eval("1 + 1") == 2
        await tab.click(10, 10)
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import shutil
import signal
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import websockets
from websockets.asyncio.client import ClientConnection

FIREFOX = os.environ.get("FIREFOX_PATH", "firefox-esr")

# user.js of every profile. Nothing here may reach past 127.0.0.1: updates, telemetry, safe browsing lists, remote
# settings, experiments, captive portal and connectivity checks are off, and so are first-run and what's-new pages.
PREFS: dict[str, bool | int | str] = {
    "app.update.auto": False,
    "app.update.checkInstallTime": False,
    "app.update.disabledForTesting": True,
    "app.normandy.enabled": False,
    "app.normandy.api_url": "",
    "app.shield.optoutstudies.enabled": False,
    "browser.aboutwelcome.enabled": False,
    "browser.newtabpage.enabled": False,
    "browser.newtab.preload": False,
    "browser.safebrowsing.blockedURIs.enabled": False,
    "browser.safebrowsing.downloads.enabled": False,
    "browser.safebrowsing.downloads.remote.enabled": False,
    "browser.safebrowsing.malware.enabled": False,
    "browser.safebrowsing.phishing.enabled": False,
    "browser.safebrowsing.provider.google.updateURL": "",
    "browser.safebrowsing.provider.google4.updateURL": "",
    "browser.safebrowsing.provider.mozilla.updateURL": "",
    "browser.search.update": False,
    "browser.shell.checkDefaultBrowser": False,
    "browser.startup.homepage": "about:blank",
    "browser.startup.homepage_override.mstone": "ignore",
    "browser.startup.page": 0,
    "browser.tabs.warnOnClose": False,
    "browser.topsites.contile.enabled": False,
    "browser.urlbar.suggest.searches": False,
    "datareporting.healthreport.uploadEnabled": False,
    "datareporting.policy.dataSubmissionEnabled": False,
    "extensions.blocklist.enabled": False,
    "extensions.getAddons.cache.enabled": False,
    "extensions.update.enabled": False,
    "geo.provider.network.url": "",
    "messaging-system.rsexperimentloader.enabled": False,
    "network.captive-portal-service.enabled": False,
    "network.connectivity-service.enabled": False,
    "network.dns.disablePrefetch": True,
    "network.http.speculative-parallel-limit": 0,
    "network.prefetch-next": False,
    "network.proxy.type": 0,
    "services.settings.server": "http://127.0.0.1:1/remote-settings",  # nothing listens on port 1
    "startup.homepage_welcome_url": "about:blank",
    "startup.homepage_welcome_url.additional": "",
    "toolkit.telemetry.enabled": False,
    "toolkit.telemetry.server": "",
    "toolkit.telemetry.unified": False,
    # the viewer: WebCodecs (on by default since 130; said here so a profile default cannot turn it off), autoplay
    "dom.media.webcodecs.enabled": True,
    "media.autoplay.default": 0,
}


def firefox_available() -> bool:
    return shutil.which(FIREFOX) is not None


class BiDiError(Exception):
    """A command answered with an error, or an evaluated script threw."""


def deserialize(value: dict[str, Any]) -> Any:
    """A BiDi RemoteValue as Python: primitives, arrays as lists, objects and maps as dicts (string keys); a value
    without a serialization (a node, a function, a value past maxObjectDepth) as its type name in angle brackets."""
    kind = value["type"]
    if kind in ("undefined", "null"):
        return None
    if kind in ("string", "boolean"):
        return value["value"]
    if kind == "number":
        v = value["value"]
        return {"NaN": math.nan, "-0": -0.0, "Infinity": math.inf, "-Infinity": -math.inf}.get(v, v) \
            if isinstance(v, str) else v
    if kind == "bigint":
        return int(value["value"])
    if kind in ("array", "set") and "value" in value:
        return [deserialize(v) for v in value["value"]]
    if kind in ("object", "map") and "value" in value:
        return {(k if isinstance(k, str) else str(deserialize(k))): deserialize(v) for k, v in value["value"]}
    return f"<{kind}>"


class BiDi:
    """One WebDriver BiDi session over a WebSocket: commands by id with a timeout each, events to handlers."""

    def __init__(self, ws: ClientConnection) -> None:
        self._ws = ws
        self._next = 0
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._handlers: dict[str, list[Callable[[dict[str, Any]], None]]] = {}
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def connect(cls, url: str, within: float = 10) -> BiDi:
        ws = await asyncio.wait_for(websockets.connect(url, max_size=64 * 1024 * 1024, ping_interval=None,
                                                       open_timeout=within), within)
        return cls(ws)

    async def _read(self) -> None:
        error: Exception = ConnectionError("WebDriver BiDi connection closed")
        try:
            async for raw in self._ws:
                msg = json.loads(raw)
                if msg.get("type") == "event":
                    for handler in self._handlers.get(msg["method"], []):
                        handler(msg["params"])
                    continue
                future = self._waiting.pop(msg.get("id", -1), None)
                if future is None or future.done():
                    continue
                if msg.get("type") == "error":
                    future.set_exception(BiDiError(f"{msg.get('error')}: {msg.get('message')}"))
                else:
                    future.set_result(msg.get("result", {}))
        except websockets.ConnectionClosed as exc:
            error = ConnectionError(f"WebDriver BiDi connection closed: {exc}")
        finally:
            for future in self._waiting.values():
                if not future.done():
                    future.set_exception(error)
            self._waiting.clear()

    def on(self, event: str, handler: Callable[[dict[str, Any]], None]) -> None:
        self._handlers.setdefault(event, []).append(handler)

    async def call(self, method: str, params: dict[str, Any] | None = None, within: float = 30) -> dict[str, Any]:
        self._next += 1
        ident = self._next
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[ident] = future
        try:
            await self._ws.send(json.dumps({"id": ident, "method": method, "params": params or {}}))
            return await asyncio.wait_for(future, within)
        except TimeoutError:
            raise TimeoutError(f"{method}: no answer within {within:g} s") from None
        finally:
            self._waiting.pop(ident, None)

    async def close(self) -> None:
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._reader
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._ws.close(), 5)


class Tab:
    """One top-level browsing context: navigate, evaluate, wait, and real input (`input.performActions`).
    A `BrowserTab` (tests/web/browser.py), so the viewer helpers there take it as they take Chromium's `Page`."""

    def __init__(self, bidi: BiDi, context: str) -> None:
        self._bidi = bidi
        self.context = context
        self.console: list[str] = []
        self.exceptions: list[str] = []

    def _on_log(self, params: dict[str, Any]) -> None:
        if params.get("source", {}).get("context") != self.context:
            return
        text = str(params.get("text"))
        if params.get("type") == "javascript":  # an uncaught exception or an unhandled rejection
            self.exceptions.append(text)
        else:
            self.console.append(text)

    async def navigate(self, url: str, within: float = 30) -> None:
        await self._bidi.call("browsingContext.navigate", {"context": self.context, "url": url, "wait": "complete"},
                              within=within)

    async def eval(self, expression: str, within: float = 30) -> Any:
        """Evaluate an expression in the page (awaiting a promise) and return its value, deserialized."""
        res = await self._bidi.call("script.evaluate", {
            "expression": expression, "target": {"context": self.context}, "awaitPromise": True,
            "resultOwnership": "none"}, within=within)
        if res.get("type") == "exception":
            details = res.get("exceptionDetails", {})
            raise BiDiError(f"{expression[:80]}...: {details.get('text')}\n{details.get('stackTrace')}")
        return deserialize(res["result"])

    async def wait_for(self, expression: str, within: float = 20, interval: float = 0.1) -> Any:
        """Poll until the expression is truthy; return its value."""
        deadline = asyncio.get_running_loop().time() + within
        while True:
            last = await self.eval(expression)
            if last:
                return last
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError(f"not true within {within}s: {expression}\nlast value: {last!r}\n"
                                   f"console: {self.console[-20:]}\nexceptions: {self.exceptions[-5:]}")
            await asyncio.sleep(interval)

    async def actions(self, *sources: dict[str, Any], within: float = 10) -> None:
        await self._bidi.call("input.performActions", {"context": self.context, "actions": list(sources)},
                              within=within)

    async def click(self, x: float, y: float, button: int = 0) -> None:
        """A real mouse click at viewport CSS point (x, y): move there, press, release."""
        await self.actions({"type": "pointer", "id": "mouse", "parameters": {"pointerType": "mouse"}, "actions": [
            {"type": "pointerMove", "x": round(x), "y": round(y), "origin": "viewport"},
            {"type": "pointerDown", "button": button},
            {"type": "pointerUp", "button": button},
        ]})

    async def keys(self, *values: str) -> None:
        """Press and release each key in turn: a character, or a WebDriver key code ("\\ue007" is Enter)."""
        steps: list[dict[str, Any]] = []
        for value in values:
            steps += [{"type": "keyDown", "value": value}, {"type": "keyUp", "value": value}]
        await self.actions({"type": "key", "id": "keyboard", "actions": steps})


class Firefox:
    """`async with Firefox() as f: tab = await f.tab()`: firefox-esr in its own process group, its own profile."""

    def __init__(self, width: int = 1400, height: int = 1000) -> None:
        self.width = width
        self.height = height
        self.dir = Path(tempfile.mkdtemp(prefix="fs-viewer-firefox-"))
        self.profile = self.dir / "profile"
        self.log_path = self.dir / "firefox.log"
        self.proc: asyncio.subprocess.Process | None = None
        self.bidi: BiDi | None = None
        self.tabs: list[Tab] = []

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    async def __aenter__(self) -> Firefox:
        try:
            await self._start()
        except BaseException:
            await self.__aexit__()
            raise
        return self

    async def _start(self, within: float = 30) -> None:
        self.profile.mkdir()
        (self.profile / "user.js").write_text(
            "".join(f"user_pref({json.dumps(k)}, {json.dumps(v)});\n" for k, v in PREFS.items()))
        env = dict(os.environ, MOZ_CRASHREPORTER_DISABLE="1")
        log = os.open(self.log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # its stdout and stderr
        try:
            # its own session, so its own process group: its content and media processes stay in that group
            self.proc = await asyncio.create_subprocess_exec(
                FIREFOX, "--headless", "--remote-debugging-port=0", "--profile", str(self.profile), "--no-remote",
                "about:blank",
                stdin=asyncio.subprocess.DEVNULL, stdout=log, stderr=log, env=env, start_new_session=True)
        finally:
            os.close(log)
        # Firefox writes the port it took (on 127.0.0.1) to WebDriverBiDiServer.json in the profile.
        server = self.profile / "WebDriverBiDiServer.json"
        deadline = asyncio.get_running_loop().time() + within
        port = 0
        while not port:
            with contextlib.suppress(OSError, ValueError, KeyError):
                port = int(json.loads(server.read_text())["ws_port"])
            if port:
                break
            if self.proc.returncode is not None:
                raise RuntimeError(f"firefox exited with {self.proc.returncode}:\n{self.log()[-3000:]}")
            if asyncio.get_running_loop().time() > deadline:
                raise RuntimeError(f"firefox opened no WebDriver BiDi port within {within:g} s:\n{self.log()[-3000:]}")
            await asyncio.sleep(0.05)
        self.bidi = await BiDi.connect(f"ws://127.0.0.1:{port}/session")
        await self.bidi.call("session.new", {"capabilities": {"alwaysMatch": {"acceptInsecureCerts": False}}})
        await self.bidi.call("session.subscribe", {"events": ["log.entryAdded"]})

    async def tab(self) -> Tab:
        """The browser's first top-level context (about:blank at start), as a Tab, at width x height CSS px."""
        assert self.bidi is not None
        tree = await self.bidi.call("browsingContext.getTree", {"maxDepth": 0})
        contexts = tree["contexts"]
        if contexts and not any(t.context == contexts[0]["context"] for t in self.tabs):
            context = str(contexts[0]["context"])
        else:
            context = str((await self.bidi.call("browsingContext.create", {"type": "tab"}))["context"])
        tab = Tab(self.bidi, context)
        self.bidi.on("log.entryAdded", tab._on_log)
        await self.bidi.call("browsingContext.setViewport", {
            "context": context, "viewport": {"width": self.width, "height": self.height}})
        self.tabs.append(tab)
        return tab

    async def __aexit__(self, *exc: object) -> None:
        if self.bidi is not None:
            with contextlib.suppress(Exception):  # a clean shutdown first; the process is ended below anyway
                await self.bidi.call("browser.close", within=5)
            await self.bidi.close()
            self.bidi = None
        proc = self.proc
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(proc.wait(), 5)
            if proc.returncode is None:
                proc.terminate()
                try:
                    await asyncio.wait_for(proc.wait(), 5)
                except TimeoutError:
                    proc.kill()
                    await proc.wait()
        if proc is not None:
            # Its content and media processes are in the group it leads (start_new_session): none may outlive it.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
        shutil.rmtree(self.dir, ignore_errors=True)
