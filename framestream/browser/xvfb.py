"""One Xvfb display per frame, sized to the frame's encoded picture."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil

from framestream.browser.process import spawn, terminate_group
from framestream.errors import BrowserError

log = logging.getLogger(__name__)

START_TIMEOUT = 10.0
# Xvfb reports no refresh rate, so Chromium animates at 60 frames a second while we send at most 30: half its
# rendering is thrown away. A mode at the stream's rate makes Chromium draw only what is sent (measured by the
# benchmark: 0.217 -> 0.117 vCPU for an animated page).
REFRESH_HZ = 30
# Chromium on an X display without a window manager keeps its window one device pixel short of the screen in
# each direction, fullscreen or not (measured: a 640x400 screen gives a 639x399 viewport and a black last row
# and column). The screen is therefore one pixel larger than the picture; the capture reads the top-left
# width x height, which the window covers exactly.
SCREEN_MARGIN = 1


class XvfbDisplay:
    def __init__(self, proc: asyncio.subprocess.Process, number: int, width: int, height: int) -> None:
        self.proc = proc
        self.number = number
        self.width = width
        self.height = height

    @property
    def name(self) -> str:
        return f":{self.number}"

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def alive(self) -> bool:
        return self.proc.returncode is None

    @classmethod
    async def start(cls, width: int, height: int, *, xvfb_path: str = "Xvfb",
                    refresh_hz: int = REFRESH_HZ) -> XvfbDisplay:
        # -displayfd: Xvfb picks a free display itself and writes its number once it accepts clients,
        # so there is no race over display numbers and no polling for readiness.
        read_fd, write_fd = os.pipe()
        try:
            proc = await spawn(
                [
                    xvfb_path, "-displayfd", str(write_fd),
                    "-screen", "0", f"{width + SCREEN_MARGIN}x{height + SCREEN_MARGIN}x24",
                    "-nolisten", "tcp", "-noreset", "+extension", "DAMAGE", "-dpi", "96",
                ],
                pass_fds=[write_fd],
            )
        except OSError as exc:
            os.close(read_fd)
            os.close(write_fd)
            raise BrowserError(f"cannot start Xvfb ({xvfb_path}): {exc}") from exc
        os.close(write_fd)
        try:
            number = await asyncio.wait_for(_read_display_number(read_fd), START_TIMEOUT)
        except (TimeoutError, ValueError) as exc:
            await terminate_group(proc, grace=1.0)
            raise BrowserError(f"Xvfb did not start a {width}x{height} display: {exc or 'timed out'}") from exc
        finally:
            os.close(read_fd)
        display = cls(proc, number, width, height)
        await display._set_refresh(refresh_hz)
        return display

    async def _set_refresh(self, hz: int) -> None:
        """Give the screen a mode at `hz` (best effort: without xrandr, Chromium just draws at 60 Hz).

        Modes made by a client last only while the server does not reset, which `-noreset` guarantees."""
        if hz <= 0:
            return
        xrandr = shutil.which("xrandr")
        if xrandr is None:
            log.info("xrandr not found: the display stays at Xvfb's default refresh (Chromium draws at 60 Hz)")
            return
        w, h = self.width + SCREEN_MARGIN, self.height + SCREEN_MARGIN
        htotal, vtotal = w + 2, h + 2
        clock_mhz = f"{htotal * vtotal * hz / 1e6:.6f}"
        name = f"fs{hz}"
        steps = [
            ["--newmode", name, clock_mhz, str(w), str(w + 1), str(w + 2), str(htotal),
             str(h), str(h + 1), str(h + 2), str(vtotal)],
            ["--addmode", "screen", name],
            ["--output", "screen", "--mode", name],
        ]
        for args in steps:
            proc = await asyncio.create_subprocess_exec(
                xrandr, "-d", self.name, *args,
                stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
            )
            try:
                _, err = await asyncio.wait_for(proc.communicate(), 5.0)
            except TimeoutError:
                proc.kill()
                await proc.wait()
                err = b"timed out"
            if proc.returncode != 0:
                log.warning("could not set %s to %d Hz (%s): Chromium draws at 60 Hz", self.name, hz,
                            err.decode(errors="replace").strip())
                return

    async def stop(self) -> None:
        await terminate_group(self.proc, grace=2.0)


async def _read_display_number(fd: int) -> int:
    loop = asyncio.get_running_loop()
    os.set_blocking(fd, False)
    buf = b""
    ready = asyncio.Event()
    loop.add_reader(fd, ready.set)
    try:
        while not buf.endswith(b"\n"):
            await ready.wait()
            ready.clear()
            with contextlib.suppress(BlockingIOError):
                chunk = os.read(fd, 64)
                if not chunk:
                    raise ValueError("Xvfb exited before it was ready")
                buf += chunk
    finally:
        loop.remove_reader(fd)
    return int(buf.strip())
