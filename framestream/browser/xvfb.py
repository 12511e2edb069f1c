"""One Xvfb display per frame, sized to the frame's encoded picture."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import select
import shutil
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Generic, TypeVar

from framestream.browser.process import child_environment, spawn, terminate_group
from framestream.browser.xauth import cookies
from framestream.core.errors import BrowserError

log = logging.getLogger(__name__)
_Proc = TypeVar("_Proc", asyncio.subprocess.Process, subprocess.Popen[bytes])

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
# Asked for explicitly, so what the capture (DAMAGE events) and Chromium (96 dpi) rely on never depends on how
# Xvfb was built. No GLX: it loads Mesa and LLVM into Xvfb (about 52 MB of a paused frame) and nothing uses it;
# WebGL draws in Chromium's GPU process through SwiftShader and reaches the screen as plain X images.
SERVICE_FLAGS = ("+extension", "DAMAGE", "-extension", "GLX", "-dpi", "96")


class _Started(Generic[_Proc]):
    """A running Xvfb: its process and the display number it chose."""

    def __init__(self, proc: _Proc, number: int) -> None:
        self.proc: _Proc = proc
        self.number = number

    @property
    def name(self) -> str:
        return f":{self.number}"

    @property
    def pid(self) -> int:
        return self.proc.pid


class XvfbDisplay(_Started[asyncio.subprocess.Process]):
    """A frame's display, started by the service (see `spawn`) with its refresh mode."""

    def __init__(self, proc: asyncio.subprocess.Process, number: int, width: int, height: int,
                 xauthority: Path) -> None:
        super().__init__(proc, number)
        self.width = width
        self.height = height
        self.xauthority = xauthority  # the display's cookie: XAUTHORITY for its clients (browser/xauth.py)

    @property
    def alive(self) -> bool:
        return self.proc.returncode is None

    @classmethod
    async def start(cls, width: int, height: int, *, xvfb_path: str = "Xvfb",
                    refresh_hz: int = REFRESH_HZ) -> XvfbDisplay:
        xauthority, cookie = cookies().new_file()  # only clients holding it may connect (browser/xauth.py)
        read_fd, write_fd = os.pipe()
        try:
            proc = await spawn(xvfb_command(width + SCREEN_MARGIN, height + SCREEN_MARGIN, write_fd,
                                            xvfb_path=xvfb_path, extra=(*SERVICE_FLAGS, "-auth", str(xauthority))),
                               pass_fds=[write_fd])
        except OSError as exc:
            os.close(read_fd)
            os.close(write_fd)
            cookies().ended(None, xauthority)
            raise BrowserError(f"cannot start Xvfb ({xvfb_path}): {exc}") from exc
        os.close(write_fd)
        try:
            number = await asyncio.wait_for(_read_display_number(read_fd), START_TIMEOUT)
        except (TimeoutError, ValueError) as exc:
            await terminate_group(proc, grace=1.0)
            cookies().ended(None, xauthority)
            raise BrowserError(f"Xvfb did not start a {width}x{height} display: {exc or 'timed out'}") from exc
        finally:
            os.close(read_fd)
        cookies().started(number, cookie)
        display = cls(proc, number, width, height, xauthority)
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
                xrandr, "-d", self.name, *args, env=child_environment({"XAUTHORITY": str(self.xauthority)}),
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
        cookies().ended(self.number, self.xauthority)


def xvfb_command(width: int, height: int, display_fd: int, *, xvfb_path: str = "Xvfb",
                 extra: Sequence[str] = ()) -> list[str]:
    """Xvfb's command line for a `width` x `height` screen that tells its display number on `display_fd`.

    -displayfd: Xvfb picks a free display itself and writes its number once it accepts clients, so there is no
    race over display numbers and no polling for readiness.
    """
    return [xvfb_path, "-displayfd", str(display_fd), "-screen", "0", f"{width}x{height}x24",
            "-nolisten", "tcp", "-noreset", *extra]


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
                buf += _read_chunk(fd)
    finally:
        loop.remove_reader(fd)
    return int(buf.strip())


def _read_chunk(fd: int) -> bytes:
    # Read up to the newline: Xvfb may write the number and "\n" separately, and dies of EPIPE if the reading end
    # is closed in between.
    chunk = os.read(fd, 64)
    if not chunk:
        raise ValueError("Xvfb exited before it was ready")
    return chunk


class XvfbServer(_Started[subprocess.Popen[bytes]]):
    """An Xvfb started without asyncio, for the capture tests and benchmarks: a plain child of this process
    (no session of its own, no parent-death signal), ended by its pid with `kill`."""

    @classmethod
    def start(cls, width: int, height: int, *extra: str, xvfb_path: str = "Xvfb",
              timeout: float = START_TIMEOUT) -> XvfbServer:
        """A `width` x `height` screen exactly (no margin, no refresh mode), with `extra` flags."""
        read_fd, write_fd = os.pipe()
        try:
            proc = subprocess.Popen(xvfb_command(width, height, write_fd, xvfb_path=xvfb_path, extra=extra),
                                    pass_fds=(write_fd,), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, env=child_environment())
        except OSError as exc:
            os.close(read_fd)
            raise BrowserError(f"cannot start Xvfb ({xvfb_path}): {exc}") from exc
        finally:
            os.close(write_fd)
        server = cls(proc, 0)
        try:
            buf = b""
            deadline = time.monotonic() + timeout
            while not buf.endswith(b"\n"):
                if not select.select([read_fd], [], [], max(0.0, deadline - time.monotonic()))[0]:
                    raise ValueError("timed out")
                buf += _read_chunk(read_fd)
            server.number = int(buf.strip())
        except ValueError as exc:
            server.kill()
            raise BrowserError(f"Xvfb did not start a {width}x{height} display: {exc}") from exc
        finally:
            os.close(read_fd)
        return server

    def kill(self) -> None:
        """SIGKILL the server (only the one started here) and reap it. Idempotent."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
