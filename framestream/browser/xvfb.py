"""One Xvfb display per frame, sized to the frame's encoded picture."""

from __future__ import annotations

import asyncio
import contextlib
import os

from framestream.browser.process import spawn, terminate_group
from framestream.errors import BrowserError

START_TIMEOUT = 10.0
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
    async def start(cls, width: int, height: int, *, xvfb_path: str = "Xvfb") -> XvfbDisplay:
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
        return cls(proc, number, width, height)

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
