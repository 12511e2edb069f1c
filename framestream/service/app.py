"""Composition root: builds the service, starts it in order and stops it in the reverse order.

Start: settings -> frame registry (frames from the last run come back `closed`) -> HTTP/WebSocket server ->
frames from `--frame`. Stop (SIGTERM, SIGINT, or an error): stop accepting, close viewers with 1001, close every
browser gracefully so profiles flush, end every task, save the registry.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal

from aiohttp import web

from framestream.frames.manager import FrameManager
from framestream.server.context import ServiceContext
from framestream.server.http import build_app
from framestream.server.ws import close_all
from framestream.service.config import Settings
from framestream.service.logs import tell_operator
from framestream.tokens import mint_token

log = logging.getLogger("framestream")


class Service:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.manager = FrameManager(settings)
        self.ctx = ServiceContext(settings, self.manager)
        self._runner: web.AppRunner | None = None
        self._site: web.TCPSite | None = None
        self.port: int | None = None

    async def start(self) -> None:
        s = self.settings
        self.manager.load()
        app = build_app(self.ctx)
        self._runner = web.AppRunner(app, handle_signals=False, access_log=None, shutdown_timeout=2.0)
        await self._runner.setup()
        site = self._site = web.TCPSite(self._runner, s.host, s.port, reuse_address=True)
        await site.start()
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        self.port = sockets[0].getsockname()[1] if sockets else s.port
        for url, size in s.frames:
            await self.manager.ensure(url, size)

    async def stop(self) -> None:
        log.info("shutting down")
        # Stop listening first: a viewer that reconnects at once must not relaunch a browser mid-shutdown.
        self.manager.closing = True
        if self._site is not None:
            await self._site.stop()
            self._site = None
        await close_all(self.ctx)
        await self.manager.shutdown()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def viewer_url(self) -> str:
        host = "127.0.0.1" if self.settings.host in ("0.0.0.0", "::", "") else self.settings.host
        token = mint_token(self.settings.secret, role="drive", sandbox_id=self.settings.sandbox_id, ttl=120)
        return f"http://{host}:{self.port}/#token={token}"


async def run(settings: Settings) -> int:
    """Serve until SIGTERM or SIGINT; returns the process exit code."""
    service = Service(settings)
    # The key is derived (service.ctx.key): the secret leaves the environment, which nothing may pass on
    # (children get an allow-listed one anyway, browser/process.py).
    os.environ.pop("TERMINAL_AUTH_SECRET", None)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await service.start()
    except OSError as exc:
        log.error("cannot listen on %s:%s: %s", settings.host, settings.port, exc)
        await service.stop()
        return 1
    log.info("framestream listening on http://%s:%s (sandbox %s, shared frames %s, max browsers %d)",
             settings.host, service.port, settings.sandbox_id, "on" if settings.shared_frames else "off",
             settings.max_browsers)
    if settings.insecure_dev:
        log.warning("INSECURE DEV MODE: tokens are signed with a public key; never expose this port")
    if settings.insecure_dev:
        tell_operator(f"open {service.viewer_url()}")
    else:
        # Never print a real token: logs are read by more people than should drive.
        host = "127.0.0.1" if settings.host in ("0.0.0.0", "::", "") else settings.host
        tell_operator(f"open http://{host}:{service.port}/#token=$(framestream token --role drive)")
    try:
        await stop.wait()
    finally:
        with contextlib.suppress(Exception):
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)
        async with asyncio.timeout(15.0):
            await service.stop()
    return 0
