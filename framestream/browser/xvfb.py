"""One Xvfb display per frame, as large as any frame's encoded picture (frames/runtime.py: a frame resized within it
keeps its page); the capture reads the frame's picture from its top-left corner."""

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
# After a change of mode, when Chromium is told twice more that the output changed (XvfbDisplay.set_refresh).
_SETTLE_S = 0.25
_RECHECK_S = 0.75
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
        self.refresh_hz = 0  # the rate set by `set_refresh`; 0: Xvfb's own, which Chromium takes as 60 Hz
        self._mode: str | None = None  # the mode `set_refresh` made last, which the screen runs at
        self._modes_made = 0

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
            async with asyncio.timeout(START_TIMEOUT):
                number = await _read_display_number(read_fd)
        except (TimeoutError, ValueError) as exc:
            await terminate_group(proc, grace=1.0)
            cookies().ended(None, xauthority)
            raise BrowserError(f"Xvfb did not start a {width}x{height} display: {exc or 'timed out'}") from exc
        finally:
            os.close(read_fd)
        cookies().started(number, cookie)
        display = cls(proc, number, width, height, xauthority)
        await display.set_refresh(refresh_hz)
        return display

    async def set_refresh(self, hz: int) -> bool:
        """Run the screen at `hz` (best effort: False when it could not, and Chromium draws at the rate it had).

        Chromium's compositor caches the rate and reads it again only when X reports a change of the screen's
        output, and its read can race the change and keep the old rate (measured with Chromium 156, a page
        counting its animation frames: about one switch in ten was missed while input came, and every switch
        back to a mode used before). So each switch makes a new mode, and then reports two more changes of the
        output, the switch long done, by taking the mode before off it (`_SETTLE_S` later) and putting it on and
        off once more (`_RECHECK_S` after that), each of which makes Chromium read the rate again (with the first
        report alone 39 of 40 switches followed; in 12 switches while input came, the two that the first report
        missed the second mended). Modes made by a client last while the server does not reset, which `-noreset`
        guarantees."""
        if hz <= 0:
            return False
        if hz == self.refresh_hz:
            return True
        xrandr = shutil.which("xrandr")
        if xrandr is None:
            log.info("xrandr not found: %s stays at Xvfb's default refresh (Chromium draws at 60 Hz)", self.name)
            return False
        self._modes_made += 1
        name = f"fs{hz}-{self._modes_made}"
        w, h = self.width + SCREEN_MARGIN, self.height + SCREEN_MARGIN
        htotal, vtotal = w + 2, h + 2
        clock_mhz = f"{htotal * vtotal * hz / 1e6:.6f}"
        for args in (["--newmode", name, clock_mhz, str(w), str(w + 1), str(w + 2), str(htotal),
                      str(h), str(h + 1), str(h + 2), str(vtotal)],
                     ["--addmode", "screen", name],  # xrandr finds a mode by name before it adds any
                     ["--output", "screen", "--mode", name]):
            error = await self._xrandr(xrandr, args)
            if error is not None:
                log.warning("could not set %s to %d Hz (%s): Chromium draws at %s", self.name, hz, error,
                            f"{self.refresh_hz} Hz" if self.refresh_hz else "60 Hz")
                return False
        previous, self._mode = self._mode, name
        self.refresh_hz = hz
        if previous is not None:
            steps = ((_SETTLE_S, ["--delmode", "screen", previous]), (_RECHECK_S, ["--addmode", "screen", previous]),
                     (0.0, ["--delmode", "screen", previous]), (0.0, ["--rmmode", previous]))
            for wait, args in steps:
                await asyncio.sleep(wait)
                error = await self._xrandr(xrandr, args)
                if error is not None:  # a mode left over costs Xvfb a few bytes; Chromium may keep its rate
                    log.info("could not %s mode %s of %s: %s", args[0][2:], previous, self.name, error)
                    break
        return True

    async def _xrandr(self, xrandr: str, args: Sequence[str]) -> str | None:
        """Run xrandr on this display: None, or what went wrong.

        In a thread: there `subprocess` starts it with vfork, which never stops the event loop, where the loop's
        own spawn forked the whole service and stopped every frame's loop work for 5-7 ms a call (measured), three
        to seven times a switch. Cancelled, the call is left to finish in its thread (5 s at most)."""
        try:
            done = await asyncio.to_thread(
                subprocess.run, [xrandr, "-d", self.name, *args], stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=5.0,
                env=child_environment({"XAUTHORITY": str(self.xauthority)}))
        except subprocess.TimeoutExpired:
            return "timed out"
        except OSError as exc:
            return str(exc)
        return None if done.returncode == 0 else done.stderr.decode(errors="replace").strip()

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
